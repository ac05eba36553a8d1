package assets

import (
	"fmt"

	"beaconhub/store"
)

// assetRec lets replace and merge handle beacons and gateways alike.
type assetRec struct {
	b *store.Beacon
	g *store.Gateway
}

func loadAsset(t *store.AssetTx, ref store.AssetRef) (*assetRec, error) {
	switch ref.Kind {
	case store.KindBeacon:
		b, err := t.Beacon(ref.ID)
		return &assetRec{b: b}, err
	case store.KindGateway:
		g, err := t.Gateway(ref.ID)
		return &assetRec{g: g}, err
	}
	return nil, fmt.Errorf("%s assets are not handled by this registry", ref.Kind)
}

func (a *assetRec) ref() store.AssetRef {
	if a.b != nil {
		return store.AssetRef{Kind: store.KindBeacon, ID: a.b.ID}
	}
	return store.AssetRef{Kind: store.KindGateway, ID: a.g.ID}
}

func (a *assetRec) uid() string {
	if a.b != nil {
		return a.b.AssetUID
	}
	return a.g.AssetUID
}

func (a *assetRec) mac() string {
	if a.b != nil {
		return a.b.MAC
	}
	return a.g.MAC
}

func (a *assetRec) setMAC(mac string) {
	if a.b != nil {
		a.b.MAC = mac
	} else {
		a.g.MAC = mac
	}
}

func (a *assetRec) status() string {
	if a.b != nil {
		return beaconStatus(a.b)
	}
	return gatewayStatus(a.g)
}

func (a *assetRec) sensor() bool { return a.b != nil && a.b.Type == "sensor" }

// retire takes the asset out of service for good: it keeps its uid and
// history but resolves no MAC.
func (a *assetRec) retire() {
	if a.b != nil {
		a.b.Status, a.b.Active = store.AssetRetired, false
	} else {
		a.g.Status = store.AssetRetired
	}
}

func (a *assetRec) put(t *store.AssetTx) error {
	if a.b != nil {
		return t.PutBeacon(a.b)
	}
	return t.PutGateway(a.g)
}

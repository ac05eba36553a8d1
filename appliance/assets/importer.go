package assets

import (
	"errors"

	"beaconhub/appliance/apperr"
	"beaconhub/store"
)

// ImportedAsset is one asset an import created.
type ImportedAsset struct {
	Kind     string `json:"kind"`
	ID       uint64 `json:"id"`
	AssetUID string `json:"asset_uid"`
	MAC      string `json:"mac"`
}

// ImportSkip is a discovered MAC an import left alone, and why.
type ImportSkip struct {
	MAC    string `json:"mac"`
	Reason string `json:"reason"`
}

// ImportResult is what an import did.
type ImportResult struct {
	Created []ImportedAsset `json:"created"`
	Skipped []ImportSkip    `json:"skipped"`
}

// Import creates an asset of kind (beacon or gateway) for every MAC of
// the discovery list (or only those in macs): type unknown, uid
// LEGACY-<MAC>, an open assignment. All in one transaction.
func (s *Service) Import(kind string, macs []string) (ImportResult, error) {
	res := ImportResult{Created: []ImportedAsset{}, Skipped: []ImportSkip{}}
	disc, err := s.discovered()
	if err != nil {
		return res, err
	}
	heard := map[string]bool{}
	var todo []string
	for _, d := range disc {
		if d.IsGateway == (kind == store.KindGateway) && !heard[d.MAC] {
			heard[d.MAC] = true
			todo = append(todo, d.MAC)
		}
	}
	if len(macs) > 0 {
		todo = todo[:0]
		for _, raw := range macs {
			mac, err := parseMAC("mac", raw)
			if err != nil {
				return res, err
			}
			if !heard[mac] {
				return res, apperr.InvalidField("mac", "%s is not in the %s discovery list", mac, kind)
			}
			todo = append(todo, mac)
		}
	}
	err = s.write(func(t *store.AssetTx, fx *effects) error {
		for _, mac := range todo {
			a, why, err := importOne(t, kind, mac)
			if err != nil {
				return err
			}
			fx.forget = append(fx.forget, store.DiscoveredDevice{MAC: mac, IsGateway: kind == store.KindGateway})
			if why != "" {
				res.Skipped = append(res.Skipped, ImportSkip{MAC: mac, Reason: why})
				continue
			}
			res.Created = append(res.Created, a)
		}
		return nil
	})
	return res, err
}

func importOne(t *store.AssetTx, kind, mac string) (ImportedAsset, string, error) {
	a := ImportedAsset{Kind: kind, MAC: mac}
	d, err := t.Device(mac)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return a, "", err
	case d.AssignmentID != 0:
		return a, "already registered", nil
	case d.Kind != kind:
		return a, "registered as a " + d.Kind + " device", nil
	case d.Status != store.DeviceAvailable:
		return a, "device is " + d.Status, nil
	}
	uid := t.UniqueLegacyUID(mac)
	var ref store.AssetRef
	if kind == store.KindGateway {
		g := &store.Gateway{AssetUID: uid, MAC: mac, Name: mac, Status: store.AssetActive}
		if err := t.PutGateway(g); err != nil {
			return a, "", err
		}
		ref = store.AssetRef{Kind: kind, ID: g.ID}
	} else {
		b := &store.Beacon{AssetUID: uid, MAC: mac, Name: mac, Type: TypeUnknown, Status: store.AssetActive, Active: true}
		if err := t.PutBeacon(b); err != nil {
			return a, "", err
		}
		ref = store.AssetRef{Kind: kind, ID: b.ID}
	}
	if err := t.ClaimUID(uid, ref); err != nil {
		return a, "", err
	}
	if _, err := t.Attach(mac, kind, ref, t.Now, "imported"); err != nil {
		return a, "", err
	}
	a.ID, a.AssetUID = ref.ID, uid
	return a, "", nil
}

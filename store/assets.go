package store

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Asset kinds: the owner of an asset_uid and the holder of an assignment.
const (
	KindBeacon  = "beacon"
	KindGateway = "gateway"
	KindEInk    = "eink"
)

// Asset statuses. Only active assets resolve MACs for ingest; retired and
// merged ones keep their uid and history for reporting.
const (
	AssetActive  = "active"
	AssetRetired = "retired"
	AssetMerged  = "merged"
)

// Range is an inclusive alert range of a sensor metric.
type Range struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// Beacon is a beacon asset. MAC is the device currently attached (the
// holder of the open assignment), "" when the asset has none. Calibration
// belongs to the physical device, so it lives on Device, not here.
type Beacon struct {
	ID               uint64    `json:"id"`
	AssetUID         string    `json:"asset_uid"`
	MAC              string    `json:"mac"`
	Name             string    `json:"name"`
	Type             string    `json:"type"`
	LocationID       uint64    `json:"location_id,omitempty"`
	FloorID          uint64    `json:"floor_id,omitempty"`
	HumidityRange    *Range    `json:"humidity_range,omitempty"`
	TemperatureRange *Range    `json:"temperature_range,omitempty"`
	POI              bool      `json:"poi,omitempty"`
	Static           bool      `json:"static,omitempty"`
	Status           string    `json:"status,omitempty"` // "" reads as active
	MergedInto       uint64    `json:"merged_into,omitempty"`
	Active           bool      `json:"active"`
	CreatedAt        time.Time `json:"created_at"`
	UpdatedAt        time.Time `json:"updated_at"`
}

// Gateway is a gateway asset.
type Gateway struct {
	ID         uint64    `json:"id"`
	AssetUID   string    `json:"asset_uid"`
	MAC        string    `json:"mac"`
	Name       string    `json:"name"`
	IP         string    `json:"ip,omitempty"`
	LocationID uint64    `json:"location_id,omitempty"`
	Status     string    `json:"status,omitempty"` // "" reads as active
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// AssetTx is one registry transaction. Every registry change of a request
// runs in one AssetTx, so a failed validation half-way writes nothing.
type AssetTx struct {
	tx *bolt.Tx
	// Now is the transaction's clock reading (Unix ms) for timestamps.
	Now int64
	// only restricts the uid rewriters by name (nil = all); see rewriters.
	only []string
	// navIdx maps a beacon uid to the ids of the nav nodes linked to it,
	// built on first use in this transaction (nav.go): a remint apply
	// renames thousands of uids, each through every node.
	navIdx map[string][]uint64
}

// ViewAssets runs fn in a read-only registry transaction.
func (db *DB) ViewAssets(fn func(t *AssetTx) error) error {
	return db.bolt.View(func(tx *bolt.Tx) error { return fn(&AssetTx{tx: tx}) })
}

// UpdateAssets runs fn in one read-write registry transaction stamped now.
func (db *DB) UpdateAssets(now time.Time, fn func(t *AssetTx) error) error {
	return db.bolt.Update(func(tx *bolt.Tx) error {
		if err := fn(&AssetTx{tx: tx, Now: now.UnixMilli()}); err != nil {
			return err
		}
		if f := db.assetsFault.Load(); f != nil {
			return (*f)()
		}
		return nil
	})
}

func (t *AssetTx) nowTime() time.Time { return time.UnixMilli(t.Now).UTC() }

// Beacon returns the beacon with id (ErrNotFound).
func (t *AssetTx) Beacon(id uint64) (*Beacon, error) {
	var b Beacon
	if err := getJSON(t.tx.Bucket(bBeacons), itob(id), &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// PutBeacon stores b, assigning an id when it has none. Indexes (uid,
// device) are the caller's business: see ClaimUID and Attach.
func (t *AssetTx) PutBeacon(b *Beacon) error {
	bk := t.tx.Bucket(bBeacons)
	if b.ID == 0 {
		id, err := bk.NextSequence()
		if err != nil {
			return err
		}
		b.ID = id
		if b.CreatedAt.IsZero() {
			b.CreatedAt = t.nowTime()
		}
	}
	b.UpdatedAt = t.nowTime()
	return putJSON(bk, itob(b.ID), b)
}

// DeleteBeacon removes the beacon record.
func (t *AssetTx) DeleteBeacon(id uint64) error { return t.tx.Bucket(bBeacons).Delete(itob(id)) }

// EachBeacon calls fn for every beacon in id order.
func (t *AssetTx) EachBeacon(fn func(b *Beacon) error) error {
	return t.tx.Bucket(bBeacons).ForEach(func(k, v []byte) error {
		var b Beacon
		if err := getJSON(t.tx.Bucket(bBeacons), k, &b); err != nil {
			return err
		}
		return fn(&b)
	})
}

// Gateway returns the gateway with id (ErrNotFound).
func (t *AssetTx) Gateway(id uint64) (*Gateway, error) {
	var g Gateway
	if err := getJSON(t.tx.Bucket(bGateways), itob(id), &g); err != nil {
		return nil, err
	}
	return &g, nil
}

// PutGateway stores g, assigning an id when it has none.
func (t *AssetTx) PutGateway(g *Gateway) error {
	bk := t.tx.Bucket(bGateways)
	if g.ID == 0 {
		id, err := bk.NextSequence()
		if err != nil {
			return err
		}
		g.ID = id
		if g.CreatedAt.IsZero() {
			g.CreatedAt = t.nowTime()
		}
	}
	g.UpdatedAt = t.nowTime()
	return putJSON(bk, itob(g.ID), g)
}

// DeleteGateway removes the gateway record.
func (t *AssetTx) DeleteGateway(id uint64) error {
	// Its map placement goes with it: left behind, it is invisible (the
	// lists skip placements of unknown gateways) yet blocks shrinking
	// its map, and no endpoint could remove it.
	if b := t.tx.Bucket(bMapGateways); b != nil {
		if err := b.Delete(itob(id)); err != nil {
			return err
		}
	}
	return t.tx.Bucket(bGateways).Delete(itob(id))
}

// EachGateway calls fn for every gateway in id order.
func (t *AssetTx) EachGateway(fn func(g *Gateway) error) error {
	return t.tx.Bucket(bGateways).ForEach(func(k, v []byte) error {
		var g Gateway
		if err := getJSON(t.tx.Bucket(bGateways), k, &g); err != nil {
			return err
		}
		return fn(&g)
	})
}

// CreateBeacon stores b with a new id, claims its uid (LEGACY-<MAC> when
// empty) and attaches its MAC when it is active; the MAC must not be
// attached elsewhere (ErrDuplicate). Tests and tools use it; the registry
// service validates more.
func (db *DB) CreateBeacon(b *Beacon) error {
	return db.UpdateAssets(time.Now(), func(t *AssetTx) error { return t.insertBeacon(b, "created") })
}

func (t *AssetTx) insertBeacon(b *Beacon, reason string) error {
	if b.AssetUID == "" {
		b.AssetUID = t.UniqueLegacyUID(b.MAC)
	}
	if err := t.PutBeacon(b); err != nil {
		return err
	}
	if err := t.ClaimUID(b.AssetUID, AssetRef{KindBeacon, b.ID}); err != nil {
		return fmt.Errorf("asset_uid %s: %w", b.AssetUID, err)
	}
	if b.MAC != "" && b.Active {
		if _, err := t.Attach(b.MAC, KindBeacon, AssetRef{KindBeacon, b.ID}, t.Now, reason); err != nil {
			return err
		}
	}
	return nil
}

// ListBeacons returns every beacon ordered by id.
func (db *DB) ListBeacons() ([]Beacon, error) {
	var out []Beacon
	err := db.ViewAssets(func(t *AssetTx) error {
		return t.EachBeacon(func(b *Beacon) error { out = append(out, *b); return nil })
	})
	return out, err
}

// CreateGateway stores g with a new id, claims its uid and attaches its MAC.
func (db *DB) CreateGateway(g *Gateway) error {
	return db.UpdateAssets(time.Now(), func(t *AssetTx) error {
		if g.AssetUID == "" {
			g.AssetUID = t.UniqueLegacyUID(g.MAC)
		}
		if err := t.PutGateway(g); err != nil {
			return err
		}
		if err := t.ClaimUID(g.AssetUID, AssetRef{KindGateway, g.ID}); err != nil {
			return fmt.Errorf("asset_uid %s: %w", g.AssetUID, err)
		}
		if g.MAC == "" {
			return nil
		}
		_, err := t.Attach(g.MAC, KindGateway, AssetRef{KindGateway, g.ID}, t.Now, "created")
		return err
	})
}

// ListGateways returns every gateway ordered by id.
func (db *DB) ListGateways() ([]Gateway, error) {
	var out []Gateway
	err := db.ViewAssets(func(t *AssetTx) error {
		return t.EachGateway(func(g *Gateway) error { out = append(out, *g); return nil })
	})
	return out, err
}

// SeedBeacons inserts n beacons in one transaction (load generation and
// benchmarks). It keeps the uid and device indexes but trusts mk to hand
// out distinct MACs and uids.
func (db *DB) SeedBeacons(n int, mk func(i int) Beacon) error {
	return db.UpdateAssets(time.Now(), func(t *AssetTx) error {
		for i := 0; i < n; i++ {
			b := mk(i)
			if err := t.insertBeacon(&b, "created"); err != nil {
				return err
			}
		}
		return nil
	})
}

// UIDOf returns the asset_uid of ref.
func (t *AssetTx) UIDOf(ref AssetRef) (string, error) {
	switch ref.Kind {
	case KindBeacon:
		b, err := t.Beacon(ref.ID)
		if err != nil {
			return "", err
		}
		return b.AssetUID, nil
	case KindGateway:
		g, err := t.Gateway(ref.ID)
		if err != nil {
			return "", err
		}
		return g.AssetUID, nil
	case KindEInk:
		d, err := t.EInk(ref.ID)
		if err != nil {
			return "", err
		}
		return d.AssetUID, nil
	}
	return "", fmt.Errorf("asset kind %q: %w", ref.Kind, ErrNotFound)
}

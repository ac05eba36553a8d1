package store

import (
	"time"

	bolt "go.etcd.io/bbolt"
)

// Beacon is a beacon asset. The asset registry issue extends it; the
// fields here are what ingest needs to resolve a MAC.
type Beacon struct {
	ID         uint64    `json:"id"`
	AssetUID   string    `json:"asset_uid"`
	MAC        string    `json:"mac"`
	Name       string    `json:"name"`
	Type       string    `json:"type"`
	LocationID uint64    `json:"location_id,omitempty"`
	Active     bool      `json:"active"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// Gateway is a gateway asset.
type Gateway struct {
	ID         uint64    `json:"id"`
	AssetUID   string    `json:"asset_uid"`
	MAC        string    `json:"mac"`
	Name       string    `json:"name"`
	IP         string    `json:"ip,omitempty"`
	LocationID uint64    `json:"location_id,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// CreateBeacon stores b with a new id; the MAC must not be attached to
// another beacon.
func (db *DB) CreateBeacon(b *Beacon) error {
	return db.bolt.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bBeacons)
		dup := false
		_ = bk.ForEach(func(k, v []byte) error {
			var x Beacon
			if getJSON(bk, k, &x) == nil && x.MAC == b.MAC {
				dup = true
			}
			return nil
		})
		if dup {
			return ErrDuplicate
		}
		id, err := bk.NextSequence()
		if err != nil {
			return err
		}
		b.ID = id
		return putJSON(bk, itob(id), b)
	})
}

// ListBeacons returns every beacon ordered by id.
func (db *DB) ListBeacons() ([]Beacon, error) {
	var out []Beacon
	err := db.bolt.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bBeacons)
		return bk.ForEach(func(k, v []byte) error {
			var b Beacon
			if err := getJSON(bk, k, &b); err != nil {
				return err
			}
			out = append(out, b)
			return nil
		})
	})
	return out, err
}

// CreateGateway stores g with a new id.
func (db *DB) CreateGateway(g *Gateway) error {
	return db.bolt.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bGateways)
		id, err := bk.NextSequence()
		if err != nil {
			return err
		}
		g.ID = id
		return putJSON(bk, itob(id), g)
	})
}

// ListGateways returns every gateway ordered by id.
func (db *DB) ListGateways() ([]Gateway, error) {
	var out []Gateway
	err := db.bolt.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bGateways)
		return bk.ForEach(func(k, v []byte) error {
			var g Gateway
			if err := getJSON(bk, k, &g); err != nil {
				return err
			}
			out = append(out, g)
			return nil
		})
	})
	return out, err
}

// SeedBeacons inserts n beacons in one transaction (load generation and
// benchmarks); it skips the per-insert duplicate scan.
func (db *DB) SeedBeacons(n int, mk func(i int) Beacon) error {
	return db.bolt.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bBeacons)
		for i := 0; i < n; i++ {
			b := mk(i)
			id, err := bk.NextSequence()
			if err != nil {
				return err
			}
			b.ID = id
			if err := putJSON(bk, itob(id), &b); err != nil {
				return err
			}
		}
		return nil
	})
}

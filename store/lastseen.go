package store

import (
	"encoding/json"
	"errors"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Last-seen times are flushed from memory in batches (they change on every
// report, so they are never written per report). Keys are asset_uids for
// registered assets and "gw:<MAC>" for gateways.

// PutLastSeen returns a writer op storing the given times.
func PutLastSeen(seen map[string]int64) func(tx *bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		b := tx.Bucket(bLastSeen)
		for k, ts := range seen {
			if err := b.Put([]byte(k), itob(uint64(ts))); err != nil {
				return err
			}
		}
		return nil
	}
}

// LoadLastSeen returns every stored last-seen time.
func (db *DB) LoadLastSeen() (map[string]int64, error) {
	out := map[string]int64{}
	err := db.bolt.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bLastSeen).ForEach(func(k, v []byte) error {
			out[string(k)] = int64(btoi(v))
			return nil
		})
	})
	return out, err
}

// DiscoveredDevice is a MAC heard on air that no asset owns yet; the import
// endpoints create assets from this list.
type DiscoveredDevice struct {
	MAC       string   `json:"mac"`
	FirstSeen int64    `json:"first_seen"`
	LastSeen  int64    `json:"last_seen"`
	Kinds     []string `json:"kinds"`
	LastRSSI  int      `json:"last_rssi"`
	Gateway   string   `json:"gateway"`
	Count     int64    `json:"count"`
	// IsGateway marks MACs seen as gateways (topic identity) rather than beacons.
	IsGateway bool `json:"is_gateway,omitempty"`
}

// PutDiscovered returns a writer op replacing the discovery list.
func PutDiscovered(list []DiscoveredDevice) func(tx *bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bDiscovery); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
			return err
		}
		b, err := tx.CreateBucket(bDiscovery)
		if err != nil {
			return err
		}
		for _, d := range list {
			data, err := json.Marshal(d)
			if err != nil {
				return err
			}
			key := d.MAC
			if d.IsGateway {
				key = "gw:" + key
			}
			if err := b.Put([]byte(key), data); err != nil {
				return err
			}
		}
		return nil
	}
}

// LoadDiscovered returns the stored discovery list.
func (db *DB) LoadDiscovered() ([]DiscoveredDevice, error) {
	var out []DiscoveredDevice
	err := db.bolt.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bDiscovery).ForEach(func(k, v []byte) error {
			var d DiscoveredDevice
			if err := json.Unmarshal(v, &d); err != nil {
				return err
			}
			out = append(out, d)
			return nil
		})
	})
	return out, err
}

package store

import (
	"encoding/json"
	"errors"
	"fmt"

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

// keyLastingLinks (kv bucket) holds the gateways whose latest connection
// to the embedded broker lasted (ingest.LastingConnection): after a
// restart the tracking engine judges down one of them that does not
// connect again, which it otherwise could not tell from a gateway that
// never kept a connection.
const keyLastingLinks = "ingest/lasting_links"

// PutLastingLinks returns a writer op storing the gateways (MACs) whose
// connection lasted.
func PutLastingLinks(macs []string) func(tx *bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		data, err := json.Marshal(macs)
		if err != nil {
			return err
		}
		return tx.Bucket(bKV).Put([]byte(keyLastingLinks), data)
	}
}

// LoadLastingLinks returns the gateways PutLastingLinks stored last (none
// before the first).
func (db *DB) LoadLastingLinks() ([]string, error) {
	v, err := db.GetKV(keyLastingLinks)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var macs []string
	if err := json.Unmarshal(v, &macs); err != nil {
		return nil, fmt.Errorf("%s: %w", keyLastingLinks, err)
	}
	return macs, nil
}

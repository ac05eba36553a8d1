package store

import (
	"encoding/binary"

	bolt "go.etcd.io/bbolt"
)

// bGatewayClock holds each gateway's last clock offset estimate (the
// sensor monitor's, appliance/sensors/lateness.go): gateway MAC (6
// bytes) -> least (receive - ts) in ms, int64 big-endian. Kept so that a
// gateway flushing old readings right after a restart is measured
// against what its clock was, not against its flush.
var bGatewayClock = []byte("gateway_clock")

// PutGatewayClock records a gateway's clock offset estimate.
func PutGatewayClock(tx *bolt.Tx, mac [6]byte, off int64) error {
	b, err := tx.CreateBucketIfNotExists(bGatewayClock)
	if err != nil {
		return err
	}
	return b.Put(mac[:], binary.BigEndian.AppendUint64(nil, uint64(off)))
}

// GatewayClocks returns the recorded clock offset estimates.
func (db *DB) GatewayClocks() (map[[6]byte]int64, error) {
	out := map[[6]byte]int64{}
	err := db.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bGatewayClock)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			if len(k) == 6 && len(v) == 8 {
				out[[6]byte(k)] = int64(binary.BigEndian.Uint64(v))
			}
			return nil
		})
	})
	return out, err
}

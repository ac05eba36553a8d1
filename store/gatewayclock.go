package store

import (
	"encoding/binary"
	"math"

	bolt "go.etcd.io/bbolt"
)

// bGatewayClock holds each gateway's last clock offset estimate (the
// sensor monitor's, appliance/sensors/lateness.go): gateway MAC (6
// bytes) -> least (receive - ts) in ms and when it was made (Unix ms),
// two int64 big-endian. Kept so that a
// gateway flushing old readings right after a restart is measured
// against what its clock was, not against its flush.
var bGatewayClock = []byte("gateway_clock")

// GatewayClock is a gateway's clock offset estimate (ms) and when it was
// made (Unix ms).
type GatewayClock struct{ Off, At int64 }

// PutGatewayClock records a gateway's clock offset estimate.
func PutGatewayClock(tx *bolt.Tx, mac [6]byte, c GatewayClock) error {
	b, err := tx.CreateBucketIfNotExists(bGatewayClock)
	if err != nil {
		return err
	}
	v := binary.BigEndian.AppendUint64(nil, uint64(c.Off))
	return b.Put(mac[:], binary.BigEndian.AppendUint64(v, uint64(c.At)))
}

// GatewayClocks returns the recorded clock offset estimates made at or
// after since, and deletes the older ones (gateways gone, ids used once:
// kept, they filled the monitor's table for good: a review).
func (db *DB) GatewayClocks(since int64) (map[[6]byte]GatewayClock, error) {
	out := map[[6]byte]GatewayClock{}
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bGatewayClock)
		if b == nil {
			return nil
		}
		var old [][]byte
		err := b.ForEach(func(k, v []byte) error {
			c := GatewayClock{At: math.MinInt64}
			if len(v) == 16 {
				c = GatewayClock{Off: int64(binary.BigEndian.Uint64(v)), At: int64(binary.BigEndian.Uint64(v[8:]))}
			}
			if len(k) != 6 || c.At < since {
				old = append(old, k)
				return nil
			}
			out[[6]byte(k)] = c
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range old {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

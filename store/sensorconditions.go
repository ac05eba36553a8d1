package store

import (
	"encoding/binary"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// Sensor conditions (out of range, low battery, not seen, calibration
// expired) persist like health conditions: an active set (key ->
// SensorCondition, resolved ones removed) and a log of transitions, each
// an explicit active or resolved record. Unlike health records they are
// written from the ingest writer's transaction, which may be re-run, so
// a record's key is derived from its content (at | key | phase) instead of
// a transaction-time sequence: the deciding side numbers each record
// (Seq), and re-applying a transition rewrites the same record.
//
// The buckets are created on first write, so the feature needs no schema
// step; readers treat a missing bucket as empty.

var (
	bSensorCondState   = []byte("sensor_cond_state")   // key -> SensorCondition (active only)
	bSensorCondRecords = []byte("sensor_cond_records") // at(8) | seq(8) -> SensorConditionRecord
	bSensorIntervals   = []byte("sensor_intervals")    // asset_uid -> update interval (s, uint32)
)

// ConditionUnmonitored is the message of a sensor condition resolved
// because its device was deleted or retired: no reading can resolve it
// any more.
const ConditionUnmonitored = "No longer monitored (deleted or retired)"

// SensorCondition is a currently active sensor condition.
type SensorCondition struct {
	Key     string `json:"key"`
	Kind    string `json:"kind"`
	Subject string `json:"subject"` // asset_uid, or MAC for an unassigned device
	Since   int64  `json:"since"`
	At      int64  `json:"at"` // last update
	Message string `json:"message"`
}

// SensorConditionRecord is one transition (Phase HealthActive or
// HealthResolved). Cursor orders records and resumes a reader.
type SensorConditionRecord struct {
	Cursor  string `json:"cursor"`
	Seq     uint64 `json:"seq"`
	Key     string `json:"key"`
	Kind    string `json:"kind"`
	Subject string `json:"subject"`
	Phase   string `json:"phase"`
	At      int64  `json:"at"`
	Since   int64  `json:"since"`
	Message string `json:"message"`
}

func sensorRecordKey(r *SensorConditionRecord) []byte {
	k := binary.BigEndian.AppendUint64(nil, uint64(r.At))
	return binary.BigEndian.AppendUint64(k, r.Seq)
}

// LastSensorConditionSeq returns the highest Seq stored, so a restarted
// process numbers on from it.
func (db *DB) LastSensorConditionSeq() (uint64, error) {
	var last uint64
	err := db.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bSensorCondRecords)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			if len(k) == 16 {
				last = max(last, binary.BigEndian.Uint64(k[8:]))
			}
			return nil
		})
	})
	return last, err
}

// ApplySensorConditions stores transitions in tx; idempotent.
func ApplySensorConditions(tx *bolt.Tx, recs []SensorConditionRecord) error {
	state, err := tx.CreateBucketIfNotExists(bSensorCondState)
	if err != nil {
		return err
	}
	log, err := tx.CreateBucketIfNotExists(bSensorCondRecords)
	if err != nil {
		return err
	}
	for i := range recs {
		r := recs[i]
		r.Cursor = ""
		if err := putJSON(log, sensorRecordKey(&r), &r); err != nil {
			return err
		}
		if r.Phase == HealthResolved {
			key := resolvedKey(tx, state, &r)
			if err := state.Delete(key); err != nil {
				return err
			}
			if err := markMoved(tx, key, nil); err != nil {
				return err
			}
			continue
		}
		key, subject := r.Key, r.Subject
		if state.Get([]byte(key)) == nil {
			var from []string // a new condition: not a moved one
			if cur := aliasOf(tx, subject); cur != "" && cur != subject {
				// Decided under a former uid after the rename's commit (the
				// monitor follows it later): kept under the old key no one
				// would resolve, the next start took the current key for
				// recovered (a review). Marked as moved from it, so its late
				// recovery ends it too; a survivor's own condition wins, as
				// in the rename, but the moved one takes the update.
				key, subject = r.Kind+":"+cur, cur
				if state.Get([]byte(key)) != nil {
					if !slices.Contains(movedFrom(tx, []byte(key)), r.Key) {
						continue
					}
					from = movedFrom(tx, []byte(key))
				} else {
					from = []string{r.Key}
				}
			}
			if err := markMoved(tx, []byte(key), from); err != nil {
				return err
			}
		} else if prev, ok := sensorCondSince(state, key); ok && prev != r.Since {
			// A new condition of the key's own over a moved one (a merge
			// survivor's reading, before the monitor followed the merge):
			// no longer the moved one, so a late recovery under the former
			// uid must not end it (a review). An update keeps its start,
			// and its mark.
			if err := markMoved(tx, []byte(key), nil); err != nil {
				return err
			}
		}
		c := SensorCondition{Key: key, Kind: r.Kind, Subject: subject, Since: r.Since, At: r.At, Message: r.Message}
		if err := putJSON(state, []byte(key), &c); err != nil {
			return err
		}
	}
	return nil
}

// sensorCondSince is the start of the condition stored under key.
func sensorCondSince(state *bolt.Bucket, key string) (int64, bool) {
	var c SensorCondition
	if err := getJSON(state, []byte(key), &c); err != nil {
		return 0, false
	}
	return c.Since, true
}

// resolvedKey is the key a resolved record ends: its own, or, when that
// is gone and its subject is a former uid, the condition a remint or
// merge moved from it (bSensorCondMoved). A reading the sensor monitor
// judged under the old uid between the rename's commit and its own
// rename resolved nothing, and the moved condition stayed active in the
// store: the next start alerted again for a fridge in range (a review).
// A merge survivor's own condition is not it, even with the same start
// (recognised by its start, it was ended when both began in the same
// millisecond: a review).
func resolvedKey(tx *bolt.Tx, state *bolt.Bucket, r *SensorConditionRecord) []byte {
	key := []byte(r.Key)
	if state.Get(key) != nil {
		return key
	}
	cur := aliasOf(tx, r.Subject)
	if cur == "" || cur == r.Subject {
		return key
	}
	moved := []byte(r.Kind + ":" + cur)
	if state.Get(moved) != nil && slices.Contains(movedFrom(tx, moved), r.Key) {
		return moved
	}
	return key
}

// ActiveSensorConditions returns the active set in key order.
func (db *DB) ActiveSensorConditions() ([]SensorCondition, error) {
	var out []SensorCondition
	err := db.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bSensorCondState)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			var c SensorCondition
			if err := getJSON(b, k, &c); err != nil {
				return err
			}
			out = append(out, c)
			return nil
		})
	})
	return out, err
}

// SensorConditionRecords returns up to limit transitions after cursor
// ("" = from the start), oldest first.
func (db *DB) SensorConditionRecords(cursor string, limit int) ([]SensorConditionRecord, error) {
	var out []SensorConditionRecord
	err := db.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bSensorCondRecords)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		k, _ := c.Seek([]byte(cursor))
		if k != nil && string(k) == cursor {
			k, _ = c.Next()
		}
		for ; k != nil && len(out) < limit; k, _ = c.Next() {
			var r SensorConditionRecord
			if err := getJSON(b, k, &r); err != nil {
				return err
			}
			r.Cursor = string(k)
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// PutSensorInterval records a sensor's update interval (seconds).
func PutSensorInterval(tx *bolt.Tx, uid string, seconds uint32) error {
	b, err := tx.CreateBucketIfNotExists(bSensorIntervals)
	if err != nil {
		return err
	}
	return b.Put([]byte(uid), binary.BigEndian.AppendUint32(nil, seconds))
}

// SensorIntervals returns the recorded update intervals (seconds).
func (db *DB) SensorIntervals() (map[string]uint32, error) {
	out := map[string]uint32{}
	err := db.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bSensorIntervals)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			if len(v) == 4 {
				out[string(k)] = binary.BigEndian.Uint32(v)
			}
			return nil
		})
	})
	return out, err
}

// DeleteSensorConditionRecordsBefore removes transitions older than at
// (the active set is untouched) and returns how many; the log is keyed by
// time first, so this is one seek and a walk from the start.
func DeleteSensorConditionRecordsBefore(tx *bolt.Tx, at int64) (int, error) {
	b := tx.Bucket(bSensorCondRecords)
	if b == nil || at <= 0 {
		return 0, nil
	}
	limit := binary.BigEndian.AppendUint64(nil, uint64(at))
	n := 0
	c := b.Cursor()
	for k, _ := c.First(); k != nil && string(k) < string(limit); k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

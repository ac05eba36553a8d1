package store

import (
	bolt "go.etcd.io/bbolt"
)

// Health conditions (mqtt_down, alertsys_down, push_down,
// push_test_failed, fleet:{stale|never_seen}:{asset_uid}) persist in two
// buckets: the active set (key -> HealthCondition; a resolved condition is
// removed, so the set stays small), and an append-only log of transitions
// (id -> HealthRecord), each an explicit active or resolved record, which
// the push subsystem publishes from.

// Health record phases.
const (
	HealthActive   = "active"
	HealthResolved = "resolved"
)

// HealthCondition is a currently active condition.
type HealthCondition struct {
	Key       string `json:"key"`
	Since     int64  `json:"since"`      // Unix ms the condition became active
	UpdatedAt int64  `json:"updated_at"` // last time its message changed
	Message   string `json:"message"`
}

// HealthRecord is one transition.
type HealthRecord struct {
	ID      uint64 `json:"id"`
	Key     string `json:"key"`
	Phase   string `json:"phase"`
	At      int64  `json:"at"`
	Message string `json:"message"`
	// Since is when the condition became active (on resolved records: how
	// long it lasted is At - Since).
	Since int64 `json:"since"`
}

// ApplyHealth stores transitions in one transaction: each gets the next id,
// and the active set follows them. It returns the records with their ids.
func (db *DB) ApplyHealth(recs []HealthRecord) ([]HealthRecord, error) {
	out := make([]HealthRecord, len(recs))
	copy(out, recs)
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		log, state := tx.Bucket(bHealthRecords), tx.Bucket(bHealthState)
		for i := range out {
			r := &out[i]
			id, err := log.NextSequence()
			if err != nil {
				return err
			}
			r.ID = id
			if err := putJSON(log, itob(id), r); err != nil {
				return err
			}
			if r.Phase == HealthResolved {
				if err := state.Delete([]byte(r.Key)); err != nil {
					return err
				}
				continue
			}
			c := HealthCondition{Key: r.Key, Since: r.Since, UpdatedAt: r.At, Message: r.Message}
			if err := putJSON(state, []byte(r.Key), &c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ActiveHealth returns the active conditions in key order.
func (db *DB) ActiveHealth() ([]HealthCondition, error) {
	var out []HealthCondition
	err := db.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bHealthState)
		return b.ForEach(func(k, _ []byte) error {
			var c HealthCondition
			if err := getJSON(b, k, &c); err != nil {
				return err
			}
			out = append(out, c)
			return nil
		})
	})
	return out, err
}

// HealthRecords returns up to limit transitions with id > afterID, oldest
// first.
func (db *DB) HealthRecords(afterID uint64, limit int) ([]HealthRecord, error) {
	var out []HealthRecord
	err := db.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bHealthRecords)
		c := b.Cursor()
		for k, _ := c.Seek(itob(afterID + 1)); k != nil && len(out) < limit; k, _ = c.Next() {
			var r HealthRecord
			if err := getJSON(b, k, &r); err != nil {
				return err
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

package store

import (
	"encoding/json"

	bolt "go.etcd.io/bbolt"
)

// Push persistence: a durable outbox of messages not yet acknowledged by
// the push server (id -> PushOutbox) and a small state map (name -> JSON)
// holding cooldown anchors, last successful delivery times and pending
// digest items, so schedules survive restarts. Like the sensor-condition
// buckets they are created on first write and readers treat a missing
// bucket as empty, so the feature needs no schema step.

var (
	bPushOutbox = []byte("push_outbox") // id(8) -> PushOutbox
	bPushState  = []byte("push_state")  // name -> JSON
)

// PushOutbox is one queued message; Body already carries its alert data
// v1 record, so a re-send after a restart is byte-identical.
type PushOutbox struct {
	ID       uint64   `json:"id"`
	Topic    string   `json:"topic"`
	Title    string   `json:"title"`
	Message  string   `json:"message"`
	Tags     []string `json:"tags"`
	Priority int      `json:"priority"`
	Created  int64    `json:"created"`
}

// EnqueuePush appends messages to the outbox in one transaction and
// returns them with their ids. When stateName is not empty, state is
// stored in the same transaction, so the messages and the schedule that
// produced them (e.g. a digest bucket mark) persist together or not at all.
func (db *DB) EnqueuePush(msgs []PushOutbox, stateName string, state any) ([]PushOutbox, error) {
	out := append([]PushOutbox(nil), msgs...)
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		if stateName != "" {
			sb, err := tx.CreateBucketIfNotExists(bPushState)
			if err != nil {
				return err
			}
			if err := putJSON(sb, []byte(stateName), state); err != nil {
				return err
			}
		}
		b, err := tx.CreateBucketIfNotExists(bPushOutbox)
		if err != nil {
			return err
		}
		for i := range out {
			id, err := b.NextSequence()
			if err != nil {
				return err
			}
			out[i].ID = id
			if err := putJSON(b, itob(id), &out[i]); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// PushOutboxPending returns up to limit queued messages, oldest first.
func (db *DB) PushOutboxPending(limit int) ([]PushOutbox, error) {
	var out []PushOutbox
	err := db.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bPushOutbox)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.First(); k != nil && len(out) < limit; k, v = c.Next() {
			var m PushOutbox
			if err := json.Unmarshal(v, &m); err != nil {
				return err
			}
			out = append(out, m)
		}
		return nil
	})
	return out, err
}

// AckPush removes an acknowledged message; acking twice is harmless.
func (db *DB) AckPush(id uint64) error {
	return db.bolt.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bPushOutbox)
		if b == nil {
			return nil
		}
		return b.Delete(itob(id))
	})
}

// PutPushState stores one named state blob.
func (db *DB) PutPushState(name string, v any) error {
	return db.bolt.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bPushState)
		if err != nil {
			return err
		}
		return putJSON(b, []byte(name), v)
	})
}

// PushState loads one named state blob into v; ok is false when absent.
func (db *DB) PushState(name string, v any) (ok bool, err error) {
	err = db.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bPushState)
		if b == nil || b.Get([]byte(name)) == nil {
			return nil
		}
		ok = true
		return getJSON(b, []byte(name), v)
	})
	return ok, err
}

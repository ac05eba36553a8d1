package store

import (
	"time"

	bolt "go.etcd.io/bbolt"
)

// LogRecord is one application-log entry (who changed what).
type LogRecord struct {
	ID      uint64    `json:"id"`
	Time    time.Time `json:"time"`
	Action  string    `json:"action"`
	Subject string    `json:"subject,omitempty"`
	Actor   string    `json:"actor,omitempty"`
	Message string    `json:"message"`
}

// AppendLog stores r with the next id.
func (db *DB) AppendLog(r *LogRecord) error {
	return db.bolt.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bAppLog)
		id, err := b.NextSequence()
		if err != nil {
			return err
		}
		r.ID = id
		return putJSON(b, itob(id), r)
	})
}

// ListLogs returns up to limit records older than before (0 = newest),
// newest first, and the cursor for the next page (0 when exhausted).
func (db *DB) ListLogs(before uint64, limit int) ([]LogRecord, uint64, error) {
	if limit <= 0 {
		return nil, 0, nil
	}
	var out []LogRecord
	var next uint64
	err := db.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bAppLog)
		c := b.Cursor()
		var k []byte
		if before == 0 {
			k, _ = c.Last()
		} else {
			k, _ = c.Seek(itob(before))
			if k == nil {
				k, _ = c.Last()
			} else {
				k, _ = c.Prev()
			}
		}
		for ; k != nil; k, _ = c.Prev() {
			if len(out) == limit {
				next = out[len(out)-1].ID
				break
			}
			var r LogRecord
			if err := getJSON(b, k, &r); err != nil {
				return err
			}
			out = append(out, r)
		}
		return nil
	})
	return out, next, err
}

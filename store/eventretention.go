package store

import (
	"bytes"
	"encoding/binary"

	bolt "go.etcd.io/bbolt"
)

var (
	markWarning = []byte{'w'}
	markOther   = []byte{'o'}
)

// DeleteEventsBefore deletes, in tx, events created before allBefore and
// warnings (motion, presence) created before warningsBefore, with their
// index entries and button-press audit records, at most limit of them. It
// returns how many went and whether more may be left (call again in a new
// transaction: the ingest writer shares the write lock).
//
// Ids keep rising (the bucket sequence), so deleting never lets an id be
// reused, and an after_id reader simply finds fewer events.
func DeleteEventsBefore(tx *bolt.Tx, warningsBefore, allBefore int64, limit int) (int, bool, error) {
	byTime, evs := tx.Bucket(bEventsByTime), tx.Bucket(bEvents)
	if byTime == nil || evs == nil {
		return 0, false, nil
	}
	stop := max(warningsBefore, allBefore)
	type victim struct {
		key []byte
		id  uint64
	}
	var del []victim
	var marks [][2][]byte
	more := false
	c := byTime.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(k) != 16 {
			continue
		}
		at := int64(binary.BigEndian.Uint64(k))
		if at >= stop {
			break
		}
		if len(del) >= limit {
			more = true
			break
		}
		id := binary.BigEndian.Uint64(k[8:])
		warning := bytes.Equal(v, markWarning)
		if len(v) == 0 && at < warningsBefore {
			// Written before entries were marked: look once, then mark.
			var e Event
			if err := getJSON(evs, itob(id), &e); err == nil {
				warning = e.Status == EventWarning
			}
			m := markOther
			if warning {
				m = markWarning
			}
			marks = append(marks, [2][]byte{clone(k), m})
		}
		if at < allBefore || (warning && at < warningsBefore) {
			del = append(del, victim{clone(k), id})
		}
	}
	for _, m := range marks {
		if err := byTime.Put(m[0], m[1]); err != nil {
			return 0, false, err
		}
	}
	byUID, audit := tx.Bucket(bEventsByUID), tx.Bucket(bButtonAudit)
	for _, d := range del {
		var e Event
		err := getJSON(evs, itob(d.id), &e)
		if err != nil && err != ErrNotFound {
			return 0, false, err
		}
		if err == nil && e.AssetUID != "" {
			if byUID != nil {
				if err := byUID.Delete(timeKey(uidPrefix(e.AssetUID), e.CreatedAt, e.ID)); err != nil {
					return 0, false, err
				}
			}
			if audit != nil {
				if err := audit.Delete(auditKey(e.AssetUID, e.ID)); err != nil {
					return 0, false, err
				}
			}
		}
		if err := evs.Delete(itob(d.id)); err != nil {
			return 0, false, err
		}
		if err := notePending(tx, d.id, false); err != nil {
			return 0, false, err
		}
		if err := byTime.Delete(d.key); err != nil {
			return 0, false, err
		}
	}
	return len(del), more, nil
}

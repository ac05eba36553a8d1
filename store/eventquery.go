package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"

	bolt "go.etcd.io/bbolt"
)

// EventFilter selects events; zero fields match everything. Since and Until
// bound created_at (Unix ms, both inclusive; 0 = unbounded).
type EventFilter struct {
	Status   string
	Type     string
	AssetUID string
	Since    int64
	Until    int64
	// Test: nil matches both, otherwise only events whose Test equals it.
	Test *bool
	// Locations, when not nil, keeps only events of beacons homed in one
	// of them (a location-scoped user's view).
	Locations map[uint64]bool
}

func (f *EventFilter) match(e *Event) bool {
	switch {
	case f.Status != "" && e.Status != f.Status,
		f.Type != "" && e.Type != f.Type,
		f.AssetUID != "" && e.AssetUID != f.AssetUID,
		f.Since != 0 && e.CreatedAt < f.Since,
		f.Until != 0 && e.CreatedAt > f.Until,
		f.Test != nil && e.Test != *f.Test,
		f.Locations != nil && !f.Locations[e.LocationID]:
		return false
	}
	return true
}

// EventCursor is a position in the newest-first order (created_at, id).
// The zero cursor starts at the newest event.
type EventCursor struct {
	At int64
	ID uint64
}

// DefaultScanBudget bounds how many index entries one page may examine, so
// a selective filter over a long history cannot hold a read transaction
// (and a request) for long; the page then comes back short with a cursor.
const DefaultScanBudget = 20000

// ListEvents returns up to limit events matching f, newest first, starting
// strictly after before (zero: from the newest). next is nil when the
// history is exhausted; otherwise pass it back for the following page.
func (db *DB) ListEvents(f EventFilter, before EventCursor, limit, budget int) ([]Event, *EventCursor, error) {
	if budget <= 0 {
		budget = DefaultScanBudget
	}
	var (
		out  []Event
		next *EventCursor
	)
	err := db.bolt.View(func(tx *bolt.Tx) error {
		idx, prefix := tx.Bucket(bEventsByTime), []byte(nil)
		if f.AssetUID != "" {
			idx, prefix = tx.Bucket(bEventsByUID), uidPrefix(f.AssetUID)
		}
		evs := tx.Bucket(bEvents)
		// upper is exclusive: the cursor position, or just past Until.
		upper := timeKey(prefix, math.MaxInt64, math.MaxUint64)
		if f.Until != 0 {
			upper = timeKey(prefix, f.Until+1, 0)
		}
		if before != (EventCursor{}) {
			if cur := timeKey(prefix, before.At, before.ID); bytes.Compare(cur, upper) < 0 {
				upper = cur
			}
		}
		c := idx.Cursor()
		k, _ := c.Seek(upper)
		if k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
		for scanned := 0; k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+16; k, _ = c.Prev() {
			at := int64(binary.BigEndian.Uint64(k[len(prefix):]))
			id := binary.BigEndian.Uint64(k[len(prefix)+8:])
			if f.Since != 0 && at < f.Since {
				return nil
			}
			if scanned >= budget {
				next = &EventCursor{At: at, ID: id + 1}
				if id == math.MaxUint64 {
					next = &EventCursor{At: at + 1}
				}
				return nil
			}
			scanned++
			var e Event
			if err := getJSON(evs, itob(id), &e); err != nil {
				continue // index entry of a vanished event
			}
			if !f.match(&e) {
				continue
			}
			out = append(out, e)
			if len(out) == limit {
				next = &EventCursor{At: at, ID: id}
				// Only promise a next page when there is one.
				if pk, _ := c.Prev(); pk == nil || !bytes.HasPrefix(pk, prefix) ||
					(f.Since != 0 && int64(binary.BigEndian.Uint64(pk[len(prefix):])) < f.Since) {
					next = nil
				}
				return nil
			}
		}
		return nil
	})
	return out, next, err
}

// EventsAfter returns up to limit events with id > afterID matching f,
// oldest first. last is the highest id examined (afterID when none): pass
// it back as afterID to continue. Because ids commit in order, nothing
// below last can appear later, so a client that always passes last back
// misses no event, whatever is inserted meanwhile.
func (db *DB) EventsAfter(f EventFilter, afterID uint64, limit, budget int) (out []Event, last uint64, err error) {
	if budget <= 0 {
		budget = DefaultScanBudget
	}
	last = afterID
	if afterID == math.MaxUint64 {
		return nil, last, nil
	}
	err = db.bolt.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bEvents).Cursor()
		scanned := 0
		for k, v := c.Seek(itob(afterID + 1)); k != nil && scanned < budget; k, v = c.Next() {
			scanned++
			last = btoi(k)
			var e Event
			if err := json.Unmarshal(v, &e); err != nil {
				continue
			}
			if f.match(&e) {
				out = append(out, e)
				if len(out) == limit {
					return nil
				}
			}
		}
		return nil
	})
	return out, last, err
}

// RecentEvents returns the events created at or after since, oldest first
// (dedup state is rebuilt from them at start).
func (db *DB) RecentEvents(since int64) ([]Event, error) {
	var out []Event
	err := db.bolt.View(func(tx *bolt.Tx) error {
		evs := tx.Bucket(bEvents)
		c := tx.Bucket(bEventsByTime).Cursor()
		for k, _ := c.Seek(timeKey(nil, since, 0)); k != nil; k, _ = c.Next() {
			var e Event
			if err := getJSON(evs, k[8:16], &e); err == nil {
				out = append(out, e)
			}
		}
		return nil
	})
	return out, err
}

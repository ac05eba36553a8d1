package store

import (
	"bytes"
	"encoding/json"
	"errors"

	bolt "go.etcd.io/bbolt"
)

// CloseZoneIntervalEntered closes uid's open interval that began at enter
// (a writer op; idempotent). The tracking engine closes this way instead
// of by ordinal because the ordinal is only assigned inside the
// transaction that appends the interval, and a merge renumbers ordinals.
// The search runs newest first, so the usual case reads one record.
func CloseZoneIntervalEntered(tx *bolt.Tx, uid string, enter, leave int64) error {
	b := tx.Bucket(bZoneIntervals)
	for n, base := btoi(tx.Bucket(bZoneIntervalSeq).Get([]byte(uid))), zoneIntervalBase(tx, uid); n >= base; n-- {
		var iv ZoneInterval
		err := getJSON(b, zoneKey(uid, n), &iv)
		if errors.Is(err, ErrNotFound) {
			return nil // retention deleted it and everything older
		}
		if err != nil {
			return err
		}
		if iv.Enter < enter {
			return nil // older than the one sought: it is not there
		}
		if iv.Enter != enter || iv.Leave != 0 {
			continue
		}
		iv.Leave = max(leave, iv.Enter)
		return putJSON(b, zoneKey(uid, n), &iv)
	}
	return nil
}

// CloseOpenZoneIntervals closes every interval left open: run once at
// start, when the engine has no live state and nothing would close them
// otherwise. Only a crash leaves one (a stop closes them). Each closes
// at its beacon's last sighting as the store has it (flushed every 30 s,
// so at most that much early), clamped to [enter, now]; a beacon with
// none stored was first heard less than a flush before the crash and
// closes at its enter time. Closing at now, as before, recorded the
// beacon in its zone for the whole downtime. It returns how many it
// closed.
func CloseOpenZoneIntervals(tx *bolt.Tx, now int64) (int, error) {
	b := tx.Bucket(bZoneIntervals)
	seen := tx.Bucket(bLastSeen)
	type fix struct {
		k  []byte
		iv ZoneInterval
	}
	var fixes []fix
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		// A closed interval carries the key "leave" (omitempty); the
		// colon keeps a zone named "leave" from passing for one.
		if !bytes.Contains(v, []byte(`"leave":`)) {
			var iv ZoneInterval
			if err := json.Unmarshal(v, &iv); err != nil {
				return 0, err
			}
			if iv.Leave == 0 {
				fixes = append(fixes, fix{clone(k), iv})
			}
		}
	}
	for _, f := range fixes {
		leave := f.iv.Enter
		if i := bytes.IndexByte(f.k, 0); i > 0 && seen != nil {
			if v := seen.Get(f.k[:i]); v != nil {
				leave = min(int64(btoi(v)), now)
			}
		}
		f.iv.Leave = max(leave, f.iv.Enter)
		if err := putJSON(b, f.k, &f.iv); err != nil {
			return 0, err
		}
	}
	return len(fixes), nil
}

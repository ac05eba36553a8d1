package store

import (
	"bytes"
	"encoding/json"

	bolt "go.etcd.io/bbolt"
)

// CloseZoneIntervalEntered closes uid's open interval that began at enter
// (a writer op; idempotent). The tracking engine closes this way instead
// of by ordinal because the ordinal is only assigned inside the
// transaction that appends the interval, and a merge renumbers ordinals.
// The search runs newest first, so the usual case reads one record.
func CloseZoneIntervalEntered(tx *bolt.Tx, uid string, enter, leave int64) error {
	b := tx.Bucket(bZoneIntervals)
	for n := btoi(tx.Bucket(bZoneIntervalSeq).Get([]byte(uid))); n >= 1; n-- {
		var iv ZoneInterval
		if err := getJSON(b, zoneKey(uid, n), &iv); err != nil {
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

// CloseOpenZoneIntervals closes every open interval at leave (clamped to
// its enter time): run once at start, when the engine has no live state
// and nothing would close them otherwise. It returns how many it closed.
func CloseOpenZoneIntervals(tx *bolt.Tx, leave int64) (int, error) {
	b := tx.Bucket(bZoneIntervals)
	type fix struct {
		k  []byte
		iv ZoneInterval
	}
	var fixes []fix
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if !bytes.Contains(v, []byte(`"leave"`)) {
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
		f.iv.Leave = max(leave, f.iv.Enter)
		if err := putJSON(b, f.k, &f.iv); err != nil {
			return 0, err
		}
	}
	return len(fixes), nil
}

package store

import (
	"encoding/json"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Condition state is keyed "<kind>:<asset_uid>" (sensor conditions) or
// "fleet:<what>:<asset_uid>" (health): a remint or merge that left these
// under the old uid would leave an alert that never resolves and raise a
// second one under the new uid the next time the condition is evaluated,
// so they are renamed with everything else. The transition logs are
// history and keep the uid they were written with.
//
// Sensor conditions of an unassigned device are keyed by its MAC on
// purpose; the each functions skip those, so the 8.0 adoption of
// MAC-keyed history does not turn them into legacy beacons.

// Rewriter names of the condition buckets.
const (
	RewriterSensorConditions = "sensor_conditions"
	RewriterSensorIntervals  = "sensor_intervals"
	RewriterHealthConditions = "health_conditions"
)

// renameSuffixed moves every key of b ending in ":"+oldUID to the same key
// ending in ":"+newUID, calling fix on the decoded value (nil: copy raw).
// When the new key exists already (a merge), the survivor's record wins.
//
// each, if set, is told every move first: from, to, and whether to was
// free (the record moves) or not (the survivor's stays).
func renameSuffixed(b *bolt.Bucket, oldUID, newUID string, fix func(v []byte, newKey string) ([]byte, error), each func(from, to string, free bool) error) (int, error) {
	if b == nil {
		return 0, nil
	}
	suffix := ":" + oldUID
	type move struct{ from, to string }
	var moves []move
	err := b.ForEach(func(k, _ []byte) error {
		if head, ok := strings.CutSuffix(string(k), suffix); ok {
			moves = append(moves, move{string(k), head + ":" + newUID})
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, m := range moves {
		if each != nil {
			if err := each(m.from, m.to, b.Get([]byte(m.to)) == nil); err != nil {
				return 0, err
			}
		}
		v := append([]byte(nil), b.Get([]byte(m.from))...)
		if err := b.Delete([]byte(m.from)); err != nil {
			return 0, err
		}
		if b.Get([]byte(m.to)) != nil {
			continue
		}
		if fix != nil {
			if v, err = fix(v, m.to); err != nil {
				return 0, err
			}
		}
		if err := b.Put([]byte(m.to), v); err != nil {
			return 0, err
		}
	}
	return len(moves), nil
}

func countSuffixed(b *bolt.Bucket, uid string) (int, error) {
	if b == nil {
		return 0, nil
	}
	n := 0
	err := b.ForEach(func(k, _ []byte) error {
		if strings.HasSuffix(string(k), ":"+uid) {
			n++
		}
		return nil
	})
	return n, err
}

// eachSuffixUID yields the uid after the last ':' of every key, skipping
// keys without one and MAC subjects.
func eachSuffixUID(b *bolt.Bucket, fn func(uid string) error) error {
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, _ []byte) error {
		i := strings.LastIndexByte(string(k), ':')
		if i < 0 {
			return nil
		}
		uid := string(k[i+1:])
		if _, isMAC := NormalizeMAC(uid); isMAC {
			return nil
		}
		return fn(uid)
	})
}

func renameSensorConds(tx *bolt.Tx, oldUID, newUID string) (int, error) {
	return renameSuffixed(tx.Bucket(bSensorCondState), oldUID, newUID, func(v []byte, key string) ([]byte, error) {
		var c SensorCondition
		if err := json.Unmarshal(v, &c); err != nil {
			return nil, err
		}
		c.Key, c.Subject = key, key[strings.LastIndexByte(key, ':')+1:]
		// A text naming the asset (calibration's) names it as it is now:
		// it went out in every digest with the former uid (a review).
		c.Message = strings.ReplaceAll(c.Message, oldUID, newUID)
		return json.Marshal(&c)
	}, func(from, to string, free bool) error { return followMove(tx, from, to, free) })
}

func countSensorConds(tx *bolt.Tx, uid string) (int, error) {
	return countSuffixed(tx.Bucket(bSensorCondState), uid)
}

func eachSensorCondUID(tx *bolt.Tx, fn func(uid string) error) error {
	return eachSuffixUID(tx.Bucket(bSensorCondState), fn)
}

func renameHealthConds(tx *bolt.Tx, oldUID, newUID string) (int, error) {
	return renameSuffixed(tx.Bucket(bHealthState), oldUID, newUID, func(v []byte, key string) ([]byte, error) {
		var c HealthCondition
		if err := json.Unmarshal(v, &c); err != nil {
			return nil, err
		}
		c.Key = key
		return json.Marshal(&c)
	}, nil)
}

func countHealthConds(tx *bolt.Tx, uid string) (int, error) {
	return countSuffixed(tx.Bucket(bHealthState), uid)
}

func eachHealthCondUID(tx *bolt.Tx, fn func(uid string) error) error {
	b := tx.Bucket(bHealthState)
	if b == nil {
		return nil
	}
	// Only fleet keys carry a uid; mqtt_down and friends have none.
	return b.ForEach(func(k, _ []byte) error {
		if !strings.HasPrefix(string(k), "fleet:") {
			return nil
		}
		return fn(string(k[strings.LastIndexByte(string(k), ':')+1:]))
	})
}

func renameSensorIntervals(tx *bolt.Tx, oldUID, newUID string) (int, error) {
	b := tx.Bucket(bSensorIntervals)
	if b == nil {
		return 0, nil
	}
	v := b.Get([]byte(oldUID))
	if v == nil {
		return 0, nil
	}
	v = append([]byte(nil), v...)
	if err := b.Delete([]byte(oldUID)); err != nil {
		return 0, err
	}
	if b.Get([]byte(newUID)) != nil {
		return 1, nil
	}
	return 1, b.Put([]byte(newUID), v)
}

func countSensorIntervals(tx *bolt.Tx, uid string) (int, error) {
	if b := tx.Bucket(bSensorIntervals); b != nil && b.Get([]byte(uid)) != nil {
		return 1, nil
	}
	return 0, nil
}

func eachSensorIntervalUID(tx *bolt.Tx, fn func(uid string) error) error {
	b := tx.Bucket(bSensorIntervals)
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, _ []byte) error {
		if _, isMAC := NormalizeMAC(string(k)); isMAC {
			return nil
		}
		return fn(string(k))
	})
}

// bSensorCondMoved marks a sensor condition a rename moved: its key ->
// the keys it had, newest first, one per line (a chain of renames keeps
// them all). A merge survivor's own condition, which the rename keeps in
// place of the source's, has no mark of the source.
var bSensorCondMoved = []byte("sensor_cond_moved")

// movedFrom is key's mark: the keys its condition had.
func movedFrom(tx *bolt.Tx, key []byte) []string {
	b := tx.Bucket(bSensorCondMoved)
	if b == nil {
		return nil
	}
	if v := b.Get(key); v != nil {
		return strings.Split(string(v), "\n")
	}
	return nil
}

// markMoved sets key's mark (nil: drops it).
func markMoved(tx *bolt.Tx, key []byte, from []string) error {
	if len(from) == 0 {
		if b := tx.Bucket(bSensorCondMoved); b != nil && b.Get(key) != nil {
			return b.Delete(key)
		}
		return nil
	}
	b, err := tx.CreateBucketIfNotExists(bSensorCondMoved)
	if err != nil {
		return err
	}
	return b.Put(key, []byte(strings.Join(from, "\n")))
}

// followMove keeps the marks as one condition moves: from's mark goes,
// and to, when the condition moves there (free), is marked with from and
// what from had (a chain).
func followMove(tx *bolt.Tx, from, to string, free bool) error {
	had := movedFrom(tx, []byte(from))
	if err := markMoved(tx, []byte(from), nil); err != nil {
		return err
	}
	if !free {
		return nil
	}
	return markMoved(tx, []byte(to), append([]string{from}, had...))
}

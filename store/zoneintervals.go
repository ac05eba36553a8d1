package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Zone intervals: when a beacon entered and left each zone, written by the
// tracking engine through the group-commit writer and read by the
// interval endpoints. Keys are uid 0x00 BE64(ordinal), ordinals dense per
// beacon from 1 (oldest), so "newest first" is a reverse seek and a page
// can be anchored at the ordinal that was newest when paging began.
var (
	bZoneIntervals   = []byte("zone_intervals")
	bZoneIntervalSeq = []byte("zone_interval_seq") // uid -> BE64(last ordinal)
)

// ZoneInterval is one stay of a beacon in a zone.
type ZoneInterval struct {
	Ordinal uint64 `json:"seq"`
	ZoneID  uint64 `json:"zone_id"`
	Zone    string `json:"zone"`
	MapID   uint64 `json:"map_id,omitempty"`
	Enter   int64  `json:"enter"`           // Unix ms
	Leave   int64  `json:"leave,omitempty"` // Unix ms; 0 while the beacon is still there
}

func zoneKey(uid string, ord uint64) []byte {
	k := append([]byte(uid), 0)
	return binary.BigEndian.AppendUint64(k, ord)
}

// AppendZoneInterval stores iv as the beacon's newest interval, assigning
// its ordinal (a writer op: idempotent only per call, so queue it once).
func AppendZoneInterval(tx *bolt.Tx, uid string, iv *ZoneInterval) error {
	seq := tx.Bucket(bZoneIntervalSeq)
	n := btoi(seq.Get([]byte(uid))) + 1
	if err := seq.Put([]byte(uid), itob(n)); err != nil {
		return err
	}
	iv.Ordinal = n
	return putJSON(tx.Bucket(bZoneIntervals), zoneKey(uid, n), iv)
}

// CloseZoneInterval sets the leave time of one interval (idempotent).
func CloseZoneInterval(tx *bolt.Tx, uid string, ordinal uint64, leave int64) error {
	b := tx.Bucket(bZoneIntervals)
	var iv ZoneInterval
	if err := getJSON(b, zoneKey(uid, ordinal), &iv); err != nil {
		return err
	}
	iv.Leave = leave
	return putJSON(b, zoneKey(uid, ordinal), &iv)
}

// ZoneCursor is a position in a beacon's newest-first interval list: the
// offset into that list as it stood when paging began (Anchor = the newest
// ordinal then). A client-made cursor is a bare offset into the current
// list; the cursors the server hands out carry the anchor, so intervals
// that arrive between pages neither repeat nor hide older ones.
type ZoneCursor struct {
	Offset int
	Anchor uint64 // 0: the list as it is now
}

// ErrBadCursor is returned for a cursor that does not parse.
var ErrBadCursor = errors.New("cursor must be a non-negative offset as returned in next_cursor")

// ParseZoneCursor parses "<offset>" or "<offset>_<anchor>".
func ParseZoneCursor(s string) (ZoneCursor, error) {
	if s == "" {
		return ZoneCursor{}, nil
	}
	off, anchor, hasAnchor := strings.Cut(s, "_")
	o, err := strconv.Atoi(off)
	if err != nil || o < 0 {
		return ZoneCursor{}, ErrBadCursor
	}
	c := ZoneCursor{Offset: o}
	if hasAnchor {
		a, err := strconv.ParseUint(anchor, 10, 64)
		if err != nil || a == 0 {
			return ZoneCursor{}, ErrBadCursor
		}
		c.Anchor = a
	}
	return c, nil
}

func (c ZoneCursor) String() string { return fmt.Sprintf("%d_%d", c.Offset, c.Anchor) }

// ZoneIntervals returns up to limit intervals of uid, newest first, from
// cursor, and the cursor of the next page (nil when exhausted).
func (db *DB) ZoneIntervals(uid string, cur ZoneCursor, limit int) ([]ZoneInterval, *ZoneCursor, error) {
	out := []ZoneInterval{}
	var next *ZoneCursor
	err := db.bolt.View(func(tx *bolt.Tx) error {
		newest := btoi(tx.Bucket(bZoneIntervalSeq).Get([]byte(uid)))
		anchor := cur.Anchor
		if anchor == 0 || anchor > newest {
			anchor = newest
		}
		if uint64(cur.Offset) >= anchor {
			return nil
		}
		b := tx.Bucket(bZoneIntervals)
		for ord := anchor - uint64(cur.Offset); ord >= 1 && len(out) < limit; ord-- {
			var iv ZoneInterval
			if err := getJSON(b, zoneKey(uid, ord), &iv); err != nil {
				return fmt.Errorf("zone interval %s/%d: %w", uid, ord, err)
			}
			out = append(out, iv)
		}
		if uint64(cur.Offset+len(out)) < anchor {
			next = &ZoneCursor{Offset: cur.Offset + len(out), Anchor: anchor}
		}
		return nil
	})
	return out, next, err
}

// renameZoneIntervals moves a beacon's intervals to its new uid; when the
// new uid has intervals too (a merge), both sets are renumbered in order
// of entry time.
func renameZoneIntervals(tx *bolt.Tx, oldUID, newUID string) (int, error) {
	b, seq := tx.Bucket(bZoneIntervals), tx.Bucket(bZoneIntervalSeq)
	if b == nil || seq == nil {
		return 0, nil
	}
	take := func(uid string) ([]ZoneInterval, error) {
		var ivs []ZoneInterval
		var keys [][]byte
		p := uidPrefix(uid)
		c := b.Cursor()
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			var iv ZoneInterval
			if err := json.Unmarshal(v, &iv); err != nil {
				return nil, err
			}
			ivs = append(ivs, iv)
			keys = append(keys, clone(k))
		}
		for _, k := range keys {
			if err := b.Delete(k); err != nil {
				return nil, err
			}
		}
		return ivs, seq.Delete([]byte(uid))
	}
	moved, err := take(oldUID)
	if err != nil || len(moved) == 0 {
		return 0, err
	}
	kept, err := take(newUID)
	if err != nil {
		return 0, err
	}
	all := append(kept, moved...)
	sort.SliceStable(all, func(i, j int) bool { return all[i].Enter < all[j].Enter })
	for i := range all {
		all[i].Ordinal = uint64(i + 1)
		if err := putJSON(b, zoneKey(newUID, all[i].Ordinal), &all[i]); err != nil {
			return 0, err
		}
	}
	return len(moved), seq.Put([]byte(newUID), itob(uint64(len(all))))
}

func countZoneIntervals(tx *bolt.Tx, uid string) (int, error) {
	return countPrefix(tx.Bucket(bZoneIntervals), uidPrefix(uid)), nil
}

func eachZoneIntervalUID(tx *bolt.Tx, fn func(uid string) error) error {
	return eachUIDPrefix(tx.Bucket(bZoneIntervals), fn)
}

package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Zone intervals: when a beacon entered and left each zone, written by the
// tracking engine through the group-commit writer and read by the
// interval endpoints. Keys are uid 0x00 BE64(ordinal), ordinals rising
// per beacon from 1 (oldest), so "newest first" is a reverse seek and a
// page can be anchored at the ordinal that was newest when paging began.
// An ordinal may be unused: a stay a refinement dropped
// (DropZoneInterval).
//
// Retention (PruneZoneIntervals) deletes a beacon's oldest closed
// intervals, so its list may start above 1; a merge numbers the merged
// list from above both lists' newest ordinal and records that start
// (zone_interval_base), so a cursor handed out before the merge is told
// apart from one of the merged list instead of skipping intervals.
//
// Each list has an identity (zone_interval_list) that its cursors carry,
// so one beacon's cursor is refused on another's list instead of reading
// a position there (a review). A remint moves the list with its
// identity; a merge makes a new list.
var (
	bZoneIntervals    = []byte("zone_intervals")
	bZoneIntervalSeq  = []byte("zone_interval_seq")  // uid -> BE64(last ordinal)
	bZoneIntervalBase = []byte("zone_interval_base") // uid -> BE64(first ordinal since the last merge); none: 1
	bZoneIntervalList = []byte("zone_interval_list") // uid -> BE64(list identity), from the bucket's sequence
	// bZoneListMerged: BE64(a list's identity) -> BE64(the list a merge
	// made of it), so a cursor of a list merged away is told "start
	// again" and not "another beacon's".
	bZoneListMerged = []byte("zone_interval_list_merged")
)

// ZoneInterval is one stay of a beacon in a zone.
type ZoneInterval struct {
	Ordinal uint64 `json:"seq"`
	ZoneID  uint64 `json:"zone_id"`
	Zone    string `json:"zone"`
	MapID   uint64 `json:"map_id,omitempty"`
	Enter   int64  `json:"enter"`           // Unix ms
	Leave   int64  `json:"leave,omitempty"` // Unix ms; 0 while the beacon is still there
	// From lists the uids the stay was moved from by remints and merges,
	// oldest first (none before a move): the engine names a stay by the
	// uid it holds it under, which a remint changes, and an edit it
	// queued under one of them before it learnt of the next move finds
	// the stay by it (findZoneIntervalOf). Only the first uid, kept, missed
	// a stay moved twice (a review). Stored, never served (ZoneIntervals
	// clears it).
	From uidList `json:"from,omitempty"`
}

// uidList is ZoneInterval.From. It reads a single uid too: a build of
// 2026-11-27 stored one ("from":"WCH-1"), and reading such a row as a
// list failed every page, close and start-up repair of its beacon (a
// review).
type uidList []string

func (l *uidList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*l = uidList{one}
		if one == "" {
			*l = nil
		}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(l))
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
	if _, err := zoneListID(tx, uid, true); err != nil {
		return err
	}
	return putJSON(tx.Bucket(bZoneIntervals), zoneKey(uid, n), iv)
}

// zoneListID is the identity of uid's interval list (0: none yet). With
// create, a list without one gets a new one.
func zoneListID(tx *bolt.Tx, uid string, create bool) (uint64, error) {
	b := tx.Bucket(bZoneIntervalList)
	if b == nil {
		if !create {
			return 0, nil
		}
		var err error
		if b, err = tx.CreateBucket(bZoneIntervalList); err != nil {
			return 0, err
		}
	}
	if id := btoi(b.Get([]byte(uid))); id != 0 || !create {
		return id, nil
	}
	return newZoneListID(b, uid)
}

func newZoneListID(b *bolt.Bucket, uid string) (uint64, error) {
	id, err := b.NextSequence()
	if err != nil {
		return 0, err
	}
	return id, b.Put([]byte(uid), itob(id))
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

// ZoneCursor is a position in a beacon's newest-first interval list. The
// cursors the server hands out carry Anchor, the newest ordinal when
// paging began, and Offset, the distance in ordinals from it to the next
// interval to read, so intervals that arrive, or a refined stay dropped,
// between pages neither repeat nor hide others, and List, the list's
// identity. A client-made cursor is a bare offset, counted in
// intervals, into the list as it is now.
type ZoneCursor struct {
	Offset int
	Anchor uint64 // 0: the list as it is now
	List   uint64 // 0: not checked (a bare offset, or a cursor from before lists had one)
}

// ErrBadCursor is returned for a cursor that does not parse, or names a
// position this beacon's list never had.
var ErrBadCursor = errors.New("cursor must be a non-negative offset as returned in next_cursor")

// ErrForeignCursor is returned for a cursor handed out for another
// beacon's list.
var ErrForeignCursor = errors.New("this cursor was handed out for another beacon's intervals; start again without a cursor")

// ErrStaleCursor is returned for a cursor handed out before the beacon's
// history was merged with another's: its positions no longer exist.
var ErrStaleCursor = errors.New("this cursor predates a merge of the beacon's history; start again without a cursor")

// zoneIntervalBase is uid's first ordinal since its last merge.
func zoneIntervalBase(tx *bolt.Tx, uid string) uint64 {
	if b := tx.Bucket(bZoneIntervalBase); b != nil {
		if v := btoi(b.Get([]byte(uid))); v > 0 {
			return v
		}
	}
	return 1
}

// mergedInto reports whether merges made list to of list from.
func mergedInto(tx *bolt.Tx, from, to uint64) bool {
	b := tx.Bucket(bZoneListMerged)
	for range 64 { // a chain of merges; bounded against a damaged one
		if b == nil || from == 0 {
			return false
		}
		from = btoi(b.Get(itob(from)))
		if from == to {
			return true
		}
	}
	return false
}

// ParseZoneCursor parses "<offset>", "<offset>_<anchor>" (handed out
// before lists had an identity) or "<offset>_<anchor>_<list>".
func ParseZoneCursor(s string) (ZoneCursor, error) {
	if s == "" {
		return ZoneCursor{}, nil
	}
	parts := strings.Split(s, "_")
	if len(parts) > 3 {
		return ZoneCursor{}, ErrBadCursor
	}
	o, err := strconv.Atoi(parts[0])
	if err != nil || o < 0 {
		return ZoneCursor{}, ErrBadCursor
	}
	c := ZoneCursor{Offset: o}
	for i, f := range []*uint64{&c.Anchor, &c.List} {
		if i+1 >= len(parts) {
			break
		}
		v, err := strconv.ParseUint(parts[i+1], 10, 64)
		if err != nil || v == 0 {
			return ZoneCursor{}, ErrBadCursor
		}
		*f = v
	}
	return c, nil
}

func (c ZoneCursor) String() string {
	if c.List == 0 {
		return fmt.Sprintf("%d_%d", c.Offset, c.Anchor)
	}
	return fmt.Sprintf("%d_%d_%d", c.Offset, c.Anchor, c.List)
}

// seekZoneInterval places c on uid's interval of the highest ordinal
// not above ord (its key is nil, or another beacon's, when there is
// none).
func seekZoneInterval(c *bolt.Cursor, uid string, ord uint64) ([]byte, []byte) {
	k, v := c.Seek(zoneKey(uid, ord))
	if o, ok := zoneOrdinal(k, uid); !ok || o > ord {
		k, v = c.Prev()
	}
	return k, v
}

// zoneOrdinal is the ordinal of k when k is one of uid's interval keys.
func zoneOrdinal(k []byte, uid string) (uint64, bool) {
	if len(k) != len(uid)+9 || k[len(uid)] != 0 || string(k[:len(uid)]) != uid {
		return 0, false
	}
	return binary.BigEndian.Uint64(k[len(uid)+1:]), true
}

// ZoneIntervals returns up to limit intervals of uid, newest first, from
// cursor, and the cursor of the next page (nil when exhausted). The list
// ends where retention has deleted the older intervals.
func (db *DB) ZoneIntervals(uid string, cur ZoneCursor, limit int) ([]ZoneInterval, *ZoneCursor, error) {
	out := []ZoneInterval{}
	var next *ZoneCursor
	err := db.bolt.View(func(tx *bolt.Tx) error {
		newest := btoi(tx.Bucket(bZoneIntervalSeq).Get([]byte(uid)))
		base := zoneIntervalBase(tx, uid)
		list, err := zoneListID(tx, uid, false)
		if err != nil {
			return err
		}
		anchor := cur.Anchor
		switch {
		case anchor == 0:
			anchor = newest
		case cur.List != 0 && cur.List != list:
			if mergedInto(tx, cur.List, list) {
				return ErrStaleCursor
			}
			return ErrForeignCursor
		case anchor < base:
			return ErrStaleCursor // a two-part cursor from before a merge
		case anchor > newest:
			return ErrBadCursor // never this beacon's: its list never reached it
		}
		if anchor < base {
			return nil // no intervals
		}
		if uint64(cur.Offset) > anchor-base {
			if cur.Anchor != 0 {
				// Never handed out (the last position is the oldest
				// ordinal): a made-up cursor is refused as documented (a
				// review saw an empty page).
				return ErrBadCursor
			}
			return nil // a bare offset past the list as it is now
		}
		// Newest first. A cursor handed out names a position, the
		// ordinal anchor-offset, so a stay a refinement drops between
		// pages (DropZoneInterval) moves nothing; a bare offset counts
		// the intervals there are now, so the ordinal such a stay left
		// unused is not counted. Either way unused ordinals are passed
		// over, and the list ends where retention deleted the older.
		from, skip := anchor, cur.Offset
		if cur.Anchor != 0 {
			from, skip = anchor-uint64(cur.Offset), 0
		}
		c := tx.Bucket(bZoneIntervals).Cursor()
		k, v := seekZoneInterval(c, uid, from)
		for ; ; k, v = c.Prev() {
			if ord, ok := zoneOrdinal(k, uid); !ok || ord < base {
				return nil
			}
			if skip == 0 {
				break
			}
			skip--
		}
		for ; ; k, v = c.Prev() {
			ord, ok := zoneOrdinal(k, uid)
			if !ok || ord < base {
				break
			}
			if len(out) == limit {
				// From the next ordinal down, whatever is dropped above.
				next = &ZoneCursor{Offset: int(anchor - ord), Anchor: anchor, List: list}
				break
			}
			var iv ZoneInterval
			if err := json.Unmarshal(v, &iv); err != nil {
				return fmt.Errorf("zone interval %s/%d: %w", uid, ord, err)
			}
			iv.From = nil
			out = append(out, iv)
		}
		return nil
	})
	return out, next, err
}

// eachZoneInterval calls fn with the key and the decoded value of each of
// uid's zone intervals, oldest first.
func eachZoneInterval(b *bolt.Bucket, uid string, fn func(k []byte, iv *ZoneInterval) error) error {
	p := uidPrefix(uid)
	c := b.Cursor()
	for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
		var iv ZoneInterval
		if err := json.Unmarshal(v, &iv); err != nil {
			return err
		}
		if err := fn(k, &iv); err != nil {
			return err
		}
	}
	return nil
}

// ZoneIntervalSpans lists uid's zone intervals as (enter, end) pairs,
// end math.MaxInt64 for one still open: what a merge's plan counts.
func (t *AssetTx) ZoneIntervalSpans(uid string) ([][2]int64, error) {
	b := t.tx.Bucket(bZoneIntervals)
	if b == nil {
		return nil, nil
	}
	var out [][2]int64
	err := eachZoneInterval(b, uid, func(_ []byte, iv *ZoneInterval) error {
		end := iv.Leave
		if end == 0 {
			end = math.MaxInt64
		}
		out = append(out, [2]int64{iv.Enter, end})
		return nil
	})
	return out, err
}

// ZoneIntervalsEnd is where uid's last zone interval ends:
// math.MaxInt64 while one is open, math.MinInt64 when it has none (a
// mark before which nothing began).
func (t *AssetTx) ZoneIntervalsEnd(uid string) (int64, error) {
	spans, err := t.ZoneIntervalSpans(uid)
	end := int64(math.MinInt64)
	for _, s := range spans {
		end = max(end, s[1])
	}
	return end, err
}

// DropZoneIntervalsBefore deletes source's zone intervals that began
// before mark: a merge's exclusive windows, as for sensor history, with
// mark where the last stay kept so far ends (the survivor's, then each
// earlier source's; math.MaxInt64 while one is open). Two tags heard at
// once put the merged asset in two zones at once (a review). A stay that
// began earlier is dropped, not clipped: the engine closes an open one
// by its entry time, which then finds nothing. A remint does not call
// it: the reports that reach the new uid before the store's rename open
// stays there that must not cost the beacon its earlier ones.
func (t *AssetTx) DropZoneIntervalsBefore(source string, mark int64) (int, error) {
	b := t.tx.Bucket(bZoneIntervals)
	if b == nil {
		return 0, nil
	}
	var dead [][]byte
	if err := eachZoneInterval(b, source, func(k []byte, iv *ZoneInterval) error {
		if iv.Enter < mark {
			dead = append(dead, clone(k))
		}
		return nil
	}); err != nil {
		return 0, err
	}
	for _, k := range dead {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(dead), nil
}

// DropZoneIntervalsBeforeUID is DropZoneIntervalsBefore with the mark
// where survivor's last stay ends (nothing dropped while it has none):
// the uid sweeps after a merge, which fold the sources in one by one.
func (t *AssetTx) DropZoneIntervalsBeforeUID(source, survivor string) (int, error) {
	end, err := t.ZoneIntervalsEnd(survivor)
	if err != nil {
		return 0, err
	}
	return t.DropZoneIntervalsBefore(source, end)
}

// renameZoneIntervals moves a beacon's intervals to its new uid. A plain
// move (remint) keeps their ordinals, so cursors handed out under either
// uid stay good. When the new uid has intervals too (a merge), both sets
// are numbered again in order of entry time, from above both lists'
// newest ordinal, and that start is recorded: a cursor of either list
// from before the merge is then refused (ErrStaleCursor) instead of
// reading positions that now hold other intervals. Renumbering from 1
// made such a cursor skip intervals silently (a review).
func renameZoneIntervals(tx *bolt.Tx, oldUID, newUID string) (int, error) {
	b, seq := tx.Bucket(bZoneIntervals), tx.Bucket(bZoneIntervalSeq)
	if b == nil || seq == nil {
		return 0, nil
	}
	bases, err := tx.CreateBucketIfNotExists(bZoneIntervalBase)
	if err != nil {
		return 0, err
	}
	lists, err := tx.CreateBucketIfNotExists(bZoneIntervalList)
	if err != nil {
		return 0, err
	}
	type taken struct {
		ivs                []ZoneInterval
		newest, base, list uint64
	}
	take := func(uid string) (taken, error) {
		t := taken{newest: btoi(seq.Get([]byte(uid))), base: zoneIntervalBase(tx, uid), list: btoi(lists.Get([]byte(uid)))}
		var keys [][]byte
		if err := eachZoneInterval(b, uid, func(k []byte, iv *ZoneInterval) error {
			t.ivs = append(t.ivs, *iv)
			keys = append(keys, clone(k))
			return nil
		}); err != nil {
			return t, err
		}
		for _, k := range keys {
			if err := b.Delete(k); err != nil {
				return t, err
			}
		}
		if err := bases.Delete([]byte(uid)); err != nil {
			return t, err
		}
		if err := lists.Delete([]byte(uid)); err != nil {
			return t, err
		}
		return t, seq.Delete([]byte(uid))
	}
	moved, err := take(oldUID)
	if err != nil || moved.newest == 0 {
		return 0, err
	}
	for i := range moved.ivs {
		if !slices.Contains(moved.ivs[i].From, oldUID) {
			moved.ivs[i].From = append(moved.ivs[i].From, oldUID)
		}
	}
	kept, err := take(newUID)
	if err != nil {
		return 0, err
	}
	all, newest, base := moved.ivs, moved.newest, moved.base
	if kept.newest > 0 {
		all = append(kept.ivs, moved.ivs...)
		sort.SliceStable(all, func(i, j int) bool { return all[i].Enter < all[j].Enter })
		base = max(kept.newest, moved.newest) + 1
		for i := range all {
			all[i].Ordinal = base + uint64(i)
		}
		newest = base + uint64(len(all)) - 1 // base-1 when both were pruned empty
	}
	for i := range all {
		if err := putJSON(b, zoneKey(newUID, all[i].Ordinal), &all[i]); err != nil {
			return 0, err
		}
	}
	if base > 1 {
		if err := bases.Put([]byte(newUID), itob(base)); err != nil {
			return 0, err
		}
	}
	// A moved list keeps its identity with its numbering; a merged one is
	// a new list.
	if kept.newest > 0 || moved.list == 0 {
		id, err := newZoneListID(lists, newUID)
		if err != nil {
			return 0, err
		}
		merged, err := tx.CreateBucketIfNotExists(bZoneListMerged)
		if err != nil {
			return 0, err
		}
		for _, old := range []uint64{moved.list, kept.list} {
			if old != 0 {
				if err := merged.Put(itob(old), itob(id)); err != nil {
					return 0, err
				}
			}
		}
	} else if err := lists.Put([]byte(newUID), itob(moved.list)); err != nil {
		return 0, err
	}
	return len(moved.ivs), seq.Put([]byte(newUID), itob(newest))
}

// PruneZoneIntervals deletes every beacon's closed intervals that ended
// before before (Unix ms), oldest first, up to the first one that did
// not (a beacon's list stays whole from there). Ingest's writer shares
// bbolt's one write lock, so a transaction takes at most batch beacons
// and pruneBudget deletions: a first run on a database of years would
// otherwise delete millions of keys in one (a review). It returns how
// many it deleted.
func (db *DB) PruneZoneIntervals(before int64, batch int) (int, error) {
	var uids []string
	err := db.bolt.View(func(tx *bolt.Tx) error {
		return eachZoneIntervalUID(tx, func(uid string) error {
			uids = append(uids, uid)
			return nil
		})
	})
	if err != nil {
		return 0, err
	}
	batch = max(batch, 1)
	total := 0
	for i := 0; i < len(uids); {
		var deleted, done int
		err := db.bolt.Update(func(tx *bolt.Tx) error {
			deleted, done = 0, 0
			b := tx.Bucket(bZoneIntervals)
			for _, uid := range uids[i:min(i+batch, len(uids))] {
				p := uidPrefix(uid)
				var old [][]byte
				c := b.Cursor()
				for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p) && deleted+len(old) < pruneBudget; k, v = c.Next() {
					var iv ZoneInterval
					if err := json.Unmarshal(v, &iv); err != nil {
						return err
					}
					if iv.Leave == 0 || iv.Leave >= before {
						break
					}
					old = append(old, clone(k))
				}
				for _, k := range old {
					if err := b.Delete(k); err != nil {
						return err
					}
				}
				deleted += len(old)
				if deleted >= pruneBudget {
					return nil // this beacon may have more: the next transaction starts with it
				}
				done++
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		total += deleted
		i += done
	}
	return total, nil
}

// pruneBudget bounds the deletions of one retention transaction.
var pruneBudget = 4096

func countZoneIntervals(tx *bolt.Tx, uid string) (int, error) {
	return countPrefix(tx.Bucket(bZoneIntervals), uidPrefix(uid)), nil
}

func eachZoneIntervalUID(tx *bolt.Tx, fn func(uid string) error) error {
	return eachUIDPrefix(tx.Bucket(bZoneIntervals), fn)
}

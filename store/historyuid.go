package store

import (
	"bytes"
	"math"
	"sort"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Per-asset views of the sensor history for the registry (remint, merge,
// replace). They rely only on the key layout documented in history.go and
// on its exported transaction API, so the block format can change freely.

// historyUIDOK mirrors the history's uid rule: a uid it could never have
// stored has no readings.
func historyUIDOK(uid string) bool {
	return uid != "" && len(uid) <= MaxUIDLen && !strings.Contains(uid, "\x00")
}

// historyUIDMetrics lists the metrics stored for uid.
func historyUIDMetrics(tx *bolt.Tx, uid string) []uint8 {
	b := tx.Bucket(bHistory)
	var seen [256]bool
	c := b.Cursor()
	head := append(append([]byte{0}, uid...), 0)
	for k, _ := c.Seek(head); k != nil && bytes.HasPrefix(k, head); k, _ = c.Next() {
		if len(k) == len(head)+1 {
			seen[k[len(k)-1]] = true
		}
	}
	closed := head[1:]
	for k, _ := c.Seek(closed); k != nil && bytes.HasPrefix(k, closed); {
		if len(k) != len(closed)+9 {
			break
		}
		m := k[len(closed)]
		seen[m] = true
		if m == 0xff {
			break
		}
		k, _ = c.Seek(append(append([]byte(nil), closed...), m+1))
	}
	var out []uint8
	for m := 1; m < 256; m++ {
		if seen[m] {
			out = append(out, uint8(m))
		}
	}
	return out
}

func countHistoryUID(tx *bolt.Tx, uid string) (int, error) {
	return historyCount(tx, uid, 0, math.MaxInt64)
}

// historyCount counts uid's readings (all metrics) with from ≤ ts < to.
func historyCount(tx *bolt.Tx, uid string, from, to int64) (int, error) {
	if !historyUIDOK(uid) {
		return 0, nil
	}
	n := 0
	for _, m := range historyUIDMetrics(tx, uid) {
		c, err := CountHistory(tx, uid, m, from, to)
		if err != nil {
			return 0, err
		}
		n += c
	}
	return n, nil
}

// eachHistoryUID calls fn once per uid that has history, in uid order.
func eachHistoryUID(tx *bolt.Tx, fn func(uid string) error) error {
	uids := map[string]bool{}
	c := tx.Bucket(bHistory).Cursor()
	k, _ := c.First()
	for ; k != nil && k[0] == 0; k, _ = c.Next() {
		if len(k) >= 4 {
			uids[string(k[1:len(k)-2])] = true
		}
	}
	for k != nil {
		if len(k) < 11 {
			k, _ = c.Next()
			continue
		}
		uid := k[:len(k)-10]
		uids[string(uid)] = true
		k, _ = c.Seek(append(append([]byte(nil), uid...), 1))
	}
	list := make([]string, 0, len(uids))
	for u := range uids {
		list = append(list, u)
	}
	sort.Strings(list)
	for _, u := range list {
		if err := fn(u); err != nil {
			return err
		}
	}
	return nil
}

// HistoryCount counts uid's readings over all metrics with from ≤ ts < to.
func (t *AssetTx) HistoryCount(uid string, from, to int64) (int, error) {
	return historyCount(t.tx, uid, from, to)
}

// HistoryLast returns the time of uid's newest reading over all metrics.
func (t *AssetTx) HistoryLast(uid string) (int64, bool, error) {
	if !historyUIDOK(uid) {
		return 0, false, nil
	}
	last, found := int64(0), false
	for _, m := range historyUIDMetrics(t.tx, uid) {
		// Binary search on the lower bound of a count: only the blocks that
		// straddle the bound are decoded, so this stays cheap.
		n, err := CountHistory(t.tx, uid, m, 0, math.MaxInt64)
		if err != nil {
			return 0, false, err
		}
		if n == 0 {
			continue
		}
		lo, hi := int64(0), int64(math.MaxInt64)
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			c, err := CountHistory(t.tx, uid, m, mid, math.MaxInt64)
			if err != nil {
				return 0, false, err
			}
			if c > 0 {
				lo = mid
			} else {
				hi = mid
			}
		}
		if !found || lo > last {
			last, found = lo, true
		}
	}
	return last, found, nil
}

// MoveHistoryAfter moves uid's readings with ts > after to another uid.
func (t *AssetTx) MoveHistoryAfter(fromUID, toUID string, after int64) (int, error) {
	return MoveHistoryAfter(t.tx, fromUID, toUID, after)
}

// DeleteHistoryThrough removes uid's readings with ts ≤ through.
func (t *AssetTx) DeleteHistoryThrough(uid string, through int64) (int, error) {
	n := 0
	for _, m := range historyUIDMetrics(t.tx, uid) {
		c, err := DeleteHistoryBefore(t.tx, uid, m, through+1)
		if err != nil {
			return 0, err
		}
		n += c
	}
	return n, nil
}

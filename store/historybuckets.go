package store

import (
	bolt "go.etcd.io/bbolt"
)

// LatestPerBucket calls fn, oldest first, with the latest reading of
// (uid, metric) in each bucket [b, b+bucket) of [from, to), buckets aligned
// to multiples of bucket. It is the downsampling read of the sensor history
// API: one read transaction, and per bucket one cursor seek plus at most
// one block walked forward without allocating, and none when the bucket
// ends past the block's last reading (the header has that reading).
func (db *DB) LatestPerBucket(uid string, metric uint8, from, to, bucket int64, fn func(ts int64, v float64)) error {
	if err := checkSeries(uid, metric); err != nil {
		return err
	}
	from = max(from, 0)
	if bucket <= 0 || from >= to {
		return nil
	}
	return db.bolt.View(func(tx *bolt.Tx) error {
		b, err := historyBucket(tx)
		if err != nil {
			return err
		}
		s := seriesRef{b: b, head: headKey(uid, metric)}
		var head []byte
		var hh blockHdr
		if hv := s.getHead(); hv != nil {
			if hh, err = parseHdr(hv); err != nil {
				return s.corrupt(s.head, err)
			}
			head = hv
		}
		c := b.Cursor()
		var it blockIter
		// latestBelow returns the newest reading with ts < hi in the
		// block val (whose first reading is < hi).
		latestBelow := func(k, val []byte, h blockHdr, hi int64) (int64, int64, bool, error) {
			if h.last < hi {
				return h.last, h.lastV, true, nil
			}
			if _, err := it.init(val); err != nil {
				return 0, 0, false, s.corrupt(k, err)
			}
			var ts, v int64
			ok := false
			for it.next() && it.ts < hi {
				ts, v, ok = it.ts, it.v, true
			}
			if it.err != nil {
				return 0, 0, false, s.corrupt(k, it.err)
			}
			return ts, v, ok, nil
		}
		for lo := from - ((from%bucket)+bucket)%bucket; lo < to; lo += bucket {
			blo, bhi := max(lo, from), min(lo+bucket, to)
			var ts, v int64
			ok := false
			if head != nil && hh.first < bhi {
				if ts, v, ok, err = latestBelow(s.head, head, hh, bhi); err != nil {
					return err
				}
			} else if k, val := s.blockLE(c, bhi-1); s.owns(k) {
				h, err := parseHdr(val)
				if err != nil {
					return s.corrupt(k, err)
				}
				if ts, v, ok, err = latestBelow(k, val, h, bhi); err != nil {
					return err
				}
			}
			if ok && ts >= blo {
				fn(ts, fromFixed(v))
			}
		}
		return nil
	})
}

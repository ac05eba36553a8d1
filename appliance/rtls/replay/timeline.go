package replay

import (
	"sort"
	"time"
)

// Virtual time. The replay keeps the recording's times, with two
// corrections:
//
//   - Sightings that share a timestamp but cannot be one scan (the
//     beacon's true position changed, or a gateway repeats) are spread
//     over the time to the next timestamp, one nominal scan period
//     apart (the median positive gap between sightings of the file) or
//     closer when that many periods do not fit. Recordings with coarse
//     (e.g. minute) timestamps otherwise collapse many scans into one
//     instant. (Until the eleventh session each extra scan added a
//     period on top of the gap: timestamps rounded to 10 s ran ten times
//     slower than the recording, a 5 Hz tag stamped in whole seconds
//     five times.)
//   - A gap longer than the engine's timeout plus one sweep is shortened
//     to that: the engine turns the beacon unknown either way, and the
//     replay need not simulate days of silence.
//
// The events come back in virtual-time order (stable), which is the
// file's order except where the first correction interleaves beacons.
type event struct {
	v   int64 // virtual ms from the start of the file
	row *Row
}

type scanKey struct {
	pos, zone string
}

func timeline(rows []Row, timeout time.Duration) []event {
	step := nominalStep(rows)
	to := timeout.Milliseconds()
	maxGap := to + to/4 + min(step, to)
	out := make([]event, len(rows))
	type inst struct {
		key  scanKey
		gws  map[string]bool
		scan int64 // the beacon's scans at this timestamp so far, less one
	}
	cur := map[string]*inst{} // beacon -> its current scan at this timestamp
	scan := make([]int64, 0, 64)
	var v int64 // virtual time of rows[lo].T
	period := step
	for lo := 0; lo < len(rows); {
		// rows[lo:hi] share a timestamp; scan[i-lo] is row i's scan in
		// it, counted per beacon: rows grouped by beacon must not put
		// the second beacon's scans after the first's.
		clear(cur)
		scan = scan[:0]
		var k int64
		hi := lo
		for ; hi < len(rows) && rows[hi].T == rows[lo].T; hi++ {
			r := &rows[hi]
			key := scanKey{r.Pos, r.Zone}
			s := cur[r.Beacon]
			switch {
			case s == nil:
				s = &inst{key: key, gws: map[string]bool{}}
				cur[r.Beacon] = s
			case s.key != key || s.gws[r.Gateway]:
				// a further scan of this beacon at the same recorded instant
				s.key, s.scan = key, s.scan+1
				clear(s.gws)
				k = max(k, s.scan)
			}
			s.gws[r.Gateway] = true
			scan = append(scan, s.scan)
		}
		// The last timestamp has no next one to fit in: its scans keep
		// the period of the one before (a file stamped with one instant,
		// one nominal period).
		var gap int64
		if hi < len(rows) {
			gap = min(rows[hi].T-rows[lo].T, maxGap)
			period = min(step, gap/(k+1))
		}
		for i := lo; i < hi; i++ {
			out[i] = event{v: v + scan[i-lo]*period, row: &rows[i]}
		}
		v += gap
		lo = hi
	}
	// Played in time order: play only moves the clock forward, so a
	// second beacon's first scan at a stamp, listed after the first
	// beacon's later scans, was published late, in the same millisecond
	// as its own next scan, and scored at a time the engine had not
	// seen it at. Stable, so rows of one instant keep the file's order.
	sort.SliceStable(out, func(i, j int) bool { return out[i].v < out[j].v })
	return out
}

// nominalStep is the median positive gap between consecutive sightings,
// at least 100 ms; 1 s when the file has none.
func nominalStep(rows []Row) int64 {
	var gaps []int64
	for i := 1; i < len(rows); i++ {
		if g := rows[i].T - rows[i-1].T; g > 0 {
			gaps = append(gaps, g)
		}
	}
	if len(gaps) == 0 {
		return 1000
	}
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	return max(gaps[len(gaps)/2], 100)
}

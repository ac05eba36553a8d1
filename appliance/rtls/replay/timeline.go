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
// The events come back in virtual-time order, a virtual instant's by
// gateway id (stable).
type event struct {
	v   int64 // virtual ms from the start of the file
	row *Row
}

type scanKey struct {
	pos, zone string
}

// instScans assigns one beacon's rows at one timestamp to scans. The
// rows of one position (a run of them, in file order) form scans by
// gateway: a gateway's k-th row of the run goes into the run's k-th
// scan, whatever order the gateways' rows come in; the next position
// (the beacon moved, or came back) starts after every scan so far. Until
// the twenty-second session a scan ended where a gateway repeated, so a
// file listing a second's rows by gateway (G1 five times, then G2 five
// times) was replayed as nine scans instead of five, and scored 2-4
// points differently from the same rows interleaved.
type instScans struct {
	key   scanKey
	keyed bool // key holds the run's position (not only unlabelled rows yet)
	base  int64
	count map[string]int64 // per gateway, in the current run
	next  int64            // one past the highest scan used: 0 before the first row
}

// scan returns the row's scan. An unlabelled row (no zone) joins the
// current run, and one that comes first joins the run the next labelled
// row opens: it says nothing about where the beacon is, and a scan of
// its own shifted the rest of the instant by half a period.
func (s *instScans) scan(r *Row) int64 {
	labelled := r.Zone != ""
	key := scanKey{r.Pos, r.Zone}
	switch {
	case s.next == 0:
		s.key, s.keyed = key, labelled
	case labelled && !s.keyed:
		s.key, s.keyed = key, true
	case labelled && key != s.key:
		s.key, s.base = key, s.next
		clear(s.count)
	}
	n := s.base + s.count[r.Gateway]
	s.count[r.Gateway]++
	s.next = max(s.next, n+1)
	return n
}

func timeline(rows []Row, timeout time.Duration) []event {
	step := nominalStep(rows)
	to := timeout.Milliseconds()
	maxGap := to + to/4 + min(step, to)
	out := make([]event, len(rows))
	cur := map[string]*instScans{} // beacon -> its scans at this timestamp
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
			s := cur[r.Beacon]
			if s == nil {
				s = &instScans{count: map[string]int64{}}
				cur[r.Beacon] = s
			}
			n := s.scan(r)
			k = max(k, n)
			scan = append(scan, n)
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
	// seen it at. A scan's reports gateway by gateway: the engine
	// decides report by report, so a scan's order can move a decision,
	// and a recording's score must not depend on how its exporter listed
	// them (a review: UCI with each millisecond reversed scored
	// strongest 54.4% instead of 56.0%, bayes 8 flips instead of 3).
	// Stable, so a gateway's reports of one virtual instant keep the
	// file's order.
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return a.v < b.v || a.v == b.v && a.row.Gateway < b.row.Gateway
	})
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

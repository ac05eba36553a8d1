package replay

import (
	"sort"
	"time"
)

// Virtual time. The replay keeps the recording's gaps between sightings,
// with two corrections:
//
//   - Sightings that share a timestamp but cannot be one scan (the beacon's
//     true position changed, or a gateway repeats) are spread one nominal
//     scan period apart. Recordings with coarse (e.g. minute) timestamps
//     otherwise collapse many scans into one instant. The nominal period
//     is the median positive gap between scans of the file itself.
//   - A gap longer than the engine's timeout plus one sweep is shortened to
//     that: the engine turns the beacon unknown either way, and the replay
//     need not simulate days of silence.
type event struct {
	v   int64 // virtual ms from the start of the file
	row *Row
}

type scanKey struct {
	pos, zone string
}

func timeline(rows []Row, timeout time.Duration) []event {
	step := nominalStep(rows)
	maxGap := timeout.Milliseconds() + timeout.Milliseconds()/4 + step
	out := make([]event, 0, len(rows))
	var v int64
	type inst struct {
		key scanKey
		gws map[string]bool
	}
	cur := map[string]*inst{} // beacon -> its scan at the current instant
	for i := range rows {
		r := &rows[i]
		if i > 0 {
			if gap := r.T - rows[i-1].T; gap > 0 {
				v += min(gap, maxGap)
				clear(cur)
			}
		}
		k := scanKey{r.Pos, r.Zone}
		s := cur[r.Beacon]
		if s != nil && (s.key != k || s.gws[r.Gateway]) {
			v += step // a second scan of this beacon at the same recorded instant
			clear(cur)
			s = nil
		}
		if s == nil {
			s = &inst{key: k, gws: map[string]bool{}}
			cur[r.Beacon] = s
		}
		s.gws[r.Gateway] = true
		out = append(out, event{v: v, row: r})
	}
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

package replay

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"beaconhub/appliance/rtls"
)

// motionLags (s) are the time scales Motion measures a walk's spread
// at: from one advertisement to about the longest a filter's belief
// remembers (a zone change is decided within 3-9 s, a stay lasts tens of
// seconds).
var motionLags = []int64{1, 2, 3, 5, 10, 20, 30}

// minMotionPairs is the least number of position pairs a lag needs to
// count: about two beacons walking for a minute and a half.
const minMotionPairs = 200

// maxWalkSpeed (m/s, root mean square over one second) is the fastest a
// recording's positions may move to be a walk: a run. A survey that
// puts its tag at a random point of its zone every second (the Go
// walks') moves at 5-6 m/s; its time order says nothing of how tags
// move.
const maxWalkSpeed = 3.0

// Motion measures how fast train.csv's beacons move, as grid's motion
// model reads it (rtls.Params.Diffusion): the variance along each axis
// that a second adds to a beacon's position. A random walk's variance
// grows with time; a person's does not (they walk, stop, turn back), so
// the spread per second depends on the time scale: Motion takes the
// largest over lags of 1 to 30 s, the least diffusion that keeps up with
// the walk at every time scale the filters remember. It is bounded to
// [rtls.MaxDiffusion/8, rtls.MaxDiffusion].
//
// It needs the recorded positions (x, y) at whole seconds of a walk: ok
// is false when a lag has fewer than minMotionPairs pairs of one
// beacon's positions that far apart (no positions, or a recording whose
// clock ticks in minutes), or when they move faster than maxWalkSpeed
// from one second to the next. pairs is how many the chosen lag had.
func (ds *Dataset) Motion() (d float64, lag int64, pairs int, ok bool) {
	d, lag, pairs, ok, _ = ds.motion()
	return d, lag, pairs, ok
}

// MotionRefused says why train.csv, a walk by its pairs of positions,
// trained no motion: its positions move faster than anyone walks (one
// position out of place, x = 1e300, is enough). "" when Motion measured
// one or the file is no walk at all. rtls-eval prints it as a note: the
// motion and odds notes vanished without a word (a review).
func (ds *Dataset) MotionRefused() string {
	_, _, _, _, why := ds.motion()
	return why
}

func (ds *Dataset) motion() (d float64, lag int64, pairs int, ok bool, why string) {
	if ds.NoGeometry || len(ds.Site.Maps) == 0 || ds.Site.Maps[0].PixelsPerMeter <= 0 {
		return 0, 0, 0, false, ""
	}
	ppm := ds.Site.Maps[0].PixelsPerMeter
	type pos struct{ x, y float64 }
	at := map[string]map[int64]pos{} // beacon -> second -> first position in it
	for _, r := range ds.Train {
		xs, ys, found := strings.Cut(r.Pos, ",")
		if !found {
			continue
		}
		x, errX := strconv.ParseFloat(xs, 64)
		y, errY := strconv.ParseFloat(ys, 64)
		if errX != nil || errY != nil || math.IsNaN(x+y) || math.IsInf(x+y, 0) {
			continue // "nan" parses: a blank position, not one
		}
		m := at[r.Beacon]
		if m == nil {
			m = map[int64]pos{}
			at[r.Beacon] = m
		}
		s := r.T / 1000
		if _, seen := m[s]; !seen {
			m[s] = pos{x / ppm, y / ppm}
		}
	}
	// Summed in a fixed order: a sum's last bits, and so a decision at
	// the threshold, must not change from run to run.
	beacons := slices.Sorted(maps.Keys(at))
	seconds := make([][]int64, len(beacons))
	for i, b := range beacons {
		seconds[i] = slices.Sorted(maps.Keys(at[b]))
	}
	for _, tau := range motionLags {
		var sum float64
		n := 0
		for i, b := range beacons {
			m := at[b]
			for _, s := range seconds[i] {
				p := m[s]
				if q, ok := m[s+tau]; ok {
					dx, dy := q.x-p.x, q.y-p.y
					sum += (dx*dx + dy*dy) / 2
					n++
				}
			}
		}
		if n < minMotionPairs {
			// Not a walk seen through at this time scale (a survey
			// of still points, a clock in minutes): what it shows at
			// shorter lags is a beacon standing, not how it moves.
			return 0, 0, 0, false, ""
		}
		v := sum / float64(n) / float64(tau)
		if tau == 1 && v > maxWalkSpeed*maxWalkSpeed/2 {
			// Faster than anyone walks: not a walk.
			return 0, 0, 0, false, fmt.Sprintf("motion: not trained: train.csv's positions move %.3g m a second (root mean square) from one second to the next (over %d pairs), faster than anyone walks (%g m/s): a survey of still points, or a position out of place; grid keeps its default diffusion, and the filters their default switch_odds",
				math.Sqrt(2*v), n, maxWalkSpeed)
		}
		if !ok || v > d {
			d, lag, pairs, ok = v, tau, n, true
		}
	}
	if ok {
		d = math.Min(math.Max(d, rtls.MaxDiffusion/8), rtls.MaxDiffusion)
	}
	return d, lag, pairs, ok, ""
}

// MotionNote says what Motion measured, for rtls-eval's notes.
func MotionNote(d float64, lag int64, pairs int) string {
	bound := ""
	switch d {
	case rtls.MaxDiffusion:
		bound = ", at most grid's default"
	case rtls.MaxDiffusion / 8:
		bound = ", at least an eighth of grid's default"
	}
	return fmt.Sprintf("motion: diffusion %.3g m² a second (grid, fusion), from train.csv's walk: %d pairs of positions %d s apart%s (--set diffusion=V overrides it)",
		d, pairs, lag, bound)
}

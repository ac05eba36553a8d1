package replay

import (
	"fmt"
	"io"
	"math"
	"time"
)

// Result is one algorithm's score on the test file.
type Result struct {
	Algorithm string
	Ready     bool
	Reason    string
	Scored    int // sightings after the warm-up
	Correct   int
	Unknown   int // scored sightings with no prediction
	Changes   int // true zone changes after the warm-up
	Corrected int // of which the prediction caught up before the next change
	// CorrectS is the mean seconds from a true zone change to the first
	// correct prediction, over the changes that were caught up.
	CorrectS float64
	Flips    int     // predicted zone changes while the true zone did not change
	StableS  float64 // seconds of unchanged true zone
	// Offsets is each beacon's tag offset estimate at the end of the run
	// (dB louder than the survey tag; docs/rtls.md, "Tag offset").
	Offsets map[string]float64
}

// Accuracy is the share of scored sightings predicted right.
func (r *Result) Accuracy() float64 {
	if r.Scored == 0 {
		return 0
	}
	return float64(r.Correct) / float64(r.Scored)
}

// FlipsPerMin is flips per minute of unchanged true zone.
func (r *Result) FlipsPerMin() float64 {
	if r.StableS == 0 {
		return 0
	}
	return float64(r.Flips) / (r.StableS / 60)
}

// scorer follows each beacon through the test file. A flip is a change
// of the predicted zone between two known zones while the true zone stays
// the same, except the change that first makes the prediction right after
// a true zone change (that one is the correction being timed). A true
// change in the warm-up is neither scored nor timed, but catching up
// with it after the warm-up is still a correction, not a flip: the walker
// who leaves the first zone two seconds in is not a stable zone the
// prediction flipped away from.
type scorer struct {
	ds      *Dataset
	warmup  int64
	maxGap  int64
	beacons map[string]*follow
	res     Result
	sumMS   int64
}

type follow struct {
	first, last int64
	trueZone    string
	pred        uint64
	changedAt   int64
	waiting     bool // a true zone change not yet caught up
	timed       bool // ... and it came after the warm-up
}

func newScorer(ds *Dataset, warmup, timeout time.Duration) *scorer {
	return &scorer{ds: ds, warmup: warmup.Milliseconds(), maxGap: timeout.Milliseconds(), beacons: map[string]*follow{}}
}

func (s *scorer) add(ev event, pred uint64) {
	row := ev.row
	f := s.beacons[row.Beacon]
	if f == nil {
		f = &follow{first: ev.v, last: ev.v, trueZone: row.Zone, pred: pred}
		s.beacons[row.Beacon] = f
	}
	if row.Zone == "" {
		// Unlabelled: heard (the warm-up runs from the beacon's first
		// sighting, labelled or not), neither scored nor counted as
		// time in a known zone, and what the prediction did meanwhile
		// is not a flip.
		f.pred, f.last = pred, ev.v
		return
	}
	if f.trueZone == "" {
		f.trueZone = row.Zone // the first label: nothing to compare with
	}
	warm := ev.v-f.first >= s.warmup
	warmPrev := f.last-f.first >= s.warmup
	want := s.ds.ZoneID[row.Zone]
	changed := row.Zone != f.trueZone
	if changed {
		f.waiting, f.timed = true, warm
		f.changedAt = ev.v
	} else if warmPrev {
		s.res.StableS += float64(min(ev.v-f.last, s.maxGap)) / 1000
		if pred != f.pred && pred != 0 && f.pred != 0 && !(f.waiting && pred == want) {
			s.res.Flips++
		}
	}
	if f.waiting && pred == want {
		f.waiting = false
		if f.timed {
			s.res.Corrected++
			s.sumMS += ev.v - f.changedAt
		}
	}
	if warm {
		if changed {
			s.res.Changes++
		}
		s.res.Scored++
		switch pred {
		case want:
			s.res.Correct++
		case 0:
			s.res.Unknown++
		}
	}
	f.trueZone, f.pred, f.last = row.Zone, pred, ev.v
}

func (s *scorer) fill(r *Result) {
	ready, reason, name := r.Ready, r.Reason, r.Algorithm
	*r = s.res
	r.Ready, r.Reason, r.Algorithm = ready, reason, name
	if r.Corrected > 0 {
		r.CorrectS = float64(s.sumMS) / float64(r.Corrected) / 1000
	}
}

// Format prints the results as a Markdown table.
func Format(w io.Writer, rs []Result) {
	fmt.Fprintln(w, "| algorithm | zone accuracy | unknown | s to correct (caught/changes) | flips/min (flips, stable min) | tag offset, dB |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, r := range rs {
		if !r.Ready {
			fmt.Fprintf(w, "| %s | not applicable: %s | | | | |\n", r.Algorithm, r.Reason)
			continue
		}
		if r.Scored == 0 {
			fmt.Fprintf(w, "| %s | no sighting scored | | | | |\n", r.Algorithm)
			continue
		}
		fmt.Fprintf(w, "| %s | %.1f%% (%d/%d) | %d | %.1f (%d/%d) | %.2f (%d, %.1f) | %s |\n", r.Algorithm,
			100*r.Accuracy(), r.Correct, r.Scored, r.Unknown, r.CorrectS, r.Corrected, r.Changes,
			r.FlipsPerMin(), r.Flips, r.StableS/60, offsetRange(r.Offsets))
	}
}

// offsetRange is the beacons' offset estimates as one figure, or their
// range when they differ.
func offsetRange(offs map[string]float64) string {
	if len(offs) == 0 {
		return ""
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range offs {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if hi-lo < 0.05 {
		return fmt.Sprintf("%+.1f", lo)
	}
	return fmt.Sprintf("%+.1f to %+.1f", lo, hi)
}

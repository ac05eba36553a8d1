package replay

import (
	"fmt"
	"io"
	"math"
	"strings"
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
	// Settled and SettledCorrect count the scored sightings at least
	// SettleAfter into their true zone's stay, and of them the right
	// ones: how often the zone is right for a tag that stays put, apart
	// from how fast a change is followed.
	Settled, SettledCorrect int
	// Offsets is each beacon's tag offset estimate at the end of the run
	// (dB louder than the survey tag; docs/rtls.md, "Tag offset").
	Offsets map[string]float64
	// Downs is how many times the engine judged a gateway down during
	// the test: on a recording where none went down, each is a false
	// alarm (docs/rtls.md, "Gateways that go down").
	Downs uint64
}

// Accuracy is the share of scored sightings predicted right.
func (r *Result) Accuracy() float64 {
	if r.Scored == 0 {
		return 0
	}
	return float64(r.Correct) / float64(r.Scored)
}

// SettleAfter is how long a true zone must have held for a sighting to
// count as settled (Result.Settled): longer than the filters take to
// follow a change on the generated walks (3-9 s at their default odds),
// shorter than most stays. Only scored sightings (after the warm-up)
// can be settled; an unlabelled row neither ends nor starts a stay, and
// a silence longer than the engine's timeout starts it again.
const SettleAfter = 10 * time.Second

// SettledAccuracy is the share of settled sightings predicted right (0
// when none is settled).
func (r *Result) SettledAccuracy() float64 {
	if r.Settled == 0 {
		return 0
	}
	return float64(r.SettledCorrect) / float64(r.Settled)
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
	settle  int64
	beacons map[string]*follow
	res     Result
	sumMS   int64
}

type follow struct {
	first, last int64
	trueZone    string
	pred        uint64
	changedAt   int64
	since       int64 // when the true zone began, as far as the file tells
	waiting     bool  // a true zone change not yet caught up
	timed       bool  // ... and it came after the warm-up
}

func newScorer(ds *Dataset, warmup, timeout time.Duration) *scorer {
	return &scorer{ds: ds, warmup: warmup.Milliseconds(), maxGap: timeout.Milliseconds(), settle: SettleAfter.Milliseconds(), beacons: map[string]*follow{}}
}

func (s *scorer) add(ev event, pred uint64) {
	row := ev.row
	f := s.beacons[row.Beacon]
	if f == nil {
		f = &follow{first: ev.v, last: ev.v, trueZone: row.Zone, pred: pred, since: ev.v}
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
		f.trueZone, f.since = row.Zone, ev.v // the first label: nothing to compare with
	} else if ev.v-f.last > s.maxGap {
		// The engine forgot the beacon in a silence longer than its
		// timeout, so the stay starts again for settling: a tracker
		// that lost it has to find it anew, as after a change.
		f.since = ev.v
	}
	warm := ev.v-f.first >= s.warmup
	warmPrev := f.last-f.first >= s.warmup
	want := s.ds.ZoneID[row.Zone]
	changed := row.Zone != f.trueZone
	if changed {
		f.waiting, f.timed = true, warm
		f.changedAt, f.since = ev.v, ev.v
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
		if ev.v-f.since >= s.settle {
			s.res.Settled++
			if pred == want {
				s.res.SettledCorrect++
			}
		}
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
	// The settled column is last, so the columns before it stay where
	// they were in every table docs/performance.md holds.
	fmt.Fprintf(w, "| algorithm | zone accuracy | unknown | s to correct (caught/changes) | flips/min (flips, stable min) | tag offset, dB | settled: %g s into a stay |\n", SettleAfter.Seconds())
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, r := range rs {
		if !r.Ready {
			fmt.Fprintf(w, "| %s | not applicable: %s | | | | | |\n", r.Algorithm, r.Reason)
			continue
		}
		if r.Scored == 0 {
			fmt.Fprintf(w, "| %s | no sighting scored | | | | | |\n", r.Algorithm)
			continue
		}
		settled := "none"
		if r.Settled > 0 {
			settled = fmt.Sprintf("%.1f%% (%d/%d)", 100*r.SettledAccuracy(), r.SettledCorrect, r.Settled)
		}
		// Nothing timed is not an instant correction, and no stable
		// time is not a flip-free one: "-" rather than a 0.0 that reads
		// as a result (a review).
		correct, flips := "-", "-"
		if r.Corrected > 0 {
			correct = fmt.Sprintf("%.1f", r.CorrectS)
		}
		if r.StableS > 0 {
			flips = fmt.Sprintf("%.2f", r.FlipsPerMin())
		}
		fmt.Fprintf(w, "| %s | %.1f%% (%d/%d) | %d | %s (%d/%d) | %s (%d, %.1f) | %s | %s |\n", r.Algorithm,
			100*r.Accuracy(), r.Correct, r.Scored, r.Unknown, correct, r.Corrected, r.Changes,
			flips, r.Flips, r.StableS/60, offsetRange(r.Offsets), settled)
	}
}

// DownsNote names the algorithms under which the engine judged a
// gateway down during the test, and how often ("" for none): on a
// recording where every gateway stayed up, false alarms. rtls-eval
// prints it under the table.
func DownsNote(rs []Result) string {
	var parts []string
	for _, r := range rs {
		if r.Downs > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", r.Algorithm, r.Downs))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "gateways judged down during the test (silent where the survey says they hear): " + strings.Join(parts, ", ") +
		"; on a recording where every gateway stayed up, each is a false alarm (docs/rtls.md, \"Gateways that go down\")"
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

// Pace counts the true zone changes in rows (a file of the recording)
// and the labelled time they happen in: per beacon, the time between
// its consecutive labelled sightings, each gap counted up to maxGap (a
// silence longer than the engine's timeout is not time in a zone, as
// for StableS). How often tags change zone decides how much a tracker's
// lag costs; rtls-eval prints it for both files, since what it trains
// on train.csv assumes the test moves alike. rows must be in time order
// (Load sorts them); changes in the scorer's warm-up count too, since
// the note is about the recording, not the score.
func Pace(rows []Row, maxGap time.Duration) (changes int, seconds float64) {
	type last struct {
		t    int64
		zone string
	}
	seen := map[string]last{}
	limit := maxGap.Milliseconds()
	for _, r := range rows {
		if r.Zone == "" {
			continue
		}
		if l, ok := seen[r.Beacon]; ok {
			seconds += float64(min(r.T-l.t, limit)) / 1000
			if r.Zone != l.zone {
				changes++
			}
		}
		seen[r.Beacon] = last{r.T, r.Zone}
	}
	return changes, seconds
}

// PaceNote says how often each file's tags change zone, for rtls-eval's
// notes.
func PaceNote(ds *Dataset, maxGap time.Duration) string {
	say := func(name string, rows []Row) string {
		n, s := Pace(rows, maxGap)
		if n == 0 {
			return fmt.Sprintf("%s no change in %.0f s", name, s)
		}
		return fmt.Sprintf("%s one every %.0f s (%d in %.0f s)", name, s/float64(n), n, s)
	}
	return fmt.Sprintf("zone changes of labelled time: %s; %s", say("test.csv", ds.Test), say("train.csv", ds.Train))
}

// UnsurveyedNote names the zones with scored test sightings that
// train.csv has no labelled row in, so no survey sample, and the share
// of the scored sightings in them ("" when there is none); the scored
// sightings are the scorer's (after each beacon's warmup, in virtual
// time). The algorithms trained on the survey reach such a zone only
// through its neighbours or the gateways' positions, and a score over
// it measures that guess: a recording split in time into train and
// test often leaves zones out of the survey, without a word until a
// review.
func UnsurveyedNote(ds *Dataset, warmup, timeout time.Duration) string {
	surveyed := map[string]bool{}
	for _, r := range ds.Train {
		surveyed[r.Zone] = true
	}
	first := map[string]int64{}
	missed := map[string]int{}
	scored, out := 0, 0
	for _, ev := range timeline(ds.Test, timeout) {
		f, ok := first[ev.row.Beacon]
		if !ok {
			f = ev.v
			first[ev.row.Beacon] = f
		}
		if ev.row.Zone == "" || ev.v-f < warmup.Milliseconds() {
			continue
		}
		scored++
		if !surveyed[ev.row.Zone] {
			missed[ev.row.Zone]++
			out++
		}
	}
	if out == 0 {
		return ""
	}
	var names []string
	for _, z := range ds.Site.Zones { // in site.json's order
		if missed[z.Name] > 0 {
			names = append(names, z.Name)
		}
	}
	if len(names) > 10 {
		names = append(names[:10], fmt.Sprintf("and %d more", len(names)-10))
	}
	share := fmt.Sprintf("%.0f%%", 100*float64(out)/float64(scored))
	if share == "0%" {
		share = "under 1%"
	}
	return fmt.Sprintf("zones with no survey samples in train.csv: %s (%s of scored test sightings)", strings.Join(names, ", "), share)
}

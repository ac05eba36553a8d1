package replay

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"beaconhub/appliance/rtls"
)

// TestHoldOutKeepsEveryRowOnce: each fold surveys the odd blocks of
// eight (by time) and scores the even ones, or the other way round;
// every row is on one side exactly once, the rows of one millisecond
// together, and each block's beacon is a beacon of its own, with a MAC
// of its own, so no beacon jumps from one block to the next.
func TestHoldOutKeepsEveryRowOnce(t *testing.T) {
	ds := &Dataset{Beacons: map[string][6]byte{"B": {0xC3, 0, 0, 0, 0, 1}}}
	for i := range 100 {
		for range 1 + i%3 { // one to three rows a millisecond
			ds.Train = append(ds.Train, Row{T: int64(1000 * i), Gateway: "G", Beacon: "B"})
		}
	}
	f := holdOut(ds, 8)
	if !reflect.DeepEqual(f[0].Train, f[1].Test) || !reflect.DeepEqual(f[0].Test, f[1].Train) {
		t.Fatal("the second fold is not the first swapped")
	}
	survey, scored := f[0].Train, f[0].Test
	if len(survey)+len(scored) != len(ds.Train) || len(survey) < len(ds.Train)/3 || len(scored) < len(ds.Train)/3 {
		t.Fatalf("%d rows surveyed, %d scored of %d", len(survey), len(scored), len(ds.Train))
	}
	side := map[int64]int{}
	macs := map[[6]byte]string{}
	for k, part := range [][]Row{survey, scored} {
		blocks := map[string]bool{}
		for i, r := range part {
			if i > 0 && r.T < part[i-1].T {
				t.Fatal("a part is out of time order")
			}
			if s, seen := side[r.T]; seen && s != k {
				t.Fatalf("the rows of %d ms are split", r.T)
			}
			side[r.T] = k
			blocks[r.Beacon] = true
			mac, ok := f[0].Beacons[r.Beacon]
			if !ok {
				t.Fatalf("%s has no MAC", r.Beacon)
			}
			if other, dup := macs[mac]; dup && other != r.Beacon {
				t.Fatalf("%s and %s share a MAC", r.Beacon, other)
			}
			macs[mac] = r.Beacon
		}
		// Four blocks a side, alternating: a beacon each.
		if len(blocks) != 4 {
			t.Errorf("side %d holds the beacons %v, want 4 blocks", k, blocks)
		}
	}
	if len(side) != 100 {
		t.Fatalf("%d milliseconds of 100", len(side))
	}
	if _, ok := ds.Beacons["B#0"]; ok {
		t.Fatal("holdOut changed the recording's own beacons")
	}
}

// TestChooseOdds: the best accuracy less FlipCost a flip, the default on
// a tie.
func TestChooseOdds(t *testing.T) {
	for _, c := range []struct {
		scores []OddsScore
		want   float64
	}{
		// Half a point for 0.4 flips a minute fewer (4 points): 30.
		{[]OddsScore{{10, 0.90, 0.5, 100}, {30, 0.895, 0.1, 100}}, 30},
		// Six points of accuracy for 0.2 fewer flips (2 points): 10.
		{[]OddsScore{{10, 0.70, 0.3, 100}, {30, 0.64, 0.1, 100}}, 10},
		{[]OddsScore{{10, 0.80, 0.2, 100}, {30, 0.80, 0.2, 100}}, 10},
	} {
		if got := chooseOdds(c.scores); got != c.want {
			t.Errorf("%+v: chose %v, want %v", c.scores, got, c.want)
		}
	}
}

// TestRunGivesEachAlgorithmItsOdds: an algorithm given its own odds
// scores exactly as a run with those odds for every algorithm, on the
// samples of the one survey; the others keep the run's.
func TestRunGivesEachAlgorithmItsOdds(t *testing.T) {
	longReplay(t)
	w := walkSettings[0].w
	w.seed = walkSettings[0].seeds[0]
	ds := loadWalk(t, w)
	algs := []string{rtls.AlgFilter, rtls.AlgGrid}
	at := func(odds float64, per map[string]float64) map[string]Result {
		p := rtls.DefaultParams()
		p.SwitchOdds = odds
		rs, err := Run(ds, Options{Algorithms: algs, Params: p, Odds: per})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]Result{}
		for _, r := range rs {
			r.Offsets = nil
			out[r.Algorithm] = r
		}
		return out
	}
	for _, bad := range []map[string]float64{{rtls.AlgKNN: 30}, {rtls.AlgGrid: 0.5}} {
		if _, err := Run(ds, Options{Algorithms: algs, Odds: bad}); err == nil {
			t.Errorf("odds %v accepted", bad)
		}
	}
	at10, at30, mixed := at(10, nil), at(30, nil), at(10, map[string]float64{rtls.AlgGrid: 30})
	if reflect.DeepEqual(at10[rtls.AlgGrid], at30[rtls.AlgGrid]) {
		t.Fatal("grid scores alike at odds 10 and 30: the test cannot tell them apart")
	}
	if !reflect.DeepEqual(mixed[rtls.AlgGrid], at30[rtls.AlgGrid]) {
		t.Errorf("grid given odds 30: %+v, at 30 throughout: %+v", mixed[rtls.AlgGrid], at30[rtls.AlgGrid])
	}
	if !reflect.DeepEqual(mixed[rtls.AlgFilter], at10[rtls.AlgFilter]) {
		t.Errorf("hmm beside it: %+v, at 10 throughout: %+v", mixed[rtls.AlgFilter], at10[rtls.AlgFilter])
	}
}

// TestSelectOddsOnAWalk: on a labelled walk (walk C's, its first half
// as train.csv) SelectOdds scores both candidates for each filter it is
// asked about, on both folds (every block but its beacons' warm-ups is
// scored once), chooses by chooseOdds, and never reads test.csv.
func TestSelectOddsOnAWalk(t *testing.T) {
	longReplay(t)
	w := walkSettings[2].w
	w.seed, w.legs = walkSettings[2].seeds[0], 20
	ds := loadWalk(t, w)
	ds.Train, ds.Test = ds.Test[:len(ds.Test)/2], nil
	ch, err := SelectOdds(ds, Options{Algorithms: []string{rtls.AlgKNN, rtls.AlgFilter, rtls.AlgGrid}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ch) != 2 {
		t.Fatalf("choices for %d algorithms, want hmm and grid (knn has no odds): %+v", len(ch), ch)
	}
	for a, c := range ch {
		t.Logf("%s: %v from %+v", a, c.Odds, c.Scores)
		if len(c.Scores) != len(OddsCandidates) || c.Odds != chooseOdds(c.Scores) {
			t.Errorf("%s: %+v", a, c)
		}
		for _, s := range c.Scores {
			if s.Accuracy <= 0 || s.Accuracy > 1 || s.FlipsPerMin < 0 {
				t.Errorf("%s: score %+v", a, s)
			}
			// One fold alone scores about half the rows.
			if s.Scored < len(ds.Train)*8/10 || s.Scored > len(ds.Train) {
				t.Errorf("%s at odds %v: %d sightings scored of %d in train.csv", a, s.Odds, s.Scored, len(ds.Train))
			}
		}
	}
}

// TestSelectOddsScoresWhatItDidNotSurvey: a walk along three zones in a
// row that stands in A in the even blocks of train.csv and in B in the
// odd ones (C is never visited). Each fold surveys one of A and B and
// scores the other, which the zone filter, with its gateways unplaced,
// cannot tell from C: held out, hmm is right at most about half the
// time. Surveying the blocks it scores, it would be right nearly always.
func TestSelectOddsScoresWhatItDidNotSurvey(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "site.json"), `{"map":{"width":300,"height":100},
	 "zones":[{"name":"A","x1":0,"y1":0,"x2":100,"y2":100},{"name":"B","x1":100,"y1":0,"x2":200,"y2":100},{"name":"C","x1":200,"y1":0,"x2":300,"y2":100}],
	 "adjacency":[["A","B"],["B","C"]],
	 "gateways":[{"id":"G1","x":null,"y":null},{"id":"G2","x":null,"y":null},{"id":"G3","x":null,"y":null}]}`)
	var b strings.Builder
	b.WriteString("t_ms,gateway,beacon,rssi,zone,x,y\n")
	for s := range 8 * 60 {
		zone, near := "A", "G1"
		if s/60%2 == 1 {
			zone, near = "B", "G2"
		}
		for _, g := range []string{"G1", "G2", "G3"} {
			r := -85 + s%3
			if g == near {
				r = -60 - s%3
			}
			fmt.Fprintf(&b, "%d,%s,T,%d,%s,,\n", 1000*s, g, r, zone)
		}
	}
	writeFile(t, filepath.Join(dir, "train.csv"), b.String())
	writeFile(t, filepath.Join(dir, "test.csv"), b.String())
	ds, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := SelectOdds(ds, Options{Algorithms: []string{rtls.AlgFilter}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ch[rtls.AlgFilter].Scores {
		t.Logf("hmm at odds %v: %.1f%% of %d", s.Odds, 100*s.Accuracy, s.Scored)
		if s.Scored == 0 || s.Accuracy > 0.6 {
			t.Errorf("hmm at odds %v: %.1f%% of %d held-out sightings right, in zones its fold never surveyed", s.Odds, 100*s.Accuracy, s.Scored)
		}
	}
}

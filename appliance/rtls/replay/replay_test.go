package replay

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"beaconhub/appliance/rtls"
)

// writeDataset writes a tiny recording: three 10 m zones in a row, a
// gateway in the middle of each (positions given or null), and a beacon
// that stands 20 s in each zone in turn, scanned once a second with
// +-3 dB noise. train and test use different noise.
func writeDataset(t testing.TB, placed bool) string {
	dir := t.TempDir()
	gws := []string{`{"id":"G1","x":50,"y":50}`, `{"id":"G2","x":150,"y":50}`, `{"id":"G3","x":250,"y":50}`}
	if !placed {
		for i := range gws {
			gws[i] = fmt.Sprintf(`{"id":"G%d","x":null,"y":null}`, i+1)
		}
	}
	site := `{"map":{"width":300,"height":100},
	 "zones":[{"name":"Z1","x1":0,"y1":0,"x2":100,"y2":100},{"name":"Z2","x1":100,"y1":0,"x2":200,"y2":100},{"name":"Z3","x1":200,"y1":0,"x2":300,"y2":100}],
	 "adjacency":[["Z1","Z2"],["Z2","Z3"]],
	 "gateways":[` + strings.Join(gws, ",") + `]}`
	if err := os.WriteFile(filepath.Join(dir, "site.json"), []byte(site), 0o600); err != nil {
		t.Fatal(err)
	}
	walk := func(name string, seed uint64, start int64) {
		rng := rand.New(rand.NewPCG(seed, 1))
		var b strings.Builder
		b.WriteString("t_ms,gateway,beacon,rssi,zone,x,y\n")
		ts := start
		for z := 0; z < 3; z++ {
			x := float64(50 + 100*z)
			for s := 0; s < 20; s++ {
				for g := 0; g < 3; g++ {
					d := math.Max(math.Abs(float64(50+100*g)-x)/10, 0.5)
					rssi := -59 - 25*math.Log10(d) + (rng.Float64()*2-1)*3
					fmt.Fprintf(&b, "%d,G%d,TAG,%d,Z%d,%.0f,50\n", ts, g+1, int(math.Round(rssi)), z+1, x)
				}
				ts += 1000
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	walk("train.csv", 1, 1_700_000_000_000)
	walk("test.csv", 2, 1_700_000_100_000)
	return dir
}

func TestRunOnSyntheticWalk(t *testing.T) {
	for _, placed := range []bool{true, false} {
		rs := replayDir(t, writeDataset(t, placed))
		if len(rs) != 7 {
			t.Fatalf("%d results", len(rs))
		}
		for _, r := range rs {
			if !r.Ready {
				t.Fatalf("placed=%v %s not ready: %s", placed, r.Algorithm, r.Reason)
			}
			// 180 sightings, the first 5 s (15) unscored; two true changes.
			if r.Scored != 165 || r.Changes != 2 {
				t.Fatalf("placed=%v %s scored %d, changes %d", placed, r.Algorithm, r.Scored, r.Changes)
			}
			// The filters (hmm, bayes) trade about 4 s of lag per change (MeanStay 30 s)
			// for stability; the others lag by their Dwell.
			if r.Accuracy() < 0.8 || r.Corrected != 2 || r.CorrectS > 6 || r.Flips > 0 {
				t.Fatalf("placed=%v %+v", placed, r)
			}
		}
	}
}

func TestTimelineSpreadsCoarseTimestamps(t *testing.T) {
	rows := []Row{
		{T: 0, Gateway: "G1", Beacon: "B", Zone: "Z1", Pos: "1,1"},
		{T: 0, Gateway: "G2", Beacon: "B", Zone: "Z1", Pos: "1,1"}, // same scan
		{T: 0, Gateway: "G1", Beacon: "B", Zone: "Z1", Pos: "1,1"}, // G1 again: next scan
		{T: 0, Gateway: "G1", Beacon: "B", Zone: "Z2", Pos: "2,2"}, // moved: next scan
		{T: 2000, Gateway: "G1", Beacon: "B", Zone: "Z2", Pos: "2,2"},
		{T: 4000, Gateway: "G1", Beacon: "B", Zone: "Z2", Pos: "2,2"},
		{T: 90_000_000, Gateway: "G1", Beacon: "B", Zone: "Z2", Pos: "2,2"}, // a day later
	}
	// Three scans at 0 share the 2 s to the next timestamp; a day's
	// silence is cut to the timeout, a quarter and a period.
	checkTimeline(t, rows, []int64{0, 0, 666, 1332, 2000, 4000, 4000 + 60000 + 15000 + 2000})

	// A 5 Hz tag stamped in whole seconds: five scans a second, not five
	// seconds per second.
	rows = nil
	for s := int64(0); s < 3; s++ {
		for k := 0; k < 5; k++ {
			rows = append(rows, Row{T: 1000 * s, Gateway: "G1", Beacon: "B", Zone: "Z1"}, Row{T: 1000 * s, Gateway: "G2", Beacon: "B", Zone: "Z1"})
		}
	}
	var want []int64
	for s := int64(0); s < 3; s++ {
		for k := int64(0); k < 5; k++ {
			want = append(want, 1000*s+200*k, 1000*s+200*k)
		}
	}
	checkTimeline(t, rows, want)

	// The same rows listed by gateway: the same five scans a second
	// (a review: nine, four of them G1 or G2 alone).
	var byGW []Row
	for s := int64(0); s < 3; s++ {
		for _, g := range []string{"G1", "G2"} {
			for k := 0; k < 5; k++ {
				byGW = append(byGW, Row{T: 1000 * s, Gateway: g, Beacon: "B", Zone: "Z1"})
			}
		}
	}
	want = want[:0]
	for s := int64(0); s < 3; s++ {
		for range 2 {
			for k := int64(0); k < 5; k++ {
				want = append(want, 1000*s+200*k)
			}
		}
	}
	checkTimeline(t, byGW, want)

	// An unlabelled row is heard in the scan it came with, not one of
	// its own.
	rows = []Row{
		{T: 0, Gateway: "G1", Beacon: "B", Zone: "Z1", Pos: "1,1"},
		{T: 0, Gateway: "G2", Beacon: "B", Pos: ","},
		{T: 0, Gateway: "G3", Beacon: "B", Zone: "Z1", Pos: "1,1"},
		{T: 1000, Gateway: "G1", Beacon: "B", Zone: "Z1", Pos: "1,1"},
	}
	checkTimeline(t, rows, []int64{0, 0, 0, 1000})

	// Rows grouped by beacon: each beacon's scans share the gap.
	rows = []Row{
		{T: 0, Gateway: "G1", Beacon: "A", Zone: "Z1"}, {T: 0, Gateway: "G1", Beacon: "A", Zone: "Z1"},
		{T: 0, Gateway: "G1", Beacon: "B", Zone: "Z1"}, {T: 0, Gateway: "G1", Beacon: "B", Zone: "Z1"},
		{T: 1000, Gateway: "G1", Beacon: "A", Zone: "Z1"},
	}
	checkTimeline(t, rows, []int64{0, 500, 0, 500, 1000})

	// One instant for the whole file: a nominal period between scans.
	rows = []Row{{T: 5, Gateway: "G1", Beacon: "A"}, {T: 5, Gateway: "G1", Beacon: "A"}, {T: 5, Gateway: "G1", Beacon: "A"}}
	checkTimeline(t, rows, []int64{0, 1000, 2000})

	// Stamps five minutes apart: each silence is cut to the timeout, a
	// quarter and at most one timeout more, not a period of five minutes.
	rows = []Row{{T: 0, Gateway: "G1", Beacon: "A"}, {T: 300_000, Gateway: "G1", Beacon: "A"}, {T: 600_000, Gateway: "G1", Beacon: "A"}}
	checkTimeline(t, rows, []int64{0, 135_000, 270_000})
}

func TestTimeUnit(t *testing.T) {
	for _, c := range []struct {
		name   string
		t, gap float64
		toMS   float64
	}{
		{"Unix seconds", 1.7e9, 1, 1000},
		{"Unix ms", 1.7e12, 1000, 1},
		{"Unix ms of a 30 Hz advertiser", 1.7e12, 33, 1},
		{"Unix ms, each advertisement on three channels 1 ms apart", 1.7e12, 1, 1},
		{"ms since a boot 20 days ago", 1.7e9, 1000, 1},
		{"ms since a boot 17 days ago, a 10 Hz advertiser", 1.5e9, 100, 1},
		{"Unix seconds of a gateway that hears a beacon every 15 s", 1.7e9, 15, 1000},
		{"ms from the start", 5e5, 1000, 1},
		{"seconds from the start", 500, 1, 1000},
		{"ns since boot", 1e13, 1e9, 1e-6},
		{"us from the start", 5e8, 1e6, 1e-3},
		{"Unix microseconds", 1.7e15, 2e5, 1e-3},
		{"Unix seconds, each pair once", 1.7e9, 0, 1000},
		{"relative, each pair once", 5e5, 0, 1},
		{"Unix ms of a gateway that hears a beacon every 40 s", 1.7e12, 4e4, 1},
		{"Unix seconds of a gateway that hears a beacon every 40 s", 1.7e9, 40, 1000},
		{"us since a boot 20 days ago, a 10 Hz advertiser", 1.7e12, 1e5, 1e-3},
	} {
		// An hour of recording, in the file's unit.
		if got, note, _ := timeUnit([]float64{c.t, c.t + 3.6e6/c.toMS}, c.gap, false); got != c.toMS {
			t.Errorf("%s: x%v (%s), want x%v", c.name, got, note, c.toMS)
		}
	}
	// A minute of it: too short to be a recording in the finer unit.
	if got, note, _ := timeUnit([]float64{1.7e12, 1.7e12 + 6e4}, 4e4, false); got != 1 {
		t.Errorf("a minute of Unix ms with a 40 s period: x%v (%s), want x1", got, note)
	}
	// Stamps coarser than the period: the gap is their resolution. The
	// magnitude speaks alone; without one, the resolution nearest a
	// second of the units that make the file last two minutes (a review:
	// relative whole seconds of a 10 Hz tag were read as ms, "no
	// repeated sighting to judge by", and scored nothing).
	for _, c := range []struct {
		name   string
		t, res float64
		toMS   float64
	}{
		{"Unix ms rounded to 300 s", 1.7e12, 3e5, 1},
		{"Unix seconds rounded to 10 s", 1.7e9, 10, 1000},
		{"relative whole seconds", 0, 1, 1000},
		{"relative tenths of a second", 0, 0.1, 1000},
		{"relative ms rounded to a second", 0, 1000, 1},
		{"relative ms rounded to 10 s", 0, 1e4, 1},
		{"relative ms rounded to a minute", 0, 6e4, 1},
		{"relative seconds rounded to a minute", 0, 60, 1000},
	} {
		got, note, ok := timeUnit([]float64{c.t, c.t + 3.6e6/c.toMS}, c.res, true)
		if got != c.toMS || !ok || (c.t == 0) != strings.Contains(note, "resolution") {
			t.Errorf("%s: x%v (%s, %v), want x%v", c.name, got, note, ok, c.toMS)
		}
	}
	if got, note, ok := timeUnit([]float64{0, 5}, 0, true); got != 1 || ok || strings.Contains(note, "no repeated sighting") {
		t.Errorf("every repeat at one stamp: x%v (%s, %v), want x1 and no witness", got, note, ok)
	}
	// The gap is a period only where stamps are finer than it.
	rows := make([]Row, 6)
	for i := range rows {
		rows[i] = Row{Beacon: "B", Gateway: "G", RSSI: -60 - i}
	}
	if g, shared := pairGap(rows, []float64{3, 0, 1, 2, 4, 5}); g != 1 || shared != 0 {
		t.Errorf("period of 1: gap %v, shared %v", g, shared)
	}
	if g, shared := pairGap(rows, []float64{0, 0, 0, 300, 300, 300}); g != 300 || shared != 0.8 {
		t.Errorf("stamps coarser than the period: gap %v, shared %v; want a resolution of 300, 4 of 5 shared", g, shared)
	}
	// Every row twice: duplicates are not sightings at one stamp.
	dup := []float64{0, 0, 1, 1, 2, 2}
	for i := range rows {
		rows[i].RSSI = -60 - i/2
	}
	if g, shared := pairGap(rows, dup); g != 1 || shared != 0 {
		t.Errorf("duplicated rows: gap %v, shared %v, want 1", g, shared)
	}
	// Two gateways interleaved: each pair's own period, not the beacon's.
	rows = []Row{{Beacon: "B", Gateway: "G1"}, {Beacon: "B", Gateway: "G2"}, {Beacon: "B", Gateway: "G1"}, {Beacon: "B", Gateway: "G2"}}
	if g, _ := pairGap(rows, []float64{0, 500, 1000, 1500}); g != 1000 {
		t.Errorf("interleaved gateways: gap %v, want 1000", g)
	}
}

// TestFilesInDifferentUnits: train.csv in Unix ms and test.csv in Unix
// seconds are each read in their own unit, with a note for each.
func TestFilesInDifferentUnits(t *testing.T) {
	dir := writeDataset(t, true)
	rewriteTest(t, dir, func(i int, f []string) {
		ms, _ := strconv.ParseInt(f[0], 10, 64)
		f[0] = strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64)
	})
	ds, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Test[0].T != 1_700_000_100_000 || ds.Train[0].T != 1_700_000_000_000 || len(ds.Notes) != 3 ||
		ds.Notes[1] != "train.csv: t_ms read as Unix ms" || !strings.HasPrefix(ds.Notes[2], "test.csv: t_ms read as Unix seconds") {
		t.Fatalf("test starts %d, train %d; notes %q", ds.Test[0].T, ds.Train[0].T, ds.Notes)
	}
}

func TestInferScale(t *testing.T) {
	// Zones without area do not count: three named-only zones and two
	// drawn in metres.
	flat := []rtls.Zone{{X1: 1, Y1: 1, X2: 1, Y2: 1}, {X1: 2, Y1: 2, X2: 2, Y2: 2}, {}, {X2: 8, Y2: 8}, {X1: 8, X2: 16, Y2: 8}}
	if got, _ := inferScale(flat); got != 1 {
		t.Errorf("metres among named-only zones: %v units a metre", got)
	}
	// The unit that makes the side nearest 5 m: UCI's 40 units are 4 m
	// rooms in decimetres; 400 units are 4 m in centimetres, not 40 m in
	// decimetres (a review: the first unit in range was taken, and a
	// centimetre site's grid flipped 3.4 times a minute instead of
	// never); 20 units stay 2 m in decimetres, though they may be 20 m
	// in metres.
	for _, c := range []struct{ side, ppm float64 }{{40, 10}, {100, 10}, {10, 1}, {3, 1}, {1000, 100}, {300, 100}, {400, 100}, {150, 10}, {170, 100},
		{15, 1}, {20, 10}, {2000, 1000}, {0.5, 0.1}, {30000, 1000}} {
		zs := []rtls.Zone{{X1: 0, Y1: 0, X2: c.side, Y2: 2 * c.side}, {X1: 0, Y1: 0, X2: c.side, Y2: c.side}, {X1: 5, Y1: 5, X2: 5, Y2: 9}}
		if got, _ := inferScale(zs); got != c.ppm {
			t.Errorf("zones %v wide: %v units a metre, want %v", c.side, got, c.ppm)
		}
	}
}

func checkTimeline(t *testing.T, rows []Row, want []int64) {
	t.Helper()
	evs := timeline(rows, time.Minute)
	if len(evs) != len(rows) {
		t.Fatalf("%d events for %d rows", len(evs), len(rows))
	}
	at := map[*Row]int64{}
	for i, ev := range evs {
		if i > 0 && ev.v < evs[i-1].v {
			t.Fatalf("event %d at %d after one at %d: played out of time order (all %v)", i, ev.v, evs[i-1].v, evs)
		}
		at[ev.row] = ev.v
	}
	for i := range rows {
		if v, ok := at[&rows[i]]; !ok || v != want[i] {
			t.Fatalf("row %d at %d (present %v), want %d (all %v)", i, v, ok, want[i], evs)
		}
	}
}

func TestScorer(t *testing.T) {
	ds := &Dataset{ZoneID: map[string]uint64{"A": 1, "B": 2, "C": 3}}
	sc := newScorer(ds, 5*time.Second, time.Minute)
	seq := []struct {
		v    int64
		zone string
		pred uint64
	}{
		{0, "A", 1}, {1000, "A", 2}, // warm-up: not scored, flip not counted
		{5000, "A", 1}, {6000, "A", 3}, {7000, "A", 1}, // two flips
		{8000, "B", 1}, {9000, "B", 3}, {10000, "B", 2}, // change caught after 2 s (3 is a flip)
		{11000, "B", 2},
	}
	for _, s := range seq {
		sc.add(event{v: s.v, row: &Row{Beacon: "X", Zone: s.zone}}, s.pred)
	}
	var r Result
	sc.fill(&r)
	if r.Scored != 7 || r.Correct != 4 || r.Changes != 1 || r.Corrected != 1 || r.CorrectS != 2 || r.Flips != 3 {
		t.Fatalf("%+v", r)
	}
	if r.StableS != 5 { // 5-6, 6-7, 8-9, 9-10, 10-11 (the run after the change counts)
		t.Fatalf("stable %v s", r.StableS)
	}

	// A true change in the warm-up: catching up with it after the
	// warm-up is a correction (not timed: the change was not scored),
	// not a flip; a later excursion still is one.
	sc = newScorer(ds, 5*time.Second, time.Minute)
	for _, s := range []struct {
		v    int64
		zone string
		pred uint64
	}{
		{0, "A", 1}, {3000, "B", 1}, {5000, "B", 1}, {6000, "B", 2}, // caught up at 6 s
		{7000, "B", 3}, {8000, "B", 2}, // two flips
	} {
		sc.add(event{v: s.v, row: &Row{Beacon: "X", Zone: s.zone}}, s.pred)
	}
	r = Result{}
	sc.fill(&r)
	if r.Scored != 4 || r.Correct != 2 || r.Changes != 0 || r.Corrected != 0 || r.Flips != 2 || r.StableS != 3 {
		t.Fatalf("warm-up change: %+v", r)
	}
}

// A sighting is settled SettleAfter into its true zone's stay: the
// stay begins at a change, or at the beacon's first label (not at an
// unlabelled sighting before it), and an unlabelled sighting in it does
// not restart it.
func TestScorerSettled(t *testing.T) {
	ds := &Dataset{ZoneID: map[string]uint64{"A": 1, "B": 2}}
	sc := newScorer(ds, 5*time.Second, time.Minute)
	for _, s := range []struct {
		v    int64
		zone string
		pred uint64
	}{
		{0, "", 0}, {2000, "A", 2}, // the stay in A begins at 2 s
		{6000, "A", 1}, {11000, "", 1}, {11999, "A", 1}, // scored, not settled
		{12000, "A", 1}, {13000, "A", 2}, // settled: right, wrong
		{14000, "B", 2}, {23999, "B", 2}, // not settled
		{24000, "B", 2}, {25000, "B", 1}, // settled: right, wrong
	} {
		sc.add(event{v: s.v, row: &Row{Beacon: "X", Zone: s.zone}}, s.pred)
	}
	var r Result
	sc.fill(&r)
	if r.Scored != 8 || r.Settled != 4 || r.SettledCorrect != 2 || r.SettledAccuracy() != 0.5 {
		t.Fatalf("%+v", r)
	}
	if (&Result{}).SettledAccuracy() != 0 {
		t.Fatal("no settled sighting: accuracy not 0")
	}

	// Settling waits for the warm-up: 12 s into a stay but 12 s after
	// the first sighting is not scored, so not settled either.
	sc = newScorer(ds, 20*time.Second, time.Minute)
	for _, v := range []int64{0, 12000, 21000} {
		sc.add(event{v: v, row: &Row{Beacon: "X", Zone: "A"}}, 1)
	}
	r = Result{}
	sc.fill(&r)
	if r.Scored != 1 || r.Settled != 1 {
		t.Fatalf("warm-up longer than settling: %+v", r)
	}

	sc = newScorer(ds, 5*time.Second, time.Minute)
	// A beacon first seen late counts its stay from then, not from 0.
	for _, v := range []int64{30000, 36000} {
		sc.add(event{v: v, row: &Row{Beacon: "Y", Zone: "A"}}, 1)
	}
	// A silence longer than the timeout starts the stay again: the
	// engine forgot the beacon and has to find it anew.
	for _, v := range []int64{0, 20000, 30000, 100000, 105000, 110000} {
		sc.add(event{v: v, row: &Row{Beacon: "Z", Zone: "A"}}, 1)
	}
	r = Result{}
	sc.fill(&r)
	// Y: 36 s scored, 6 s into its stay. Z: 20 s and 30 s settled;
	// 100 s and 105 s scored after a 70 s silence; 110 s settled again.
	if r.Scored != 1+5 || r.Settled != 0+3 {
		t.Fatalf("late beacon and long silence: %+v", r)
	}
}

// The settled column prints its share with its counts, and "none" when
// no sighting had settled.
func TestFormatSettled(t *testing.T) {
	var b strings.Builder
	Format(&b, []Result{
		{Algorithm: "a", Ready: true, Scored: 4, Correct: 2, Settled: 4, SettledCorrect: 2},
		{Algorithm: "b", Ready: true, Scored: 4, Correct: 2},
	})
	out := b.String()
	if !strings.Contains(out, " | 50.0% (2/4) |\n| b |") || !strings.HasSuffix(out, " | none |\n") {
		t.Fatalf("settled column:\n%s", out)
	}
}

// Pace follows each beacon on its own: interleaved beacons are no
// change, an unlabelled row neither, and a silence counts up to maxGap.
func TestPace(t *testing.T) {
	rows := []Row{
		{T: 0, Beacon: "X", Zone: "A"}, {T: 0, Beacon: "Y", Zone: "B"},
		{T: 1000, Beacon: "X", Zone: "A"}, {T: 1000, Beacon: "Y", Zone: "B"},
		{T: 2000, Beacon: "X", Zone: ""},    // unlabelled: not a change
		{T: 3000, Beacon: "X", Zone: "B"},   // a change, 2 s after its last label
		{T: 100000, Beacon: "Y", Zone: "A"}, // a change after 99 s of silence: 60 s counted
	}
	n, s := Pace(rows, time.Minute)
	if n != 2 || s != 1+1+2+60 {
		t.Fatalf("%d changes in %v s", n, s)
	}
	ds := &Dataset{Test: rows}
	if got, want := PaceNote(ds, time.Minute), "zone changes of labelled time: test.csv one every 32 s (2 in 64 s); train.csv no change in 0 s"; got != want {
		t.Fatalf("note %q, want %q", got, want)
	}
}

func TestRunOnUCIDataset(t *testing.T) {
	dir := uciDir(t)
	rs := replayDir(t, dir)
	for _, r := range rs {
		if !r.Ready || r.Scored < 600 || r.Changes < 40 {
			t.Fatalf("%+v", r)
		}
		// One phone trained and tested: no tag offset to apply. The few
		// windows the file gives the estimate put it 2.5-2.9 dB off
		// (docs/rtls.md, "Tag offset"), and applying that cost k-NN 4
		// points; what is applied must stay 0.
		if v := r.Offsets["PHONE"]; v != 0 {
			t.Errorf("%s: tag offset %+.2f dB applied on UCI", r.Algorithm, v)
		}
	}
	var b strings.Builder
	Format(&b, rs)
	t.Log("\n" + b.String())
}

func TestLoadRejectsBadInput(t *testing.T) {
	dir := writeDataset(t, true)
	bad := map[string]string{
		"train.csv": "t_ms,gateway,beacon,rssi,zone\n1,G1,B,-60,Z9\n",
		"site.json": `{"zones":[{"name":"Z1"}],"adjacency":[["Z1","Z2"]]}`,
		"test.csv":  "t_ms,gateway,beacon,rssi,zone,Zone\n1,G1,B,-60,Z1,Z2\n",
	}
	for name, body := range bad {
		d := t.TempDir()
		for _, f := range []string{"site.json", "train.csv", "test.csv"} {
			b, _ := os.ReadFile(filepath.Join(dir, f))
			if f == name {
				b = []byte(body)
			}
			if err := os.WriteFile(filepath.Join(d, f), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := Load(d); err == nil {
			t.Fatalf("bad %s accepted", name)
		}
	}
	for _, site := range []string{
		`{"zones":[{"name":"Z1","x1":0,"y1":0,"x2":10,"y2":10}],"gateways":[{"id":"G1"},{"id":"G1"}]}`, // a gateway twice
		`{"zones":[]}`,
	} {
		d := t.TempDir()
		writeFile(t, filepath.Join(d, "site.json"), site)
		writeFile(t, filepath.Join(d, "train.csv"), "t_ms,gateway,beacon,rssi,zone\n")
		writeFile(t, filepath.Join(d, "test.csv"), "t_ms,gateway,beacon,rssi,zone\n")
		if _, err := Load(d); err == nil {
			t.Fatalf("site %s accepted", site)
		}
	}
	// Each with the message a dataset's author needs (a review: the
	// first one panicked; short rows passed as unlabelled or as
	// not-heard markers; a type error printed a Go struct).
	site := `{"zones":[{"name":"Z1","x1":0,"y1":0,"x2":10,"y2":10}]}`
	for _, c := range []struct{ site, test, want string }{
		{site, "t_ms,gateway,beacon,rssi,zone,x,y\n\"1,G1,B,-60,Z1,,\n", "test.csv: parse error on line 2"},
		{site, "t_ms,gateway,beacon,rssi,zone,x,y\n17\"01,G1,B,-60,Z1,,\n", "test.csv: parse error on line 2"},
		{site, "t_ms,gateway,beacon,rssi,zone,x,y\n1,G1,B,-60,Z1,,\n2,G1,B,-60\n", "test.csv:3: 4 fields, the header has 7: no zone"},
		{site, "t_ms,gateway,beacon,rssi,zone,x,y\n1,G1,B,-60,Z1,,,1\n", "test.csv:2: 8 fields, the header has 7"},
		{site, "\xff\xfet\x00_\x00m\x00s\x00", "test.csv: UTF-16 text"},
		{site, "\xd6n\x1b\xa7\x8e\x15" + strings.Repeat("\x8e\xf8", 200) + "\n", `...`},
		{`{"map":{"width":"wide"},"zones":[]}`, "t_ms,gateway,beacon,rssi,zone\n", `site.json: field "map.width" is a JSON string`},
		{`{"map":{"width":10,"height":10},"zones":[{"name":"a","x1":"abc"}]}`, "t_ms,gateway,beacon,rssi,zone\n", `site.json: field "zones.x1" is a JSON string`},
		{`[1]`, "t_ms,gateway,beacon,rssi,zone\n", "site.json: the document is a JSON array"},
		// As the CSVs say it (a review: "invalid character 'ÿ'").
		{"\xff\xfe{\x00}\x00", "t_ms,gateway,beacon,rssi,zone\n", "site.json: UTF-16 text; save it as UTF-8"},
		{"\xfe\xff\x00{\x00}", "t_ms,gateway,beacon,rssi,zone\n", "site.json: UTF-16 text; save it as UTF-8"},
	} {
		d := t.TempDir()
		writeFile(t, filepath.Join(d, "site.json"), c.site)
		writeFile(t, filepath.Join(d, "train.csv"), "t_ms,gateway,beacon,rssi,zone\n")
		writeFile(t, filepath.Join(d, "test.csv"), c.test)
		_, err := Load(d)
		if err == nil || !strings.Contains(err.Error(), c.want) || len(err.Error()) > 200 {
			t.Errorf("test.csv %q, site %s: %v; want %q in a short message", c.test[:min(len(c.test), 40)], c.site, err, c.want)
		}
	}
	// What the contract allows is still read: x and y left out of a
	// row, and an exporter's trailing commas.
	for _, test := range []string{
		"t_ms,gateway,beacon,rssi,zone,x,y\n1,G1,B,-60,Z1\n",
		"t_ms,gateway,beacon,rssi,zone\n1,G1,B,-60,Z1,\n",
	} {
		d := t.TempDir()
		writeFile(t, filepath.Join(d, "site.json"), site)
		writeFile(t, filepath.Join(d, "train.csv"), "t_ms,gateway,beacon,rssi,zone\n")
		writeFile(t, filepath.Join(d, "test.csv"), test)
		if ds, err := Load(d); err != nil || len(ds.Test) != 1 || ds.Test[0].Zone != "Z1" {
			t.Errorf("test.csv %q: %v", test, err)
		}
	}
	d := t.TempDir()
	writeFile(t, filepath.Join(d, "site.json"), site)
	writeFile(t, filepath.Join(d, "train.csv"), "")
	writeFile(t, filepath.Join(d, "test.csv"), "t_ms,gateway,beacon,rssi,zone\n")
	if _, err := Load(d); err == nil || !strings.Contains(err.Error(), "empty file") {
		t.Fatalf("empty train.csv: %v", err)
	}
}

// TestUCIWithoutAdjacency: the UCI site with its adjacency left out, as
// a site whose zones were drawn and never linked. hmm must still follow
// the phone (the zones get the neighbours their rectangles border,
// rtls linkIsolatedZones); with every zone isolated it scored 56% here
// against 71% with the declared graph.
func TestUCIWithoutAdjacency(t *testing.T) {
	src := uciDir(t)
	ds, err := Load(src)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ds.Site.Zones {
		ds.Site.Zones[i].Adjacent = nil
	}
	rs, err := Run(ds, Options{Algorithms: []string{"hmm"}})
	if err != nil {
		t.Fatal(err)
	}
	if a := rs[0].Accuracy(); a < 0.68 {
		t.Fatalf("hmm %.1f%% on UCI without adjacency", 100*a)
	}
}

// TestLoadReadsSpreadsheetExports: a byte-order mark, CRLF line ends, a
// padded or capitalised header and padded fields, as spreadsheets and
// Windows editors write them, read as the plain file would.
func TestLoadReadsSpreadsheetExports(t *testing.T) {
	dir := writeDataset(t, true)
	site, err := os.ReadFile(filepath.Join(dir, "site.json"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "site.json"), "\xef\xbb\xbf"+string(site))
	for _, body := range []string{
		"\xef\xbb\xbfT_ms, Gateway ,beacon,RSSI,zone,x,y\r\n1000, G2 , B ,-70, Z1 ,5,5\r\n",
		// Old Mac line ends, a lone CR (a review: read as one line, the
		// load failed on a column named twice).
		"t_ms,gateway,beacon,rssi,zone,x,y\r1000,G2,B,-70,Z1,5,5\r",
		"t_ms,gateway,beacon,rssi,zone,x,y\r1000,G2,B,-70,Z1,5,5",
		"\xef\xbb\xbf\"t_ms\",\"gateway\",\"beacon\",\"rssi\",\"zone\",\"x\",\"y\"\r\n1000, \"G2\",\"B\",-70,\"Z1\",5,5\r\n",
	} {
		writeFile(t, filepath.Join(dir, "test.csv"), body)
		ds, err := Load(dir)
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		if len(ds.Test) != 1 || ds.Test[0] != (Row{T: 1000, Gateway: "G2", Beacon: "B", RSSI: -70, Zone: "Z1", Pos: "5,5"}) {
			t.Fatalf("%q: rows %+v", body, ds.Test)
		}
	}
}

// TestLoadReadsDecimalsAndUnorderedRows: a recording may write averaged
// RSSI and decimal timestamps, and a merge of receivers' logs may not
// keep time order; the replay reads the first rounded and the second
// sorted (stably: rows of one instant keep their order).
func TestLoadReadsDecimalsAndUnorderedRows(t *testing.T) {
	dir := writeDataset(t, true)
	writeFile(t, filepath.Join(dir, "test.csv"), "t_ms,gateway,beacon,rssi,zone\n"+
		"2000.0,G1,B,-60.4,Z1\n1000,G2,B,-70.6,Z1\n2000,G2,B, -61 ,Z1\n")
	ds, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range ds.Test {
		got = append(got, fmt.Sprintf("%d %s %d", r.T, r.Gateway, r.RSSI))
	}
	if want := []string{"1000 G2 -71", "2000 G1 -60", "2000 G2 -61"}; !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	for _, bad := range []string{"1e30,G1,B,-60,Z1", "x,G1,B,-60,Z1", "1000,G1,B,-6o,Z1"} {
		writeFile(t, filepath.Join(dir, "test.csv"), "t_ms,gateway,beacon,rssi,zone\n"+bad+"\n")
		if _, err := Load(dir); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
	// An infinite RSSI is a value outside -127..0, skipped and counted
	// as the docs say (a review: "-inf" failed the load).
	writeFile(t, filepath.Join(dir, "test.csv"), "t_ms,gateway,beacon,rssi,zone\n"+
		"1000,G1,B,-inf,Z1\n1000,G2,B,-Infinity,Z1\n1000,G3,B,inf,Z1\n1000,G1,B,+Inf,Z1\n1000,G1,B,-1e400,Z1\n2000,G1,B,-60,Z1\n")
	if ds, err := Load(dir); err != nil || ds.Skipped != 5 || ds.Markers != 0 || len(ds.Test) != 1 {
		t.Fatalf("infinite RSSI: %v, %+v", err, ds)
	}
	writeFile(t, filepath.Join(dir, "test.csv"), "t_ms,gateway,beacon,rssi,zone\n1000,G1,B,-67.5,Z1\n1000.4,G2,B,-66.5,Z1\n")
	ds, err = Load(dir)
	if err != nil || ds.Test[0].RSSI != -68 || ds.Test[1].RSSI != -66 || ds.Test[1].T != 1000 {
		t.Fatalf("halves %+v %v: want -68 and -66 (to even), t 1000", ds.Test, err)
	}
}

// TestScoredAtTheEndOfAnInstant: a sighting is scored on the engine's
// answer once every sighting of its millisecond is in. The tag stands in
// Z3 and each scan lists the far gateway G1 first; after a silence
// longer than the timeout the tag is unknown, so the first fix is taken
// on G1 alone (Z1) and revised by G2 and G3 within the millisecond.
// Scored report by report, G1's row would count Z1.
func TestScoredAtTheEndOfAnInstant(t *testing.T) {
	dir := writeDataset(t, true)
	var b strings.Builder
	b.WriteString("t_ms,gateway,beacon,rssi,zone,x,y\n")
	scan := func(ts int64) {
		fmt.Fprintf(&b, "%d,G1,TAG,-85,Z3,250,50\n%d,G2,TAG,-72,Z3,250,50\n%d,G3,TAG,-55,Z3,250,50\n", ts, ts, ts)
	}
	for s := int64(0); s < 10; s++ {
		scan(1_700_000_100_000 + 1000*s)
	}
	scan(1_700_000_100_000 + 60_000) // after a 51 s silence
	if err := os.WriteFile(filepath.Join(dir, "test.csv"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	ds, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := Run(ds, Options{Algorithms: []string{"strongest"}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// 33 sightings, the first 5 s (15) in the warm-up.
	if r := rs[0]; r.Scored != 18 || r.Correct != 18 || r.Flips != 0 {
		t.Fatalf("%+v", r)
	}
}

// TestLoadReadsWhatRecordersWrite: what converters and recorders write
// where the contract is silent or strict. Each of these was once
// rejected or, worse, read wrong with exit status 0 (a review of the
// eleventh session: Unix seconds scored 0 of 0 sightings, 1% of rows at
// 0 dBm cost hmm a third of its accuracy).
func TestLoadReadsWhatRecordersWrite(t *testing.T) {
	dir := writeDataset(t, true)
	// Numbers as names; a gateway the site forgot.
	writeFile(t, filepath.Join(dir, "site.json"), `{"map":{"width":300,"height":100},
	 "zones":[{"name":1,"x1":0,"y1":0,"x2":100,"y2":100},{"name":" 2 ","x1":100,"y1":0,"x2":200,"y2":100},{"name":"3","x1":200,"y1":0,"x2":300,"y2":100}],
	 "adjacency":[[1,2],["2",3]],
	 "gateways":[{"id":1,"x":50,"y":50},{"id":"2","x":150,"y":50}]}`)
	for _, c := range []struct {
		name, t1, t2 string
		wantT        int64
	}{
		{"Unix seconds", "1700000000", "1700000001.5", 1_700_000_001_500},
		{"Unix ms", "1700000000000", "1700000001500", 1_700_000_001_500},
		{"Unix us", "1700000000000000", "1700000001500000", 1_700_000_001_500},
		{"Unix ns", "1700000000000000000", "1700000001500000000", 1_700_000_001_500},
		{"seconds from the start", "0.5", "2.0", 2000}, // "2.0": Python's float
		{"ms from the start", "500", "2000", 2000},
	} {
		body := "t_ms,gateway,beacon,rssi,zone\n" +
			c.t1 + ",1,B,-60,1\n" +
			c.t1 + ",2,B,0,1\n" + // iOS: not measured
			c.t1 + ",3,B,-127,1\n" + // not available
			c.t1 + ",3,B,,1\n" +
			c.t1 + ",3,B,NaN,1\n" +
			c.t2 + ",1,B,-61,1\n" + // gateway 1 again: the period tells the unit
			c.t2 + ",3,B,-70,\n" + // unlabelled
			c.t2 + ",2,B,-200,2\n" // outside the contract
		writeFile(t, filepath.Join(dir, "train.csv"), body)
		writeFile(t, filepath.Join(dir, "test.csv"), body)
		ds, err := Load(dir)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(ds.Train) != 2 || len(ds.Test) != 3 || ds.Test[2].T != c.wantT || ds.Test[2].Zone != "" || ds.Test[2].Gateway != "3" {
			t.Fatalf("%s: train %+v test %+v", c.name, ds.Train, ds.Test)
		}
		if ds.Markers != 8 || ds.Skipped != 2 || ds.Unlabelled != 1 || ds.UnlabelledTrain != 1 || len(ds.Gateway) != 3 || ds.Site.Gateways[2].Placed {
			t.Fatalf("%s: markers %d skipped %d unlabelled %d/%d gateways %v", c.name, ds.Markers, ds.Skipped, ds.Unlabelled, ds.UnlabelledTrain, ds.Site.Gateways)
		}
		if ds.ZoneID["2"] != 2 || len(ds.Site.Zones[1].Adjacent) != 2 {
			t.Fatalf("%s: zones %+v", c.name, ds.Site.Zones)
		}
	}
}

// TestUnlabelledRowsAreHeardNotScored: an unlabelled test row reaches
// the engine (it is a sighting) but is not scored; a long id works.
func TestUnlabelledRowsAreHeardNotScored(t *testing.T) {
	dir := writeDataset(t, true)
	long := strings.Repeat("tag-of-a-converter-that-keeps-the-file-name-", 3)
	rewriteTest(t, dir, func(i int, f []string) {
		f[2] = long
		if i <= 30 || i > 90 { // the first 10 s of Z1, the second half of Z2 and all of Z3
			f[4] = ""
		}
	})
	ds, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := Run(ds, Options{Algorithms: []string{"strongest"}})
	if err != nil {
		t.Fatal(err)
	}
	// 60 labelled rows, all after the warm-up, which runs from the tag's
	// first (unlabelled) sighting; one change (Z1 -> Z2).
	if r := rs[0]; r.Scored != 60 || r.Changes != 1 || r.Corrected != 1 || r.Accuracy() < 0.8 {
		t.Fatalf("%+v", r)
	}
}

// TestSiteScaleAndShapelessZones: a site may give its scale; a site
// whose zones have no area is replayed with its gateways unplaced, and
// the algorithms that need the zones' shapes say so instead of scoring
// every zone at the origin.
func TestSiteScaleAndShapelessZones(t *testing.T) {
	dir := writeDataset(t, true)
	site, err := os.ReadFile(filepath.Join(dir, "site.json"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "site.json"), strings.Replace(string(site), `"height":100`, `"height":100,"pixels_per_meter":3`, 1))
	ds, err := Load(dir)
	if err != nil || ds.Site.Maps[0].PixelsPerMeter != 3 || len(ds.Notes) != 0 {
		t.Fatalf("given scale: %v %+v %q", err, ds.Site.Maps, ds.Notes)
	}

	// One zone named only ("outside"): a note, not a refusal.
	writeFile(t, filepath.Join(dir, "site.json"), strings.Replace(string(site), `"zones":[`, `"zones":[{"name":"OUT","x1":0,"y1":0,"x2":0,"y2":0},`, 1))
	ds, err = Load(dir)
	if err != nil || ds.NoGeometry || len(ds.Notes) != 2 || !strings.Contains(ds.Notes[0], "1 of 4 zones have no area") || ds.Site.Maps[0].PixelsPerMeter != 10 {
		t.Fatalf("one zone without area: %v %q", err, ds.Notes)
	}

	flat := regexp.MustCompile(`"x1":\d+,"y1":\d+,"x2":\d+,"y2":\d+`).ReplaceAllString(string(site), `"x1":0,"y1":0,"x2":0,"y2":0`)
	writeFile(t, filepath.Join(dir, "site.json"), flat)
	ds, err = Load(dir)
	if err != nil || !ds.NoGeometry || ds.Site.Gateways[0].Placed {
		t.Fatalf("shapeless zones: %v %+v", err, ds)
	}
	rs, err := Run(ds, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		shaped := r.Algorithm == "centroid" || r.Algorithm == "grid"
		if r.Ready == shaped || !shaped && r.Accuracy() < 0.8 || shaped && r.Scored != 0 {
			t.Fatalf("%+v", r)
		}
	}
}

// rewriteTest lets edit change the fields of each row of dir/test.csv
// (i counts rows from 1).
func rewriteTest(t *testing.T, dir string, edit func(i int, f []string)) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "test.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i := 1; i < len(lines); i++ {
		f := strings.Split(lines[i], ",")
		edit(i, f)
		lines[i] = strings.Join(f, ",")
	}
	writeFile(t, filepath.Join(dir, "test.csv"), strings.Join(lines, "\n")+"\n")
}

// TestSurveyOrderIsTheBeacons: the survey's samples come beacon after
// beacon in the order of their ids, whatever order the recording and
// Go's maps give: the order decides k-NN's ties and the calibration's
// sums, so a random one made a replay score differently from run to run.
func TestSurveyOrderIsTheBeacons(t *testing.T) {
	dir := writeDataset(t, true)
	// Three beacons surveying one zone each, all at once, listed out of
	// order: C in Z3, A in Z1, B in Z2.
	var b strings.Builder
	b.WriteString("t_ms,gateway,beacon,rssi,zone,x,y\n")
	for s := int64(0); s < 10; s++ {
		for _, r := range []string{"C,-80,Z3", "A,-50,Z1", "B,-65,Z2"} {
			f := strings.Split(r, ",")
			fmt.Fprintf(&b, "%d,G1,%s,%s,%s,,\n", 1_700_000_000_000+1000*s, f[0], f[1], f[2])
		}
	}
	writeFile(t, filepath.Join(dir, "train.csv"), b.String())
	ds, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for run := 0; run < 12; run++ {
		r, err := newRig(ds, t.TempDir(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		samples, err := r.survey(ds, time.Minute)
		r.close()
		if err != nil {
			t.Fatal(err)
		}
		var order []uint64
		for _, s := range samples {
			if len(order) == 0 || order[len(order)-1] != s.Zone {
				order = append(order, s.Zone)
			}
		}
		if want := []uint64{ds.ZoneID["Z1"], ds.ZoneID["Z2"], ds.ZoneID["Z3"]}; !slices.Equal(order, want) {
			t.Fatalf("run %d: the samples' zones come in the order %v, want %v (beacons A, B, C)", run, order, want)
		}
	}
}

// TestRunIgnoresTheOtherAlgorithms: an algorithm's figures do not depend
// on which algorithms ran before it on the rig. The engine's timeout
// sweep ran on a cadence set when the engine was made, so a silence a
// little over the timeout turned the beacon unknown in one run and not
// in the next, whose start fell at another point of the cadence: UCI
// without four of its beacons scored grid 57.4% alone and 57.7% after
// strongest. Walk C with silences of 61-73 s cut into its test.
func TestRunIgnoresTheOtherAlgorithms(t *testing.T) {
	longReplay(t)
	w := walkSettings[2].w
	w.seed, w.legs = walkSettings[2].seeds[0], 12
	ds := loadWalk(t, w)
	// A silence after every 150 s of the test, each 3 s longer.
	var shift, next int64
	gap := int64(61_000)
	t0 := ds.Test[0].T
	for i := range ds.Test {
		if ds.Test[i].T-t0 >= next+150_000 {
			next = ds.Test[i].T - t0
			shift += gap
			gap += 3_000
		}
		ds.Test[i].T += shift
	}
	alone, err := Run(ds, Options{Algorithms: []string{"grid"}})
	if err != nil {
		t.Fatal(err)
	}
	after, err := Run(ds, Options{Algorithms: []string{"strongest", "hmm", "grid"}})
	if err != nil {
		t.Fatal(err)
	}
	a, b := alone[0], after[2]
	a.Offsets, b.Offsets = nil, nil
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("grid alone %+v\nafter strongest and hmm %+v", a, b)
	}
}

// TestWithoutGateways: gateways taken out leave the site and both files;
// an unknown id, or all of them, is refused and leaves ds as it was.
func TestWithoutGateways(t *testing.T) {
	w := walkSettings[2].w
	w.seed, w.legs = walkSettings[2].seeds[0], 4
	ds := loadWalk(t, w)
	gws, train, test := len(ds.Site.Gateways), len(ds.Train), len(ds.Test)
	all := slices.Collect(maps.Keys(ds.Gateway))
	for _, bad := range [][]string{{"G0", "G99"}, all} {
		if err := ds.WithoutGateways(bad); err == nil {
			t.Fatalf("%v taken out", bad)
		}
		if len(ds.Site.Gateways) != gws || len(ds.Train) != train || len(ds.Test) != test || len(ds.Gateway) != gws {
			t.Fatalf("a refused %v changed the recording", bad)
		}
	}
	gone := map[string][6]byte{"G0": ds.Gateway["G0"], "G3": ds.Gateway["G3"]}
	if err := ds.WithoutGateways([]string{"G0", "G3"}); err != nil {
		t.Fatal(err)
	}
	if len(ds.Site.Gateways) != gws-2 || len(ds.Gateway) != gws-2 {
		t.Fatalf("%d gateways in the site, %d by id, want %d", len(ds.Site.Gateways), len(ds.Gateway), gws-2)
	}
	for _, g := range ds.Site.Gateways {
		if g.MAC == gone["G0"] || g.MAC == gone["G3"] {
			t.Fatalf("gateway %x still in the site", g.MAC)
		}
	}
	for _, rows := range [][]Row{ds.Train, ds.Test} {
		for _, r := range rows {
			if _, out := gone[r.Gateway]; out {
				t.Fatalf("a row of %s left in", r.Gateway)
			}
		}
	}
	if len(ds.Train) >= train || len(ds.Test) >= test {
		t.Fatalf("rows %d / %d, were %d / %d", len(ds.Train), len(ds.Test), train, test)
	}
	if rs, err := Run(ds, Options{Algorithms: []string{"hmm"}}); err != nil || rs[0].Scored == 0 {
		t.Fatalf("replay without two gateways: %+v, %v", rs, err)
	}
}

// TestRealRecordingFloors guards the one real recording, and the copies
// of it without some of its beacons whose baselines score near 50% (as
// the issue says the recordings the engine is judged on do), against a
// change tuned on generated recordings that costs real ones: hmm, bayes
// and fusion each stay within 2 points of the eighteenth session's
// accuracy (docs/performance.md, "UCI with gateways removed"); hmm's
// are the twenty-eighth's, after a correctness fix (one hop a scan)
// cost it 1.1-2.3 points.
func TestRealRecordingFloors(t *testing.T) {
	dir := uciDir(t)
	t.Parallel() // six replays of a small file: seconds under the race detector
	for _, c := range uciCopies {
		rs, err := Run(uciWithout(t, dir, c.without), Options{Algorithms: []string{"hmm", "bayes", "fusion"}})
		if err != nil {
			t.Fatal(err)
		}
		for i, floor := range []float64{c.hmm, c.bayes, c.fusion} {
			if got := 100 * rs[i].Accuracy(); got < floor-2 {
				t.Errorf("UCI without [%s]: %s %.1f%%, was %.1f", c.without, rs[i].Algorithm, got, floor)
			}
		}
	}
}

// uciCopies are the UCI recording and its copies without some of its
// gateways (TestRealRecordingFloors), with their floors.
var uciCopies = []struct {
	without            string  // gateway ids, comma-separated
	hmm, bayes, fusion float64 // %
}{
	{"", 71.3, 72.4, 72.7},
	{"G3001,G3002,G3003,G3004", 62.0, 68.0, 65.5},
	{"G3005,G3006,G3007,G3008", 59.8, 58.4, 56.1},
	{"G3009,G3010,G3011,G3012", 70.6, 70.5, 73.2},
	{"G3001,G3004,G3007,G3010,G3013", 73.8, 77.6, 74.5},
	{"G3002,G3005,G3008,G3011", 62.3, 59.5, 61.3},
}

// uciWithout loads the UCI recording in dir without the gateways named
// in without (none for "").
func uciWithout(t *testing.T, dir, without string) *Dataset {
	t.Helper()
	ds, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if without != "" {
		if err := ds.WithoutGateways(strings.Split(without, ",")); err != nil {
			t.Fatal(err)
		}
	}
	return ds
}

// TestRealRecordingJudgesNoGatewayDown: no gateway went down in the UCI
// recording (nor in its copies without some gateways: those were never
// installed), and one tag walks it alone, so a gateway falls silent
// whenever the tag leaves its range: the case where telling "down" from
// "idle" is hardest. None may be judged down under any algorithm (the
// judgement is the site's, in the status and the log, whichever runs).
// Charging a gateway's silence against the zone the tag held when it
// last heard it (liveness.go: the review's dead corridor gateway)
// judged 23 down over these six replays without its check that the
// other readings fit that zone, 6 while it kept charging after they had
// fitted the tag's new zone clearly (restGiveUp, then window by window);
// summed over the windows, grid judged one down at 3000 to 1.
func TestRealRecordingJudgesNoGatewayDown(t *testing.T) {
	dir := uciDir(t)
	t.Parallel()
	for _, c := range uciCopies {
		ds := uciWithout(t, dir, c.without)
		// As rtls-eval runs it (grid's motion, the filters' odds).
		opts, _, _, err := AsEval(ds, Options{}, func(string) bool { return false })
		if err != nil {
			t.Fatal(err)
		}
		rs, err := Run(ds, opts)
		if err != nil {
			t.Fatal(err)
		}
		if n := DownsNote(rs); n != "" {
			t.Errorf("UCI without [%s]: %s", c.without, n)
		}
	}
}

// uciDir is the shared UCI recording's directory; a test on it is
// skipped where it is not present.
func uciDir(t *testing.T) string {
	t.Helper()
	dir := "/work/shared/datasets/uci-ble-rssi"
	if _, err := os.Stat(dir); err != nil {
		t.Skip("dataset not present")
	}
	return dir
}

// TestTimelinePlaysAnInstantByGateway: the engine decides report by
// report, so a recording's score must not hang on how its exporter
// listed a scan's rows: a virtual instant is played gateway by gateway,
// a gateway's own rows in the file's order (a review: UCI with each
// millisecond reversed scored strongest 54.4% instead of 56.0%). The
// order of positions within a timestamp stays the file's (a review of
// the first version, which sorted in Load: Z1 then Z2 at one stamp
// played as Z2, Z1, Z2).
func TestTimelinePlaysAnInstantByGateway(t *testing.T) {
	rows := []Row{
		{T: 0, Gateway: "G3", Beacon: "B", Zone: "Z1", Pos: "1,1", RSSI: -70},
		{T: 0, Gateway: "G1", Beacon: "B", Zone: "Z1", Pos: "1,1", RSSI: -50},
		{T: 0, Gateway: "G2", Beacon: "B", Zone: "Z1", Pos: "1,1", RSSI: -60},
		{T: 1000, Gateway: "G1", Beacon: "B", Zone: "Z1", Pos: "1,1", RSSI: -51},
	}
	var got []string
	for _, ev := range timeline(rows, time.Minute) {
		got = append(got, fmt.Sprintf("%d %s", ev.v, ev.row.Gateway))
	}
	if want := []string{"0 G1", "0 G2", "0 G3", "1000 G1"}; !slices.Equal(got, want) {
		t.Fatalf("played %v, want %v", got, want)
	}
	// Z1, then Z2, at one stamp: Z1's scan first, whatever the gateways.
	checkTimeline(t, []Row{
		{T: 0, Gateway: "G2", Beacon: "B", Zone: "Z1", Pos: "1,1"},
		{T: 0, Gateway: "G2", Beacon: "B", Zone: "Z2", Pos: "2,2"},
		{T: 0, Gateway: "G1", Beacon: "B", Zone: "Z2", Pos: "2,2"},
		{T: 1000, Gateway: "G1", Beacon: "B", Zone: "Z2", Pos: "2,2"},
	}, []int64{0, 500, 500, 1000})
	// There and back at one stamp: three scans, not two.
	checkTimeline(t, []Row{
		{T: 0, Gateway: "G1", Beacon: "B", Zone: "Z1", Pos: "1,1"},
		{T: 0, Gateway: "G1", Beacon: "B", Zone: "Z2", Pos: "2,2"},
		{T: 0, Gateway: "G1", Beacon: "B", Zone: "Z1", Pos: "1,1"},
		{T: 3000, Gateway: "G1", Beacon: "B", Zone: "Z1", Pos: "1,1"},
	}, []int64{0, 1000, 2000, 3000})
	// An unlabelled row first joins the scan the labelled rows open.
	checkTimeline(t, []Row{
		{T: 0, Gateway: "G0", Beacon: "B", Pos: ","},
		{T: 0, Gateway: "G1", Beacon: "B", Zone: "Z1", Pos: "1,1"},
		{T: 0, Gateway: "G3", Beacon: "B", Zone: "Z1", Pos: "1,1"},
		{T: 1000, Gateway: "G1", Beacon: "B", Zone: "Z1", Pos: "1,1"},
	}, []int64{0, 0, 0, 1000})
}

// DownsNote names only the algorithms under which a gateway was judged
// down, with the count, and says nothing when none was.
func TestDownsNote(t *testing.T) {
	if n := DownsNote([]Result{{Algorithm: "hmm"}, {Algorithm: "grid"}}); n != "" {
		t.Fatalf("note %q with no judgement", n)
	}
	n := DownsNote([]Result{{Algorithm: "hmm"}, {Algorithm: "grid", Downs: 2}, {Algorithm: "knn", Downs: 1}})
	if !strings.Contains(n, ": grid 2, knn 1;") || strings.Contains(n, "hmm") {
		t.Fatalf("note %q, want grid 2 and knn 1 only", n)
	}
}

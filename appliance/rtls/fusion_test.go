package rtls

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestFusionKnownAnswer: with placed gateways and no survey (both halves
// on the log-distance defaults), and with unplaced gateways and a
// survey, a beacon standing still is placed in its zone, and moved to a
// zone that is not adjacent it follows there.
func TestFusionKnownAnswer(t *testing.T) {
	for _, withSamples := range []bool{true, false} {
		s := gridSite(3, 3, !withSamples)
		rng := rand.New(rand.NewPCG(12, 13))
		var samples []Sample
		if withSamples {
			samples = surveySamples(s, 5, 2, rng)
		}
		h := tracking(t, Options{}, s, samples, AlgFusion)
		if m := h.e.model.Load(); !m.gridReady() {
			t.Fatalf("samples=%v: fusion runs without a fitted grid", withSamples)
		}
		standAt(h, s, "WAT-1", 250, 250, 2, 5, rng) // zone 9
		if z := h.zone("WAT-1"); z != 9 {
			t.Fatalf("samples=%v: zone %d, want 9", withSamples, z)
		}
		standAt(h, s, "WAT-1", 50, 50, 2, 30, rng)
		if z := h.zone("WAT-1"); z != 1 {
			t.Fatalf("samples=%v: zone %d after moving, want 1", withSamples, z)
		}
		for _, a := range h.e.Algorithms() {
			if a.Name == AlgFusion && (!a.Ready || a.Params["grid_cells"] != 900 || a.Params["gateways_modelled"] != 9 || a.Params["pool"] == nil) {
				t.Fatalf("samples=%v: fusion's info %+v", withSamples, a)
			}
		}
		if b := h.state("WAT-1"); len(b.gmass) != 9 || len(b.belief) != 9 || len(b.post) != 9 || &b.post[0] != &b.pooled[0] {
			t.Fatalf("samples=%v: fusion did not run both filters (grid %d, zone filter %d zones)", withSamples, len(b.gmass), len(b.belief))
		}
	}
}

// TestPool: the pool is the normalised geometric mean; a zone one filter
// rules out entirely (grid's mass can be 0) is not ruled out for both;
// without grid's masses grid counts as undecided.
func TestPool(t *testing.T) {
	out := make([]float64, 3)
	pool(out, []float64{0.8, 0.2, 0}, []float64{0.2, 0.8, 0})
	if math.Abs(out[0]-0.5) > 1e-9 || math.Abs(out[1]-0.5) > 1e-9 || out[2] > 1e-9 {
		t.Fatalf("pool of mirrored beliefs: %v", out)
	}
	pool(out, []float64{0.9, 0.1, 0}, []float64{0.6, 0.4, 0})
	want := math.Sqrt(0.9*0.6) / (math.Sqrt(0.9*0.6) + math.Sqrt(0.1*0.4))
	if math.Abs(out[0]-want) > 1e-9 {
		t.Fatalf("pool: %v, want %.6f first", out, want)
	}
	pool(out, []float64{1e-9, 1 - 1e-9, 0}, []float64{0, 1, 0}) // grid has no mass in zone 0
	if out[0] <= 0 || math.IsNaN(out[0]) || math.Abs(out[0]+out[1]+out[2]-1) > 1e-9 {
		t.Fatalf("pool with a zero mass: %v", out)
	}
	pool(out, []float64{0.09, 0.01, 0.9}, nil) // grid undecided: sqrt(a), normalised
	if sum := 0.4 + math.Sqrt(0.9); math.Abs(out[0]-0.3/sum) > 1e-9 || math.Abs(out[1]-0.1/sum) > 1e-9 || math.Abs(out[2]-math.Sqrt(0.9)/sum) > 1e-9 {
		t.Fatalf("pool with grid undecided: %v", out)
	}
}

// TestFusionSwitchesOnlyWhenBothLean: the zone changes on the pooled
// odds, so one filter's confident turn is not enough while the other
// holds the reported zone or is undecided (with the other undecided, one
// filter needs SwitchOdds squared), and two moderate turns the same way
// are enough. The zone filter alone would switch in every case but the
// third from last.
func TestFusionSwitchesOnlyWhenBothLean(t *testing.T) {
	p := DefaultParams() // SwitchOdds 10
	b := newBeacon("WAT-1")
	b.zone, b.fixed = 0, -1
	out := make([]float64, 2)
	for _, c := range []struct {
		filter, grid []float64
		want         int
	}{
		{[]float64{0.01, 0.99}, []float64{0.9, 0.1}, 0},   // 99:1 against 1:9, pooled 3.3:1
		{[]float64{0.01, 0.99}, []float64{0.5, 0.5}, 0},   // 99:1, grid undecided: 9.95:1
		{[]float64{0.02, 0.98}, []float64{0.4, 0.6}, 0},   // 49:1 and 1.5:1: 8.6:1
		{[]float64{0.5, 0.5}, []float64{0.001, 0.999}, 1}, // 999:1 alone: 31.6:1
		{[]float64{0.08, 0.92}, []float64{0.08, 0.92}, 1}, // both 11.5:1
		{[]float64{0.04, 0.96}, []float64{0.15, 0.85}, 1}, // 24:1 and 5.7:1: 11.7:1
	} {
		pool(out, c.filter, c.grid)
		if got := switchZone(&p, b, out, 1000); got != c.want {
			t.Errorf("filter %v, grid %v: pooled %.4f, zone %d, want %d", c.filter, c.grid, out, got, c.want)
		}
	}
}

// TestFusionForgetsAGridThatLearnsNothing: a room heard only by a gateway
// the survey heard too rarely for grid to model it. There grid learns
// nothing, and its last belief (certain of the room the tag left) must
// not hold the pool: fusion follows the zone filter into the room, as
// hmm and bayes do. (Pooling grid's stale masses, it stayed in the room
// left for the whole minute, at pooled odds of 9.96.)
func TestFusionForgetsAGridThatLearnsNothing(t *testing.T) {
	s, samples := roomOfOneGateway()
	g3 := s.Gateways[2].MAC
	for _, alg := range []string{AlgFilter, AlgFusion} {
		h := tracking(t, Options{}, s, samples, alg)
		if m := h.e.model.Load(); alg == AlgFusion && m.grid.gw[m.gwIdx[g3]].ok {
			t.Fatalf("%s: grid models gateway 3 (the test needs it unmodelled)", alg)
		}
		rng := rand.New(rand.NewPCG(3, 4))
		for i := 0; i < 20; i++ { // in zone 1, gateway 3 silent
			for _, g := range s.Gateways[:2] {
				h.sight("WAT-1", g.MAC, modelRSSI(g.X, g.Y, 50, 50)+(rng.Float64()*2-1)*2)
			}
			h.clk.Advance(time.Second)
		}
		if z := h.zone("WAT-1"); z != 1 {
			t.Fatalf("%s: zone %d in zone 1", alg, z)
		}
		for i := 0; i < 30; i++ { // in zone 3, only gateway 3 hears it
			h.sight("WAT-1", g3, -55+(rng.Float64()*2-1)*2)
			h.clk.Advance(time.Second)
		}
		if z := h.zone("WAT-1"); z != 3 {
			t.Errorf("%s: zone %d after 30 s in zone 3", alg, z)
		}
		if alg == AlgFusion {
			for _, a := range h.e.Algorithms() {
				if a.Name == AlgFusion && a.Params["gateways_modelled"] != 2 {
					t.Errorf("fusion's info: %v gateways modelled, want 2 (gateway 3 is not)", a.Params["gateways_modelled"])
				}
			}
		}
	}
}

// TestFusionHeardByGridNowAndThen: in the room of
// TestFusionForgetsAGridThatLearnsNothing, a gateway grid models hears
// the tag in four seconds of five. At the decisions where it did not,
// grid counts as undecided, so the zone filter must clear the same bar
// as at the others; dropping grid from those decisions lowered the bar
// now and then, and the zone changed 34 times in ten stays of two
// minutes, ten of them the arrival (pooled as undecided: 18).
func TestFusionHeardByGridNowAndThen(t *testing.T) {
	s, samples := roomOfOneGateway()
	g2, g3 := s.Gateways[1], s.Gateways[2].MAC
	changes := 0
	for seed := uint64(0); seed < 10; seed++ {
		h := tracking(t, Options{}, s, samples, AlgFusion)
		rng := rand.New(rand.NewPCG(seed, 99))
		for i := 0; i < 20; i++ { // zone 1
			for _, g := range s.Gateways[:2] {
				h.sight("WAT-1", g.MAC, modelRSSI(g.X, g.Y, 50, 50)+(rng.Float64()*2-1)*2)
			}
			h.clk.Advance(time.Second)
		}
		last := h.zone("WAT-1")
		for i := 0; i < 120; i++ { // zone 3
			h.sight("WAT-1", g3, -55+(rng.Float64()*2-1)*2)
			if rng.Float64() < 0.8 {
				h.sight("WAT-1", g2.MAC, modelRSSI(g2.X, g2.Y, 250, 50)+(rng.Float64()*2-1)*4)
			}
			h.clk.Advance(time.Second)
			if z := h.zone("WAT-1"); z != last {
				changes, last = changes+1, z
			}
		}
	}
	t.Logf("%d zone changes in ten stays", changes)
	if changes > 26 {
		t.Errorf("%d zone changes in ten stays of two minutes in one room", changes)
	}
}

// TestFusionGridHalfReadsItsOwnOffset: fusion's grid half runs as grid
// does alone, on the readings less grid's own offset estimate (against
// its law), not the zone filter's. On a site where the two estimates of
// a tag 3 dB louder part by up to a dB, the grid half holds the zone
// masses grid alone holds on the same readings; given the zone filter's
// offset, they were up to 0.07 apart.
func TestFusionGridHalfReadsItsOwnOffset(t *testing.T) {
	s := gatewaysInARow()
	samples := recordSurvey(t, s, 40, 0, rand.New(rand.NewPCG(1, 2)))
	hs := []*harness{tracking(t, Options{}, s, samples, AlgGrid), tracking(t, Options{}, s, samples, AlgFusion)}
	rngs := []*rand.Rand{rand.New(rand.NewPCG(7, 8)), rand.New(rand.NewPCG(7, 8))}
	apart, worst := 0.0, 0.0
	for range 20 {
		for k, h := range hs { // the same tour for both
			z := s.Zones[rngs[k].IntN(len(s.Zones))]
			standLouder(h, s, "WAT-1", z.X1+5+rngs[k].Float64()*90, z.Y1+5+rngs[k].Float64()*90, 3, 3, 20, rngs[k])
		}
		g, f := hs[0].state("WAT-1"), hs[1].state("WAT-1")
		if f.goff != g.off {
			t.Fatalf("fusion's grid half learned %+v, grid %+v", f.goff, g.off)
		}
		apart = max(apart, math.Abs(f.off.a-f.goff.a))
		for z := range g.gmass {
			worst = max(worst, math.Abs(f.gmass[z]-g.gmass[z]))
		}
	}
	t.Logf("offsets applied up to %.2f dB apart; zone masses up to %.3g apart", apart, worst)
	if apart < 0.5 {
		t.Fatalf("the two estimates at most %.2f dB apart: too close to test anything", apart)
	}
	if worst > 1e-9 {
		t.Errorf("fusion's grid half and grid: zone masses up to %.3g apart", worst)
	}
}

// TestFusionWithoutShapes: zones drawn without an area give grid no
// distances (one cell each, all at the origin); fusion then decides on
// the zone filter alone, exactly as it would without grid.
func TestFusionWithoutShapes(t *testing.T) {
	s := gridSite(3, 3, false)
	samples := surveySamples(s, 5, 2, rand.New(rand.NewPCG(1, 1)))
	flat := s
	flat.Zones = slices.Clone(s.Zones)
	for i := range flat.Zones {
		flat.Zones[i].X1, flat.Zones[i].Y1, flat.Zones[i].X2, flat.Zones[i].Y2 = 0, 0, 0, 0
	}
	h := tracking(t, Options{}, flat, samples, AlgFusion)
	if m := h.e.model.Load(); m.grid.shaped {
		t.Fatal("a grid of flat zones counts as shaped")
	}
	// One flat zone of nine is enough: its one cell sits at the map's
	// corner, at the wrong distance from every gateway.
	one := s
	one.Zones = slices.Clone(s.Zones)
	one.Zones[8].X1, one.Zones[8].Y1, one.Zones[8].X2, one.Zones[8].Y2 = 0, 0, 0, 0
	if m := tracking(t, Options{}, one, samples, AlgFusion).e.model.Load(); m.grid.shaped {
		t.Fatal("a grid with a flat zone counts as shaped")
	}
	if m := tracking(t, Options{}, s, samples, AlgFusion).e.model.Load(); !m.grid.shaped {
		t.Fatal("a grid of 10 m zones does not count as shaped")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	standAt(h, s, "WAT-1", 250, 250, 2, 10, rng) // readings as in zone 9
	b := h.state("WAT-1")
	if z := h.zone("WAT-1"); z != 9 || len(b.cells) != 0 || !slices.Equal(b.pooled, b.belief) {
		t.Fatalf("flat zones: zone %d, grid cells %d, pooled %v, zone filter %v", z, len(b.cells), b.pooled, b.belief)
	}
}

// TestSwitchZoneRevisesTheFirstFix: within the instant of the first fix
// (the rest of the first scan) the zone follows the posterior freely;
// after it, only at SwitchOdds.
func TestSwitchZoneRevisesTheFirstFix(t *testing.T) {
	p := DefaultParams()
	b := newBeacon("WAT-1")
	b.zone, b.fixed, b.decided = 0, 1000, 1000
	post := []float64{0.4, 0.6}
	if z := switchZone(&p, b, post, 1000); z != 1 {
		t.Fatalf("the first scan's rest: zone %d, want 1", z)
	}
	if z := switchZone(&p, b, post, 2000); z != 0 {
		t.Fatalf("a second later at 1.5:1: zone %d, want 0", z)
	}
}

// roomOfOneGateway is three zones in a row with a gateway each, surveyed
// so that zone 3 hears only gateway 3 and no other zone hears it: too
// few samples for grid to model gateway 3.
func roomOfOneGateway() (Site, []Sample) {
	s := gridSite(3, 1, false)
	g3 := s.Gateways[2].MAC
	var samples []Sample
	for _, sm := range surveySamples(s, 4, 2, rand.New(rand.NewPCG(1, 2))) {
		for mac := range sm.RSSI {
			if (sm.Zone == 3) != (mac == g3) {
				delete(sm.RSSI, mac)
			}
		}
		samples = append(samples, sm)
	}
	return s, samples
}

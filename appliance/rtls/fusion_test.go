package rtls

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFusionKnownAnswer: with placed gateways and no survey (both halves
// on the log-distance defaults), and with unplaced gateways and a
// survey, a beacon standing still is placed in its zone, and moved to a
// zone that is not adjacent it follows there.
func TestFusionKnownAnswer(t *testing.T) {
	for _, withSamples := range []bool{true, false} {
		s := gridSite(3, 3, !withSamples)
		rng := rand.New(rand.NewPCG(12, 13))
		h := newHarness(t, Options{})
		h.e.SetSite(s)
		if withSamples {
			h.e.SetSamples(surveySamples(s, 5, 2, rng))
		}
		if err := h.e.Start(AlgFusion); err != nil {
			t.Fatal(err)
		}
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
		if b := h.state("WAT-1"); len(b.gmass) != 9 || len(b.belief) != 9 || len(b.post) != 9 || &b.post[0] != &b.pooled[0] {
			t.Fatalf("samples=%v: fusion did not run both filters (grid %d, zone filter %d zones)", withSamples, len(b.gmass), len(b.belief))
		}
	}
}

// TestPool: the pool is the normalised geometric mean; a zone one filter
// rules out entirely (grid's mass can be 0) is not ruled out for both;
// without grid's masses it is the zone filter's belief.
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
	pool(out, []float64{0.3, 0.3, 0.4}, nil)
	if out[0] != 0.3 || out[2] != 0.4 {
		t.Fatalf("pool without grid: %v", out)
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

package rtls

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGridKnownAnswer: with placed gateways and no survey (the
// log-distance defaults), and with unplaced gateways located by a
// survey, a beacon standing still is placed in its zone, and walking to
// the far corner it follows through the cells and arrives.
func TestGridKnownAnswer(t *testing.T) {
	for _, placed := range []bool{true, false} {
		s := gridSite(3, 3, placed)
		rng := rand.New(rand.NewPCG(7, 8))
		h := newHarness(t, Options{})
		h.e.SetSite(s)
		if !placed {
			h.e.SetSamples(surveySamples(s, 8, 3, rng))
		}
		if err := h.e.Start(AlgGrid); err != nil {
			t.Fatal(err)
		}
		standAt(h, s, "WAT-1", 250, 150, 3, 5, rng) // zone (col 2, row 1) = id 6
		if z := h.zone("WAT-1"); z != 6 {
			t.Fatalf("placed=%v: zone %d, want 6", placed, z)
		}
		// Walk to zone 7 (col 0, row 2) at 1.4 m/s, then stand.
		x, y := 250.0, 150.0
		for math.Hypot(x-50, y-250) > 14 {
			d := math.Hypot(x-50, y-250)
			x, y = x+(50-x)/d*14, y+(250-y)/d*14
			standAt(h, s, "WAT-1", x, y, 3, 1, rng)
		}
		standAt(h, s, "WAT-1", 50, 250, 3, 15, rng)
		if z := h.zone("WAT-1"); z != 7 {
			t.Fatalf("placed=%v: zone %d after the walk, want 7", placed, z)
		}
	}
}

// TestGridLocatesUnplacedGateways: the survey alone (zone labels, no
// positions) places each gateway within a zone's half-width of the truth
// and recovers the law that made the readings.
func TestGridLocatesUnplacedGateways(t *testing.T) {
	s := gridSite(4, 4, false)
	h := newHarness(t, Options{})
	h.e.SetSite(s)
	h.e.SetSamples(surveySamples(s, 10, 3, rand.New(rand.NewPCG(3, 4))))
	m := h.e.model.Load()
	for _, gs := range s.Gateways {
		gw := m.grid.gw[m.gwIdx[gs.MAC]]
		if !gw.ok {
			t.Fatalf("gateway at (%.0f,%.0f) not modelled", gs.X, gs.Y)
		}
		if d := math.Hypot(gw.x-gs.X, gw.y-gs.Y); d > 50 {
			t.Errorf("gateway at (%.0f,%.0f) located at (%.0f,%.0f), %.0f px off", gs.X, gs.Y, gw.x, gw.y, d)
		}
		if p := DefaultParams(); math.Abs(gw.n-p.PathLoss) > 0.8 {
			t.Errorf("gateway at (%.0f,%.0f): exponent %.2f, the survey was made with %.1f", gs.X, gs.Y, gw.n, p.PathLoss)
		}
	}
}

// TestTobitSeesThroughTheFloor: readings below the sensitivity floor are
// never reported, so the heard ones are the lucky ones far away; a plain
// regression on them flattens the law. The censored fit recovers the
// exponent, spread and miss rate the data was drawn with.
func TestTobitSeesThroughTheFloor(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const p0, n, sig, miss, floor = -59.0, 2.5, 6.0, 0.25, -90.0
	var x, y []float64
	var hx, hy []float64
	for i := 0; i < 2000; i++ {
		d := 0.5 + rng.Float64()*40
		lx := -10 * math.Log10(d)
		r := p0 + n*lx + rng.NormFloat64()*sig
		x = append(x, lx)
		if r < floor || rng.Float64() < miss {
			y = append(y, math.NaN())
			continue
		}
		y = append(y, r)
		hx, hy = append(hx, lx), append(hy, r)
	}
	f, _ := fitTobit(x, y, floor, 1)
	if math.Abs(f.n-n) > 0.15 || math.Abs(f.sig-sig) > 0.6 || math.Abs(f.miss-miss) > 0.04 || math.Abs(f.p0-p0) > 2 {
		t.Fatalf("censored fit %+v, drawn with p0 %v n %v sig %v miss %v", f, p0, n, sig, miss)
	}
	// The naive fit, for contrast: the test is only worth its name if
	// it would be wrong.
	var sx, sy, sxx, sxy float64
	for i := range hx {
		sx, sy, sxx, sxy = sx+hx[i], sy+hy[i], sxx+hx[i]*hx[i], sxy+hx[i]*hy[i]
	}
	k := float64(len(hx))
	if naive := (k*sxy - sx*sy) / (k*sxx - sx*sx); math.Abs(naive-n) < 0.3 {
		t.Fatalf("the naive fit is already right (%.2f): the data is not censored enough to test anything", naive)
	}
}

// TestGridCellsCoverEveryZone: a zone smaller than a cell still gets one,
// and a large site is held to maxGridCells.
func TestGridCellsCoverEveryZone(t *testing.T) {
	s := gridSite(40, 40, true) // 400 m x 400 m: 160,000 one-metre cells
	s.Zones = append(s.Zones, Zone{ID: 5000, MapID: 1, Name: "closet", X1: 1, Y1: 1, X2: 3, Y2: 3})
	h := newHarness(t, Options{})
	h.e.SetSite(s)
	g := h.e.model.Load().grid
	if n := len(g.czone); n > maxGridCells+len(s.Zones) || n < len(s.Zones) {
		t.Fatalf("%d cells for %d zones", n, len(s.Zones))
	}
	seen := map[int32]bool{}
	for _, z := range g.czone {
		seen[z] = true
	}
	if len(seen) != len(s.Zones) {
		t.Fatalf("%d of %d zones have a cell", len(seen), len(s.Zones))
	}
}

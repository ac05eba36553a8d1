package rtls

import (
	"math"
	"math/rand/v2"
	"testing"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/ingest"
)

// offsetOf is uid's tag offset estimate.
func offsetOf(h *harness, uid string) float64 {
	sh := h.e.shards.OfUID(uid)
	sh.Lock()
	defer sh.Unlock()
	return (*sh.V.Get(assets.UIDHash(uid), uid)).off.v
}

// tourLouder walks a tag heard off dB louder than the survey tag through
// stays of 30 s at random points well inside random zones, and counts
// the stays at whose end the engine named the right zone.
func tourLouder(h *harness, s Site, off float64, stays int, rng *rand.Rand) int {
	right := 0
	for i := 0; i < stays; i++ {
		z := s.Zones[rng.IntN(len(s.Zones))]
		x, y := z.X1+20+rng.Float64()*60, z.Y1+20+rng.Float64()*60
		standLouder(h, s, "WAT-1", x, y, off, 3, 30, rng)
		if h.zone("WAT-1") == z.ID {
			right++
		}
	}
	return right
}

// TestTagOffsetIsLearned: a tag 7 dB quieter than the survey tag (another
// model, worn on a body) is tracked as well as the survey tag once its
// offset is learned, by every algorithm that compares readings with the
// survey; without the estimate the same tour goes wrong.
func TestTagOffsetIsLearned(t *testing.T) {
	s := gridSite(4, 4, false)
	samples := surveySamples(s, 10, 3, rand.New(rand.NewPCG(1, 2)))
	const stays = 12
	for _, alg := range []string{AlgKNN, AlgFilter, AlgBayes, AlgGrid} {
		h := newHarness(t, Options{})
		h.e.Configure(s, samples)
		if err := h.e.Start(alg); err != nil {
			t.Fatal(err)
		}
		right := tourLouder(h, s, -7, stays, rand.New(rand.NewPCG(3, 4)))
		t.Logf("%s: %d of %d stays right, estimate %.2f dB", alg, right, stays, offsetOf(h, "WAT-1"))
		if v := offsetOf(h, "WAT-1"); v > -5.5 || v < -8.5 {
			t.Errorf("%s: offset estimate %.2f dB for a tag 7 dB quieter", alg, v)
		}
		if right < stays-1 {
			t.Errorf("%s: right zone at the end of %d of %d stays", alg, right, stays)
		}
	}
	// The contrast that makes the test worth its name: without the
	// estimate the filters lose the quiet tag.
	noOffset := DefaultParams() // a Params with one field set would zero DecideEvery
	noOffset.OffsetTau = -1
	h := newHarness(t, Options{Params: noOffset})
	h.e.Configure(s, samples)
	if err := h.e.Start(AlgFilter); err != nil {
		t.Fatal(err)
	}
	right := tourLouder(h, s, -7, stays, rand.New(rand.NewPCG(3, 4)))
	t.Logf("hmm without the estimate: %d of %d stays right", right, stays)
	if right > stays*3/4 {
		t.Fatalf("without the estimate %d of %d stays were right: the offset is too small to test anything", right, stays)
	}
	if v := offsetOf(h, "WAT-1"); v != 0 {
		t.Fatalf("OffsetTau < 0 still estimated %.2f dB", v)
	}
}

// TestTagOffsetStaysNearZeroForTheSurveyTag: the survey tag itself,
// standing in one zone for minutes (a fridge, a bed), keeps an estimate
// near 0: one spot's readings must not be taken for an offset.
func TestTagOffsetStaysNearZeroForTheSurveyTag(t *testing.T) {
	s := gridSite(4, 4, false)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, alg := range []string{AlgFilter, AlgGrid} {
		h := newHarness(t, Options{})
		h.e.Configure(s, surveySamples(s, 10, 3, rng))
		if err := h.e.Start(alg); err != nil {
			t.Fatal(err)
		}
		standAt(h, s, "WAT-1", 160, 240, 3, 600, rng) // zone 10 (col 1, row 2), off its centre
		if v := offsetOf(h, "WAT-1"); math.Abs(v) > 1.5 {
			t.Errorf("%s: offset estimate %.2f dB for the survey tag", alg, v)
		}
		if z := h.zone("WAT-1"); z != 10 {
			t.Errorf("%s: zone %d, want 10", alg, z)
		}
	}
}

// TestOffsetTablesAtZeroAreTheModel: the tables made for an offset are
// the model's own at 0 dB, so a tag whose estimate rounds to 0 and one
// whose estimate is exactly 0 are judged alike.
func TestOffsetTablesAtZeroAreTheModel(t *testing.T) {
	s := gridSite(3, 3, false)
	h := newHarness(t, Options{})
	h.e.Configure(s, surveySamples(s, 5, 3, rand.New(rand.NewPCG(7, 8))))
	if err := h.e.Start(AlgGrid); err != nil {
		t.Fatal(err)
	}
	m := h.e.model.Load()
	t0 := m.buildEmTable(0, false)
	for i := range m.em {
		if math.Abs(t0.em[i].logMiss-m.em[i].logMiss) > 1e-9 || t0.em[i].logHit != m.em[i].logHit {
			t.Fatalf("cell %d: %+v at 0 dB, model %+v", i, t0.em[i], m.em[i])
		}
	}
	for z := range m.missZone {
		if math.Abs(t0.missZone[z]-m.missZone[z]) > 1e-9 {
			t.Fatalf("zone %d: missZone %v at 0 dB, model %v", z, t0.missZone[z], m.missZone[z])
		}
	}
	g0 := m.grid.buildMiss(0)
	for i := range g0.lmiss {
		if g0.lmiss[i] != m.grid.lmiss[i] {
			t.Fatalf("grid cell %d: lmiss %v at 0 dB, model %v", i, g0.lmiss[i], m.grid.lmiss[i])
		}
	}
	// And a quieter tag is missed more, a louder one less.
	q, l := m.grid.buildMiss(-6), m.grid.buildMiss(6)
	for c := range g0.base {
		if !(q.base[c] <= g0.base[c] && g0.base[c] <= l.base[c]) && !(q.base[c] >= g0.base[c] && g0.base[c] >= l.base[c]) {
			t.Fatalf("cell %d: silence %v / %v / %v at -6 / 0 / +6 dB is not monotone", c, q.base[c], g0.base[c], l.base[c])
		}
	}
}

// TestTruncMean recovers the mean of a Gaussian from the mean of its part
// above a floor.
func TestTruncMean(t *testing.T) {
	for _, c := range []struct{ mu, sig, floor float64 }{{-90, 5, -92}, {-70, 6, -95}, {-85, 4, -85}, {-100, 6, -92}} {
		a := (c.floor - c.mu) / c.sig
		tail := 0.5 * math.Erfc(a/math.Sqrt2)
		heard := c.mu + c.sig*math.Exp(-a*a/2)/math.Sqrt(2*math.Pi)/tail
		if got := truncMean(heard, c.sig, c.floor); math.Abs(got-c.mu) > 0.01 {
			t.Errorf("%+v: heard mean %.2f gives %.3f", c, heard, got)
		}
	}
}

// TestDebugShowsReadingsAsHeard: the debug feed shows what the gateways
// heard, and the offset the algorithms take off it, not the corrected
// values.
func TestDebugShowsReadingsAsHeard(t *testing.T) {
	s := gridSite(4, 4, false)
	h := newHarness(t, Options{})
	h.e.Configure(s, surveySamples(s, 10, 3, rand.New(rand.NewPCG(1, 2))))
	if err := h.e.Start(AlgFilter); err != nil {
		t.Fatal(err)
	}
	tourLouder(h, s, -7, 6, rand.New(rand.NewPCG(3, 4)))
	var got []Event
	cancel := h.e.Listen(func(ev Event) {
		if ev.Debug {
			got = append(got, ev)
		}
	}, func(string) bool { return true })
	defer cancel()
	g := s.Gateways[0]
	for range 5 { // a steady reading, so the average is the reading
		h.sight("WAT-1", g.MAC, -80)
	}
	ev := got[len(got)-1]
	if ev.Offset != offsetOf(h, "WAT-1") || ev.Offset > -5 {
		t.Fatalf("debug offset %.2f, estimate %.2f", ev.Offset, offsetOf(h, "WAT-1"))
	}
	for _, r := range ev.RSSI {
		if r.Gateway == ingest.MAC(g.MAC).String() && (r.RSSI != -80 || math.Abs(r.Smoothed+80) > 0.01) {
			t.Fatalf("debug reading %+v, heard -80 dBm", r)
		}
	}
}

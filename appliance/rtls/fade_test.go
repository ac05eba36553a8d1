package rtls

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// withWindows is samples as a recorder makes them: every heard gateway's
// mean averages n readings whose standard deviation about it is sd (none
// with n < 2).
func withWindows(samples []Sample, n int, sd float64) []Sample {
	out := make([]Sample, len(samples))
	for i, s := range samples {
		out[i] = Sample{Zone: s.Zone, RSSI: s.RSSI, N: map[[6]byte]int{}}
		for mac := range s.RSSI {
			out[i].N[mac] = n
			if n >= 2 {
				if out[i].SD == nil {
					out[i].SD = map[[6]byte]float64{}
				}
				out[i].SD[mac] = sd
			}
		}
	}
	return out
}

// TestFadingFromTheSurvey: a gateway's fading variance is the pooled
// spread of its readings within the survey's windows, and perWin the
// harmonic mean of how many each window held; a gateway with too few
// repeated readings takes the site's pooled variance, and samples that
// do not say (stored before N and SD were recorded) leave it unknown.
func TestFadingFromTheSurvey(t *testing.T) {
	s := gridSite(3, 1, true)
	a, b, c := s.Gateways[0].MAC, s.Gateways[1].MAC, s.Gateways[2].MAC
	var samples []Sample
	for i := 0; i < 40; i++ { // a: 40 windows of 2 readings, sd 4 (40 dof)
		samples = append(samples, Sample{Zone: 1, RSSI: map[[6]byte]float64{a: -60}, N: map[[6]byte]int{a: 2}, SD: map[[6]byte]float64{a: 4}})
	}
	for i := 0; i < 5; i++ { // b: 5 windows of 3 and 5 of 1 (10 dof, too few alone)
		samples = append(samples,
			Sample{Zone: 2, RSSI: map[[6]byte]float64{b: -60}, N: map[[6]byte]int{b: 3}, SD: map[[6]byte]float64{b: 1}},
			Sample{Zone: 2, RSSI: map[[6]byte]float64{b: -61}, N: map[[6]byte]int{b: 1}})
	}
	// c: heard only in samples that do not say.
	samples = append(samples, Sample{Zone: 3, RSSI: map[[6]byte]float64{c: -60}})
	m := buildModel(1, DefaultParams(), s, samples)
	site := (40*16 + 10*1) / 50.0
	for _, tc := range []struct {
		name         string
		mac          [6]byte
		fade, perWin float64
	}{
		{"a, its own", a, 16, 2},
		{"b, the site's", b, site, 10 / (5/3.0 + 5)},
		{"c, unknown", c, 0, 0},
	} {
		f, w := m.fading(m.gwIdx[tc.mac])
		if math.Abs(f-tc.fade) > 1e-9 || math.Abs(w-tc.perWin) > 1e-9 {
			t.Errorf("%s: fade %v over %v readings, want %v over %v", tc.name, f, w, tc.fade, tc.perWin)
		}
	}
	if m := buildModel(1, DefaultParams(), s, samples[40:]); m.siteFading() != 0 {
		t.Errorf("10 repeated readings in all: fading %v, want 0 (unknown)", m.siteFading())
	}
}

// TestReadingTerms: a period's evidence that is the mean of fewer
// readings than a survey window's is noisier than the law fitted on
// those windows by the fading they averaged away; never less noisy.
func TestReadingTerms(t *testing.T) {
	law := gridGW{ok: true, sig: 3, miss: 0.1}
	law.lhitK, law.inv2s2 = math.Log(0.9)-math.Log(3), 1/18.0
	gw := law
	gw.fade, gw.perWin = 16, 2
	for _, tc := range []struct {
		gw   gridGW
		k    float64
		want float64 // variance
	}{
		{gw, 1, 9 + 16*(1-0.5)},
		{gw, 1.5, 9 + 16*(1/1.5-0.5)},
		{gw, 2, 9},
		{gw, 5, 9}, // faster than the survey's: the law's, no less
		{law, 1, 9},
	} {
		lhit, inv := tc.gw.readingTerms(tc.k)
		if math.Abs(inv-1/(2*tc.want)) > 1e-12 || math.Abs(lhit-(math.Log(0.9)-0.5*math.Log(tc.want))) > 1e-12 {
			t.Errorf("fade %v, k %v: terms %v, %v, want those of variance %v", tc.gw.fade, tc.k, lhit, inv, tc.want)
		}
	}
	// addHeard weighs the terms of n/w readings a period w times: two
	// readings worth two periods are two single readings, five worth
	// one are one mean of five.
	g := &gridModel{gridLayout: &gridLayout{mapCells: []int32{0, 2}}, gw: []gridGW{gw}, mu: []float32{-60, -70}}
	lmiss := make([]float32, 2)
	single := func(x float64) []float64 {
		lhit, inv := gw.readingTerms(1)
		return []float64{lhit - (x+60)*(x+60)*inv, lhit - (x+70)*(x+70)*inv}
	}
	for _, tc := range []struct {
		n    int
		w    float32
		want []float64
	}{
		{1, 1, single(-64)},
		{2, 2, []float64{2 * single(-64)[0], 2 * single(-64)[1]}},
		{5, 1, []float64{law.lhitK - 16*law.inv2s2, law.lhitK - 36*law.inv2s2}},
	} {
		ll := make([]float32, 2)
		g.addHeard(ll, lmiss, 0, -64, tc.n, tc.w, 0)
		for c := range ll {
			if math.Abs(float64(ll[c])-tc.want[c]) > 1e-4 {
				t.Errorf("%d readings worth %v periods: cell %d %v, want %v", tc.n, tc.w, c, ll[c], tc.want[c])
			}
		}
	}
}

// TestGridTakesFadingFromTheSurvey: the same survey, once with its
// windows' spread (2 readings a window, 4 dB about their mean) and once
// without: grid fits the same law, but with the spread it knows one
// reading a second is noisier than a window's mean, and after the same
// scans is less sure where the beacon is; its info shows the spread.
func TestGridTakesFadingFromTheSurvey(t *testing.T) {
	s := gridSite(3, 3, true)
	plain := surveySamples(s, 10, 3, rand.New(rand.NewPCG(21, 22)))
	top := map[bool]float64{}
	for _, spread := range []bool{false, true} {
		h := newHarness(t, Options{})
		h.e.SetSite(s)
		if spread {
			h.e.SetSamples(withWindows(plain, 2, 4))
		} else {
			h.e.SetSamples(plain)
		}
		if err := h.e.Start(AlgGrid); err != nil {
			t.Fatal(err)
		}
		want := 0.0
		if spread {
			want = 4
		}
		if got := gridInfo(h.e).Params["fading_sd_db"]; got != want {
			t.Errorf("spread %v: fading_sd_db %v, want %v", spread, got, want)
		}
		standAt(h, s, "WAT-1", 140, 160, 0, 1, nil) // near zone 5's corner
		top[spread] = slices.Max(gridMass(h, "WAT-1"))
	}
	if !(top[true] < top[false]) {
		t.Fatalf("largest zone mass %.4f with the windows' spread, %.4f without: one reading must count for less", top[true], top[false])
	}
}

// TestFadingIgnoresAnImpossibleSpread: an SD no window can have (a
// store edited by hand: 1e160 dB, whose square overflows) is not read;
// read, it made the fading +Inf and grid's belief NaN.
func TestFadingIgnoresAnImpossibleSpread(t *testing.T) {
	s := gridSite(3, 3, true)
	plain := surveySamples(s, 10, 3, rand.New(rand.NewPCG(21, 22)))
	h := newHarness(t, Options{})
	h.e.SetSite(s)
	h.e.SetSamples(withWindows(plain, 2, 1e160))
	if err := h.e.Start(AlgGrid); err != nil {
		t.Fatal(err)
	}
	if got := gridInfo(h.e).Params["fading_sd_db"]; got != 0.0 {
		t.Errorf("fading_sd_db %v, want 0 (unknown)", got)
	}
	standAt(h, s, "WAT-1", 140, 160, 0, 1, nil)
	for _, v := range gridMass(h, "WAT-1") {
		if math.IsNaN(v) {
			t.Fatalf("zone masses %v", gridMass(h, "WAT-1"))
		}
	}
}

// TestGridDefaultLawTakesNoFading: only a law fitted on the survey's
// means takes the survey's fading; a placed gateway on a floor never
// surveyed keeps the default law, though the other floor's survey heard
// it across the ceiling.
func TestGridDefaultLawTakesNoFading(t *testing.T) {
	s := twoFloors()
	rng := rand.New(rand.NewPCG(5, 6))
	rec := newHarness(t, Options{})
	rec.e.SetSite(s)
	var samples []Sample
	for _, z := range s.Zones {
		if z.MapID != 1 {
			continue // the upper floor is never surveyed
		}
		rec.e.Record("WAT-9", z.ID)
		for range 6 {
			standOnFloor(rec, s, "WAT-9", 1, z.X1+20+rng.Float64()*60, z.Y1+20+rng.Float64()*60, 12, 2, rng)
		}
		samples = append(samples, rec.e.StopRecording("WAT-9")...)
	}
	m := buildModel(1, DefaultParams(), s, samples).withGrid(2)
	fitted, deflt := 0, 0
	for gi, gw := range m.grid.gw {
		if !gw.ok || m.winN[gi] == 0 {
			continue
		}
		f, _ := m.fading(gi)
		if f == 0 {
			t.Fatalf("gateway %d: the survey's windows do not tell its fading", gi)
		}
		if gw.fittedOnSurvey {
			fitted++
			if gw.fade != f {
				t.Errorf("gateway %d, fitted on the survey: fade %v, want %v", gi, gw.fade, f)
			}
			continue
		}
		deflt++
		if gw.fade != 0 || gw.perWin != 0 {
			t.Errorf("gateway %d, default law, heard across the floor in %v windows: fade %v over %v readings, want none", gi, m.winN[gi], gw.fade, gw.perWin)
		}
	}
	if fitted == 0 || deflt == 0 {
		t.Fatalf("%d fitted, %d default-law gateways heard: the test needs both", fitted, deflt)
	}
}

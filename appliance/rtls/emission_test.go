package rtls

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"beaconhub/appliance/assets"
)

// twoZoneModel: zone 1 hears gateway 1 at -60 and never gateway 2; zone 2
// hears both at -60. Only the absence of gateway 2 tells them apart.
func twoZoneModel(n int) *model {
	site := Site{Maps: []Map{{ID: 1, Width: 200, Height: 100}}, Zones: []Zone{
		{ID: 1, MapID: 1, X1: 0, Y1: 0, X2: 100, Y2: 100, Adjacent: []uint64{2}},
		{ID: 2, MapID: 1, X1: 100, Y1: 0, X2: 200, Y2: 100},
	}}
	var samples []Sample
	for i := 0; i < n; i++ {
		samples = append(samples,
			Sample{Zone: 1, RSSI: map[[6]byte]float64{gwMAC(1): -60}},
			Sample{Zone: 2, RSSI: map[[6]byte]float64{gwMAC(1): -60, gwMAC(2): -60}})
	}
	return buildModel(1, DefaultParams(), site, samples)
}

func hearing(m *model, now int64, rssi map[int]int8) *beacon {
	b := newBeacon("B")
	b.reset(m)
	for g, r := range rssi {
		b.sight(m, &m.p, gwMAC(g), r, now)
	}
	return b
}

func TestEmissionAbsenceIsEvidence(t *testing.T) {
	m := twoZoneModel(20)
	ll := make([]float64, 2)
	b := hearing(m, 1000, map[int]int8{1: -60})
	if !logLikelihood(m, &m.p, b, 1000, 1, ll) {
		t.Fatal("a heard gateway carries information")
	}
	// Zone 2 heard gateway 2 in every one of 20 samples, zone 1 never:
	// P(heard) is (1-Lost) x 20.5/21 and (1-Lost) x 0.5/21 by the
	// Jeffreys prior, so not hearing it is ~1.5 nats against zone 2.
	l := m.p.Lost
	want := math.Log(1-(1-l)*0.5/21) - math.Log(1-(1-l)*20.5/21)
	if got := ll[0] - ll[1]; math.Abs(got-want) > 0.2 {
		t.Fatalf("absence evidence %.2f nats, want about %.2f", got, want)
	}
	// Hearing both turns it round, and more strongly (a hit where the
	// survey never heard it is just as unlikely as the miss above, and
	// the reading model is wide there).
	b = hearing(m, 1000, map[int]int8{1: -60, 2: -60})
	logLikelihood(m, &m.p, b, 1000, 1, ll)
	if ll[1] <= ll[0]+want {
		t.Fatalf("hearing gateway 2 should favour zone 2 by more than %.2f: %v", want, ll)
	}
	// Right after the beacon appeared (cover 0) silence is no evidence:
	// the other gateways may not have had their turn to report yet.
	b = hearing(m, 1000, map[int]int8{1: -60})
	logLikelihood(m, &m.p, b, 1000, 0, ll)
	if math.Abs(ll[0]-ll[1]) > 1e-9 {
		t.Fatalf("absence counted at cover 0: %v", ll)
	}
	// Stale readings are not evidence.
	if logLikelihood(m, &m.p, b, 1000+m.p.SampleWindow.Milliseconds(), 1, ll) {
		t.Fatal("readings older than SampleWindow counted")
	}
}

func TestEmissionVarianceFloorAndShrinkage(t *testing.T) {
	m := twoZoneModel(50)
	nz := len(m.zones)
	g1, g2 := m.gwIdx[gwMAC(1)], m.gwIdx[gwMAC(2)]
	// Identical readings would give zero variance: the floor holds.
	e := m.em[g1*nz+0]
	if sd := math.Sqrt(1 / (2 * e.inv2s2)); math.Abs(sd-m.p.SigmaFloor) > 1e-9 || e.mu != -60 {
		t.Fatalf("zone 1 gateway 1: mu %.1f sd %.2f, want -60 and the floor %.1f", e.mu, sd, m.p.SigmaFloor)
	}
	// Never heard in zone 1: mean falls back on the gateway's site-wide
	// mean and the spread on its site-wide spread (at least Sigma).
	e = m.em[g2*nz+0]
	if sd := math.Sqrt(1 / (2 * e.inv2s2)); e.mu != -60 || sd < m.p.Sigma-1e-9 {
		t.Fatalf("unheard gateway: mu %.1f sd %.2f, want -60 and >= %.1f", e.mu, sd, m.p.Sigma)
	}
	if ph := math.Exp(e.logHit); math.Abs(ph-(1-m.p.Lost)*0.5/51) > 1e-12 {
		t.Fatalf("P(heard) %.4f, want (1-Lost) x Jeffreys 0.5/51", ph)
	}
}

func TestEmissionWithoutSamplesIgnoresAbsence(t *testing.T) {
	m := buildModel(1, DefaultParams(), gridSite(2, 1, true), nil)
	for z, v := range m.missZone {
		if v != 0 {
			t.Fatalf("zone %d: absence term %.2f without a survey", z, v)
		}
	}
	ll := make([]float64, 2)
	b := hearing(m, 1000, map[int]int8{1: -60})
	logLikelihood(m, &m.p, b, 1000, 1, ll)
	if ll[0] <= ll[1] {
		t.Fatalf("a loud reading of the gateway in zone 1 should favour zone 1: %v", ll)
	}
}

// The filter's reported zone moves exactly when the most probable zone is
// SwitchOdds times as probable as the reported one (after the first fix),
// checked on random walks along a line of zones.
func TestFilterOddsHysteresis(t *testing.T) {
	s := gridSite(4, 1, false)
	rng := rand.New(rand.NewPCG(21, 22))
	h := newHarness(t, Options{})
	h.e.SetSite(s)
	h.e.SetSamples(surveySamples(s, 10, 4, rng))
	if err := h.e.Start(AlgFilter); err != nil {
		t.Fatal(err)
	}
	odds := h.e.Params().SwitchOdds
	x, moves, holds := 50.0, 0, 0
	for step := 0; step < 600; step++ {
		x = math.Min(math.Max(x+rng.NormFloat64()*15, 5), 395)
		sh := h.e.shards.OfUID("WAT-1")
		var before int
		if b := sh.V.Get(assets.UIDHash("WAT-1"), "WAT-1"); b != nil {
			before = (*b).zone
		}
		g := 1 + rng.IntN(4)
		gx := float64(100*(g-1) + 50)
		h.sight("WAT-1", gwMAC(g), modelRSSI(gx, 50, x, 50)+rng.NormFloat64()*4)
		b := *sh.V.Get(assets.UIDHash("WAT-1"), "WAT-1")
		h.clk.Advance(time.Second)
		if before < 0 || b.zone < 0 || b.fixed == b.decided {
			continue
		}
		best := 0
		for z := range b.belief {
			if b.belief[z] > b.belief[best] {
				best = z
			}
		}
		switch {
		case b.zone != before:
			moves++
			if b.belief[best] < odds*b.belief[before] {
				t.Fatalf("step %d: moved %d->%d with odds %.2f < %.0f", step, before, b.zone, b.belief[best]/b.belief[before], odds)
			}
		case best != before:
			holds++
			if b.belief[best] >= odds*b.belief[before] {
				t.Fatalf("step %d: held %d with odds %.2f >= %.0f for %d", step, before, b.belief[best]/b.belief[before], odds, best)
			}
		}
	}
	if moves == 0 || holds == 0 {
		t.Fatalf("walk exercised %d moves and %d holds; want both", moves, holds)
	}
	t.Logf("%d moves, %d holds", moves, holds)
}

// Naive Bayes counts every gateway as independent evidence. A gateway
// duplicated under a second address (perfectly correlated twins) doubles
// every log-likelihood; the calibration on the survey must notice and
// halve the weight of a window, so the posterior is as confident as
// before.
func TestCalibrationDiscountsCorrelatedGateways(t *testing.T) {
	s := gridSite(3, 3, false)
	samples := surveySamples(s, 20, 12, rand.New(rand.NewPCG(31, 32)))
	w1 := buildModel(1, DefaultParams(), s, samples).temper
	twins := make([]Sample, len(samples))
	for i, sm := range samples {
		twins[i] = Sample{Zone: sm.Zone, RSSI: map[[6]byte]float64{}}
		for mac, r := range sm.RSSI {
			twins[i].RSSI[mac] = r
			twin := mac
			twin[3] = 0xEE
			twins[i].RSSI[twin] = r
		}
	}
	w2 := buildModel(1, DefaultParams(), s, twins).temper
	if w1 <= minTemper || w1 >= maxTemper {
		t.Fatalf("weight %v at its bound: the survey does not exercise the calibration", w1)
	}
	if math.Abs(w2-w1/2) > 1e-3*w1 {
		t.Fatalf("weight %v with every gateway doubled, want half of %v", w2, w1)
	}
	if m := buildModel(1, DefaultParams(), s, nil); m.temper != uncalibrated {
		t.Fatalf("weight %v without samples, want %v", m.temper, uncalibrated)
	}
}

// Zones that differ only in which gateways are heard together: zone 1
// hears exactly one of gateways 1 and 2, zone 2 both or neither (gateway
// 3 always). Every gateway's share of hits is the same in both zones, so
// naive Bayes cannot tell them apart; the k-NN view can, the calibration
// must give it weight, and the filter's likelihood must then separate
// them.
func TestCalibrationWeighsKNNWhereNaiveBayesIsBlind(t *testing.T) {
	site := Site{Maps: []Map{{ID: 1, Width: 200, Height: 100}}, Zones: []Zone{
		{ID: 1, MapID: 1, X1: 0, Y1: 0, X2: 100, Y2: 100, Adjacent: []uint64{2}},
		{ID: 2, MapID: 1, X1: 100, Y1: 0, X2: 200, Y2: 100},
	}}
	heard := func(gs ...int) map[[6]byte]float64 {
		r := map[[6]byte]float64{gwMAC(3): -60}
		for _, g := range gs {
			r[gwMAC(g)] = -60
		}
		return r
	}
	var samples []Sample
	for i := 0; i < 10; i++ {
		samples = append(samples,
			Sample{Zone: 1, RSSI: heard(1)}, Sample{Zone: 1, RSSI: heard(2)},
			Sample{Zone: 2, RSSI: heard(1, 2)}, Sample{Zone: 2, RSSI: heard()})
	}
	m := buildModel(1, DefaultParams(), site, samples)
	if m.knnW <= 0 {
		t.Fatalf("k-NN weight %v, want > 0", m.knnW)
	}
	b := hearing(m, 1000, map[int]int8{1: -60, 3: -60})
	b.votes = make([]float64, 2)
	ll := make([]float64, 2)
	logLikelihood(m, &m.p, b, 1000, 1, ll)
	if d := ll[0] - ll[1]; math.Abs(d) > 0.1 {
		t.Fatalf("naive Bayes alone separates the zones by %.2f nats: the test is not testing", d)
	}
	knnLikelihood(m, &m.p, b, 1000, 1, ll)
	if d := m.temper * (ll[0] - ll[1]); d < 1 {
		t.Fatalf("with k-NN zone 1 leads by %.2f nats, want > 1 (temper %v, knn %v)", d, m.temper, m.knnW)
	}
}

// TestEvidenceIsTheWindowMean: both views of a window (naive Bayes and
// the k-NN vote) read a gateway's readings in it as their mean, the
// statistic a survey sample holds. Zone 1 was surveyed at -60, zone 2 at
// -80; a beacon heard at -40 and then -80 within the window averages
// -60, and must lean to zone 1 in each view (its last reading alone
// says zone 2).
func TestEvidenceIsTheWindowMean(t *testing.T) {
	site := Site{Maps: []Map{{ID: 1, Width: 200, Height: 100}}, Zones: []Zone{
		{ID: 1, MapID: 1, X1: 0, Y1: 0, X2: 100, Y2: 100, Adjacent: []uint64{2}},
		{ID: 2, MapID: 1, X1: 100, Y1: 0, X2: 200, Y2: 100},
	}}
	var samples []Sample
	for i := 0; i < 10; i++ {
		d := float64(i%3 - 1)
		samples = append(samples,
			Sample{Zone: 1, RSSI: map[[6]byte]float64{gwMAC(1): -60 + d}},
			Sample{Zone: 2, RSSI: map[[6]byte]float64{gwMAC(1): -80 + d}})
	}
	m := buildModel(1, DefaultParams(), site, samples)
	b := hearing(m, 1000, map[int]int8{1: -40})
	b.sight(m, &m.p, gwMAC(1), -80, 1500)
	b.votes = make([]float64, 2)
	ll := make([]float64, 2)
	logLikelihood(m, &m.p, b, 1500, 1, ll)
	if ll[0] <= ll[1] {
		t.Fatalf("naive Bayes %v: zone 2 leads on the last reading", ll)
	}
	clear(ll)
	m.knnW = 1 // the vote alone, whatever calibration made of it
	knnLikelihood(m, &m.p, b, 1500, 1, ll)
	if ll[0] <= ll[1] {
		t.Fatalf("k-NN vote %v: zone 2 leads on the last reading", ll)
	}
}

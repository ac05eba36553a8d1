package rtls

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// standAt feeds every gateway of s the model RSSI of a beacon at (x,y)
// plus uniform noise of +-noise dB, once per second for n seconds.
func standAt(h *harness, s Site, uid string, x, y, noise float64, n int, rng *rand.Rand) {
	standLouder(h, s, uid, x, y, 0, noise, n, rng)
}

// standLouder is standAt for a tag heard off dB louder than the model
// (and the survey) says.
func standLouder(h *harness, s Site, uid string, x, y, off, noise float64, n int, rng *rand.Rand) {
	for i := 0; i < n; i++ {
		for _, g := range s.Gateways {
			r := modelRSSI(g.X, g.Y, x, y) + off
			if noise > 0 {
				r += (rng.Float64()*2 - 1) * noise
			}
			if r < -95 {
				continue // out of range
			}
			h.sight(uid, g.MAC, r)
		}
		h.clk.Advance(time.Second)
	}
}

func TestStrongestKnownAnswer(t *testing.T) {
	s := gridSite(3, 3, true)
	h := newHarness(t, Options{})
	h.e.SetSite(s)
	if err := h.e.Start(AlgStrongest); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	standAt(h, s, "WAT-1", 250, 150, 2, 5, rng) // centre of zone (col 2, row 1) = id 6
	if z := h.zone("WAT-1"); z != 6 {
		t.Fatalf("zone %d, want 6", z)
	}
	// Walk to zone 4 (col 0, row 1): the challenger needs MarginDwell.
	standAt(h, s, "WAT-1", 50, 150, 2, 2, rng)
	if z := h.zone("WAT-1"); z != 6 {
		t.Fatalf("switched after 2 s to %d; hysteresis needs 3 s", z)
	}
	standAt(h, s, "WAT-1", 50, 150, 2, 4, rng)
	if z := h.zone("WAT-1"); z != 4 {
		t.Fatalf("zone %d, want 4 after the dwell", z)
	}
}

func TestStrongestHysteresisIgnoresNoise(t *testing.T) {
	if n := borderFlips(t, Params{}); n != 0 {
		t.Fatalf("%d zone changes in 10 minutes of noise", n)
	}
	// Control: the same input without hysteresis does flip, so the check
	// above measures the hysteresis.
	if n := borderFlips(t, Params{Margin: 0.001, MarginDwell: time.Millisecond}); n < 10 {
		t.Fatalf("only %d changes without hysteresis: the noise is too weak to test anything", n)
	}
}

func borderFlips(t *testing.T, p Params) int {
	s := gridSite(2, 1, true)
	h := newHarness(t, Options{Params: p})
	h.e.SetSite(s)
	if err := h.e.Start(AlgStrongest); err != nil {
		t.Fatal(err)
	}
	changes := 0
	rng := rand.New(rand.NewPCG(3, 4))
	// On the border, both gateways hear -70 dBm with +-5 dB noise: the
	// raw loudest flips about every other second.
	for i := 0; i < 600; i++ {
		if i == 1 { // after the first fix
			cancel := h.e.Listen(func(ev Event) { changes++ }, nil)
			defer cancel()
		}
		for _, g := range s.Gateways {
			h.sight("WAT-1", g.MAC, -70+(rng.Float64()*2-1)*5)
		}
		h.clk.Advance(time.Second)
	}
	return changes
}

func TestCentroidKnownAnswer(t *testing.T) {
	s := gridSite(3, 3, true)
	h := newHarness(t, Options{})
	h.e.SetSite(s)
	if err := h.e.Start(AlgCentroid); err != nil {
		t.Fatal(err)
	}
	standAt(h, s, "WAT-1", 140, 260, 0, 3, nil) // inside zone (col 1, row 2) = id 8
	l, _ := h.e.Location("WAT-1")
	if l.Zone != 8 || !l.HasPos {
		t.Fatalf("location %+v, want zone 8 with a position", l)
	}
	if l.X < 100 || l.X > 200 || l.Y < 200 || l.Y > 300 {
		t.Fatalf("position (%.0f,%.0f) outside zone 8", l.X, l.Y)
	}
}

func TestCentroidWithoutPlacementIsNotReady(t *testing.T) {
	h := newHarness(t, Options{})
	h.e.SetSite(gridSite(2, 2, false))
	for _, a := range h.e.Algorithms() {
		if a.Ready {
			t.Fatalf("%s ready without placed gateways or samples", a.Name)
		}
	}
}

// surveySamples makes n noisy samples per zone from the model, each
// within 3 m of its zone's centre (both ways).
func surveySamples(s Site, n int, noise float64, rng *rand.Rand) []Sample {
	return surveyWithin(s, n, 30, noise, rng)
}

// surveyWithin is surveySamples with the samples within spread pixels of
// their zone's centre (both ways).
func surveyWithin(s Site, n int, spread, noise float64, rng *rand.Rand) []Sample {
	var out []Sample
	for _, z := range s.Zones {
		cx, cy := (z.X1+z.X2)/2, (z.Y1+z.Y2)/2
		for i := 0; i < n; i++ {
			sm := Sample{Zone: z.ID, RSSI: map[[6]byte]float64{}}
			x, y := cx+(rng.Float64()*2-1)*spread, cy+(rng.Float64()*2-1)*spread
			for _, g := range s.Gateways {
				if r := modelRSSI(g.X, g.Y, x, y) + (rng.Float64()*2-1)*noise; r >= -95 {
					sm.RSSI[g.MAC] = r
				}
			}
			out = append(out, sm)
		}
	}
	return out
}

func TestKNNKnownAnswer(t *testing.T) {
	s := gridSite(3, 3, false) // positions unknown: only samples help
	rng := rand.New(rand.NewPCG(5, 6))
	h := newHarness(t, Options{})
	h.e.SetSite(s)
	h.e.SetSamples(surveySamples(s, 5, 2, rng))
	if err := h.e.Start(AlgKNN); err != nil {
		t.Fatal(err)
	}
	standAt(h, s, "WAT-1", 50, 250, 2, 4, rng) // zone (col 0, row 2) = id 7
	if z := h.zone("WAT-1"); z != 7 {
		t.Fatalf("zone %d, want 7", z)
	}
}

func TestUnplacedGatewaysLearnTheirZone(t *testing.T) {
	s := gridSite(3, 3, false)
	h := newHarness(t, Options{})
	h.e.SetSite(s)
	h.e.SetSamples(surveySamples(s, 3, 1, rand.New(rand.NewPCG(7, 8))))
	m := h.e.model.Load()
	for i, g := range s.Gateways {
		if z := m.gwZone[m.gwIdx[g.MAC]]; z != i {
			t.Fatalf("gateway %d learned zone index %d", i, z)
		}
	}
	if err := h.e.Start(AlgStrongest); err != nil {
		t.Fatal(err)
	}
	standAt(h, s, "WAT-1", 150, 50, 1, 3, rand.New(rand.NewPCG(9, 9)))
	if z := h.zone("WAT-1"); z != 2 {
		t.Fatalf("zone %d, want 2", z)
	}
}

func TestFilterKnownAnswer(t *testing.T) {
	for _, withSamples := range []bool{true, false} {
		s := gridSite(3, 3, !withSamples)
		rng := rand.New(rand.NewPCG(10, 11))
		h := newHarness(t, Options{})
		h.e.SetSite(s)
		if withSamples {
			h.e.SetSamples(surveySamples(s, 5, 2, rng))
		}
		if err := h.e.Start(AlgFilter); err != nil {
			t.Fatal(err)
		}
		standAt(h, s, "WAT-1", 250, 250, 2, 5, rng) // zone 9
		if z := h.zone("WAT-1"); z != 9 {
			t.Fatalf("samples=%v: zone %d, want 9", withSamples, z)
		}
		// Walk to the neighbour above (zone 6) and stay: the filter follows.
		standAt(h, s, "WAT-1", 250, 150, 2, 20, rng)
		if z := h.zone("WAT-1"); z != 6 {
			t.Fatalf("samples=%v: zone %d after moving, want 6", withSamples, z)
		}
	}
}

// The filter's stays never jump between non-adjacent zones, whatever it
// hears: random gateways, random RSSI, random gaps, scans of several
// gateways in one millisecond or spread over tens of them. A scan's
// reports refine its decision, renaming the stay it opened (the feed
// shows each; docs/websocket.md), so the property is the stays': each
// report of a scan moving one more hop stored a jump of several (a
// review: Z1 then Z4). The stays are followed from the feed: a frame
// with the stay's since revises it, one with the stay before's drops it.
// A first fix, refined, is no jump: nothing came before it.
func TestFilterNeverJumpsBetweenNonAdjacentZones(t *testing.T) {
	s := gridSite(4, 4, true)
	for seed := uint64(0); seed < 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		h := newHarness(t, Options{})
		h.e.SetSite(s)
		if seed%2 == 0 {
			h.e.SetSamples(surveySamples(s, 3, 3, rng))
		}
		if err := h.e.Start(AlgFilter); err != nil {
			t.Fatal(err)
		}
		var last uint64
		hops := 0
		jump := ""
		type stay struct {
			since int64
			zone  uint64
		}
		var stays []stay // the stored history, as the feed tells it
		// Recorded, not t.Fatal'd: the listener runs under the engine's
		// shard lock, and a Goexit there deadlocked the test's cleanup
		// (a failure showed as a 10-minute hang).
		h.e.Listen(func(ev Event) {
			z := ev.Location.Zone
			if last != 0 && z != 0 && z != last {
				hops++
			}
			last = z
			n := len(stays)
			switch since := ev.Location.Since; {
			case z == 0:
				stays = append(stays, stay{}) // unknown: the history breaks
			case n > 0 && stays[n-1].since == since:
				stays[n-1].zone = z // revised in place
			case n > 1 && stays[n-2].since == since:
				stays = stays[:n-1] // dropped, the stay before reopened
				stays[n-2].zone = z
			default:
				stays = append(stays, stay{since, z})
			}
			if n := len(stays); n > 1 && jump == "" {
				a, b := stays[n-2], stays[n-1]
				if a.zone != 0 && b.zone != 0 && a.zone != b.zone && !adjacent(s, a.zone, b.zone) {
					jump = fmt.Sprintf("seed %d: the history goes from zone %d to non-adjacent %d at %d", seed, a.zone, b.zone, b.since)
				}
			}
		}, nil)
		for i := 0; i < 2000 && jump == ""; i++ {
			// A scan: one to four gateways, in one millisecond or a few
			// tens of them apart.
			for range 1 + rng.IntN(4) {
				g := s.Gateways[rng.IntN(len(s.Gateways))]
				h.sight("WAT-1", g.MAC, -40-rng.Float64()*55)
				if rng.IntN(2) == 0 {
					h.clk.Advance(time.Duration(rng.IntN(40)) * time.Millisecond)
				}
			}
			h.clk.Advance(time.Duration(rng.IntN(1500)) * time.Millisecond)
		}
		if jump != "" {
			t.Fatal(jump)
		}
		if hops == 0 {
			t.Fatalf("seed %d: the filter never moved, so the property was not exercised", seed)
		}
	}
}

// Only trackable beacon types are located.
func TestOnlyTrackableTypes(t *testing.T) {
	s := gridSite(2, 1, true)
	h := newHarness(t, Options{})
	h.e.SetSite(s)
	if err := h.e.Start(AlgStrongest); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"watch", "panic", "navigation", "sos", "sensor", "gateway"} {
		h.sightAs("B-"+typ, typ, s.Gateways[0].MAC, -60)
		_, ok := h.e.Location("B-" + typ)
		if ok != Trackable(typ) {
			t.Fatalf("type %s located=%v", typ, ok)
		}
	}
	if st := h.e.Status(); st.Beacons != 4 || st.Located != 4 || st.Reports != 4 || !st.Running || st.Algorithm != AlgStrongest {
		t.Fatalf("status %+v", st)
	}
}

func TestBayesKnownAnswer(t *testing.T) {
	for _, withSamples := range []bool{true, false} {
		s := gridSite(3, 3, !withSamples)
		rng := rand.New(rand.NewPCG(12, 13))
		h := newHarness(t, Options{})
		h.e.SetSite(s)
		if withSamples {
			h.e.SetSamples(surveySamples(s, 5, 2, rng))
		}
		if err := h.e.Start(AlgBayes); err != nil {
			t.Fatal(err)
		}
		standAt(h, s, "WAT-1", 250, 250, 2, 5, rng) // zone 9
		if z := h.zone("WAT-1"); z != 9 {
			t.Fatalf("samples=%v: zone %d, want 9", withSamples, z)
		}
		// Jump to the far corner (zone 1, not adjacent) and stay: with no
		// adjacency constraint the classifier goes straight there.
		standAt(h, s, "WAT-1", 50, 50, 2, 20, rng)
		if z := h.zone("WAT-1"); z != 1 {
			t.Fatalf("samples=%v: zone %d after moving, want 1", withSamples, z)
		}
	}
}

// TestCentroidOnALargeSite: a tag in the corner zone of a 9 x 9 site
// hears all 81 gateways, on a floor more open than the default law
// (exponent 2 against 2.5). Weighted by 1/d², the many distant ones
// together pulled the point to (166,166), two zones in; the loudest
// four place it at (62,62).
func TestCentroidOnALargeSite(t *testing.T) {
	s := gridSite(9, 9, true)
	h := newHarness(t, Options{})
	h.e.SetSite(s)
	if err := h.e.Start(AlgCentroid); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		// The nearest gateways come first in the site; heard last here,
		// so picking the loudest is not picking the first.
		for j := len(s.Gateways) - 1; j >= 0; j-- {
			g := s.Gateways[j]
			d := math.Max(math.Hypot(g.X-30, g.Y-30)/10, 0.5)
			h.sight("WAT-1", g.MAC, -59-20*math.Log10(d))
		}
		h.clk.Advance(time.Second)
	}
	if l, _ := h.e.Location("WAT-1"); l.Zone != 1 {
		t.Fatalf("location %+v, want zone 1", l)
	}
}

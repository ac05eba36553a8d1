package rtls

import (
	"math/rand/v2"
	"testing"
)

// worstSite is the worst case measured for a site or survey edit: 196
// unplaced gateways (a 14 x 14 site of 10 m zones, one per zone) and
// 1,960 samples, so grid's fit searches a position for every gateway.
func worstSite() (Site, []Sample) {
	s := gridSite(14, 14, false)
	return s, surveySamples(s, 10, 3, rand.New(rand.NewPCG(9, 9)))
}

// BenchmarkModelBuild: what an admin's survey edit (SetSamples) costs
// with hmm running (the usual case) and with grid running, and what
// Start(grid) costs on a model built while another algorithm ran.
func BenchmarkModelBuild(b *testing.B) {
	s, samples := worstSite()
	// Placed, the same site places its survey (placeSurvey) instead of
	// searching positions.
	for _, run := range []struct {
		name string
		site Site
		alg  string
	}{
		{"SetSamples/" + AlgFilter, s, AlgFilter},
		{"SetSamples/" + AlgGrid, s, AlgGrid},
		{"SetSamples/grid/placed", gridSite(14, 14, true), AlgGrid},
	} {
		b.Run(run.name, func(b *testing.B) {
			h := newHarness(b, Options{})
			h.e.SetSite(run.site)
			if err := h.e.Start(run.alg); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.e.SetSamples(samples)
			}
		})
	}
	b.Run("Start/grid", func(b *testing.B) {
		h := newHarness(b, Options{})
		h.e.SetSite(s)
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			if err := h.e.Start(AlgFilter); err != nil {
				b.Fatal(err)
			}
			h.e.SetSamples(samples)
			b.StartTimer()
			if err := h.e.Start(AlgGrid); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkZoneEdit: the model build every zone edit makes, on sites
// whose zones nobody linked (the engine links them from the drawing:
// linkIsolatedZones, joinLinkedParts), against the same lattice with its
// links drawn, which skips that: a lattice of 1,500 rooms 1 m apart, and
// 600 rooms drawn in touching pairs far apart (300 parts to join).
func BenchmarkZoneEdit(b *testing.B) {
	lattice := func(n int, linked bool) Site {
		s := Site{Maps: []Map{{ID: 1, Width: 100000, Height: 100000, PixelsPerMeter: 10}}}
		side := 1
		for side*side < n {
			side++
		}
		for i := 0; i < n; i++ {
			c, r := i%side, i/side
			z := Zone{ID: uint64(i + 1), MapID: 1, X1: float64(c * 100), Y1: float64(r * 100), X2: float64(c*100 + 90), Y2: float64(r*100 + 90)}
			if linked && c > 0 {
				z.Adjacent = []uint64{uint64(i)}
			}
			if linked && c == 0 && r > 0 {
				z.Adjacent = []uint64{uint64(i + 1 - side)}
			}
			s.Zones = append(s.Zones, z)
		}
		return s
	}
	pairs := Site{Maps: []Map{{ID: 1, Width: 100000, Height: 100000, PixelsPerMeter: 10}}}
	for p := 0; p < 300; p++ {
		x, y := float64(p%18*1000), float64(p/18*1000)
		pairs.Zones = append(pairs.Zones,
			Zone{ID: uint64(2*p + 1), MapID: 1, X1: x, Y1: y, X2: x + 100, Y2: y + 100},
			Zone{ID: uint64(2*p + 2), MapID: 1, X1: x + 100, Y1: y, X2: x + 200, Y2: y + 100})
	}
	for _, c := range []struct {
		name string
		site Site
	}{
		{"lattice-1500/linked", lattice(1500, true)},
		{"lattice-1500/unlinked", lattice(1500, false)},
		{"pairs-600/unlinked", pairs},
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				buildModel(uint64(i), DefaultParams(), c.site, nil)
			}
		})
	}
}

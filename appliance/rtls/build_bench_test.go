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

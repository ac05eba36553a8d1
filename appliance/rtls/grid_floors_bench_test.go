package rtls

import (
	"testing"
	"time"
)

// BenchmarkGridTwoFloors: grid's cost per report on twoFloors' site,
// with every gateway of both floors hearing the tag (the other floor 12
// dB quieter), against the same reports on one floor of that site
// (sub-benchmark one-floor): the cross-floor term of addHeard is what
// the two add.
func BenchmarkGridTwoFloors(b *testing.B) {
	for _, c := range []struct {
		name   string
		floors int
	}{{"one-floor", 1}, {"two-floors", 2}} {
		b.Run(c.name, func(b *testing.B) {
			s := twoFloors()
			if c.floors == 1 {
				s = gridSite(4, 3, true)
			}
			h := newHarness(b, Options{})
			h.e.Configure(s, nil)
			if err := h.e.Start(AlgGrid); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			reports := 0
			for i := 0; i < b.N; i++ {
				for _, g := range s.Gateways {
					r := modelRSSI(g.X, g.Y, 150, 150)
					if g.MapID != 1 {
						r -= 12
					}
					if r >= -95 {
						h.sight("WAT-1", g.MAC, r)
						reports++
					}
				}
				h.clk.Advance(time.Second)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(reports), "ns/report")
		})
	}
}

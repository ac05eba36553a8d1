package rtls

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestSlowAdvertiserIsFollowed: a beacon scanned every 10 s (BLE's
// longest advertising interval), longer than readings stay live
// (Stale, 6 s), moves from one zone to the other; strongest, centroid
// and knn follow it whichever gateway of a scan reports first. With
// Stale alone each scan began with no reading live: strongest kept its
// incumbent for ever when it reported first, and lost it on every scan
// when the other did (a review, on a recording scanned every 15 s). The
// engine learns the period from the beacon's first three scans.
func TestSlowAdvertiserIsFollowed(t *testing.T) {
	s := gridSite(2, 1, true)
	for _, alg := range []string{AlgStrongest, AlgCentroid, AlgKNN} {
		for _, otherFirst := range []bool{false, true} {
			h := newHarness(t, Options{})
			h.e.SetSite(s)
			h.e.SetSamples(surveySamples(s, 6, 2, rand.New(rand.NewPCG(3, 3))))
			if err := h.e.Start(alg); err != nil {
				t.Fatal(err)
			}
			g1, g2 := s.Gateways[0].MAC, s.Gateways[1].MAC
			scan := func(in, out [6]byte) {
				if otherFirst {
					h.sight("WAT-1", out, -85)
				}
				h.sight("WAT-1", in, -50)
				if !otherFirst {
					h.sight("WAT-1", out, -85)
				}
				h.clk.Advance(10 * time.Second)
			}
			flips := 0
			last := uint64(0)
			for i := range 12 {
				scan(g1, g2)
				// The first three scans teach the engine the beacon's
				// period (beacon.stale): until then it is an ordinary
				// beacon that went quiet.
				if z := h.zone("WAT-1"); i > 3 && z != last {
					flips++
				}
				last = h.zone("WAT-1")
			}
			if last != s.Zones[0].ID || flips != 0 {
				t.Fatalf("%s (other gateway first: %v): standing in zone %d it is in %d after %d changes", alg, otherFirst, s.Zones[0].ID, last, flips)
			}
			for range 4 {
				scan(g2, g1)
			}
			if z := h.zone("WAT-1"); z != s.Zones[1].ID {
				t.Fatalf("%s (other gateway first: %v): four scans in zone %d, still in %d", alg, otherFirst, s.Zones[1].ID, z)
			}
		}
	}
}

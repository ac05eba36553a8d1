package rtls

import (
	"testing"
	"time"
)

// TestStrongestTieIsTheModels: two gateways heard equally loud (whole
// dBm readings restart after a silence, so ties are common) name the
// same zone whichever reported first. The pick went to the gateway the
// beacon happened to be heard by first, so the order of a scan's
// reports decided it (a review found rtls-eval's scores moving with the
// order of a millisecond's rows).
func TestStrongestTieIsTheModels(t *testing.T) {
	s := gridSite(2, 1, true)
	h := newHarness(t, Options{})
	h.e.SetSite(s)
	if err := h.e.Start(AlgStrongest); err != nil {
		t.Fatal(err)
	}
	g1, g2 := s.Gateways[0].MAC, s.Gateways[1].MAC
	h.sight("WAT-A", g1, -60)
	h.sight("WAT-A", g2, -60)
	h.sight("WAT-B", g2, -60)
	h.sight("WAT-B", g1, -60)
	h.clk.Advance(time.Second)
	if a, b := h.zone("WAT-A"), h.zone("WAT-B"); a != b {
		t.Fatalf("a tie heard in two orders: zones %d and %d", a, b)
	}
}

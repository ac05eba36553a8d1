package rtls

import (
	"fmt"
	"testing"
	"time"
)

// TestSilentBeaconsAreForgotten: a beacon that times out frees its
// readings at once, and one silent for forgetAfter leaves the engine
// (deleted, retired or gone beacons stayed for the whole run, counted
// in Status().Beacons); a beacon still heard is kept.
func TestSilentBeaconsAreForgotten(t *testing.T) {
	h := newHarness(t, Options{})
	s := gridSite(4, 4, true)
	h.e.SetSite(s)
	if err := h.e.Start(AlgStrongest); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		for _, g := range s.Gateways {
			h.sight(fmt.Sprintf("WAT-%d", i), g.MAC, -70)
		}
	}
	held := func() (entries, readings int) {
		for i := range h.e.shards {
			sh := &h.e.shards[i]
			sh.Lock()
			sh.V.Range(func(_ string, b **beacon) { entries++; readings += cap((*b).rds) })
			sh.Unlock()
		}
		return
	}
	h.clk.Advance(2 * time.Minute) // past the timeout: unknown, readings freed
	if n, r := held(); n != 100 || r != 0 {
		t.Fatalf("after the timeout: %d entries holding %d readings, want 100 holding none", n, r)
	}
	if l, ok := h.e.Location("WAT-1"); !ok || l.Zone != 0 {
		t.Fatalf("a timed-out beacon: %+v %v, want zone 0", l, ok)
	}
	for range 24 * 60 / 10 { // a day; WAT-0 still heard every 10 minutes
		h.sight("WAT-0", s.Gateways[0].MAC, -60)
		h.clk.Advance(10 * time.Minute)
	}
	if n, _ := held(); n != 1 {
		t.Fatalf("a day later %d entries, want only the beacon still heard", n)
	}
	if _, ok := h.e.Location("WAT-1"); ok {
		t.Fatal("a beacon silent for a day is still located")
	}
	if st := h.e.Status(); st.Beacons != 1 {
		t.Fatalf("Status().Beacons = %d, want 1", st.Beacons)
	}
}

package rtls

import (
	"testing"
	"time"
)

// TestTrackSeqOnlyGrows: a beacon's track events carry ever larger Seq,
// across zone changes, a Stop and a Start (a new state), a day's silence
// (the state forgotten and made again) and a merge whose winner had been
// numbered below the channel's last; a Location read carries the last.
// The WebSocket hub drops a frame not newer than the last it queued, so
// a Seq that went back would silence a beacon's channel.
func TestTrackSeqOnlyGrows(t *testing.T) {
	h := newHarness(t, Options{})
	s := gridSite(2, 1, true)
	h.e.SetSite(s)
	if err := h.e.Start(AlgStrongest); err != nil {
		t.Fatal(err)
	}
	last := map[string]uint64{}
	h.e.Listen(func(ev Event) {
		if ev.Location.Seq <= last[ev.AssetUID] {
			t.Errorf("%s: event Seq %d after %d", ev.AssetUID, ev.Location.Seq, last[ev.AssetUID])
		}
		last[ev.AssetUID] = ev.Location.Seq
	}, nil)
	a, b := s.Gateways[0].MAC, s.Gateways[1].MAC
	walk := func(uid string, g [6]byte, secs int) {
		for range secs {
			h.sight(uid, g, -50)
			h.clk.Advance(time.Second)
		}
	}
	walk("WAT-1", a, 5)
	walk("WAT-1", b, 20)
	if l, _ := h.e.Location("WAT-1"); l.Seq != last["WAT-1"] || l.Seq == 0 {
		t.Fatalf("Location Seq %d, last event's %d", l.Seq, last["WAT-1"])
	}
	h.e.Stop()
	if err := h.e.Start(AlgStrongest); err != nil {
		t.Fatal(err)
	}
	walk("WAT-1", a, 5)
	h.clk.Advance(25 * time.Hour) // forgotten
	if _, ok := h.e.Location("WAT-1"); ok {
		t.Fatal("not forgotten after a day")
	}
	// A merge: WAT-2's state is made first (numbered lower) but heard
	// last, so it wins the uid WAT-1, whose channel has carried WAT-1's
	// higher numbers.
	walk("WAT-2", a, 1)
	walk("WAT-1", b, 5)
	walk("WAT-2", b, 3)
	h.e.Rename("WAT-2", "WAT-1")
	last["WAT-1"] = max(last["WAT-1"], last["WAT-2"])
	walk("WAT-1", a, 20)
	if last["WAT-1"] == 0 {
		t.Fatal("no events")
	}
}

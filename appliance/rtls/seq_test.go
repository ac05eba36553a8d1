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

// TestRenameNumbersAboveTheChannel: a state moved to a uid by a rename
// numbers its events above anything that uid's channel carried, whether
// the uid's own state lost the merge or was forgotten after a day, and
// says where it is under the new uid at once: the hub drops a frame no
// newer than the channel's last, and a dashboard would have kept the
// loser's zone.
func TestRenameNumbersAboveTheChannel(t *testing.T) {
	for _, forgotten := range []bool{false, true} {
		t.Run(map[bool]string{false: "merge", true: "forgotten"}[forgotten], func(t *testing.T) {
			h := newHarness(t, Options{})
			s := gridSite(2, 1, true)
			h.e.SetSite(s)
			if err := h.e.Start(AlgStrongest); err != nil {
				t.Fatal(err)
			}
			var lastNew Location
			var bad []uint64
			h.e.Listen(func(ev Event) {
				if ev.AssetUID != "NEW" {
					return
				}
				if ev.Location.Seq <= lastNew.Seq {
					bad = append(bad, ev.Location.Seq)
				}
				lastNew = ev.Location
			}, nil)
			a, b := s.Gateways[0].MAC, s.Gateways[1].MAC
			walk := func(uid string, g [6]byte, n int, step time.Duration) {
				for range n {
					h.sight(uid, g, -50)
					h.clk.Advance(step)
				}
			}
			walk("OLD", a, 1, time.Second) // OLD's state made first: numbered lower
			walk("NEW", b, 5, time.Second)
			if forgotten {
				walk("OLD", a, 26*6, 10*time.Minute) // a day: NEW silent, forgotten
				if _, ok := h.e.Location("NEW"); ok {
					t.Fatal("NEW not forgotten")
				}
			} else {
				walk("OLD", a, 3, time.Second) // OLD heard last: it wins
			}
			before := lastNew.Seq
			h.e.Rename("OLD", "NEW")
			l, _ := h.e.Location("NEW")
			if lastNew.Seq <= before || lastNew.Zone != l.Zone || lastNew.Seq != l.Seq {
				t.Fatalf("after the rename the channel's last event is %+v, the state %+v (Seq before %#x)", lastNew, l, before)
			}
			walk("NEW", b, 20, time.Second)
			if len(bad) > 0 {
				t.Fatalf("NEW's events carry Seq %#x, not above what its channel carried", bad)
			}
		})
	}
}

package alerting

import (
	"errors"
	"testing"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/config"
	"beaconhub/appliance/ingest"
	"beaconhub/store"
)

// TestOpenEventGateways: the first gateways sit in the event, the rest in
// a slice; a gateway is noted once wherever it sits, and no more than the
// store keeps per event.
func TestOpenEventGateways(t *testing.T) {
	var oe openEvent
	gw := func(i int) ingest.MAC { return ingest.MAC{0xAC, 0x23, 0x3F, 0, byte(i >> 8), byte(i)} }
	for i := range store.MaxEventGateways + 10 {
		want := i < store.MaxEventGateways
		if got := oe.addGateway(gw(i)); got != want {
			t.Fatalf("gateway %d: added %v, want %v", i, got, want)
		}
	}
	if oe.gateways() != store.MaxEventGateways || oe.n != inlineGateways {
		t.Fatalf("%d gateways (%d inline), want %d (%d inline)", oe.gateways(), oe.n, store.MaxEventGateways, inlineGateways)
	}
	for _, i := range []int{0, inlineGateways - 1, inlineGateways, store.MaxEventGateways - 1} {
		if !oe.heard(gw(i)) {
			t.Errorf("gateway %d not heard", i)
		}
	}
	if oe.heard(gw(store.MaxEventGateways)) {
		t.Error("a gateway past the cap was kept")
	}
	small := openEvent{}
	small.addGateway(gw(1))
	if small.addGateway(gw(1)) || small.gateways() != 1 {
		t.Error("a repeated gateway was added again")
	}
}

// TestSweepOfCollidingUIDs: the windows are keyed by the uid's 32-bit
// hash (assets.UIDMap); a sweep must close each uid's own windows only.
// U412789 and U649192 have the same FNV-1a hash.
func TestSweepOfCollidingUIDs(t *testing.T) {
	const a, b = "U412789", "U649192"
	h := assets.UIDHash(a)
	if assets.UIDHash(b) != h {
		t.Fatal("the uids no longer collide: pick another pair")
	}
	var w windows
	*w.open.Add(h, a).at(classMotion, false) = openEvent{id: 1, anchor: 1000}
	*w.open.Add(h, b).at(classMotion, false) = openEvent{id: 2, anchor: 30_000}
	*w.open.Add(h, b).at(classPress, true) = openEvent{id: 3, anchor: 1000}
	if w.open.Get(h, a).at(classPress, true).open() {
		t.Fatal("b's test press leaked into a's windows")
	}
	// 40 s windows, kept ResendHoldMS for resends: 5 s after that, a's
	// only event and b's press are forgotten, b's later motion is not.
	w.sweep(1000+ResendHoldMS+5000, 40_000)
	if w.open.Get(h, a) != nil {
		t.Fatal("a's windows survived the sweep")
	}
	sl := w.open.Get(h, b)
	if sl == nil || sl.at(classMotion, false).id != 2 || sl.at(classPress, true).open() {
		t.Fatalf("b's windows after the sweep: %+v", sl)
	}
}

// TestLostInsertsLeaveTheHotPath: an event whose insert failed is
// remembered until a report of its window asks, or until its window (and
// resend hold) is over; then the global lookup is off the hot path again.
func TestLostInsertsLeaveTheHotPath(t *testing.T) {
	s := New(Options{Live: config.NewLive(config.Defaults(config.ActiveBrand()), nil, "")})
	s.insertFailed(7, 1000, false, errors.New("fsync"))
	s.insertFailed(8, 1000, true, errors.New("fsync"))
	if !s.wasLost(7, 2000) || s.wasLost(7, 2000) {
		t.Fatal("a lost id must be reported once")
	}
	if s.nLost.Load() != 1 {
		t.Fatalf("%d lost ids left, want 1 (event 8)", s.nLost.Load())
	}
	// Nobody asks for 8; once its hold is over, any lookup drops it.
	if s.wasLost(99, 1000+ResendHoldMS+1) || s.nLost.Load() != 0 {
		t.Fatalf("%d lost ids left after the hold", s.nLost.Load())
	}
}

// TestRenameKeepsTheNewerWindow: a merge renames the source's windows onto
// the survivor. A survivor window kept only for resends (its window long
// closed) must not win over the source's live one: the source's next
// report would open a second event.
func TestRenameKeepsTheNewerWindow(t *testing.T) {
	s := New(Options{Live: config.NewLive(config.Defaults(config.ActiveBrand()), nil, "")})
	put := func(uid string, id uint64, anchor int64) {
		sh := s.shards.OfUID(uid)
		sh.Lock()
		*sh.V.open.Add(assets.UIDHash(uid), uid).at(classPress, false) = openEvent{id: id, anchor: anchor}
		sh.Unlock()
	}
	put("SURV", 1, 1000)   // two minutes ago: closed, kept for resends
	put("SRC", 2, 121_000) // live
	s.Rename("SRC", "SURV")
	sh := s.shards.OfUID("SURV")
	sh.Lock()
	defer sh.Unlock()
	if got := sh.V.open.Get(assets.UIDHash("SURV"), "SURV").at(classPress, false).id; got != 2 {
		t.Fatalf("the survivor's window holds event %d, want the live 2", got)
	}
}

// TestPrepareRenameKeepsAPressOneEvent: the registry resolves a beacon's
// MAC to its new uid (remint, merge) two commits before Rename moves the
// dedup windows. PrepareRename, called before that reload, makes the
// window reachable under the new uid: the press's next report merges
// into its event instead of opening a second one.
func TestPrepareRenameKeepsAPressOneEvent(t *testing.T) {
	s := New(Options{Live: config.NewLive(config.Defaults(config.ActiveBrand()), nil, "")})
	press := func(uid string, at int64) {
		var w ingest.Writes
		s.Observe(&ingest.Batch{Kind: ingest.KindAdv4, Received: at, Gateway: ingest.MAC{0xAC, 1},
			Obs: []ingest.Observation{{Report: ingest.Report{TS: at, Pushed: true, Press: ingest.PressSingle},
				Asset: &assets.Asset{UID: uid, Type: "panic", Kind: "beacon"}}}}, &w)
	}
	press("OLD", 1000)
	s.PrepareRename("OLD", "NEW")
	press("NEW", 2000) // resolved through the reloaded registry
	press("OLD", 2500) // resolved just before the reload
	s.Rename("OLD", "NEW")
	press("NEW", 3000)
	if st := s.Stats(); st.Events != 1 || st.Merged != 3 {
		t.Fatalf("%d events, %d merged reports; want 1 event and 3 merged", st.Events, st.Merged)
	}
}

// pressAt observes one press report of uid received at recv with the
// gateway's timestamp ts.
func pressAt(s *Service, uid string, recv, ts int64) {
	var w ingest.Writes
	s.Observe(&ingest.Batch{Kind: ingest.KindAdv4, Received: recv, Gateway: ingest.MAC{0xAC, 1},
		Obs: []ingest.Observation{{Report: ingest.Report{TS: ts, Pushed: true, Press: ingest.PressSingle},
			Asset: &assets.Asset{UID: uid, Type: "panic", Kind: "beacon"}}}}, &w)
}

// A report merged under the old uid between PrepareRename and Rename
// keeps its timestamp in the event the new uid keeps: its resend after
// the window is the same press (the old copy's timestamps were dropped
// when both anchors were equal: a review).
func TestARenameKeepsTheTimestampsOfBothCopies(t *testing.T) {
	s := New(Options{Live: config.NewLive(config.Defaults(config.ActiveBrand()), nil, "")})
	pressAt(s, "OLD", 1_000_000, 5_000)
	s.PrepareRename("OLD", "NEW")
	pressAt(s, "OLD", 1_000_500, 5_500)
	s.Rename("OLD", "NEW")
	pressAt(s, "NEW", 1_090_000, 5_500) // its resend, after the window
	if st := s.Stats(); st.Events != 1 {
		t.Fatalf("%d events, want 1", st.Events)
	}
}

// A press held long enough to report 600 times still knows its newest
// timestamps: a reconnecting gateway resends those (the first 500 were
// kept and the rest forgotten: a review).
func TestALongPressKnowsItsNewestTimestamps(t *testing.T) {
	s := New(Options{Live: config.NewLive(config.Defaults(config.ActiveBrand()), nil, "")})
	for i := range int64(6000) {
		pressAt(s, "P", 1_000_000+i*5, 5_000_000+i*5)
	}
	pressAt(s, "P", 1_090_000, 5_000_000+5500*5) // a resend of report 5500, 60 s on
	if st := s.Stats(); st.Events != 1 {
		t.Fatalf("%d events, want 1", st.Events)
	}
}

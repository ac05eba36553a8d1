package alerting

import (
	"testing"

	"beaconhub/appliance/assets"
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

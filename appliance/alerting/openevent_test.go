package alerting

import (
	"testing"

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

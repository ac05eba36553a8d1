package rtls

import (
	"testing"
	"time"

	"beaconhub/appliance/ingest"
)

// TestBeaconTimeNeverRunsBackwards: gateways publish on their own read
// loops, so a report stamped earlier can reach a beacon after a later
// one. A beacon's zone must never be entered before the zone it left was
// entered (its interval would end before it began): a late report counts
// as heard at the beacon's latest sighting. Strongest gateway deciding on
// every report with a 1 ms challenge makes the late pair of reports a
// zone change at their own stamps if they are taken as they come.
func TestBeaconTimeNeverRunsBackwards(t *testing.T) {
	s := gridSite(2, 1, true)
	h := newHarness(t, Options{Params: Params{DecideEvery: -1, Margin: 0.01, MarginDwell: time.Millisecond, SmoothTau: time.Millisecond}})
	h.e.SetSite(s)
	if err := h.e.Start(AlgStrongest); err != nil {
		t.Fatal(err)
	}
	a, b := s.Gateways[0].MAC, s.Gateways[1].MAC
	base := h.clk.Now().UnixMilli()
	at := func(ms int64, g [6]byte, rssi int8) {
		bt := &ingest.Batch{Gateway: g, Kind: ingest.KindAdv4, Received: base + ms,
			Obs: []ingest.Observation{{Report: ingest.Report{RSSI: rssi, TS: base + ms}, Asset: h.beacon("WAT-1", "watch")}}}
		h.e.Observe(bt, &ingest.Writes{})
	}
	// Past the first fix's refinement (firstFixSpan), where a change is
	// a change.
	at(0, a, -50)
	at(0, b, -80)
	at(1500, a, -50)
	at(1500, b, -80)
	at(1510, b, -40)
	at(1520, b, -40) // B holds 10 ms: the beacon is in zone 2 from 1520
	l, _ := h.e.Location("WAT-1")
	if l.Zone != 2 || l.Since != base+1520 {
		t.Fatalf("after B: %+v", l)
	}
	// Two reports from A stamped 1515 and 1516, arriving now.
	at(1515, a, -30)
	at(1516, a, -30)
	if l, _ := h.e.Location("WAT-1"); l.Since < base+1520 {
		t.Fatalf("zone %d entered at %d, before zone 2 was entered at %d", l.Zone, l.Since-base, 1520)
	}
}

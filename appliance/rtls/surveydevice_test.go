package rtls

import (
	"testing"
	"time"

	"beaconhub/appliance/ingest"
)

// TestSurveyHearsOnlyItsTag: a recording keeps to the tag it first
// heard under its uid. A merge can give the uid the merged beacon's tag
// while that stands in another zone, and its readings were recorded as
// this zone's (a review: a zone-3 tag's -72 dBm in zone 1's windows);
// they are counted in the status instead.
func TestSurveyHearsOnlyItsTag(t *testing.T) {
	h := newHarness(t, Options{})
	h.e.Record("WAT-1", 1)
	gw := [6]byte{0xAC, 0x23, 0x3F, 0, 0, 1}
	mine, merged := ingest.MAC{0xC3, 0, 0, 0, 0, 1}, ingest.MAC{0xC3, 0, 0, 0, 0, 2}
	hear := func(mac ingest.MAC, rssi int8) {
		b := &ingest.Batch{Gateway: gw, Kind: ingest.KindAdv4, Received: h.clk.Now().UnixMilli(),
			Obs: []ingest.Observation{{Report: ingest.Report{MAC: mac, RSSI: rssi, TS: h.clk.Now().UnixMilli()}, Asset: h.beacon("WAT-1", "watch")}}}
		h.e.Observe(b, &ingest.Writes{})
	}
	for range 3 {
		hear(mine, -60)
		h.clk.Advance(time.Second)
	}
	for range 3 { // the merge: the uid now resolves to the other tag
		hear(merged, -75)
		h.clk.Advance(time.Second)
	}
	if st := h.e.Status().Surveys; len(st) != 1 || st[0].OtherDevice != 3 {
		t.Fatalf("surveys %+v, want 3 reports of the other tag counted", st)
	}
	for _, s := range h.e.StopRecording("WAT-1") {
		for _, v := range s.RSSI {
			if v != -60 {
				t.Fatalf("a window holds the other tag's readings: %+v", s)
			}
		}
	}
}

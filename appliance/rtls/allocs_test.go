package rtls

import (
	"math/rand/v2"
	"testing"

	"beaconhub/appliance/ingest"
)

// A located beacon that stays put costs no allocation per report, for
// every algorithm (zone changes allocate their writer ops; nothing else
// does).
func TestSteadyStateDoesNotAllocate(t *testing.T) {
	s := gridSite(3, 3, true)
	samples := surveySamples(s, 3, 1, rand.New(rand.NewPCG(1, 1)))
	for _, alg := range algorithmNames {
		h := newHarness(t, Options{})
		h.e.SetSite(s)
		h.e.SetSamples(samples)
		if err := h.e.Start(alg); err != nil {
			t.Fatal(err)
		}
		h.e.Listen(func(Event) {}, func(string) bool { return false })
		standAt(h, s, "WAT-1", 150, 150, 0, 5, nil)
		if z := h.zone("WAT-1"); z != 5 {
			t.Fatalf("%s: zone %d, want 5", alg, z)
		}
		a := h.beacon("WAT-1", "watch")
		batch := &ingest.Batch{Gateway: s.Gateways[4].MAC, Kind: ingest.KindAdv4,
			Obs: []ingest.Observation{{Report: ingest.Report{RSSI: -52}, Asset: a}}}
		w := &ingest.Writes{}
		// Time moves through Received (the fake clock's Advance allocates).
		// Ten reports a run, three seconds: AllocsPerRun rounds the mean
		// down, so one run a report would hide an allocation made only at
		// decisions (one a second, every third report).
		batch.Received = h.clk.Now().UnixMilli()
		n := testing.AllocsPerRun(100, func() {
			for range 10 {
				batch.Received += 300
				h.e.Observe(batch, w)
			}
		})
		if n != 0 || len(w.Ops) != 0 {
			t.Fatalf("%s: %.1f allocations per ten reports, %d ops", alg, n, len(w.Ops))
		}
	}
}

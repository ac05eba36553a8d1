package sensors

import (
	"testing"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/ingest"
	"beaconhub/store"
)

// BenchmarkObserveReading is the monitor's cost for one in-range
// temperature reading of a fridge (no transition): the common case on
// the ingest path. Compare a change with its parent in the same run.
func BenchmarkObserveReading(b *testing.B) {
	r := newCondRig(b)
	defer r.m.Stop()
	a := &assets.Asset{UID: r.uids["Fridge"], Kind: store.KindBeacon, Type: "sensor", Name: "Fridge"}
	now := r.clk.Now().UnixMilli()
	rep := temp(5)
	rep.Has |= ingest.HasTS // the gateway's clock: its offset estimated, lateness judged
	batch := &ingest.Batch{Kind: ingest.KindAdv1, Received: now, Obs: []ingest.Observation{{Report: rep, Asset: a}}}
	var w ingest.Writes
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		batch.Obs[0].TS = now + int64(i)
		w.Ops = w.Ops[:0]
		r.m.Observe(batch, &w)
	}
}

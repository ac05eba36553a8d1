package sensors

import (
	"sync"
	"testing"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/ingest"
	"beaconhub/store"
)

// Many gateways' read loops (and two loops of one gateway: an overlapping
// reconnect) observe the same fridge at once, across bucket boundaries.
func TestConcurrentObserveOfOneFridge(t *testing.T) {
	r := newCondRig(t)
	var wg sync.WaitGroup
	base := r.clk.Now().UnixMilli()
	for g := 0; g < 8; g++ {
		gw := ingest.MAC{1, 2, 3, 4, 5, byte(g % 4)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				now := base + int64(i)*2000
				rep := temp(5)
				rep.TS, rep.Has = now-int64(g)*100, rep.Has|ingest.HasTS
				b := &ingest.Batch{Gateway: gw, Kind: ingest.KindAdv1, Received: now, Obs: []ingest.Observation{{Report: rep,
					Asset: &assets.Asset{UID: r.uids["Fridge"], Kind: store.KindBeacon, Type: "sensor", Name: "Fridge"}}}}
				var w ingest.Writes
				r.m.Observe(b, &w)
			}
		}()
	}
	wg.Wait()
	_ = time.Second
}

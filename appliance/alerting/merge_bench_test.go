package alerting_test

import (
	"strconv"
	"testing"
	"time"

	"beaconhub/appliance/clock"
)

// BenchmarkMergeReport: a motion report merging into its beacon's open
// event, the commonest event path (motion repeats from every gateway
// that hears the beacon), through the real pipeline at QoS 0; six
// gateways take turns. "plain" is the same report without motion,
// which makes no event: the pipeline's own cost, the baseline of the
// ratio. ns/op is per report.
//
//	go test -run '^$' -bench MergeReport -count 5 ./appliance/alerting/
func BenchmarkMergeReport(b *testing.B) {
	for _, tc := range []struct {
		name   string
		motion bool
	}{{"plain", false}, {"motion", true}} {
		b.Run(tc.name, func(b *testing.B) {
			clk := clock.NewFake(t0)
			r := newRig(b, "", clk, liveConfig(b, ""))
			bodies := make([][]byte, 6)
			topics := make([]string, 6)
			for i := range bodies {
				// Each gateway's own timestamp, as real gateways send.
				bodies[i] = []byte(`{"ts":` + strconv.FormatInt(t0.UnixMilli()+int64(i)*37, 10) + `,"reports":[` + heartbeat(watchMAC, tc.motion) + `]}`)
				topics[i] = "gw/" + gatewayMAC(i+1) + "/adv4"
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				g := i % 6
				if i%4096 == 0 {
					clk.Advance(time.Millisecond) // receive times move on, within the window
				}
				if err := r.pipe.HandlePublish(gatewayMAC(g+1), topics[g], bodies[g], 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

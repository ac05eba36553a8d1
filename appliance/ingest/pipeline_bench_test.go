package ingest_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/ingest"
	"beaconhub/appliance/ingest/ingesttest"
)

// BenchmarkPipelineParallel: gateways' read loops (one per parallel
// goroutine) publishing 8-report adv4 heartbeats of 10,000 beacons at
// QoS 0 through a pipeline with no subscribers. What is left is decoding,
// MAC resolution, last-seen and the pipeline's own bookkeeping, including
// any state every read loop writes (a counter shared by all of them costs
// a cache-line transfer between the cores per message). ns/op is per
// report.
func BenchmarkPipelineParallel(b *testing.B) {
	const beacons, gateways, perMsg = 10000, 10, 8
	reg := ingesttest.NewRegistry()
	var msgs [gateways][][]byte
	for g := range gateways {
		mac, _ := ingest.ParseMAC(fmt.Sprintf("AC%010X", g))
		reg.Gateways[mac] = &assets.Asset{ID: uint64(100000 + g), UID: fmt.Sprintf("GW-B-%d", g), Kind: "gateway"}
	}
	var reps []string
	for i := range beacons {
		s := fmt.Sprintf("C3%010X", i)
		mac, _ := ingest.ParseMAC(s)
		reg.Beacons[mac] = &assets.Asset{ID: uint64(i + 1), UID: fmt.Sprintf("WAT-B-%d", i), Type: "watch", Kind: "beacon", Seen: &assets.Seen{}}
		reps = append(reps, fmt.Sprintf(`{"mac":%q,"rssi":%d,"beacon_is_pushed":false,"motion":false}`, s, -40-i%50))
	}
	for g := range gateways {
		for i := 0; i+perMsg <= beacons; i += perMsg {
			k := (i + g*beacons/gateways) % (beacons - perMsg)
			msgs[g] = append(msgs[g], []byte(`{"reports":[`+strings.Join(reps[k:k+perMsg], ",")+`]}`))
		}
	}
	p := ingest.New(ingest.Options{Registry: reg, Writer: ingesttest.Writer{}})
	var next atomic.Int32
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		g := int(next.Add(1)-1) % gateways
		id := fmt.Sprintf("AC%010X", g)
		topic := "gw/" + id + "/adv4"
		ms := msgs[g]
		for i := 0; pb.Next(); i++ {
			if err := p.HandlePublish(id, topic, ms[i%len(ms)], 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perMsg), "ns/report")
	if got := p.Stats.Totals().Observed; got != int64(b.N*perMsg) {
		b.Fatalf("observed %d reports, want %d", got, b.N*perMsg)
	}
}

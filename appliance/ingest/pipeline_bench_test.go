package ingest_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/ingest"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// benchRegistry resolves 10,000 beacons and 10 gateways from memory.
type benchRegistry struct {
	beacons, gateways map[[6]byte]*assets.Asset
}

func (r *benchRegistry) Beacon(m [6]byte) (*assets.Asset, bool) { a, ok := r.beacons[m]; return a, ok }
func (r *benchRegistry) Gateway(m [6]byte) (*assets.Asset, bool) {
	a, ok := r.gateways[m]
	return a, ok
}
func (r *benchRegistry) SeenCell(string) *assets.Seen          { return &assets.Seen{} }
func (r *benchRegistry) SeenIfAny(string) (*assets.Seen, bool) { return nil, false }
func (r *benchRegistry) RangeSeen(func(string, *assets.Seen))  {}
func (r *benchRegistry) RenameSeen(string, string)             {}

// doneWriter completes every write at once: the benchmark measures the
// pipeline's own CPU, not the disk.
type doneWriter struct{}

func (doneWriter) AppendReadings(_ []store.Reading, done func(error)) {
	if done != nil {
		done(nil)
	}
}
func (w doneWriter) AppendReadingsLazily(rs []store.Reading, done func(error)) {
	w.AppendReadings(rs, done)
}
func (doneWriter) Do(_ func(*bolt.Tx) error, done func(error)) {
	if done != nil {
		done(nil)
	}
}
func (w doneWriter) DoLazily(fn func(*bolt.Tx) error, done func(error)) { w.Do(fn, done) }

// BenchmarkPipelineParallel: gateways' read loops (one per parallel
// goroutine) publishing 8-report adv4 heartbeats of 10,000 beacons at
// QoS 0 through a pipeline with no subscribers. What is left is decoding,
// MAC resolution, last-seen and the pipeline's own bookkeeping, including
// any state every read loop writes (a counter shared by all of them costs
// a cache-line transfer between the cores per message). ns/op is per
// report.
func BenchmarkPipelineParallel(b *testing.B) {
	const beacons, gateways, perMsg = 10000, 10, 8
	reg := &benchRegistry{beacons: map[[6]byte]*assets.Asset{}, gateways: map[[6]byte]*assets.Asset{}}
	var msgs [gateways][][]byte
	for g := range gateways {
		mac, _ := ingest.ParseMAC(fmt.Sprintf("AC%010X", g))
		reg.gateways[mac] = &assets.Asset{ID: uint64(100000 + g), UID: fmt.Sprintf("GW-B-%d", g), Kind: "gateway"}
	}
	var reps []string
	for i := range beacons {
		s := fmt.Sprintf("C3%010X", i)
		mac, _ := ingest.ParseMAC(s)
		reg.beacons[mac] = &assets.Asset{ID: uint64(i + 1), UID: fmt.Sprintf("WAT-B-%d", i), Type: "watch", Kind: "beacon", Seen: &assets.Seen{}}
		reps = append(reps, fmt.Sprintf(`{"mac":%q,"rssi":%d,"beacon_is_pushed":false,"motion":false}`, s, -40-i%50))
	}
	for g := range gateways {
		for i := 0; i+perMsg <= beacons; i += perMsg {
			k := (i + g*beacons/gateways) % (beacons - perMsg)
			msgs[g] = append(msgs[g], []byte(`{"reports":[`+strings.Join(reps[k:k+perMsg], ",")+`]}`))
		}
	}
	p := ingest.New(ingest.Options{Registry: reg, Writer: doneWriter{}})
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

package rtls_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/ingest"
	"beaconhub/appliance/ingest/ingesttest"
	"beaconhub/appliance/rtls"
	"beaconhub/appliance/rtls/rtlsbench"
)

// Engine cost per report at scale: 10,000 trackable beacons, each heard
// by its 20 nearest of 200 gateways (a 10 x 10 grid of 10 m zones, two
// gateways per zone), once a second. Every sub-benchmark runs the same
// publishes through the real ingest pipeline (decode, MAC resolution,
// last-seen); "baseline" has no subscriber, the others have the engine
// running one algorithm. Figures per report: ns, allocations, and the p99
// time of one publish from arrival to every zone decision in it.

const (
	benchBeacons  = 10000
	benchGateways = 200
	benchHeard    = 20
	benchPerMsg   = 100 // reports per publish
)

type publish struct {
	client, topic string
	payload       []byte
}

type benchWorld struct {
	site    rtls.Site
	samples []rtls.Sample
	reg     *ingesttest.Registry
	rounds  [2][]publish // two noise draws, alternated
	reports int          // per round
}

func buildWorld() *benchWorld {
	rng := rand.New(rand.NewPCG(42, 7))
	bw := rtlsbench.New(rng, benchGateways)
	w := &benchWorld{site: bw.Site, samples: bw.Samples, reg: bw.Reg}
	gws, gwMACs := bw.GW, bw.GWMAC
	// beacons and who hears them
	type heard struct {
		mac  string
		x, y float64
	}
	perGW := make([][]heard, benchGateways)
	for b := 0; b < benchBeacons; b++ {
		mac := [6]byte{0xC3, 0, 0, 0, byte(b >> 8), byte(b)}
		w.reg.Beacons[mac] = &assets.Asset{UID: fmt.Sprintf("WAT-%05d", b), Type: "watch", Kind: "beacon", Seen: &assets.Seen{}}
		x, y := rng.Float64()*1000, rng.Float64()*1000
		for _, g := range bw.Nearest(x, y, benchHeard, make([]int, benchGateways)) {
			perGW[g] = append(perGW[g], heard{ingest.MAC(mac).String(), x, y})
		}
	}
	for round := range w.rounds {
		for g, hs := range perGW {
			client := ingest.MAC(gwMACs[g]).String()
			for start := 0; start < len(hs); start += benchPerMsg {
				buf := []byte(`{"reports":[`)
				for i, h := range hs[start:min(start+benchPerMsg, len(hs))] {
					if i > 0 {
						buf = append(buf, ',')
					}
					buf = fmt.Appendf(buf, `{"mac":%q,"rssi":%d,"beacon_is_pushed":false}`, h.mac, rtlsbench.RSSI(gws[g], h.x, h.y, rng.NormFloat64()*3))
				}
				buf = append(buf, "]}"...)
				w.rounds[round] = append(w.rounds[round], publish{client, "gw/" + client + "/adv4", buf})
			}
		}
	}
	w.reports = benchBeacons * benchHeard
	return w
}

var world *benchWorld

// BenchmarkEngine runs, for each algorithm, two pipelines over the same
// publishes: the bare pipeline (baseline) and the pipeline with the
// engine subscribed. They alternate in chunks of 50 publishes so both see
// the same load on the shared box; the figures are per report, and
// "ratio" is (pipeline + engine) / pipeline.
func BenchmarkEngine(b *testing.B) {
	if world == nil {
		world = buildWorld()
	}
	for _, alg := range []string{rtls.AlgStrongest, rtls.AlgCentroid, rtls.AlgKNN, rtls.AlgFilter, rtls.AlgBayes, rtls.AlgGrid, rtls.AlgFusion} {
		b.Run(alg, func(b *testing.B) { benchAlg(b, world, alg, rtls.Params{}) })
	}
	// What the tag offset estimate (offset.go) costs: the same runs
	// without it.
	noOffset := rtls.DefaultParams()
	noOffset.OffsetTau = -1
	for _, alg := range []string{rtls.AlgFilter, rtls.AlgGrid} {
		b.Run(alg+"-no-offset", func(b *testing.B) { benchAlg(b, world, alg, noOffset) })
	}
	// What grid's standing belief (Params.StandFor, on by default)
	// costs: the same runs without it.
	moving := rtls.DefaultParams()
	moving.StandFor = -1
	for _, alg := range []string{rtls.AlgGrid, rtls.AlgFusion} {
		b.Run(alg+"-moving", func(b *testing.B) { benchAlg(b, world, alg, moving) })
	}
}

// benchRun is one pipeline replaying the world's rounds on its own clock.
type benchRun struct {
	p       *ingest.Pipeline
	e       *rtls.Engine
	clk     *clock.Fake
	pubs    int
	step    time.Duration
	w       *benchWorld
	dur     time.Duration
	mallocs uint64
	lat     []time.Duration
}

func newBenchRun(b *testing.B, w *benchWorld, alg string, p rtls.Params) *benchRun {
	r := &benchRun{w: w, clk: clock.NewFake(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)), pubs: len(w.rounds[0])}
	// One round per second, its publishes spread evenly over the second
	// as the gateways' would be.
	r.step = time.Second / time.Duration(r.pubs)
	r.p = ingest.New(ingest.Options{Registry: w.reg, Writer: ingesttest.Writer{}, Clock: r.clk})
	if alg != "" {
		r.e = rtls.New(rtls.Options{Clock: r.clk, Params: p})
		r.e.SetSite(w.site)
		r.e.SetSamples(w.samples)
		if err := r.e.Start(alg); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(r.e.Close)
		r.p.AddSubscriber(r.e)
	}
	for i := 0; i < 2*r.pubs; i++ { // warm: every beacon located, state allocated
		r.play(b, i)
	}
	return r
}

func (r *benchRun) play(b *testing.B, i int) {
	pb := &r.w.rounds[(i/r.pubs)%2][i%r.pubs]
	if err := r.p.HandlePublish(pb.client, pb.topic, pb.payload, 0); err != nil {
		b.Fatal(err)
	}
	r.clk.Advance(r.step)
}

// chunk plays publishes [from, from+n) timing each one.
func (r *benchRun) chunk(b *testing.B, from, n int) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m0 := ms.Mallocs
	start := time.Now()
	for i := from; i < from+n; i++ {
		t := time.Now()
		r.play(b, 2*r.pubs+i)
		r.lat = append(r.lat, time.Since(t))
	}
	r.dur += time.Since(start)
	runtime.ReadMemStats(&ms)
	r.mallocs += ms.Mallocs - m0
}

func benchAlg(b *testing.B, w *benchWorld, alg string, p rtls.Params) {
	base, eng := newBenchRun(b, w, "", p), newBenchRun(b, w, alg, p)
	b.ResetTimer()
	const chunk = 50
	for i := 0; i < b.N; i += chunk {
		n := min(chunk, b.N-i)
		base.chunk(b, i, n)
		eng.chunk(b, i, n)
	}
	b.StopTimer()
	reports := float64(b.N) * float64(w.reports) / float64(base.pubs)
	p99 := func(l []time.Duration) float64 {
		slices.Sort(l)
		return float64(l[len(l)*99/100].Microseconds())
	}
	b.ReportMetric(float64(base.dur.Nanoseconds())/reports, "base-ns/report")
	b.ReportMetric(float64(eng.dur.Nanoseconds())/reports, "ns/report")
	b.ReportMetric(float64(eng.dur)/float64(base.dur), "ratio")
	b.ReportMetric(float64(base.mallocs)/reports, "base-allocs/report")
	b.ReportMetric(float64(eng.mallocs)/reports, "allocs/report")
	b.ReportMetric(p99(base.lat), "base-p99-µs/publish")
	b.ReportMetric(p99(eng.lat), "p99-µs/publish")
}

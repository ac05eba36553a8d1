package rtls_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/ingest"
	"beaconhub/appliance/rtls"
	"beaconhub/store"
)

// BenchmarkSweepSaveBytes measures what the engine's sweep saves write to
// flash (each stay's last sighting, zone_heard; each survey's finished
// windows): N beacons in stays heard once a second through the real
// pipeline and writer, one survey running. The baseline is ingest's own
// periodic flush of the same beacons' last_seen (every 30 s), a write of
// the same shape; the engine starts 5 s after the pipeline, so the two
// never fall in the same second and each second's timed commits are one
// or the other's. Bytes are the writer's page bytes plus the meta page
// every commit writes. "ratio" is the sweeps' bytes over 30 s (two) to
// the flush's (one); all-B/30s, everything written meanwhile, depends on
// how the publishes' commits group, which here they do not.
func BenchmarkSweepSaveBytes(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var sweeps, flushes, all float64
			for range b.N {
				s, f, a := sweepSaveRun(b, n)
				sweeps += s
				flushes += f
				all += a
			}
			b.ReportMetric(sweeps/float64(b.N), "sweeps-B/30s")
			b.ReportMetric(flushes/float64(b.N), "last-seen-flush-B/30s")
			b.ReportMetric(all/float64(b.N), "all-B/30s")
			b.ReportMetric(sweeps/flushes, "ratio")
		})
	}
}

// sweepSaveRun returns the bytes of the sweeps, of the last_seen flush
// and of everything (the publishes' commits included: one a publish
// here, as each waits for its own) over the same 30 s.
func sweepSaveRun(b *testing.B, n int) (sweeps, flush, all float64) {
	b.Helper()
	b.StopTimer()
	db, err := store.Open(filepath.Join(b.TempDir(), "s.db"), store.OpenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	macs := make([]string, n)
	for i := range n {
		macs[i] = fmt.Sprintf("C3%010X", i+1)
		if err := db.CreateBeacon(&store.Beacon{AssetUID: fmt.Sprintf("WAT-%d", i+1), MAC: macs[i], Name: "w", Type: "watch", Active: true}); err != nil {
			b.Fatal(err)
		}
	}
	for _, mac := range []string{gwA, gwB} {
		if err := db.CreateGateway(&store.Gateway{AssetUID: "GW-" + mac, MAC: mac, Name: "gw"}); err != nil {
			b.Fatal(err)
		}
	}
	reg, err := assets.NewRegistry(db)
	if err != nil {
		b.Fatal(err)
	}
	w := store.NewWriter(db, store.WriterOptions{})
	defer w.Close()
	clk := clock.NewFake(t0)
	p := ingest.New(ingest.Options{Registry: reg, Writer: w, Clock: clk, AckWait: 5 * time.Second})
	defer p.Close()
	p.Start() // last_seen flushes at t0+30 s, +60 s
	clk.Advance(5 * time.Second)
	e := rtls.New(rtls.Options{Clock: clk, Writer: w, Timeout: time.Minute}) // sweeps at t0+20 s, +35 s, ...
	defer e.Close()
	e.SetSite(rigSite())
	if err := e.Start(rtls.AlgStrongest); err != nil {
		b.Fatal(err)
	}
	p.AddSubscriber(e)
	e.Record("WAT-1", 1)
	const page = 4096
	written := func() uint64 { st := w.Stats(); return st.WrittenBytes + st.Commits*page }
	// One second: the gateways' publishes (committed: QoS 1), then the
	// clock moves on, which is when a sweep or a flush runs; it returns
	// the bytes of that move.
	second := func() uint64 {
		for _, gw := range []string{gwA, gwB} {
			for start := 0; start < n; start += 50 {
				buf := []byte(`{"reports":[`)
				for i, mac := range macs[start:min(start+50, n)] {
					if i > 0 {
						buf = append(buf, ',')
					}
					rssi := -55
					if gw == gwB {
						rssi = -85
					}
					buf = fmt.Appendf(buf, `{"mac":%q,"rssi":%d,"beacon_is_pushed":false}`, mac, rssi)
				}
				buf = append(buf, "]}"...)
				if err := p.HandlePublish(gw, "gw/"+gw+"/adv4", buf, 1); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		before := written()
		clk.Advance(time.Second)
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		return written() - before
	}
	// Into stays, past the first flush (t0+30 s) and the second sweep
	// (t0+35 s), each of which wrote every beacon once already.
	for clk.Now().Before(t0.Add(36 * time.Second)) {
		second()
	}
	// t0+36 s to t0+66 s: sweeps at +50 s and +65 s, the flush at +60 s.
	b.StartTimer()
	start := written()
	for clk.Now().Before(t0.Add(66 * time.Second)) {
		end := clk.Now().Add(time.Second).Sub(t0)
		bytes := float64(second())
		switch end {
		case 50 * time.Second, 65 * time.Second:
			sweeps += bytes
		case 60 * time.Second:
			flush += bytes
		default:
			if bytes != 0 {
				b.Fatalf("%d bytes written as the clock reached t0+%v, where nothing is timed", int(bytes), end)
			}
		}
	}
	b.StopTimer()
	all = float64(written() - start)
	if sweeps == 0 || flush == 0 {
		b.Fatalf("sweeps wrote %v bytes, the flush %v: the timers are not where this expects them", sweeps, flush)
	}
	return sweeps, flush, all
}

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

// BenchmarkSweepSaveBytes measures what the sweep's saves (each stay's
// last sighting, zone_heard; each survey's finished windows) write to
// flash, against what ingest itself writes over the same 15 s: N beacons
// in stays, heard once a second through the real pipeline and writer,
// and one survey running. The bytes written while the clock moves
// (timed work: the sweep, and ingest's own periodic flushes) are taken
// with the engine's saves and without them (an engine with no writer of
// its own: the stays' opens still go with ingest's batches, and the
// sweep saves nothing);
// "ratio" is the difference, the saves, over ingest's bytes.
func BenchmarkSweepSaveBytes(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var with, without, ingestB float64
			for range b.N {
				s, i := sweepSaveRun(b, n, true)
				with += s
				ingestB += i
				s, _ = sweepSaveRun(b, n, false)
				without += s
			}
			b.ReportMetric((with-without)/float64(b.N), "saves-B/15s")
			b.ReportMetric(ingestB/float64(b.N), "ingest-B/15s")
			b.ReportMetric((with-without)/ingestB, "ratio")
		})
	}
}

func sweepSaveRun(b *testing.B, n int, saves bool) (timed, ingested float64) {
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
	o := rtls.Options{Clock: clk, Timeout: time.Minute}
	if saves {
		o.Writer = w
	}
	e := rtls.New(o)
	defer e.Close()
	ga, _ := assets.ParseMAC(gwA)
	gb, _ := assets.ParseMAC(gwB)
	e.SetSite(rtls.Site{
		Maps: []rtls.Map{{ID: 1, Width: 200, Height: 100, PixelsPerMeter: 10}},
		Zones: []rtls.Zone{{ID: 1, MapID: 1, Name: "Hall", X1: 0, Y1: 0, X2: 100, Y2: 100, Adjacent: []uint64{2}},
			{ID: 2, MapID: 1, Name: "Ward", X1: 100, Y1: 0, X2: 200, Y2: 100, Adjacent: []uint64{1}}},
		Gateways: []rtls.Gateway{{MAC: ga, MapID: 1, X: 50, Y: 50, Placed: true}, {MAC: gb, MapID: 1, X: 150, Y: 50, Placed: true}},
	})
	if err := e.Start(rtls.AlgStrongest); err != nil {
		b.Fatal(err)
	}
	p := ingest.New(ingest.Options{Registry: reg, Writer: w, Clock: clk, AckWait: 5 * time.Second})
	defer p.Close()
	p.AddSubscriber(e)
	e.Record("WAT-1", 1)
	// One second: the gateways' publishes (committed: QoS 1), then the
	// clock moves on, which is when a sweep runs. ingested and swept
	// count the bytes of each part.
	second := func() (ingested, swept uint64) {
		before := w.Stats().WrittenBytes
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
		mid := w.Stats().WrittenBytes
		clk.Advance(time.Second)
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		return mid - before, w.Stats().WrittenBytes - mid
	}
	// Into stays, and past the first sweep (which saves every stay).
	for range 16 {
		second()
	}
	// The next 15 s hold one sweep.
	b.StartTimer()
	var in, sw uint64
	for range 15 {
		i, s := second()
		in, sw = in+i, sw+s
	}
	b.StopTimer()
	return float64(sw), float64(in)
}

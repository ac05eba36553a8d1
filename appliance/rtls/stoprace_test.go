package rtls

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/ingest"
	"beaconhub/store"
)

// TestStopDuringABatch: Observe loads the run once per batch, then takes
// each beacon's shard lock. A Stop that clears a shard between the two
// must not let the batch make state there again: tracking would be
// stopped, yet the beacon located, with an open interval that the next
// Start closed an hour late.
func TestStopDuringABatch(t *testing.T) {
	// X in a higher shard than Y: Stop clears Y, then waits for X's lock.
	var x, y string
	for i := 1; x == "" || y == ""; i++ {
		u := fmt.Sprintf("WAT-%d", i)
		switch s := assets.UIDHash(u) % assets.NShards; {
		case y == "" && s < 10:
			y = u
		case x == "" && s > 50:
			x = u
		}
	}
	db, err := store.Open(filepath.Join(t.TempDir(), "t.db"), store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := store.NewWriter(db, store.WriterOptions{})
	defer func() { _ = w.Close(); _ = db.Close() }()
	h := newHarness(t, Options{Writer: w})
	s := gridSite(2, 1, true)
	h.e.SetSite(s)
	if err := h.e.Start(AlgStrongest); err != nil {
		t.Fatal(err)
	}
	g := s.Gateways[0].MAC
	h.sight(y, g, -50) // Y is tracked before the stop
	h.clk.Advance(time.Second)

	stopped := make(chan struct{})
	armed := true
	h.e.Listen(func(ev Event) {
		if !armed || ev.AssetUID != x {
			return
		}
		armed = false
		go func() { h.e.Stop(); close(stopped) }()
		deadline := time.Now().Add(10 * time.Second)
		for { // wait until Stop has cleared Y's shard
			if _, ok := h.e.Location(y); !ok {
				return
			}
			if time.Now().After(deadline) {
				t.Error("Stop never cleared the other shard")
				return
			}
			runtime.Gosched()
		}
	}, nil)
	now := h.clk.Now().UnixMilli()
	wr := &ingest.Writes{}
	h.e.Observe(&ingest.Batch{Gateway: g, Kind: ingest.KindAdv4, Received: now, Obs: []ingest.Observation{
		{Report: ingest.Report{RSSI: -50, TS: now}, Asset: h.beacon(x, "watch")},
		{Report: ingest.Report{RSSI: -50, TS: now}, Asset: h.beacon(y, "watch")},
	}}, wr)
	<-stopped
	for _, op := range wr.Ops {
		w.Do(op, nil)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if h.e.Current() != "" {
		t.Fatal("not stopped")
	}
	if l, ok := h.e.Location(y); ok {
		t.Errorf("tracking stopped, yet %s is located: %+v", y, l)
	}
	ivs, _, _ := db.ZoneIntervals(y, store.ZoneCursor{}, 10)
	if len(ivs) > 0 && ivs[0].Leave == 0 {
		t.Errorf("tracking stopped, yet %s has an open interval %+v", y, ivs[0])
	}
	// An hour later tracking is started again: the stray interval is
	// closed at that start, spanning the hour tracking was stopped.
	h.clk.Advance(time.Hour)
	if err := h.e.Start(AlgStrongest); err != nil {
		t.Fatal(err)
	}
	_ = w.Flush()
	ivs, _, _ = db.ZoneIntervals(y, store.ZoneCursor{}, 10)
	if len(ivs) > 0 && ivs[0].Leave-ivs[0].Enter > 60_000 {
		t.Errorf("%s's interval %+v lasts across a stop", y, ivs[0])
	}
}

package rtls

import (
	"sync"
	"testing"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/ingest"
)

// steppedClock is a fake clock whose wall reading can be stepped (as NTP
// or an operator steps it) while its timers keep the fake's own time, as
// time.AfterFunc keeps the monotonic clock.
type steppedClock struct {
	*clock.Fake
	mu  sync.Mutex
	off time.Duration
}

func (c *steppedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Fake.Now().Add(c.off)
}

func (c *steppedClock) step(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// steppedEngine runs strongest on a two-zone site on a stepped clock.
func steppedEngine(t *testing.T, opts Options) (*steppedClock, *Engine, Site) {
	t.Helper()
	clk := &steppedClock{Fake: clock.NewFake(t0)}
	opts.Clock = clk
	e := New(opts)
	t.Cleanup(e.Close)
	s := gridSite(2, 1, true)
	e.SetSite(s)
	if err := e.Start(AlgStrongest); err != nil {
		t.Fatal(err)
	}
	return clk, e, s
}

// TestClockStepBack: after the wall clock steps back an hour, a beacon
// that walks to another zone is followed there, and one that falls
// silent turns unknown after the timeout, as without the step. Before,
// every time the beacon held was in the future: dwell, staleness and
// the timeout stood still until the clock caught up.
func TestClockStepBack(t *testing.T) {
	for _, step := range []time.Duration{0, -time.Hour, -30 * time.Second} {
		t.Run(step.String(), func(t *testing.T) {
			clk, e, s := steppedEngine(t, Options{})
			asset := &assets.Asset{UID: "WAT-1", Type: "watch", Kind: "beacon"}
			hear := func(g [6]byte, rssi int8) {
				now := clk.Now().UnixMilli()
				e.Observe(&ingest.Batch{Gateway: g, Kind: ingest.KindAdv4, Received: now,
					Obs: []ingest.Observation{{Report: ingest.Report{RSSI: rssi, TS: now}, Asset: asset}}}, &ingest.Writes{})
			}
			a, b := s.Gateways[0].MAC, s.Gateways[1].MAC
			for range 10 {
				hear(a, -50)
				hear(b, -85)
				clk.Advance(time.Second)
			}
			if l, _ := e.Location("WAT-1"); l.Zone != 1 {
				t.Fatalf("before the step: %+v", l)
			}
			clk.step(step)
			stepped := clk.Now().UnixMilli()
			for range 30 { // 30 s heard loud under zone 2's gateway only
				hear(b, -50)
				clk.Advance(time.Second)
			}
			l, _ := e.Location("WAT-1")
			if l.Zone != 2 {
				t.Fatalf("30 s under zone 2's gateway after a step of %v: %+v", step, l)
			}
			if l.Since < stepped {
				t.Fatalf("zone 2 entered at %d, before the stepped clock's %d", l.Since, stepped)
			}
			clk.Advance(2 * time.Minute) // twice the timeout, silent
			if l, ok := e.Location("WAT-1"); ok && l.Zone != 0 {
				t.Fatalf("silent for twice the timeout after a step of %v: %+v", step, l)
			}
		})
	}
}

// TestClockStepBackWhileSilent: a beacon last heard before the wall clock
// stepped back, and silent since, ends its stay at the next sweep
// rather than when the clock catches up an hour later.
func TestClockStepBackWhileSilent(t *testing.T) {
	clk, e, s := steppedEngine(t, Options{})
	asset := &assets.Asset{UID: "WAT-1", Type: "watch", Kind: "beacon"}
	for range 10 {
		now := clk.Now().UnixMilli()
		e.Observe(&ingest.Batch{Gateway: s.Gateways[0].MAC, Kind: ingest.KindAdv4, Received: now,
			Obs: []ingest.Observation{{Report: ingest.Report{RSSI: -50, TS: now}, Asset: asset}}}, &ingest.Writes{})
		clk.Advance(time.Second)
	}
	clk.step(-time.Hour)
	clk.Advance(e.opts.Timeout)
	if l, ok := e.Location("WAT-1"); ok && l.Zone != 0 {
		t.Fatalf("a timeout after a step back, still %+v", l)
	}
}

// TestClockStepBackRevivesGateways: a gateway judged down just before the
// wall clock steps back, that then only heartbeats, is revived at the
// next sweep, not when the clock has caught up with its judgement.
func TestClockStepBackRevivesGateways(t *testing.T) {
	for _, step := range []time.Duration{0, -time.Hour} {
		t.Run(step.String(), func(t *testing.T) {
			var k talker
			clk, e, _ := steppedEngine(t, k.options(Options{}))
			m := e.model.Load()
			lv := m.live
			k.say(m.gwMAC[0], clk.Now().UnixMilli()-2000)          // its last word, before the silence
			lv.judge(0, clk.Now().UnixMilli(), k.msgs(m.gwMAC[0])) // judged down now, as silence() does
			clk.Advance(time.Second)
			clk.step(step)
			k.say(m.gwMAC[0], clk.Now().UnixMilli()) // a heartbeat after the step
			clk.Advance(e.sweepEvery() + time.Millisecond)
			if lv.down[0].Load() {
				t.Fatalf("a gateway heartbeating after a step of %v is still judged down", step)
			}
		})
	}
}

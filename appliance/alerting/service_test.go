package alerting_test

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"beaconhub/appliance/clock"
	"beaconhub/store"
)

func TestDedupFiveGatewaysOneEventInVirtualTime(t *testing.T) {
	clk := clock.NewFake(t0)
	r := newRig(t, "", clk, liveConfig(t, ""))
	for gw := 1; gw <= 5; gw++ {
		r.publish(gw, false, press(panicMAC, "single", -50-gw))
		clk.Advance(2 * time.Second)
	}
	evs := r.events()
	if len(evs) != 1 {
		t.Fatalf("events after 5 gateways = %d, want 1", len(evs))
	}
	e := evs[0]
	if e.Status != store.EventAlert || e.Type != "single" || e.AssetUID != panicUID || e.Reports != 5 ||
		len(e.Gateways) != 5 || e.Gateway != gatewayMAC(1) || e.RSSI != -51 || e.CreatedAt != t0.UnixMilli() {
		t.Errorf("event = %+v", e)
	}
	a, err := r.db.GetButtonAudit(panicUID, e.ID)
	if err != nil || len(a.Reports) != 5 || a.Reports[4].Gateway != gatewayMAC(5) || a.Reports[4].GatewayUID != "GW-A1-5" {
		t.Fatalf("audit = %+v, %v", a, err)
	}
	if got := r.enq.events(); len(got) != 1 || got[0].ID != e.ID {
		t.Errorf("alertsys hand-offs = %d, want 1", len(got))
	}

	// The window is anchored at the first report (t0), not the last: one
	// more report at window + 1 s is a new press.
	clk.Advance(t0.Add(41 * time.Second).Sub(clk.Now()))
	r.publish(3, false, press(panicMAC, "single", -60))
	if evs := r.events(); len(evs) != 2 || evs[1].ID <= evs[0].ID || evs[1].Gateway != gatewayMAC(3) {
		t.Fatalf("events after the window = %+v", evs)
	}
	if n := len(r.enq.events()); n != 2 {
		t.Errorf("alertsys hand-offs = %d, want 2", n)
	}
}

func TestDedupSurvivesRestartInsideWindow(t *testing.T) {
	clk := clock.NewFake(t0)
	live := liveConfig(t, "")
	r := newRig(t, "", clk, live)
	r.publish(1, false, press(panicMAC, "long", -55))
	firstID := r.events()[0].ID
	r.close()

	clk.Advance(10 * time.Second)
	r2 := newRig(t, r.dir, clk, live)
	for gw := 2; gw <= 5; gw++ {
		r2.publish(gw, false, press(panicMAC, "long", -60))
	}
	evs := r2.events()
	if len(evs) != 1 || evs[0].ID != firstID || evs[0].Reports != 5 {
		t.Fatalf("events across restart = %+v", evs)
	}
	if a, _ := r2.db.GetButtonAudit(panicUID, firstID); a == nil || len(a.Reports) != 5 {
		t.Errorf("audit across restart = %+v", a)
	}
	if n := len(r2.enq.events()); n != 0 {
		t.Errorf("merged reports reached alertsys %d times", n)
	}
	// Ids continue after the restart and never repeat.
	clk.Advance(time.Minute)
	r2.publish(1, false, press(panicMAC, "single", -55))
	if evs := r2.events(); len(evs) != 2 || evs[1].ID != firstID+1 {
		t.Errorf("ids after restart = %+v", evs)
	}
}

func TestEventClassification(t *testing.T) {
	clk := clock.NewFake(t0)
	r := newRig(t, "", clk, liveConfig(t, ""))
	r.publish(1, false,
		heartbeat(panicMAC, false),     // plain heartbeat: nothing
		heartbeat(sensorMAC, true),     // motion: warning
		press(navMAC, "triple", -60),   // press on another type: active
		press(watchMAC, "double", -61), // watch press: alert
	)
	evs := r.events()
	got := map[string]string{}
	for _, e := range evs {
		got[e.AssetUID] = e.Status + "/" + e.Type
	}
	want := map[string]string{"SEN-A1-1": "warning/motion", "NAV-A1-1": "active/triple", "WAT-A1-1": "alert/double"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events = %v, want %v", got, want)
	}
	if enq := r.enq.events(); len(enq) != 1 || enq[0].AssetUID != "WAT-A1-1" {
		t.Errorf("alertsys got %+v", enq)
	}
	// Motion from four more gateways merges; a press and a motion signal
	// of the same beacon are separate events.
	for gw := 2; gw <= 5; gw++ {
		r.publish(gw, false, heartbeat(sensorMAC, true))
	}
	r.publish(2, false, press(sensorMAC, "single", -50))
	evs = r.events()
	if len(evs) != 4 || len(evs[0].Gateways) != 5 || evs[3].Status != store.EventActive {
		t.Errorf("after merges: %+v", evs)
	}
}

func TestTestSendsTakeTheTestPath(t *testing.T) {
	clk := clock.NewFake(t0)
	r := newRig(t, "", clk, liveConfig(t, ""))
	r.publish(1, true, press(panicMAC, "single", -50))
	r.publish(2, true, press(panicMAC, "single", -52))
	// A real press during the test's window is its own event.
	r.publish(3, false, press(panicMAC, "single", -53))
	evs := r.events()
	if len(evs) != 2 || !evs[0].Test || evs[0].Reports != 2 || evs[0].Alertsys != "" || evs[1].Test {
		t.Fatalf("events = %+v", evs)
	}
	if enq := r.enq.events(); len(enq) != 1 || enq[0].Test {
		t.Errorf("alertsys got %+v", enq)
	}
	if st := r.svc.Stats(); st.TestEvents != 1 || st.Alerts != 1 || st.Events != 2 || st.Merged != 1 {
		t.Errorf("stats = %+v", st)
	}
}

func TestDedupWindowIsLive(t *testing.T) {
	clk := clock.NewFake(t0)
	live := liveConfig(t, "")
	r := newRig(t, "", clk, live)
	patch(t, live, "server_push_button_dedup_seconds", 5)
	r.publish(1, false, press(panicMAC, "single", -50))
	clk.Advance(6 * time.Second)
	r.publish(2, false, press(panicMAC, "single", -50))
	if n := len(r.events()); n != 2 {
		t.Errorf("events with a 5 s window 6 s apart = %d, want 2", n)
	}
}

func TestPendingAlertsysRecoveredAfterRestart(t *testing.T) {
	clk := clock.NewFake(t0)
	live := liveConfig(t, "")
	r := newRig(t, "", clk, live)
	r.publish(1, false, press(panicMAC, "single", -50))
	clk.Advance(2 * time.Minute)
	r.publish(1, false, press(watchMAC, "single", -50))
	r.close()

	// Restart 4 minutes after the first press: the watch press (2 min
	// old) is sent again, the panic press (6 min old) is marked failed.
	clk.Advance(4 * time.Minute)
	r2 := newRig(t, r.dir, clk, live)
	if n := r2.svc.RecoverAlertsys(r2.enq, r2.writer); n != 1 {
		t.Fatalf("recovered %d, want 1", n)
	}
	if err := r2.writer.Flush(); err != nil {
		t.Fatal(err)
	}
	evs := r2.events()
	if evs[0].Alertsys != store.AlertsysFailed || evs[1].Alertsys != store.AlertsysPending {
		t.Errorf("states = %s, %s", evs[0].Alertsys, evs[1].Alertsys)
	}
	if enq := r2.enq.events(); len(enq) != 1 || enq[0].AssetUID != "WAT-A1-1" {
		t.Errorf("re-queued %+v", enq)
	}
}

// TestPendingAlertsysResolvedAfterLongOutage: a press still pending when
// the appliance stopped, restarted hours later (past the dedup windows
// the restart reads), is marked failed rather than left "pending" for
// ever, and is not re-sent.
func TestPendingAlertsysResolvedAfterLongOutage(t *testing.T) {
	clk := clock.NewFake(t0)
	live := liveConfig(t, "")
	r := newRig(t, "", clk, live)
	r.publish(1, false, press(panicMAC, "single", -50))
	r.close()

	clk.Advance(3 * time.Hour)
	r2 := newRig(t, r.dir, clk, live)
	if n := r2.svc.RecoverAlertsys(r2.enq, r2.writer); n != 0 {
		t.Fatalf("re-sent %d presses from 3 hours ago", n)
	}
	if err := r2.writer.Flush(); err != nil {
		t.Fatal(err)
	}
	if evs := r2.events(); len(evs) != 1 || evs[0].Alertsys != store.AlertsysFailed {
		t.Fatalf("after the outage: %+v", evs)
	}
	if p, err := r2.db.PendingAlertsysEvents(); err != nil || len(p) != 0 {
		t.Fatalf("still pending: %+v %v", p, err)
	}
}

// TestQoS0PressIsNotHeldBack: the writer holds back work nobody waits for
// (here for an hour); a press sent at QoS 0 still commits and reaches
// alertsys at once, and the motion warning queued before it goes with it.
func TestQoS0PressIsNotHeldBack(t *testing.T) {
	clk := clock.NewFake(t0)
	r := newRig(t, "", clk, liveConfig(t, ""))
	r.publish(1, false, heartbeat(panicMAC, false)) // a first commit: the delay counts from it
	r.publishQoS(1, false, 0, heartbeat(sensorMAC, true))
	r.publishQoS(1, false, 0, press(panicMAC, "single", -50))
	deadline := time.Now().Add(20 * time.Second)
	for len(r.enq.events()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("a QoS 0 press waited for the lazy delay")
		}
		runtime.Gosched()
	}
	if evs := r.events(); len(evs) != 2 || evs[0].Status != store.EventWarning || evs[1].Status != store.EventAlert {
		t.Fatalf("committed events %+v, want the warning and the alert", evs)
	}
}

// TestConcurrentGatewaysKeepEventOrder: gateways' read loops observe in
// parallel (no pipeline-wide lock), so the order the writer sees must come
// from the service's own locks. Five gateways report presses of the same
// 40 beacons at once, several rounds: each beacon must end as one event
// holding every gateway and every press in its audit (a merge queued
// before its insert is silently lost), and ids must commit in order (a
// reader paging with after_id must never skip one that commits later).
func TestConcurrentGatewaysKeepEventOrder(t *testing.T) {
	clk := clock.NewFake(t0)
	r := newRig(t, "", clk, liveConfig(t, ""))
	const beacons, rounds, gws = 200, 4, 5
	var reports []string
	for i := 0; i < beacons; i++ {
		b := store.Beacon{AssetUID: fmt.Sprintf("PAN-B1-%d", i+1), MAC: fmt.Sprintf("C30000C000%02X", i), Type: "panic", Active: true}
		if err := r.db.CreateBeacon(&b); err != nil {
			t.Fatal(err)
		}
		reports = append(reports, press(b.MAC, "single", -60))
	}
	if err := r.reg.Reload(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var committed []uint64
	r.svc.OnCommitted(func(e store.Event) {
		mu.Lock()
		committed = append(committed, e.ID)
		mu.Unlock()
	})
	var wg sync.WaitGroup
	start := make(chan struct{})
	for gw := 1; gw <= gws; gw++ {
		wg.Add(1)
		go func(gw int) {
			defer wg.Done()
			// Each gateway starts at another beacon, so one gateway's
			// merges land on events another gateway is creating.
			k := gw * beacons / gws
			body := `{"reports":[` + strings.Join(append(slices.Clone(reports[k:]), reports[:k]...), ",") + `]}`
			<-start
			for range rounds {
				if err := r.pipe.HandlePublish(gatewayMAC(gw), "gw/"+gatewayMAC(gw)+"/adv4", []byte(body), 1); err != nil {
					t.Errorf("gateway %d: %v", gw, err)
					return
				}
			}
		}(gw)
	}
	close(start)
	wg.Wait()
	evs := r.events()
	if len(evs) != beacons {
		t.Fatalf("%d events, want one per beacon (%d)", len(evs), beacons)
	}
	for _, e := range evs {
		if e.Reports != gws*rounds || len(e.Gateways) != gws {
			t.Errorf("event %d of %s: %d reports from %d gateways, want %d from %d", e.ID, e.AssetUID, e.Reports, len(e.Gateways), gws*rounds, gws)
		}
		a, err := r.db.GetButtonAudit(e.AssetUID, e.ID)
		if err != nil || len(a.Reports) != gws*rounds {
			t.Errorf("audit of event %d: %d presses (%v), want %d", e.ID, len(a.Reports), err, gws*rounds)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.IsSorted(committed) || len(committed) != beacons || committed[0] != 1 {
		t.Errorf("ids committed in the order %v, want 1..%d ascending", committed, beacons)
	}
}

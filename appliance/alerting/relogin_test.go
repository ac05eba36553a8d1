package alerting_test

import (
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"beaconhub/appliance/alerting"
	"beaconhub/appliance/alerting/alertsystest"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/status"
	"beaconhub/store"
)

// downWatch wires the real alertsys_down condition to client and
// returns the transitions heard so far.
func downWatch(t *testing.T, clk *clock.Fake, client *alerting.Client) func() []string {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "service.db"), store.OpenOptions{LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	conds, err := status.NewConditions(db, clk, quiet)
	if err != nil {
		t.Fatal(err)
	}
	status.NewMonitor(status.Options{Live: liveConfig(t, "http://127.0.0.1:1"), Clock: clk, Logger: quiet, Conditions: conds, Alertsys: client})
	var mu sync.Mutex
	var heard []string
	conds.Subscribe(func(rec store.HealthRecord) {
		if rec.Key != status.KeyAlertsysDown {
			return
		}
		mu.Lock()
		heard = append(heard, rec.Phase)
		mu.Unlock()
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), heard...)
	}
}

// A 401 on a token no other login has replaced since it was got is
// alertsys refusing the user (its rights), not a lost session: the
// press fails at once. Retried, as every 401 after a relogin was, each
// attempt logged in (alertsys_down resolved) and was refused again
// (active): 25 transitions and 26 convenes for one press (a review).
func TestAConveneRefusedWithAFreshTokenFailsAtOnce(t *testing.T) {
	fake := alertsystest.New()
	defer fake.Close()
	fake.Set(func(s *alertsystest.Server) { s.FailConvene = http.StatusUnauthorized })
	clk := clock.NewFake(t0)
	client := alerting.NewClient(alerting.ClientOptions{Live: liveConfig(t, fake.URL), Clock: clk, Timeout: 10 * time.Second})
	heard := downWatch(t, clk, client)
	var convenes atomic.Int32
	client.Observe(func(st alerting.Status) {
		if st.Step == "convene" {
			convenes.Add(1)
		}
	})
	w, result := startWorker(t, alerting.WorkerOptions{Client: client, Clock: clk, Logger: quiet})
	w.Enqueue(store.Event{ID: 1, BeaconType: "panic", CreatedAt: t0.UnixMilli()})
	poll(t, "the press settled", clk, time.Second, func() bool { _, ok := result(1); return ok })
	r, _ := result(1)
	h := heard()
	t.Logf("press: %s after %d attempts at %v; %d logins, %d convenes recorded; alertsys_down transitions %v",
		r.State, r.Attempts, clk.Now().Sub(t0), fake.Logins(), convenes.Load(), h)
	if len(h) != 1 || h[0] != store.HealthActive {
		t.Errorf("alertsys_down went %d times through active/resolved while every convene was refused: %v", len(h), h)
	}
	if r.State != store.AlertsysFailed || r.Attempts != 1 || fake.Logins() != 2 {
		t.Errorf("press %+v after %d logins: a fresh token refused is final", r, fake.Logins())
	}
}

// The periodic probe logs in afresh while four convenes are in flight
// at an alertsys keeping one session per user: the convenes refused for
// the old token use the probe's, and every press is convened once with
// no failure recorded (a review's check of the relogin rule).
func TestAProbeLoginDuringConvenesAtOneSessionAlertsys(t *testing.T) {
	fake := alertsystest.New()
	defer fake.Close()
	defer fake.Release()
	fake.Set(func(s *alertsystest.Server) { s.OneSession = true })
	clk := clock.NewFake(t0)
	client := alerting.NewClient(alerting.ClientOptions{Live: liveConfig(t, fake.URL), Clock: clk, Timeout: 10 * time.Second})
	heard := downWatch(t, clk, client)
	if err := client.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	w, result := startWorker(t, alerting.WorkerOptions{Client: client, Clock: clk, Logger: quiet, Parallel: 4})
	fake.Hold()
	for id := uint64(1); id <= 4; id++ {
		w.Enqueue(store.Event{ID: id, CreatedAt: t0.UnixMilli()})
	}
	poll(t, "four convenes in flight", clk, 0, func() bool { return fake.Held() == 4 })
	probe := make(chan error, 1)
	go func() { probe <- client.Check(t.Context()) }()
	poll(t, "the probe's login in flight", clk, 0, func() bool { return fake.Held() == 5 })
	fake.Release()
	if err := <-probe; err != nil {
		t.Fatal(err)
	}
	poll(t, "all settled", clk, 0, func() bool {
		for id := uint64(1); id <= 4; id++ {
			if _, ok := result(id); !ok {
				return false
			}
		}
		return true
	})
	for id := uint64(1); id <= 4; id++ {
		if r, _ := result(id); r.State != store.AlertsysSent || r.Attempts != 1 {
			t.Errorf("press %d: %+v", id, r)
		}
	}
	seen := map[uint64]int{}
	for _, c := range fake.Convenes() {
		seen[c.Body.EventID]++
	}
	for id := uint64(1); id <= 4; id++ {
		if seen[id] != 1 {
			t.Errorf("press %d convened %d times", id, seen[id])
		}
	}
	if h := heard(); len(h) != 0 {
		t.Errorf("alertsys_down transitions %v", h)
	}
}

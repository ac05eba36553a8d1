package alerting_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"beaconhub/appliance/alerting"
	"beaconhub/appliance/alerting/alertsystest"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/status"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// lateWriter forwards to the rig's writer, which exists only once the rig
// is built (the worker is built first).
type lateWriter struct{ r **rig }

func (l lateWriter) Do(fn func(tx *bolt.Tx) error, done func(error)) { (*l.r).writer.Do(fn, done) }

// poll waits for cond in real time (the worker and HTTP are real), bounded
// by a deadline; it advances the fake clock a step each round so retry
// backoffs come due.
func poll(t *testing.T, what string, clk *clock.Fake, step time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		if step > 0 {
			clk.Advance(step)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, bounded by the deadline
	}
}

func TestAlertsysDown(t *testing.T) {
	fake := alertsystest.New()
	defer fake.Close()
	defer fake.Release()
	clk := clock.NewFake(t0)
	live := liveConfig(t, fake.URL)

	var r *rig
	client := alerting.NewClient(alerting.ClientOptions{Live: live, Clock: clk, Timeout: 50 * time.Millisecond})
	const queueCap = 8
	worker := alerting.NewWorker(alerting.WorkerOptions{Client: client, Writer: lateWriter{&r}, Clock: clk, Logger: quiet,
		QueueSize: queueCap, Attempts: 3, Backoff: []time.Duration{time.Second}})
	r = newRigWith(t, "", clk, live, worker)
	conds, err := status.NewConditions(r.db, clk, quiet)
	if err != nil {
		t.Fatal(err)
	}
	status.NewMonitor(status.Options{Live: live, Clock: clk, Logger: quiet, Conditions: conds, Alertsys: client})
	var mu sync.Mutex
	var heard []string
	conds.Subscribe(func(rec store.HealthRecord) {
		mu.Lock()
		heard = append(heard, rec.Key+":"+rec.Phase)
		mu.Unlock()
	})
	worker.Start()
	defer worker.Stop()

	// Alertsys hangs: every request times out. Presses keep coming, each a
	// new event (41 s apart, past the dedup window).
	fake.Hold()
	const presses = 40
	maxQueue := 0
	for i := 0; i < presses; i++ {
		r.publish(1+i%5, false, press(panicMAC, "single", -50))
		maxQueue = max(maxQueue, worker.Stats().QueueLen)
		clk.Advance(41 * time.Second)
	}
	if evs := r.events(); len(evs) != presses {
		t.Fatalf("stored events = %d, want %d: ingest must not depend on alertsys", len(evs), presses)
	}
	if maxQueue > queueCap {
		t.Errorf("queue grew to %d, cap %d", maxQueue, queueCap)
	}
	poll(t, "alertsys_down", clk, time.Second, func() bool { return conds.IsActive(status.KeyAlertsysDown) })
	st := worker.Stats()
	if st.Dropped == 0 || st.QueueLen > queueCap {
		t.Errorf("while down: %+v", st)
	}

	// Alertsys comes back: the queue drains (presses held past the
	// 5-minute bound fail without a request), the next press is convened
	// and the condition resolves.
	fake.Release()
	poll(t, "queue drained", clk, time.Second, func() bool { return worker.Stats().QueueLen == 0 })
	transitions := func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprint(heard)
	}
	// A loaded machine (-race) can take a request past the client's
	// 50 ms timeout three times over: then the press fails, and the next
	// one is tried.
	extra := 0
	poll(t, "alertsys_down resolved", clk, time.Second, func() bool {
		if transitions() == "[alertsys_down:active alertsys_down:resolved]" {
			return true
		}
		if worker.Stats().QueueLen == 0 {
			clk.Advance(41 * time.Second)
			r.publish(1, false, press(panicMAC, "single", -50))
			extra++
		}
		return false
	})
	poll(t, "every press settled", clk, 0, func() bool {
		if err := r.writer.Flush(); err != nil {
			t.Fatal(err)
		}
		for _, e := range r.events() {
			if e.Alertsys == store.AlertsysPending {
				return false
			}
		}
		return true
	})
	states := map[string]int{}
	for _, e := range r.events() {
		states[e.Alertsys]++
	}
	st = worker.Stats()
	if states[store.AlertsysPending] != 0 || states[store.AlertsysSent] == 0 || uint64(states[store.AlertsysDropped]) != st.Dropped ||
		states[store.AlertsysSent]+states[store.AlertsysDropped]+states[store.AlertsysFailed] != presses+extra {
		t.Errorf("event states = %v, worker %+v", states, st)
	}
	if n := len(fake.Convenes()); n != states[store.AlertsysSent] {
		t.Errorf("convenes = %d, sent = %d", n, states[store.AlertsysSent])
	}
}

package alerting_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"beaconhub/appliance/alerting"
	"beaconhub/appliance/alerting/alertsystest"
	"beaconhub/appliance/clock"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// seedPanics stores n more panic buttons (PAN-X-i) in a fresh store in
// dir besides the rig's usual assets, and returns their MACs.
func seedPanics(t *testing.T, dir string, n int) []string {
	t.Helper()
	db, err := store.Open(filepath.Join(dir, "service.db"), store.OpenOptions{LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	seed(t, db)
	macs := make([]string, n)
	for i := range macs {
		macs[i] = fmt.Sprintf("C30000001%03X", i)
		b := store.Beacon{AssetUID: fmt.Sprintf("PAN-X-%d", i), MAC: macs[i], Name: fmt.Sprintf("Bed %d", i), Type: "panic", Active: true}
		if err := db.CreateBeacon(&b); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return macs
}

// TestAlertsysOutageLosesNoPress: more presses than the queue holds
// arrive while alertsys fails. None is dropped: those past the queue
// wait in the store and come back as it drains. Once alertsys answers,
// every press is convened exactly once, and the presses waiting for a
// retry go at once rather than at their backoff (up to 30 s; the oldest
// went last). A 20 s outage under 100 presses lost the oldest 36 with a
// queue of 64 (a review).
func TestAlertsysOutageLosesNoPress(t *testing.T) {
	fake := alertsystest.New()
	defer fake.Close()
	clk := clock.NewFake(t0)
	live := liveConfig(t, fake.URL)
	dir := t.TempDir()
	const presses, queueCap = 30, 8
	macs := seedPanics(t, dir, presses)

	var r *rig
	client := alerting.NewClient(alerting.ClientOptions{Live: live, Clock: clk, Timeout: time.Second})
	worker := alerting.NewWorker(alerting.WorkerOptions{Client: client, Writer: lateWriter{&r}, Clock: clk, Logger: quiet,
		QueueSize: queueCap, Pending: func() ([]store.Event, error) { return r.db.PendingAlertsysEvents() }})
	r = newRigWith(t, dir, clk, live, worker)
	worker.Start()
	defer worker.Stop()

	fake.Set(func(s *alertsystest.Server) { s.FailStatus = 503 })
	for i, mac := range macs {
		r.publish(1+i%5, false, press(mac, "single", -50))
		if st := worker.Stats(); st.QueueLen > queueCap {
			t.Fatalf("queue grew to %d, cap %d", st.QueueLen, queueCap)
		}
		clk.Advance(500 * time.Millisecond)
	}
	// Let every press held in memory fail a few times, so that each
	// waits for a retry up to 30 s off.
	poll(t, "failures", clk, time.Second, func() bool { return worker.Stats().Retries >= 3*queueCap })
	if st := worker.Stats(); st.Dropped != 0 || st.Spilled == 0 {
		t.Fatalf("while down: %+v", st)
	}

	fake.Set(func(s *alertsystest.Server) { s.FailStatus = 0 })
	// One step of the clock brings the first retry; after its success
	// the rest go without the clock moving.
	poll(t, "a first convene", clk, time.Second, func() bool { return len(fake.Convenes()) > 0 })
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
	seen := map[uint64]int{}
	for _, c := range fake.Convenes() {
		seen[c.Body.EventID]++
	}
	states := map[string]int{}
	for _, e := range r.events() {
		states[e.Alertsys]++
		if seen[e.ID] != 1 {
			t.Errorf("event %d (%s) convened %d times", e.ID, e.AssetUID, seen[e.ID])
		}
	}
	if states[store.AlertsysSent] != presses || len(seen) != presses {
		t.Errorf("event states %v, %d convened, worker %+v", states, len(seen), worker.Stats())
	}
}

// TestPressHeldPastTheBoundIsNotConvened: a press that waited in the
// queue longer than GiveUpAfter (a slow alertsys ahead of it) is failed,
// not convened minutes late; the bound held only between retries.
func TestPressHeldPastTheBoundIsNotConvened(t *testing.T) {
	clk := clock.NewFake(t0)
	c := &scripted{configured: true, clock: clk}
	w, result := startWorker(t, alerting.WorkerOptions{Client: c, Clock: clk, Logger: quiet})
	w.Enqueue(store.Event{ID: 1, CreatedAt: t0.Add(-alerting.RecoverWindow - time.Second).UnixMilli()})
	w.Enqueue(store.Event{ID: 2, CreatedAt: t0.Add(-alerting.RecoverWindow + time.Second).UnixMilli()})
	poll(t, "both settled", clk, 0, func() bool {
		_, a := result(1)
		_, b := result(2)
		return a && b
	})
	if r, _ := result(1); r.State != store.AlertsysFailed || r.Attempts != 0 {
		t.Errorf("late press: %+v", r)
	}
	if r, _ := result(2); r.State != store.AlertsysSent {
		t.Errorf("press in time: %+v", r)
	}
	if c.n() != 1 {
		t.Errorf("convenes %v, want only event 2", c.calls)
	}
}

// TestSlowAlertsysConvenesInParallel: requests to an alertsys that takes
// seconds to answer overlap, up to Parallel; one at a time, 100 presses
// at 9.5 s each had the last convened after six minutes (a review).
func TestSlowAlertsysConvenesInParallel(t *testing.T) {
	fake := alertsystest.New()
	defer fake.Close()
	defer fake.Release()
	clk := clock.NewFake(t0)
	client := alerting.NewClient(alerting.ClientOptions{Live: liveConfig(t, fake.URL), Clock: clk, Timeout: 10 * time.Second})
	w, _ := startWorker(t, alerting.WorkerOptions{Client: client, Clock: clk, Logger: quiet, Parallel: 3})
	// A token first, so the held requests are convenes.
	w.Enqueue(store.Event{ID: 1, CreatedAt: t0.UnixMilli()})
	poll(t, "first convene", clk, 0, func() bool { return len(fake.Convenes()) == 1 })
	fake.Hold()
	for id := uint64(2); id <= 6; id++ {
		w.Enqueue(store.Event{ID: id, CreatedAt: t0.UnixMilli()})
	}
	poll(t, "three requests in flight", clk, 0, func() bool { return fake.Held() == 3 })
	fake.Release()
	poll(t, "all convened", clk, 0, func() bool { return len(fake.Convenes()) == 6 })
}

// failingPending fails its first read, then reads the store's stand-in.
type failingPending struct {
	reads atomic.Int32
	evs   []store.Event
}

func (f *failingPending) read() ([]store.Event, error) {
	if f.reads.Add(1) == 1 {
		return nil, errors.New("disk hiccup")
	}
	return f.evs, nil
}

// TestPressesInTheStoreOutliveAFailedRead: a failed read of the presses
// waiting in the store is tried again, not left until the next press
// comes (in a quiet ward, never: a review).
func TestPressesInTheStoreOutliveAFailedRead(t *testing.T) {
	clk := clock.NewFake(t0)
	fake := alertsystest.New()
	defer fake.Close()
	defer fake.Release()
	client := alerting.NewClient(alerting.ClientOptions{Live: liveConfig(t, fake.URL), Clock: clk, Timeout: 10 * time.Second})
	p := &failingPending{evs: []store.Event{{ID: 3, CreatedAt: t0.UnixMilli()}}}
	w, result := startWorker(t, alerting.WorkerOptions{Client: client, Clock: clk, Logger: quiet, QueueSize: 2, Pending: p.read})
	w.Enqueue(store.Event{ID: 1, CreatedAt: t0.UnixMilli()})
	poll(t, "a token", clk, 0, func() bool { return len(fake.Convenes()) == 1 })
	fake.Hold()
	w.Enqueue(store.Event{ID: 2, CreatedAt: t0.UnixMilli()})
	w.Enqueue(store.Event{ID: 4, CreatedAt: t0.UnixMilli()})
	poll(t, "two in flight", clk, 0, func() bool { return fake.Held() == 2 })
	w.Enqueue(store.Event{ID: 3, CreatedAt: t0.UnixMilli()}) // past the queue: in the store
	fake.Release()
	poll(t, "the press from the store", clk, time.Second, func() bool {
		r, ok := result(3)
		return ok && r.State == store.AlertsysSent
	})
	if n := p.reads.Load(); n < 2 {
		t.Fatalf("reads %d", n)
	}
}

// errWriter fails every write: the outcome of a press is never stored.
type errWriter struct{}

func (errWriter) Do(_ func(tx *bolt.Tx) error, done func(error)) {
	if done != nil {
		done(errors.New("disk full"))
	}
}

// TestAPressWhoseOutcomeIsNotStoredIsNotConvenedAgain: a press whose
// outcome failed to commit stays pending in the store; a refill must not
// convene it again (a failing disk convened presses dozens of times: a
// review). The next start's recovery sends it.
func TestAPressWhoseOutcomeIsNotStoredIsNotConvenedAgain(t *testing.T) {
	clk := clock.NewFake(t0)
	c := &scripted{configured: true, clock: clk}
	var evs []store.Event
	for id := uint64(1); id <= 12; id++ {
		evs = append(evs, store.Event{ID: id, CreatedAt: t0.UnixMilli()})
	}
	w, result := startWorker(t, alerting.WorkerOptions{Client: c, Clock: clk, Logger: quiet, Writer: errWriter{}, QueueSize: 2,
		Pending: func() ([]store.Event, error) { return evs, nil }})
	for _, e := range evs {
		w.Enqueue(e)
	}
	poll(t, "every press settled", clk, time.Second, func() bool {
		for _, e := range evs {
			if _, ok := result(e.ID); !ok {
				return false
			}
		}
		return true
	})
	clk.Advance(time.Minute) // more refills, if any were to come
	w.Enqueue(store.Event{ID: 13, CreatedAt: clk.Now().UnixMilli()})
	poll(t, "a later press", clk, 0, func() bool { _, ok := result(13); return ok })
	seen := map[uint64]int{}
	c.mu.Lock()
	for _, id := range c.calls {
		seen[id]++
	}
	c.mu.Unlock()
	for id, n := range seen {
		if n != 1 {
			t.Errorf("press %d convened %d times", id, n)
		}
	}
}

// TestParallelConvenesLogInOnce: the first presses, convened at once
// without a token, log in once between them; each logged in, and an
// alertsys keeping one session per user would refuse the older tokens
// (a review).
func TestParallelConvenesLogInOnce(t *testing.T) {
	fake := alertsystest.New()
	defer fake.Close()
	defer fake.Release()
	clk := clock.NewFake(t0)
	client := alerting.NewClient(alerting.ClientOptions{Live: liveConfig(t, fake.URL), Clock: clk, Timeout: 10 * time.Second})
	w, _ := startWorker(t, alerting.WorkerOptions{Client: client, Clock: clk, Logger: quiet, Parallel: 4})
	fake.Hold() // the first login waits, the other presses arrive meanwhile
	for id := uint64(1); id <= 4; id++ {
		w.Enqueue(store.Event{ID: id, CreatedAt: t0.UnixMilli()})
	}
	poll(t, "a login in flight", clk, 0, func() bool { return fake.Held() >= 1 })
	fake.Release()
	poll(t, "all convened", clk, 0, func() bool { return len(fake.Convenes()) == 4 })
	if n := fake.Logins(); n != 1 {
		t.Fatalf("%d logins for four parallel presses", n)
	}
}

// TestConvenesRefusedTogetherLogInOnce: four convenes in flight when
// alertsys forgets its sessions are all refused (401); one logs in again
// and the others use its token. Each logged in again in turn, and at an
// alertsys keeping one session per user each login killed the token the
// one before had just got: three of the four presses failed for good (a
// review).
func TestConvenesRefusedTogetherLogInOnce(t *testing.T) {
	fake := alertsystest.New()
	defer fake.Close()
	defer fake.Release()
	fake.Set(func(s *alertsystest.Server) { s.OneSession = true })
	clk := clock.NewFake(t0)
	client := alerting.NewClient(alerting.ClientOptions{Live: liveConfig(t, fake.URL), Clock: clk, Timeout: 10 * time.Second})
	if err := client.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	w, result := startWorker(t, alerting.WorkerOptions{Client: client, Clock: clk, Logger: quiet, Parallel: 4})
	fake.Hold()
	for id := uint64(1); id <= 4; id++ {
		w.Enqueue(store.Event{ID: id, CreatedAt: t0.UnixMilli()})
	}
	poll(t, "four convenes in flight", clk, 0, func() bool { return fake.Held() == 4 })
	fake.ExpireTokens()
	fake.Release()
	poll(t, "all settled", clk, 0, func() bool {
		for id := uint64(1); id <= 4; id++ {
			if _, ok := result(id); !ok {
				return false
			}
		}
		return true
	})
	for id := uint64(1); id <= 4; id++ {
		if r, _ := result(id); r.State != store.AlertsysSent {
			t.Errorf("press %d: %+v", id, r)
		}
	}
	if n := fake.Logins(); n != 2 {
		t.Errorf("%d logins, want 2 (the probe's and one after the refusals)", n)
	}
}

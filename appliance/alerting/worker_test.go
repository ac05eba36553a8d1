package alerting_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"beaconhub/appliance/alerting"
	"beaconhub/appliance/clock"
	"beaconhub/store"
)

// scripted is a Conveneer answering from a script of errors (nil = ok).
type scripted struct {
	mu         sync.Mutex
	script     []error
	calls      []uint64
	at         []time.Time // of each call, on clock when set
	clock      *clock.Fake
	configured bool
}

func (s *scripted) Configured() bool { return s.configured }
func (s *scripted) Convene(_ context.Context, r alerting.ConveneRequest) (alerting.ConveneResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, r.EventID)
	if s.clock != nil {
		s.at = append(s.at, s.clock.Now())
	}
	if len(s.script) == 0 {
		return alerting.ConveneResponse{OK: true, Message: "ok"}, nil
	}
	err := s.script[0]
	s.script = s.script[1:]
	return alerting.ConveneResponse{}, err
}
func (s *scripted) n() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

// startWorker starts a worker stopped at the end of the test, and returns
// it with a lookup of the final result of each event.
func startWorker(t *testing.T, o alerting.WorkerOptions) (*alerting.Worker, func(id uint64) (alerting.Result, bool)) {
	w := alerting.NewWorker(o)
	var mu sync.Mutex
	results := map[uint64]alerting.Result{}
	w.OnResult(func(e store.Event, r alerting.Result) {
		mu.Lock()
		results[e.ID] = r
		mu.Unlock()
	})
	w.Start()
	t.Cleanup(w.Stop)
	return w, func(id uint64) (alerting.Result, bool) {
		mu.Lock()
		defer mu.Unlock()
		r, ok := results[id]
		return r, ok
	}
}

func TestWorkerRetriesInVirtualTimeAndGivesUpOnFinalErrors(t *testing.T) {
	clk := clock.NewFake(t0)
	retry := &alerting.Error{Code: "timeout", Retryable: true, Msg: "slow"}
	final := &alerting.Error{Code: "http_status", HTTPStatus: 404, Msg: "no such path"}
	c := &scripted{configured: true, script: []error{retry, final, retry}, clock: clk}
	w, result := startWorker(t, alerting.WorkerOptions{Client: c, Clock: clk, Logger: quiet,
		Backoff: []time.Duration{time.Second, 3 * time.Second}})

	w.Enqueue(store.Event{ID: 1, BeaconType: "panic"})
	poll(t, "first attempt", clk, 0, func() bool { return c.n() == 1 })
	// The retry waits for its backoff on the fake clock; a newer event
	// does not wait behind it.
	w.Enqueue(store.Event{ID: 2, BeaconType: "watch"})
	poll(t, "event 2 answered", clk, 0, func() bool { _, ok := result(2); return ok })
	if r, _ := result(2); r.State != store.AlertsysFailed || r.Attempts != 1 {
		t.Errorf("event 2 (404: final) = %+v", r)
	}
	if _, ok := result(1); ok {
		t.Fatal("event 1 finished before its backoff")
	}
	// The worker arms each backoff after its attempt returns, so a single
	// Advance could come before the timer exists: step the clock until
	// the next attempt has been made.
	poll(t, "second attempt", clk, 250*time.Millisecond, func() bool { return c.n() >= 3 })
	poll(t, "event 1 sent", clk, 500*time.Millisecond, func() bool { _, ok := result(1); return ok })
	// Event 1's attempts (calls 0, 2 and 3) waited out the backoffs, 1 s
	// then 3 s, give or take the poll's step.
	c.mu.Lock()
	first, second := c.at[2].Sub(c.at[0]), c.at[3].Sub(c.at[2])
	c.mu.Unlock()
	if first < time.Second || first > 1500*time.Millisecond || second < 3*time.Second || second > 4*time.Second {
		t.Errorf("retries %v then %v after the previous attempt, want 1 s then 3 s", first, second)
	}
	if r, _ := result(1); r.State != store.AlertsysSent || r.Attempts != 3 || r.Message != "ok" {
		t.Errorf("event 1 = %+v", r)
	}
	if st := w.Stats(); st.Sent != 1 || st.Failed != 1 || st.Retries != 2 || st.QueueLen != 0 {
		t.Errorf("stats = %+v", st)
	}

	c.mu.Lock()
	c.configured = false
	c.mu.Unlock()
	w.Enqueue(store.Event{ID: 3})
	poll(t, "event 3", clk, 0, func() bool { _, ok := result(3); return ok })
	if r, _ := result(3); r.State != store.AlertsysDisabled {
		t.Errorf("unconfigured = %+v", r)
	}
}

// TestWorkerOutlastsAShortAlertsysOutage: alertsys restarting for 30 s
// must not cost the press made meanwhile. The worker keeps retrying a
// retryable failure, with growing waits, until RecoverWindow after the
// press; past that it gives up and the event is failed.
func TestWorkerOutlastsAShortAlertsysOutage(t *testing.T) {
	clk := clock.NewFake(t0)
	down := &alerting.Error{Code: "connection_refused", Retryable: true, Msg: "refused"}
	c := &scripted{configured: true, script: []error{down, down, down, down}} // answered again at 44 s
	w, result := startWorker(t, alerting.WorkerOptions{Client: c, Clock: clk, Logger: quiet})

	w.Enqueue(store.Event{ID: 1, BeaconType: "panic", CreatedAt: clk.Now().UnixMilli()})
	poll(t, "convened after the outage", clk, time.Second, func() bool { _, ok := result(1); return ok })
	if r, _ := result(1); r.State != store.AlertsysSent || r.Attempts != 5 {
		t.Fatalf("event 1 = %+v, want sent at the 5th attempt", r)
	}

	// Down for good: failed once the next attempt would be past the window.
	c.mu.Lock()
	for range 100 {
		c.script = append(c.script, down)
	}
	c.mu.Unlock()
	pressed := clk.Now()
	w.Enqueue(store.Event{ID: 2, BeaconType: "panic", CreatedAt: pressed.UnixMilli()})
	poll(t, "given up", clk, 5*time.Second, func() bool { _, ok := result(2); return ok })
	r, _ := result(2)
	if r.State != store.AlertsysFailed || r.Attempts < 10 {
		t.Fatalf("event 2 = %+v, want failed after retrying for the window", r)
	}
	if waited := clk.Now().Sub(pressed); waited < alerting.RecoverWindow-time.Minute || waited > alerting.RecoverWindow+time.Minute {
		t.Fatalf("gave up after %v, want about %v", waited, alerting.RecoverWindow)
	}
}

// gated is a Conveneer whose convenes wait for release or their context.
type gated struct {
	entered chan struct{}
	release chan struct{}
}

func (g *gated) Configured() bool { return true }
func (g *gated) Convene(ctx context.Context, _ alerting.ConveneRequest) (alerting.ConveneResponse, error) {
	g.entered <- struct{}{}
	select {
	case <-g.release:
		return alerting.ConveneResponse{OK: true, Message: "convened"}, nil
	case <-ctx.Done():
		return alerting.ConveneResponse{}, &alerting.Error{Code: "canceled", Msg: "shutting down"}
	}
}

// TestStopLetsAConveneUnderWayFinish: a convene under way at a stop was
// cut though alertsys had it; the press stayed pending and was convened
// again at the next start (a black-box check). Stop now gives it
// StopGrace to be answered, and cuts it only after.
func TestStopLetsAConveneUnderWayFinish(t *testing.T) {
	for _, answered := range []bool{true, false} {
		g := &gated{entered: make(chan struct{}, 1), release: make(chan struct{})}
		grace := time.Minute
		if !answered {
			grace = 20 * time.Millisecond // real time: Stop's bound
		}
		w, result := startWorker(t, alerting.WorkerOptions{Client: g, Clock: clock.NewFake(t0), Logger: quiet, StopGrace: grace})
		w.Enqueue(store.Event{ID: 1, BeaconType: "panic"})
		<-g.entered
		stopped := make(chan struct{})
		go func() { w.Stop(); close(stopped) }()
		if answered {
			close(g.release)
		}
		<-stopped
		r, ok := result(1)
		if answered && (!ok || r.State != store.AlertsysSent) {
			t.Errorf("answered within the grace: %+v %v", r, ok)
		}
		if !answered && ok {
			t.Errorf("cut after the grace, yet a result: %+v", r)
		}
	}
}

// A busy alertsys's Retry-After is waited out, where the press's bound
// allows: the worker retried at its own 1 s whatever alertsys asked (a
// black-box check).
func TestWorkerWaitsOutRetryAfter(t *testing.T) {
	clk := clock.NewFake(t0)
	busy := &alerting.Error{Code: "http_status", HTTPStatus: 429, Retryable: true, Msg: "busy", RetryAfter: 20 * time.Second}
	c := &scripted{configured: true, script: []error{busy}, clock: clk}
	w, result := startWorker(t, alerting.WorkerOptions{Client: c, Clock: clk, Logger: quiet,
		Backoff: []time.Duration{time.Second, 3 * time.Second}})
	w.Enqueue(store.Event{ID: 1, BeaconType: "panic", CreatedAt: clk.Now().UnixMilli()})
	poll(t, "sent", clk, 500*time.Millisecond, func() bool { _, ok := result(1); return ok })
	c.mu.Lock()
	waited := c.at[1].Sub(c.at[0])
	c.mu.Unlock()
	if waited < 20*time.Second || waited > 21*time.Second {
		t.Errorf("retried %v after a 429 with Retry-After 20 s", waited)
	}
	if r, _ := result(1); r.State != store.AlertsysSent {
		t.Errorf("event 1 = %+v", r)
	}
}

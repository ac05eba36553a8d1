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
	configured bool
}

func (s *scripted) Configured() bool { return s.configured }
func (s *scripted) Convene(_ context.Context, r alerting.ConveneRequest) (alerting.ConveneResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, r.EventID)
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

func TestWorkerRetriesInVirtualTimeAndGivesUpOnFinalErrors(t *testing.T) {
	clk := clock.NewFake(t0)
	retry := &alerting.Error{Code: "timeout", Retryable: true, Msg: "slow"}
	final := &alerting.Error{Code: "http_status", HTTPStatus: 404, Msg: "no such path"}
	c := &scripted{configured: true, script: []error{retry, final, retry}}
	w := alerting.NewWorker(alerting.WorkerOptions{Client: c, Clock: clk, Logger: quiet,
		Backoff: []time.Duration{time.Second, 3 * time.Second}})
	var mu sync.Mutex
	results := map[uint64]alerting.Result{}
	w.OnResult(func(e store.Event, r alerting.Result) {
		mu.Lock()
		results[e.ID] = r
		mu.Unlock()
	})
	w.Start()
	defer w.Stop()
	result := func(id uint64) (alerting.Result, bool) {
		mu.Lock()
		defer mu.Unlock()
		r, ok := results[id]
		return r, ok
	}

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
	clk.Advance(time.Second)
	poll(t, "second attempt", clk, 0, func() bool { return c.n() == 3 })
	clk.Advance(3 * time.Second)
	poll(t, "event 1 sent", clk, 0, func() bool { _, ok := result(1); return ok })
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

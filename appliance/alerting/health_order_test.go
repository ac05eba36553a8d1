package alerting

import (
	"errors"
	"testing"
	"time"
)

// An outcome of an exchange that began before the last one applied is
// stale: a convene that hung through an outage and timed out after a
// newer one succeeded raised alertsys_down again after recovery (a
// review). Observers hear only what is applied, in order.
func TestStaleAlertsysOutcomesAreIgnored(t *testing.T) {
	var h healthRecorder
	var heard []string
	h.observers = append(h.observers, func(s Status) { heard = append(heard, s.State) })
	now := time.Date(2026, 11, 29, 5, 0, 0, 0, time.UTC)
	hung := h.begin()  // a convene, hanging
	fresh := h.begin() // a newer one, after recovery
	h.record(fresh, now, "convene", "A", 200, time.Millisecond, nil, true)
	h.record(hung, now.Add(time.Second), "convene", "A", 0, 10*time.Second, &Error{Code: "timeout", Retryable: true, Msg: "no answer"}, true)
	if h.st.State != StateOK || len(heard) != 1 || heard[0] != StateOK {
		t.Fatalf("state %s, observers heard %v", h.st.State, heard)
	}
	// A newer failure still counts.
	h.record(h.begin(), now.Add(2*time.Second), "convene", "A", 503, time.Millisecond, errors.New("x"), true)
	if h.st.State != StateDown || len(heard) != 2 {
		t.Fatalf("a newer failure: state %s, heard %v", h.st.State, heard)
	}
}

// A success counts whenever its exchange began: alertsys answered. By
// start order alone, a success finishing after a newer exchange's
// failure was dropped and alertsys_down held until the next probe (a
// review).
func TestALateSuccessCounts(t *testing.T) {
	var h healthRecorder
	now := time.Date(2026, 11, 29, 5, 0, 0, 0, time.UTC)
	a, b := h.begin(), h.begin()
	h.record(b, now, "convene", "A", 400, time.Millisecond, &Error{Code: "http_status", Msg: "bad"}, true)
	h.record(a, now.Add(time.Second), "convene", "A", 200, time.Millisecond, nil, true)
	if h.st.State != StateOK {
		t.Fatalf("state %s after the late success", h.st.State)
	}
}

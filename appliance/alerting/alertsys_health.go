package alerting

import (
	"errors"
	"sync"
	"time"
)

// Alertsys states of the cached snapshot.
const (
	StateUnknown  = "unknown"  // configured, nothing tried yet
	StateOK       = "ok"       // the last exchange succeeded
	StateDown     = "down"     // the last exchange failed
	StateDisabled = "disabled" // no base URL
)

// Status is the cached alertsys snapshot behind GET /api/v1/status/alertsys:
// the outcome of the latest exchange (probe login, or a real login or
// convene), so reading it never contacts alertsys.
type Status struct {
	Configured bool   `json:"configured"`
	State      string `json:"state"`
	OK         bool   `json:"ok"`
	CheckedAt  *int64 `json:"checked_at"` // Unix ms; null before the first exchange
	LastOKAt   *int64 `json:"last_ok_at"`
	Step       string `json:"step,omitempty"` // login, convene or probe
	HTTPStatus int    `json:"http_status"`
	DurationMS int64  `json:"duration_ms"`
	ErrorCode  string `json:"error_code"`
	Message    string `json:"message"`
}

// healthRecorder keeps the snapshot and tells observers about every
// outcome; the status package turns changes into alertsys_down.
// Exchanges overlap (the worker has several requests in flight), so each
// is numbered when it starts, and a failure of one that started before
// the last success applied is stale: a request that hung through an
// outage and timed out after a newer one succeeded raised alertsys_down
// again after recovery (a review). A success always counts: alertsys
// answered, whenever the request began (ignoring those by start order
// held alertsys_down after a later success: a review). Observers hear
// outcomes in the order they are applied (order).
//
// A login proves less than a convene: alertsys can log us in and fail
// every convene (a convene-only outage). Then each periodic login probe
// resolved alertsys_down and the next retry raised it again, once a
// minute (a black-box check). So a convene failure is stale only against
// a newer convene success, and a login success does not clear it for
// ConveneFailHold, the worker's whole retry schedule and then some;
// after that, with no press to try, the login probe is the best evidence
// left.
type healthRecorder struct {
	order     sync.Mutex // held from applying an outcome to telling it
	mu        sync.Mutex
	st        Status
	observers []func(Status)
	started   uint64 // exchanges begun
	okSeq     uint64 // the newest exchange number that succeeded
	convOKSeq uint64 // the newest convene that succeeded
	// convFailAt is when a convene last failed, zero once one succeeds;
	// convFailTo is the target (endpoints.target) it failed at. Another
	// target (the URL or credentials corrected) is not held: a login
	// there speaks for itself (a review: a corrected URL read "down" for
	// 10 minutes).
	convFailAt time.Time
	convFailTo string
}

// ConveneFailHold is how long a failed convene keeps alertsys down against
// successful logins.
const ConveneFailHold = 10 * time.Minute

// begin numbers an exchange about to start.
func (h *healthRecorder) begin() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.started++
	return h.started
}

func (h *healthRecorder) record(seq uint64, now time.Time, step, target string, httpStatus int, dur time.Duration, err error, configured bool) {
	ms := now.UnixMilli()
	var ae *Error
	if errors.As(err, &ae) && ae.Code == codeCanceled {
		// Our shutdown cut it, not alertsys: no outcome (it raised
		// alertsys_down at every stop during a convene: a black-box
		// check). The event stays pending for the next start.
		return
	}
	h.order.Lock()
	defer h.order.Unlock()
	h.mu.Lock()
	newerOK := h.okSeq
	if step == "convene" {
		newerOK = h.convOKSeq
	}
	if err != nil && seq < newerOK {
		h.mu.Unlock()
		return // stale: an exchange begun after it succeeded
	}
	switch {
	case err == nil && step == "convene":
		h.okSeq, h.convOKSeq, h.convFailAt = max(h.okSeq, seq), max(h.convOKSeq, seq), time.Time{}
	case err == nil && configured && !h.convFailAt.IsZero() && target == h.convFailTo && now.Sub(h.convFailAt) < ConveneFailHold:
		// A login works, convene did not lately: still down, though
		// the login did succeed (last_ok_at says so).
		h.okSeq = max(h.okSeq, seq)
		h.st.LastOKAt = &ms
		h.mu.Unlock()
		return
	case err == nil, !configured:
		h.okSeq, h.convFailAt = max(h.okSeq, seq), time.Time{}
	case step == "convene":
		h.convFailAt, h.convFailTo = now, target
	}
	st := Status{Configured: configured, Step: step, HTTPStatus: httpStatus, DurationMS: dur.Milliseconds(),
		CheckedAt: &ms, LastOKAt: h.st.LastOKAt}
	switch {
	case !configured:
		st.State, st.ErrorCode, st.Message, st.CheckedAt, st.Step = StateDisabled, ErrNotConfigured.Code, "alertsys is not configured (server_alertsys_url_base is empty)", nil, ""
	case err == nil:
		st.State, st.OK, st.LastOKAt, st.Message = StateOK, true, &ms, step+" ok"
	case errors.As(err, &ae):
		st.State, st.ErrorCode, st.Message = StateDown, ae.Code, step+": "+ae.Msg
	default:
		st.State, st.ErrorCode, st.Message = StateDown, "transport", step+": request failed"
	}
	h.st = st
	obs := h.observers
	h.mu.Unlock()
	for _, fn := range obs {
		fn(st)
	}
}

// Status returns the cached snapshot. Before any exchange it reflects the
// configuration only.
func (c *Client) Status() Status {
	c.health.mu.Lock()
	st := c.health.st
	c.health.mu.Unlock()
	configured := c.Configured()
	switch {
	case !configured:
		return Status{State: StateDisabled, ErrorCode: ErrNotConfigured.Code, LastOKAt: st.LastOKAt,
			Message: "alertsys is not configured (server_alertsys_url_base is empty)"}
	case st.State == "" || st.State == StateDisabled:
		return Status{Configured: true, State: StateUnknown, LastOKAt: st.LastOKAt, Message: "not checked yet"}
	}
	return st
}

// Observe registers fn to receive every outcome (including "disabled" when
// a call finds no base URL). fn runs on the calling goroutine (worker or
// probe): it must be quick. Register before traffic starts.
func (c *Client) Observe(fn func(Status)) {
	c.health.mu.Lock()
	c.health.observers = append(c.health.observers, fn)
	c.health.mu.Unlock()
}

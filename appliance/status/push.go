package status

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"beaconhub/appliance/clock"
	"beaconhub/appliance/config"
	"beaconhub/appliance/httpwait"
)

// Probe is one push probe result, the shape the spec fixes for both
// reachability and delivery.
type Probe struct {
	OK         bool   `json:"ok"`
	CheckedAt  *int64 `json:"checked_at"` // Unix ms; null until the first check
	HTTPStatus int    `json:"http_status"`
	DurationMS int64  `json:"duration_ms"`
	ErrorCode  string `json:"error_code"`
	Message    string `json:"message"`
	Transport  string `json:"transport"`
}

// PushStatus is the dashboard's push object: a summary and the two
// independent probes. Neither masks the other: the summary is ok only when
// every probe that ran is ok.
type PushStatus struct {
	OK           bool   `json:"ok"`
	Message      string `json:"message"`
	Reachability Probe  `json:"reachability"`
	Delivery     Probe  `json:"delivery"`
}

// Push probes the push server. Periodic checks update reachability only;
// a recheck updates both; real publishes (the push subsystem) report
// through RecordDelivery and update delivery only.
type Push struct {
	live  *config.Live
	clock clock.Clock
	tr    *Transport
	conds *Conditions

	mu           sync.Mutex
	reach, deliv Probe
	// held reports the staff alerts waiting for the push server and the
	// end of its 429 pause; accepted is told when a recheck publish got
	// a 2xx. Both are the push subsystem's (SetQueue); nil without one.
	held     func() (int, time.Time)
	accepted func()
	// limited starts (or lengthens) the push subsystem's 429 pause from
	// a probe's 429 and its Retry-After, and says until when.
	limited func(retryAfter string) time.Time
}

// SetQueue connects the push subsystem's retry queue: held feeds the
// summary, accepted hears that a recheck publish went through, limited
// that a probe met the server's rate limit.
func (p *Push) SetQueue(held func() (int, time.Time), accepted func(), limited func(retryAfter string) time.Time) {
	p.mu.Lock()
	p.held, p.accepted, p.limited = held, accepted, limited
	p.mu.Unlock()
}

// rateLimited completes a 429 probe: the spec's "a 429 from the push
// server starts a global backoff" holds for the probes' 429s too (a
// recheck's started none, and said nothing of how long: a black-box
// check), so the pause starts here and the message says until when.
// Without a push subsystem the server's own Retry-After, if any, is said.
func (p *Push) rateLimited(pr *Probe, resp Response, at time.Time) {
	if pr.ErrorCode != "rate_limited" {
		return
	}
	p.mu.Lock()
	limited := p.limited
	p.mu.Unlock()
	var until time.Time
	if limited != nil {
		until = limited(resp.Header.Get("Retry-After"))
	} else if d, ok := httpwait.RetryAfter(resp.Header.Get("Retry-After"), at); ok {
		until = at.Add(min(d, 24*time.Hour)) // a day at most: further off is the server's mistake
	}
	if !until.IsZero() {
		pr.Message += " until " + until.UTC().Format(time.RFC3339)
	}
}

// NewPush builds the push prober.
func NewPush(live *config.Live, clk clock.Clock, tr *Transport, conds *Conditions) *Push {
	p := &Push{live: live, clock: clk, tr: tr, conds: conds}
	p.reach = Probe{Transport: tr.Name(), Message: "not checked yet"}
	p.deliv = Probe{Transport: tr.Name(), Message: "not checked yet"}
	return p
}

// Transport is the bounded transport, for the push subsystem's publishes.
func (p *Push) Transport() *Transport { return p.tr }

func (p *Push) baseURL() string { return strings.TrimRight(p.live.Get().PushServerURL, "/") }

// probeOf turns an exchange into a Probe; ok means a 2xx.
func (p *Push) probeOf(at time.Time, resp Response, err error) Probe {
	ms := at.UnixMilli()
	pr := Probe{CheckedAt: &ms, HTTPStatus: resp.Status, DurationMS: resp.Duration.Milliseconds(), Transport: resp.Transport}
	if pr.Transport == "" {
		pr.Transport = p.tr.Name()
	}
	var te *TransportError
	switch {
	case errors.As(err, &te):
		pr.ErrorCode, pr.Message = te.Code, te.Msg
	case err != nil:
		pr.ErrorCode, pr.Message = "transport", "request failed"
	case resp.Status == http.StatusTooManyRequests:
		pr.ErrorCode, pr.Message = "rate_limited", "push server is rate limiting (HTTP 429)"
	case resp.Status < 200 || resp.Status > 299:
		pr.ErrorCode, pr.Message = "http_status", "push server answered HTTP "+strconv.Itoa(resp.Status)
	default:
		pr.OK, pr.Message = true, "ok"
	}
	return pr
}

func notConfigured(tr string) Probe {
	return Probe{ErrorCode: "not_configured", Message: "server_push_server_url is empty", Transport: tr}
}

// CheckReachability asks the push server's health endpoint (ntfy:
// GET /v1/health → {"healthy":true}). A 429 is reported but changes no
// condition: the server is there, only busy.
func (p *Push) CheckReachability(ctx context.Context) Probe {
	base := p.baseURL()
	if base == "" {
		pr := notConfigured(p.tr.Name())
		p.set(&p.reach, pr)
		p.conds.Set(KeyPushDown, false, "push server not configured")
		return pr
	}
	resp, err := p.tr.Do(ctx, Request{Method: http.MethodGet, URL: base + "/v1/health"})
	now := p.clock.Now()
	pr := p.probeOf(now, resp, err)
	p.rateLimited(&pr, resp, now)
	if pr.OK {
		var h struct {
			Healthy *bool `json:"healthy"`
		}
		if json.Unmarshal(resp.Body, &h) == nil && h.Healthy != nil && !*h.Healthy {
			pr.OK, pr.ErrorCode, pr.Message = false, "unhealthy", "push server reports itself unhealthy"
		}
	}
	p.set(&p.reach, pr)
	if pr.ErrorCode != "rate_limited" {
		// Still probed while notifications are off, so an admin sees the
		// server before turning them on, but nothing is delivered then,
		// so nothing is down: a box with push turned off (its server the
		// placeholder default) showed push_down for good (a review).
		down := !pr.OK && p.live.Get().PushEnabled
		p.conds.Set(KeyPushDown, down, "push server unreachable: "+pr.Message)
	}
	return pr
}

// CheckDelivery publishes a test message to {server_id}-test (the recheck
// test send; never to a production topic). It is skipped while
// server_push_enabled is off, which gates test publishes too.
func (p *Push) CheckDelivery(ctx context.Context) Probe {
	cfg := p.live.Get()
	base := p.baseURL()
	switch {
	case base == "":
		pr := notConfigured(p.tr.Name())
		p.set(&p.deliv, pr)
		return pr
	case !cfg.PushEnabled:
		ms := p.clock.Now().UnixMilli()
		pr := Probe{CheckedAt: &ms, ErrorCode: "disabled", Message: "push notifications are disabled (server_push_enabled)", Transport: p.tr.Name()}
		p.set(&p.deliv, pr)
		return pr
	}
	body, _ := json.Marshal(map[string]any{
		"topic":    cfg.ServerID + "-test",
		"title":    "Status recheck",
		"message":  "Test notification from " + cfg.ServerID + ": push delivery works.",
		"tags":     []string{"white_check_mark"},
		"priority": 1,
	})
	hdr := map[string]string{"Content-Type": "application/json"}
	if cfg.PushPublishToken != "" {
		hdr["Authorization"] = "Bearer " + cfg.PushPublishToken
	}
	resp, err := p.tr.Do(ctx, Request{Method: http.MethodPost, URL: base + "/", Header: hdr, Body: body})
	now := p.clock.Now()
	pr := p.probeOf(now, resp, err)
	p.rateLimited(&pr, resp, now)
	p.set(&p.deliv, pr)
	if pr.ErrorCode != "rate_limited" {
		p.conds.Set(KeyPushTestFailed, !pr.OK, "test publish failed: "+pr.Message)
	}
	p.mu.Lock()
	accepted := p.accepted
	p.mu.Unlock()
	if pr.OK && accepted != nil {
		accepted()
	}
	return pr
}

// RecordDelivery is how real publishes report: it updates the delivery
// probe only. A success also resolves push_test_failed (delivery works);
// a failure of a real publish is the publisher's to report.
func (p *Push) RecordDelivery(at time.Time, resp Response, err error) {
	pr := p.probeOf(at, resp, err)
	p.set(&p.deliv, pr)
	if pr.OK {
		p.conds.Set(KeyPushTestFailed, false, "delivery ok")
	}
}

func (p *Push) set(dst *Probe, pr Probe) {
	p.mu.Lock()
	*dst = pr
	p.mu.Unlock()
}

// Status returns the cached push object.
func (p *Push) Status() PushStatus {
	p.mu.Lock()
	r, d, held := p.reach, p.deliv, p.held
	p.mu.Unlock()
	s := PushStatus{Reachability: r, Delivery: d}
	switch {
	case !p.live.Get().PushEnabled && r.CheckedAt != nil && !r.OK:
		s.OK, s.Message = true, "notifications are disabled; push server unreachable: "+r.Message
	case r.ErrorCode == "not_configured":
		s.Message = "push server not configured"
	case r.CheckedAt == nil:
		s.Message = "not checked yet"
	case !r.OK:
		s.Message = "push server unreachable: " + r.Message
	case d.CheckedAt != nil && !d.OK && d.ErrorCode != "disabled":
		s.Message = "last delivery failed: " + d.Message
	case !p.live.Get().PushEnabled:
		s.OK, s.Message = true, "push server reachable; notifications are disabled"
	case d.CheckedAt == nil:
		s.OK, s.Message = true, "push server reachable; no delivery yet"
	default:
		s.OK, s.Message = true, "push server reachable; last delivery ok"
	}
	// Alerts waiting for the server are not "ok" whatever the last probe
	// said: a recheck can get through while a press is held.
	if held != nil && p.live.Get().PushEnabled {
		if n, until := held(); n > 0 {
			msg := strconv.Itoa(n) + " alert(s) waiting for the push server"
			if !until.IsZero() {
				msg += ", which is rate limiting (HTTP 429) until " + until.UTC().Format(time.RFC3339)
			}
			s.OK, s.Message = false, msg+"; "+s.Message
		}
	}
	return s
}

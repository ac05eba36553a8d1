package alerting

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"beaconhub/appliance/clock"
	"beaconhub/appliance/config"
	"beaconhub/appliance/httpwait"
)

// DefaultTokenTTL applies when a login answer gives no lifetime.
const DefaultTokenTTL = 10 * time.Minute

// tokenMargin renews a token this long before it expires, so a call never
// races the expiry.
const tokenMargin = 30 * time.Second

// maxResponse bounds what is read from alertsys.
const maxResponse = 64 << 10

// Error is a failed alertsys exchange.
type Error struct {
	Code       string // stable: not_configured, timeout, connection_refused, dns, transport, http_status, login_refused, bad_response
	HTTPStatus int
	Retryable  bool
	Msg        string
	// RetryAfter is a busy alertsys's Retry-After (429, 503), at most
	// MaxRetryAfter: the worker waits at least that long before the next
	// attempt where the press's bound allows. It retried at its own 1, 3
	// and 10 s whatever alertsys asked (a black-box check).
	RetryAfter time.Duration
}

// MaxRetryAfter caps a Retry-After alertsys asks for: a press has
// RecoverWindow in all, and a minute's wait is already long for an SOS.
const MaxRetryAfter = time.Minute

func (e *Error) Error() string { return "alertsys: " + e.Msg }

// ErrNotConfigured is returned while server_alertsys_url_base is empty.
var ErrNotConfigured = &Error{Code: "not_configured", Msg: "no base URL configured"}

// ClientOptions configure a Client.
type ClientOptions struct {
	Live  *config.Live
	Clock clock.Clock
	// ConnectTimeout and Timeout bound each request (defaults 5 s and 10 s).
	ConnectTimeout time.Duration
	Timeout        time.Duration
}

// Client talks to alertsys. It reads the configuration at every call, so
// settings changes (base URL, credentials) apply to the next call, and it
// records the outcome of every exchange for the status page and the
// alertsys_down condition.
type Client struct {
	live    *config.Live
	clock   clock.Clock
	http    *http.Client
	timeout time.Duration

	mu       sync.Mutex
	token    string
	tokenExp time.Time
	tokenID  string // base|user|password the token was issued for
	// logins counts the logins begun, and tokenLogin is the one that got
	// token: a login begun after the one that got a refused token may
	// have ended its session, even before its own answer is in.
	logins, tokenLogin uint64
	health             healthRecorder
	loginMu            chan struct{} // one login at a time (tokenFor); a channel, so a waiter's context can end its wait
}

// NewClient builds a client.
func NewClient(o ClientOptions) *Client {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 5 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   o.ConnectTimeout,
		ResponseHeaderTimeout: o.Timeout,
		MaxIdleConnsPerHost:   4, // the worker's requests in flight
		IdleConnTimeout:       90 * time.Second,
	}
	return &Client{live: o.Live, clock: o.Clock, timeout: o.Timeout, loginMu: make(chan struct{}, 1),
		http: &http.Client{Transport: tr, Timeout: o.Timeout, CheckRedirect: noRedirect}}
}

// A redirect would resend credentials to wherever alertsys points; refuse.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

type endpoints struct{ base, login, convene, user, pass, serverID string }

func (c *Client) endpoints() endpoints {
	cfg := c.live.Get()
	return endpoints{strings.TrimRight(cfg.AlertsysURLBase, "/"), cfg.AlertsysPathLogin, cfg.AlertsysPathConvene,
		cfg.AlertsysUsername, cfg.AlertsysPassword, cfg.ServerID}
}

// codeCanceled is the error code of a request our own shutdown cut.
const codeCanceled = "canceled"

// target names the alertsys and account an exchange was with: a convene
// failure holds alertsys down against logins only to the same one.
func (ep endpoints) target() string {
	return ep.base + "\x00" + ep.login + "\x00" + ep.convene + "\x00" + ep.user + "\x00" + ep.pass
}

// Configured reports whether a base URL is set right now.
func (c *Client) Configured() bool { return c.live.Get().AlertsysURLBase != "" }

// Convene sends one press. A 401 means the token expired early: it logs in
// again once and repeats the call. A 2xx whose body is not the expected
// JSON still counts as delivered (alertsys acted on it; repeating could
// convene twice), with an empty message.
func (c *Client) Convene(ctx context.Context, req ConveneRequest) (ConveneResponse, error) {
	ep := c.endpoints()
	if ep.base == "" {
		c.health.record(c.health.begin(), c.clock.Now(), "convene", "", 0, 0, ErrNotConfigured, false)
		return ConveneResponse{}, ErrNotConfigured
	}
	req.ServerID = ep.serverID
	body, _ := json.Marshal(req)
	key := ep.serverID + "-" + strconv.FormatUint(req.EventID, 10)
	rejected := ""
	for relogin := false; ; relogin = true {
		tok, login, err := c.tokenFor(ctx, ep, rejected, false)
		if err != nil {
			return ConveneResponse{}, err
		}
		seq := c.health.begin()
		status, raw, after, dur, err := c.post(ctx, ep.base+ep.convene, body, map[string]string{
			"Authorization": "Bearer " + tok, "Idempotency-Key": key})
		if err == nil && status == http.StatusUnauthorized && !relogin {
			c.dropToken(tok)
			rejected = tok
			continue
		}
		if err == nil && (status < 200 || status > 299) {
			err = statusError(status, "convene")
			err.(*Error).RetryAfter = after
			if status == http.StatusUnauthorized && c.loginSince(login) {
				// A token refused right after a login, and another login
				// (a probe's, another convene's) has begun since, whose
				// answer may not be in yet: at an alertsys that keeps one
				// session per user it ended ours. Worth a retry, not a
				// final failure (reviews: comparing tokens missed a login
				// alertsys had done and the client not yet heard). With no
				// other login, alertsys refuses the user a fresh token
				// allows (its rights): retrying only repeated the refusal
				// for 5 minutes, each login flapping alertsys_down.
				err.(*Error).Retryable = true
			}
		}
		c.health.record(seq, c.clock.Now(), "convene", ep.target(), status, dur, err, c.Configured())
		if err != nil {
			return ConveneResponse{}, err
		}
		var out ConveneResponse
		if json.Unmarshal(raw, &out) != nil {
			return ConveneResponse{}, nil
		}
		return out, nil
	}
}

// Check logs in afresh: the periodic and forced alertsys probe. It answers
// ErrNotConfigured without any request while the base URL is empty.
func (c *Client) Check(ctx context.Context) error {
	ep := c.endpoints()
	if ep.base == "" {
		c.health.record(c.health.begin(), c.clock.Now(), "probe", "", 0, 0, ErrNotConfigured, false)
		return ErrNotConfigured
	}
	_, _, err := c.tokenFor(ctx, ep, "", true)
	return err
}

// loginSince says whether a login has begun since login, the one that
// got a token.
func (c *Client) loginSince(login uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.logins > login
}

func (c *Client) dropToken(tok string) {
	c.mu.Lock()
	if c.token == tok {
		c.token = ""
	}
	c.mu.Unlock()
}

// tokenFor returns a valid token other than rejected (one alertsys just
// refused), logging in when there is none, it is about to expire, the
// configuration changed, or force is set (the probe, which checks the
// login itself). One login at a time (loginMu): the worker's parallel
// convenes each logged in at start, and several refused at once each
// logged in again, one after the other; at an alertsys keeping one
// session per user each login killed the token the one before had just
// got (reviews). A caller that waited reuses the token the login before
// it got.
func (c *Client) tokenFor(ctx context.Context, ep endpoints, rejected string, force bool) (token string, login uint64, err error) {
	ident := ep.base + "|" + ep.user + "|" + ep.pass
	valid := func() (string, uint64, bool) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.token != "" && c.token != rejected && c.tokenID == ident && c.clock.Now().Add(tokenMargin).Before(c.tokenExp) {
			return c.token, c.tokenLogin, true
		}
		return "", 0, false
	}
	if tok, n, ok := valid(); ok && !force {
		return tok, n, nil
	}
	select {
	case c.loginMu <- struct{}{}:
	case <-ctx.Done():
		return "", 0, transportError(ctx.Err())
	}
	defer func() { <-c.loginMu }()
	if tok, n, ok := valid(); ok && !force {
		return tok, n, nil
	}
	c.mu.Lock()
	c.logins++
	login = c.logins
	c.mu.Unlock()
	now := c.clock.Now()
	body, _ := json.Marshal(LoginRequest{Username: ep.user, Password: ep.pass})
	seq := c.health.begin()
	status, raw, after, dur, err := c.post(ctx, ep.base+ep.login, body, nil)
	var lr LoginResponse
	switch {
	case err != nil:
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		err = &Error{Code: "login_refused", HTTPStatus: status, Msg: fmt.Sprintf("login refused (HTTP %d): check the alertsys credentials", status)}
	case status < 200 || status > 299:
		e := statusError(status, "login")
		e.RetryAfter = after
		err = e
	case json.Unmarshal(raw, &lr) != nil || lr.Token == "":
		err = &Error{Code: "bad_response", HTTPStatus: status, Retryable: true, Msg: "login answer is not JSON with a token"}
	}
	c.health.record(seq, c.clock.Now(), "login", ep.target(), status, dur, err, true)
	if err != nil {
		return "", 0, err
	}
	ttl := time.Duration(lr.ExpiresIn) * time.Second
	if ttl <= 0 {
		ttl = DefaultTokenTTL
	}
	c.mu.Lock()
	c.token, c.tokenExp, c.tokenID, c.tokenLogin = lr.Token, now.Add(ttl), ident, login
	c.mu.Unlock()
	return lr.Token, login, nil
}

// statusError: 5xx, 429 and 408 (the server timed out waiting for our
// request: a busy alertsys, as the health message says) are retried; 408
// was final with the other 4xx (a black-box check).
func statusError(status int, what string) *Error {
	return &Error{Code: "http_status", HTTPStatus: status,
		Retryable: status >= 500 || status == http.StatusTooManyRequests || status == http.StatusRequestTimeout,
		Msg:       fmt.Sprintf("%s answered HTTP %d", what, status)}
}

// post sends one JSON request under the total timeout and reads a bounded
// body, with the Retry-After of a 429 or 503. Durations use the wall clock: they measure the network, not the
// injected clock.
func (c *Client) post(ctx context.Context, url string, body []byte, hdr map[string]string) (int, []byte, time.Duration, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, 0, 0, &Error{Code: "transport", Msg: "bad alertsys URL"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, 0, time.Since(start), transportError(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	dur := time.Since(start)
	if err != nil {
		return resp.StatusCode, nil, 0, dur, transportError(err)
	}
	var after time.Duration
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		after = retryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return resp.StatusCode, raw, after, dur, nil
}

// transportError turns a transport error into a stable code; all are retryable.
func transportError(err error) *Error {
	e := &Error{Code: "transport", Retryable: true, Msg: "request failed"}
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		e.Code, e.Msg = "timeout", "no answer within the timeout"
	case errors.As(err, &dns):
		e.Code, e.Msg = "dns", "host name does not resolve"
	case errors.As(err, &op) && op.Op == "dial":
		e.Code, e.Msg = "connection_refused", "cannot connect"
	case errors.Is(err, context.Canceled):
		e.Code, e.Msg, e.Retryable = codeCanceled, "shutting down", false
	}
	return e
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// retryAfter is what a Retry-After value asks for, capped at
// MaxRetryAfter; 0 when absent or unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	d, _ := httpwait.RetryAfter(v, now)
	return min(d, MaxRetryAfter)
}

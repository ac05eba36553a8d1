package alerting_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"beaconhub/appliance/alerting"
	"beaconhub/appliance/alerting/alertsystest"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/config"
)

var t0 = time.Date(2026, 4, 5, 6, 7, 8, 0, time.UTC)

// liveConfig is the default configuration pointing alertsys at base.
func liveConfig(t testing.TB, base string) *config.Live {
	t.Helper()
	cfg := config.Defaults(config.ActiveBrand())
	cfg.ServerID = "TST000"
	cfg.AlertsysURLBase = base
	cfg.AlertsysUsername = alertsystest.User
	cfg.AlertsysPassword = alertsystest.Pass
	return config.NewLive(cfg, nil, "")
}

func patch(t testing.TB, live *config.Live, key string, v any) {
	t.Helper()
	raw, _ := json.Marshal(v)
	if _, err := live.Patch(map[string]json.RawMessage{key: raw}); err != nil {
		t.Fatal(err)
	}
}

func newClient(t *testing.T, fake *alertsystest.Server, clk clock.Clock, timeout time.Duration) (*alerting.Client, *config.Live) {
	t.Helper()
	live := liveConfig(t, fake.URL)
	return alerting.NewClient(alerting.ClientOptions{Live: live, Clock: clk, Timeout: timeout}), live
}

func sampleRequest(id uint64) alerting.ConveneRequest {
	return alerting.ConveneRequest{Rule: "sos", EventID: id, Press: "double", OccurredAt: t0.UnixMilli(),
		Asset:    alerting.ConveneAsset{AssetUID: "PAN-WB-1", Name: "Room 12, bed 2", Type: "panic", MAC: "C3000000B001"},
		Location: alerting.PlaceOf(7, "Site / Ward B"),
		HeardBy:  alerting.ConveneHeard{Gateway: "AC233FA0B1C2", AssetUID: "GW-WB-1", Name: "Corridor"}}
}

func errCode(err error) string {
	var ae *alerting.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	return ""
}

func TestClientLoginAndConveneBody(t *testing.T) {
	fake := alertsystest.New()
	defer fake.Close()
	c, _ := newClient(t, fake, clock.NewFake(t0), 0)
	resp, err := c.Convene(context.Background(), sampleRequest(42))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message != "Convene started: Site / Ward B" || !resp.OK {
		t.Errorf("response = %+v", resp)
	}
	if _, err := c.Convene(context.Background(), sampleRequest(43)); err != nil {
		t.Fatal(err)
	}
	if fake.Logins() != 1 {
		t.Errorf("logins = %d, want 1 (token reused)", fake.Logins())
	}
	cs := fake.Convenes()
	if len(cs) != 2 {
		t.Fatalf("convenes = %d", len(cs))
	}
	b := cs[0].Body
	if b.Rule != "sos" || b.EventID != 42 || b.ServerID != "TST000" || b.Press != "double" || b.Asset.AssetUID != "PAN-WB-1" ||
		b.Asset.Name != "Room 12, bed 2" || b.Location.Name != "Site / Ward B" || b.HeardBy.Gateway != "AC233FA0B1C2" {
		t.Errorf("convene body = %s", cs[0].Raw)
	}
	if cs[0].IdempotencyKey != "TST000-42" || cs[0].Token != "tok-1" {
		t.Errorf("headers: key %q token %q", cs[0].IdempotencyKey, cs[0].Token)
	}
	if st := c.Status(); st.State != alerting.StateOK || !st.OK || st.CheckedAt == nil {
		t.Errorf("status = %+v", st)
	}
}

func TestClientReloginOnExpiry(t *testing.T) {
	fake := alertsystest.New()
	defer fake.Close()
	clk := clock.NewFake(t0)
	c, _ := newClient(t, fake, clk, 0)
	ctx := context.Background()
	if _, err := c.Convene(ctx, sampleRequest(1)); err != nil {
		t.Fatal(err)
	}
	// The server forgets the token early: a 401, one re-login, the call repeated.
	fake.ExpireTokens()
	if _, err := c.Convene(ctx, sampleRequest(2)); err != nil {
		t.Fatal(err)
	}
	if fake.Logins() != 2 || len(fake.Convenes()) != 2 {
		t.Fatalf("logins %d convenes %d", fake.Logins(), len(fake.Convenes()))
	}
	// The token's own lifetime (900 s) runs out: renewed before use, no 401.
	clk.Advance(900 * time.Second)
	if _, err := c.Convene(ctx, sampleRequest(3)); err != nil {
		t.Fatal(err)
	}
	if fake.Logins() != 3 {
		t.Errorf("logins = %d, want 3", fake.Logins())
	}
	// A 401 that persists after the re-login is an error, not a loop.
	fake.Set(func(s *alertsystest.Server) { s.FailConvene = http.StatusUnauthorized })
	if _, err := c.Convene(ctx, sampleRequest(4)); errCode(err) != "http_status" {
		t.Errorf("err = %v", err)
	}
}

func TestClientTimeoutOnSlowness(t *testing.T) {
	fake := alertsystest.New()
	defer fake.Close()
	defer fake.Release()
	c, _ := newClient(t, fake, clock.NewFake(t0), 150*time.Millisecond)
	fake.Hold()
	start := time.Now()
	_, err := c.Convene(context.Background(), sampleRequest(1))
	if errCode(err) != "timeout" {
		t.Fatalf("err = %v (%s)", err, errCode(err))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("gave up after %s", d)
	}
	var ae *alerting.Error
	if errors.As(err, &ae) && !ae.Retryable {
		t.Error("a timeout must be retryable")
	}
	if st := c.Status(); st.State != alerting.StateDown || st.ErrorCode != "timeout" {
		t.Errorf("status = %+v", st)
	}
}

func TestClientBadJSON(t *testing.T) {
	fake := alertsystest.New()
	defer fake.Close()
	c, _ := newClient(t, fake, clock.NewFake(t0), 0)
	fake.Set(func(s *alertsystest.Server) { s.BadJSON = true })
	if _, err := c.Convene(context.Background(), sampleRequest(1)); errCode(err) != "bad_response" {
		t.Fatalf("login with bad JSON: err = %v", err)
	}
	// With a token, a 2xx convene answer that is not JSON counts as sent.
	fake.Set(func(s *alertsystest.Server) { s.BadJSON = false })
	if err := c.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	fake.Set(func(s *alertsystest.Server) { s.BadJSON = true })
	resp, err := c.Convene(context.Background(), sampleRequest(2))
	if err != nil || resp.Message != "" {
		t.Errorf("convene with bad JSON answer: %+v, %v", resp, err)
	}
}

func TestClientLiveConfigAndFailures(t *testing.T) {
	fake := alertsystest.New()
	defer fake.Close()
	c, live := newClient(t, fake, clock.NewFake(t0), 0)
	ctx := context.Background()

	patch(t, live, "server_alertsys_credentials_password", "wrong")
	if err := c.Check(ctx); errCode(err) != "login_refused" {
		t.Errorf("wrong password: %v", err)
	}
	patch(t, live, "server_alertsys_credentials_password", alertsystest.Pass)
	fake.Set(func(s *alertsystest.Server) { s.FailStatus = http.StatusServiceUnavailable })
	var ae *alerting.Error
	if err := c.Check(ctx); !errors.As(err, &ae) || ae.HTTPStatus != 503 || !ae.Retryable {
		t.Errorf("503: %v", err)
	}
	fake.Set(func(s *alertsystest.Server) { s.FailStatus = 0 })
	if err := c.Check(ctx); err != nil {
		t.Fatal(err)
	}
	patch(t, live, "server_alertsys_url_base", "")
	if _, err := c.Convene(ctx, sampleRequest(1)); !errors.Is(err, alerting.ErrNotConfigured) {
		t.Errorf("empty base: %v", err)
	}
	if st := c.Status(); st.State != alerting.StateDisabled || st.Configured {
		t.Errorf("status = %+v", st)
	}
	// Nothing listens here: refused at connect.
	patch(t, live, "server_alertsys_url_base", "http://127.0.0.1:1")
	if err := c.Check(ctx); errCode(err) != "connection_refused" {
		t.Errorf("closed port: %v (%s)", err, errCode(err))
	}
}

// TestConveneOutageDoesNotFlap: alertsys logs in but fails every convene.
// Each periodic login probe resolved alertsys_down and the next retry
// raised it again, a minute apart (a black-box check). A login success no
// longer clears a convene failure for ConveneFailHold; a convene success
// does at once.
func TestConveneOutageDoesNotFlap(t *testing.T) {
	fake := alertsystest.New()
	defer fake.Close()
	clk := clock.NewFake(t0)
	c, _ := newClient(t, fake, clk, time.Second)
	var states []string
	c.Observe(func(st alerting.Status) { states = append(states, st.Step+":"+st.State) })
	fake.Set(func(s *alertsystest.Server) { s.FailConvene = 503 })
	if _, err := c.Convene(context.Background(), sampleRequest(1)); err == nil {
		t.Fatal("convene answered 503: no error")
	}
	for i := 0; i < 3; i++ {
		clk.Advance(time.Minute)
		if err := c.Check(context.Background()); err != nil {
			t.Fatal(err)
		}
		if st := c.Status(); st.State != alerting.StateDown || st.LastOKAt == nil || *st.LastOKAt != clk.Now().UnixMilli() {
			t.Fatalf("login probe %d during a convene outage (down, its login's success in last_ok_at): %+v (heard %v)", i, st, states)
		}
	}
	// Past the hold, with no press to try, the login probe speaks again.
	clk.Advance(alerting.ConveneFailHold)
	if err := c.Check(context.Background()); err != nil || c.Status().State != alerting.StateOK {
		t.Fatalf("login probe after the hold: %v %+v", err, c.Status())
	}
	// A convene failure, then a convene success: up at once.
	if _, err := c.Convene(context.Background(), sampleRequest(2)); err == nil {
		t.Fatal("convene answered 503: no error")
	}
	fake.Set(func(s *alertsystest.Server) { s.FailConvene = 0 })
	if _, err := c.Convene(context.Background(), sampleRequest(3)); err != nil || c.Status().State != alerting.StateOK {
		t.Fatalf("convene success: %v %+v", err, c.Status())
	}
	want := []string{"login:ok", "convene:down", "login:ok", "convene:down", "convene:ok"}
	if fmt.Sprint(states) != fmt.Sprint(want) {
		t.Errorf("outcomes heard %v, want %v", states, want)
	}
}

// TestOurShutdownIsNoOutage: a convene cut by our own shutdown (its
// context canceled) raised alertsys_down at every stop during a press.
func TestOurShutdownIsNoOutage(t *testing.T) {
	fake := alertsystest.New()
	defer fake.Close()
	defer fake.Release()
	clk := clock.NewFake(t0)
	c, _ := newClient(t, fake, clk, 10*time.Second)
	if err := c.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	fake.Hold()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Convene(ctx, sampleRequest(1))
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for fake.Held() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the convene never reached alertsys")
		}
		time.Sleep(time.Millisecond) // polling a condition, bounded by the deadline
	}
	cancel()
	if err := <-done; errCode(err) != "canceled" {
		t.Fatalf("convene cut by the shutdown: %v", err)
	}
	if st := c.Status(); st.State != alerting.StateOK || st.Step != "login" {
		t.Fatalf("after our own shutdown: %+v", st)
	}
}

// TestWhichAnswersAreRetried: 5xx, 429 and 408 are alertsys busy or
// away, worth a retry; 408 was final with the other 4xx, though the
// health message called it unreachable (a black-box check). A 3xx is
// not followed and final.
func TestWhichAnswersAreRetried(t *testing.T) {
	fake := alertsystest.New()
	defer fake.Close()
	c, _ := newClient(t, fake, clock.NewFake(t0), time.Second)
	for status, retry := range map[int]bool{500: true, 503: true, 429: true, 408: true, 400: false, 404: false, 422: false, 302: false} {
		fake.Set(func(s *alertsystest.Server) { s.FailConvene = status })
		_, err := c.Convene(context.Background(), sampleRequest(uint64(status)))
		var ae *alerting.Error
		if !errors.As(err, &ae) || ae.Retryable != retry {
			t.Errorf("HTTP %d: %v, want retryable %v", status, err, retry)
		}
	}
}

// A 429 or 503 carries alertsys's Retry-After (seconds or a date), at
// most MaxRetryAfter; other answers none.
func TestConveneReadsRetryAfter(t *testing.T) {
	fake := alertsystest.New()
	defer fake.Close()
	c, _ := newClient(t, fake, clock.NewFake(t0), time.Second)
	for _, tc := range []struct {
		status int
		header string
		want   time.Duration
	}{
		{429, "20", 20 * time.Second},
		{503, "3600", alerting.MaxRetryAfter},
		{429, "10000000000", alerting.MaxRetryAfter},
		{429, time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat), 30 * time.Second},
		{429, "soon", 0},
		{500, "20", 0},
	} {
		fake.Set(func(s *alertsystest.Server) { s.FailConvene, s.RetryAfter = tc.status, tc.header })
		_, err := c.Convene(context.Background(), sampleRequest(1))
		var ae *alerting.Error
		if !errors.As(err, &ae) || ae.RetryAfter > tc.want || ae.RetryAfter < tc.want-2*time.Second {
			t.Errorf("HTTP %d Retry-After %q: %v (after %v), want %v", tc.status, tc.header, err, ae.RetryAfter, tc.want)
		}
	}
}

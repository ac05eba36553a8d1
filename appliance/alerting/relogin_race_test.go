package alerting_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"beaconhub/appliance/alerting"
	"beaconhub/appliance/alerting/alertsystest"
	"beaconhub/appliance/clock"
	"beaconhub/store"
)

// loginGate sits in front of the fake on 127.0.0.1: it holds a convene
// carrying a chosen token before alertsys sees it, and lets a marked
// login be processed by alertsys (its session replacing the others)
// while holding the answer back from the client, as a login in flight
// is.
type loginGate struct {
	holdTok      atomic.Value // string: convenes with this token wait for convGo
	convHeld     chan struct{}
	convGo       chan struct{}
	markLogin    atomic.Bool
	loginDone    chan struct{} // alertsys processed the marked login
	loginRelease chan struct{}
	once1, once2 sync.Once
}

func newLoginGate(t *testing.T, fake *alertsystest.Server) (*loginGate, *httptest.Server) {
	g := &loginGate{convHeld: make(chan struct{}), convGo: make(chan struct{}), loginDone: make(chan struct{}), loginRelease: make(chan struct{})}
	g.holdTok.Store("")
	orig := fake.Config.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, alertsystest.ConvenePath):
			if tok := g.holdTok.Load().(string); tok != "" && r.Header.Get("Authorization") == "Bearer "+tok {
				g.once1.Do(func() { close(g.convHeld) })
				<-g.convGo
			}
		case strings.HasSuffix(r.URL.Path, alertsystest.LoginPath) && g.markLogin.CompareAndSwap(true, false):
			rec := httptest.NewRecorder()
			orig.ServeHTTP(rec, r)
			g.once2.Do(func() { close(g.loginDone) })
			<-g.loginRelease
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		orig.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return g, srv
}

func gateWait(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// reloginRace is an alertsys keeping one session per user, behind a
// loginGate, and a client whose first token alertsys has ended early: a
// press's convene gets a 401 and logs in again (tok-2), and the gate
// holds that relogin's convene.
type reloginRace struct {
	fake    *alertsystest.Server
	gate    *loginGate
	clk     *clock.Fake
	client  *alerting.Client
	refused chan struct{} // closed once the client has judged a convene's 401
}

func newReloginRace(t *testing.T) *reloginRace {
	t.Helper()
	fake := alertsystest.New()
	t.Cleanup(fake.Close)
	// Tokens of 40 s: 11 s on, one is inside the 30 s renewal margin,
	// and the first press is well within its 5-minute bound.
	fake.Set(func(s *alertsystest.Server) { s.OneSession, s.TokenTTL = true, 40 })
	g, front := newLoginGate(t, fake)
	clk := clock.NewFake(t0)
	client := alerting.NewClient(alerting.ClientOptions{Live: liveConfig(t, front.URL), Clock: clk, Timeout: 10 * time.Second})
	if err := client.Check(t.Context()); err != nil { // tok-1
		t.Fatal(err)
	}
	fake.ExpireTokens() // alertsys ended the session early: the next convene's 401 makes it log in (tok-2)
	g.holdTok.Store("tok-2")
	x := &reloginRace{fake: fake, gate: g, clk: clk, client: client, refused: make(chan struct{})}
	var refusedOnce sync.Once
	client.Observe(func(st alerting.Status) {
		if st.Step == "convene" && st.HTTPStatus == http.StatusUnauthorized {
			refusedOnce.Do(func() { close(x.refused) })
		}
	})
	return x
}

// pressHeld starts a worker on the client (parallel as in WorkerOptions,
// 0 for the default) and hands it press 1, whose relogin's convene
// (tok-2) the gate holds; the next login to begin is marked for the gate.
func (x *reloginRace) pressHeld(t *testing.T, parallel int) (*alerting.Worker, func(id uint64) (alerting.Result, bool)) {
	t.Helper()
	w, result := startWorker(t, alerting.WorkerOptions{Client: x.client, Clock: x.clk, Logger: quiet, Parallel: parallel})
	w.Enqueue(store.Event{ID: 1, BeaconType: "panic", CreatedAt: t0.UnixMilli()})
	gateWait(t, "press 1's relogin convene (tok-2) on its way", x.gate.convHeld)
	x.gate.markLogin.Store(true)
	return w, result
}

// race lets the marked login (tok-3, named by login) be processed by
// alertsys, then the held convene reach it (401: tok-2's session is
// over), and the login's answer reach the client only once the client
// has judged that 401.
func (x *reloginRace) race(t *testing.T, login string) {
	t.Helper()
	gateWait(t, "alertsys processed "+login+" (tok-3)", x.gate.loginDone)
	close(x.gate.convGo) // the convene with tok-2 reaches alertsys: 401
	gateWait(t, "the client judged press 1's 401", x.refused)
	close(x.gate.loginRelease) // the login's answer (tok-3) arrives
}

// At an alertsys keeping one session per user, the probe's login is
// processed by alertsys (ending the session of the token a convene just
// got by its relogin) but its answer has not reached the client when
// that convene's 401 does. A login has begun since the press's, so the
// 401 is retried and the press convened with the probe's token; judged
// by the token the client held, it failed for good (a review).
func TestProbeLoginInFlightWhenTheReloginConveneIs401(t *testing.T) {
	x := newReloginRace(t)
	_, result := x.pressHeld(t, 0)
	probe := make(chan error, 1)
	go func() { probe <- x.client.Check(t.Context()) }()
	x.race(t, "the probe's login")
	poll(t, "the press settled", x.clk, time.Second, func() bool { _, ok := result(1); return ok })
	if err := <-probe; err != nil {
		t.Fatal(err)
	}
	r, _ := result(1)
	t.Logf("press: %s after %d attempts; %d logins; convened %d", r.State, r.Attempts, x.fake.Logins(), len(x.fake.Convenes()))
	if r.State != store.AlertsysSent {
		t.Errorf("press %+v: its fresh token was replaced by the probe's login, yet it failed for good", r)
	}
}

// The same with no probe: a second press finds the token about to expire
// and logs in to renew it (tok-3) while the first press's relogin
// convene (tok-2) is on its way; alertsys ends tok-2's session, the
// first press's 401 arrives before the renewal's answer. Both presses
// convene (the first failed for good: a review).
func TestRenewalLoginInFlightWhenTheReloginConveneIs401(t *testing.T) {
	x := newReloginRace(t)
	w, result := x.pressHeld(t, 2)
	x.clk.Advance(11 * time.Second) // tok-2 (40 s) is inside the 30 s renewal margin
	w.Enqueue(store.Event{ID: 2, BeaconType: "panic", CreatedAt: x.clk.Now().UnixMilli()})
	x.race(t, "press 2's renewal login")
	poll(t, "both presses settled", x.clk, time.Second, func() bool {
		_, ok1 := result(1)
		_, ok2 := result(2)
		return ok1 && ok2
	})
	r1, _ := result(1)
	r2, _ := result(2)
	t.Logf("press 1: %+v; press 2: %+v; %d logins", r1, r2, x.fake.Logins())
	if r1.State != store.AlertsysSent {
		t.Errorf("press 1 failed for good after a renewal login replaced its fresh token: %+v", r1)
	}
}

package status

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"beaconhub/appliance/alerting"
	"beaconhub/appliance/alerting/alertsystest"
	"beaconhub/appliance/apperr"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/config"
	"beaconhub/appliance/status/pushtest"
	"beaconhub/broker"
	"beaconhub/store"
)

var (
	t0    = time.Date(2026, 4, 5, 6, 7, 8, 0, time.UTC)
	quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
)

type fixture struct {
	t     *testing.T
	dir   string
	db    *store.DB
	clk   *clock.Fake
	live  *config.Live
	conds *Conditions
	push  *pushtest.Server
	mon   *Monitor

	mu    sync.Mutex
	stats broker.Stats
	fleet []FleetAsset
	heard []store.HealthRecord
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, dir: t.TempDir(), clk: clock.NewFake(t0), push: pushtest.New()}
	t.Cleanup(f.push.Close)
	cfg := config.Defaults(config.ActiveBrand())
	cfg.ServerID = "TST000"
	cfg.PushServerURL = f.push.URL
	cfg.PushPublishToken = "tk_publish"
	f.live = config.NewLive(cfg, nil, "")
	f.open()
	return f
}

// open (re)opens the store and rebuilds conditions and monitor on it.
func (f *fixture) open() {
	db, err := store.Open(filepath.Join(f.dir, "service.db"), store.OpenOptions{LockTimeout: time.Second})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = db.Close() })
	f.db = db
	if f.conds, err = NewConditions(db, f.clk, quiet); err != nil {
		f.t.Fatal(err)
	}
	f.conds.Subscribe(func(r store.HealthRecord) {
		f.mu.Lock()
		f.heard = append(f.heard, r)
		f.mu.Unlock()
	})
	tr := NewTransport(Limits{Total: 2 * time.Second}, false)
	f.mon = NewMonitor(Options{Live: f.live, Clock: f.clk, Logger: quiet, Conditions: f.conds,
		MQTT: func() broker.Stats { f.mu.Lock(); defer f.mu.Unlock(); return f.stats },
		Push: NewPush(f.live, f.clk, tr, f.conds),
		Fleet: func() ([]FleetAsset, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return append([]FleetAsset(nil), f.fleet...), nil
		},
	})
	f.t.Cleanup(f.mon.Stop)
}

func (f *fixture) set(fn func(f *fixture)) {
	f.mu.Lock()
	fn(f)
	f.mu.Unlock()
}

// transitions returns "key:phase" for every transition heard.
func (f *fixture) transitions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, r := range f.heard {
		out = append(out, r.Key+":"+r.Phase)
	}
	return out
}

func listener(t *testing.T) (string, func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().String(), func() { ln.Close() }
}

func TestMQTTDownRaisedOnceResolvedOnceAndPersisted(t *testing.T) {
	f := newFixture(t)
	addr, closeLn := listener(t)
	f.set(func(f *fixture) { f.stats = broker.Stats{Mode: "embedded", Listening: true, Listen: addr} })
	f.mon.Start()
	f.clk.Advance(5 * time.Second)
	if d := f.mon.Dashboard(); !d.MQTT.OK || d.MQTT.CheckedAt == nil || !d.OK {
		t.Fatalf("healthy dashboard = %+v", d.MQTT)
	}
	// The listener stops accepting although the flag still says listening:
	// only the dial of the network tick (60 s) notices.
	closeLn()
	f.clk.Advance(60 * time.Second)
	f.set(func(f *fixture) { f.stats.Listening = false })
	f.clk.Advance(30 * time.Second) // three flag checks, still one transition
	if !f.conds.IsActive(KeyMQTTDown) || len(f.transitions()) != 1 {
		t.Fatalf("transitions = %v", f.transitions())
	}
	// Restart: the active condition is restored, not raised again.
	f.mon.Stop()
	_ = f.db.Close()
	f.open()
	if !f.conds.IsActive(KeyMQTTDown) {
		t.Fatal("active condition lost across a restart")
	}
	addr2, closeLn2 := listener(t)
	defer closeLn2()
	f.set(func(f *fixture) { f.stats = broker.Stats{Mode: "embedded", Listening: true, Listen: addr2} })
	d, err := f.mon.Recheck(context.Background(), TargetMQTT)
	if err != nil || !d.MQTT.OK || d.Rechecked != "mqtt" || f.conds.IsActive(KeyMQTTDown) {
		t.Fatalf("recheck = %+v, %v", d.MQTT, err)
	}
	recs, _ := f.db.HealthRecords(0, 10)
	if len(recs) != 2 || recs[0].Phase != store.HealthActive || recs[1].Phase != store.HealthResolved {
		t.Errorf("stored records = %+v", recs)
	}
}

func TestExternalMQTTNotConnected(t *testing.T) {
	f := newFixture(t)
	f.set(func(f *fixture) {
		f.stats = broker.Stats{Mode: "external", Connected: false, URL: "mqtt://broker:1883"}
	})
	f.mon.checkMQTT(false)
	if d := f.mon.Dashboard(); d.MQTT.OK || !d.OK {
		t.Fatalf("one failed check: snapshot %+v, dashboard ok %v (condition waits for a second)", d.MQTT, d.OK)
	}
	// A second failure a second later (the minute's dial check beside a
	// 10 s one) is not yet an outage: it raised mqtt_down 3 s into one (a
	// black-box check).
	f.clk.Advance(time.Second)
	f.mon.checkMQTT(true)
	if d := f.mon.Dashboard(); !d.OK {
		t.Fatalf("two failures a second apart raised %+v", d.Issues)
	}
	f.clk.Advance(9 * time.Second)
	f.mon.checkMQTT(false)
	d := f.mon.Dashboard()
	if d.MQTT.OK || d.MQTT.Connected == nil || *d.MQTT.Connected || d.OK || d.IssuesTotal != 1 || d.Issues[0].Key != KeyMQTTDown {
		t.Errorf("dashboard = %+v", d)
	}
}

func TestPushProbes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.mon.Start()
	// Periodic probes: reachability only, never a publish.
	f.clk.Advance(95 * time.Second) // network ticks at 30 s and 90 s
	d := f.mon.Dashboard()
	if !d.Push.Reachability.OK || d.Push.Delivery.CheckedAt != nil || len(f.push.Messages()) != 0 || f.push.HealthChecks() != 2 {
		t.Fatalf("after periodic probes: %+v, %d messages, %d checks", d.Push, len(f.push.Messages()), f.push.HealthChecks())
	}
	if d.Push.Reachability.Transport != NewTransport(Limits{}, false).Name() {
		t.Errorf("transport = %q", d.Push.Reachability.Transport)
	}
	// Recheck: both probes; the test publish goes to the test topic.
	d, err := f.mon.Recheck(ctx, TargetPush)
	if err != nil || !d.Push.OK || !d.Push.Delivery.OK || d.Push.Delivery.HTTPStatus != 200 {
		t.Fatalf("recheck: %+v %v", d.Push, err)
	}
	msgs := f.push.Messages()
	if len(msgs) != 1 || msgs[0].Topic != "TST000-test" || msgs[0].Priority != 1 || msgs[0].Tags[0] != "white_check_mark" ||
		msgs[0].Auth != "Bearer tk_publish" {
		t.Fatalf("test publish = %+v", msgs)
	}
	// 429 is reported but is not "down"; a 503 is, once.
	f.push.Set(func(s *pushtest.Server) { s.HealthStatus = 429 })
	if pr := f.mon.o.Push.CheckReachability(ctx); pr.OK || pr.ErrorCode != "rate_limited" || f.conds.IsActive(KeyPushDown) ||
		!strings.HasSuffix(pr.Message, " until "+f.clk.Now().Add(30*time.Second).UTC().Format(time.RFC3339)) {
		t.Errorf("429 with Retry-After 30: %+v", pr)
	}
	f.push.Set(func(s *pushtest.Server) { s.HealthStatus = 503 })
	f.clk.Advance(120 * time.Second)
	if !f.conds.IsActive(KeyPushDown) {
		t.Error("push_down not raised on 503")
	}
	// A failed test publish raises push_test_failed; a real publish that
	// works resolves it and updates delivery only.
	f.push.Set(func(s *pushtest.Server) { s.HealthStatus, s.PublishStatus = 0, 500 })
	d, _ = f.mon.Recheck(ctx, TargetPush)
	if d.Push.OK || d.Push.Delivery.ErrorCode != "http_status" || !f.conds.IsActive(KeyPushTestFailed) || f.conds.IsActive(KeyPushDown) {
		t.Fatalf("failed delivery: %+v", d.Push)
	}
	if d.Push.Message != "last delivery failed: push server answered HTTP 500" {
		t.Errorf("summary = %q", d.Push.Message)
	}
	reach := d.Push.Reachability
	f.mon.o.Push.RecordDelivery(f.clk.Now(), Response{Status: 200, Transport: "curl", Duration: 12 * time.Millisecond}, nil)
	d = f.mon.Dashboard()
	if !d.Push.OK || !d.Push.Delivery.OK || *d.Push.Reachability.CheckedAt != *reach.CheckedAt || f.conds.IsActive(KeyPushTestFailed) {
		t.Errorf("after a real publish: %+v", d.Push)
	}
	want := []string{"push_down:active", "push_down:resolved", "push_test_failed:active", "push_test_failed:resolved"}
	var got []string
	for _, tr := range f.transitions() {
		if strings.HasPrefix(tr, "push") {
			got = append(got, tr)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("transitions = %v, want %v", got, want)
	}
	// Disabled push: the recheck publishes nothing and raises nothing.
	raw, _ := json.Marshal(false)
	if _, err := f.live.Patch(map[string]json.RawMessage{"server_push_enabled": raw}); err != nil {
		t.Fatal(err)
	}
	d, _ = f.mon.Recheck(ctx, TargetPush)
	if d.Push.Delivery.ErrorCode != "disabled" || len(f.push.Messages()) != 1 || !d.Push.OK {
		t.Errorf("disabled: %+v", d.Push)
	}
	// Disabled, an unreachable server is shown but is no issue: nothing
	// is delivered (a box with the placeholder server and push off kept
	// push_down for good); enabled again, it is one.
	f.push.Set(func(s *pushtest.Server) { s.HealthStatus = 503 })
	f.clk.Advance(120 * time.Second)
	d = f.mon.Dashboard()
	if f.conds.IsActive(KeyPushDown) || !d.Push.OK || d.Push.Reachability.OK || !strings.Contains(d.Push.Message, "disabled") {
		t.Errorf("disabled, server down: push_down %v, %+v", f.conds.IsActive(KeyPushDown), d.Push)
	}
	raw, _ = json.Marshal(true)
	if _, err := f.live.Patch(map[string]json.RawMessage{"server_push_enabled": raw}); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(120 * time.Second)
	if !f.conds.IsActive(KeyPushDown) {
		t.Error("enabled again, push_down not raised")
	}
}

func TestFleetConditions(t *testing.T) {
	f := newFixture(t)
	start := t0.UnixMilli()
	hour := time.Hour.Milliseconds()
	f.set(func(f *fixture) {
		f.fleet = []FleetAsset{
			{UID: "PAN-A1-1", Kind: "beacon", Type: "panic", LastSeen: start - 3*hour},
			{UID: "SEN-A1-1", Kind: "beacon", Type: "sensor", CreatedAt: start - 5*hour},
			{UID: "NAV-A1-1", Kind: "beacon", Type: "navigation"},
			{UID: "GW-A1-1", Kind: "gateway", LastSeen: start},
		}
	})
	// Right after start nothing is stale: ages count from the start.
	f.mon.checkFleet()
	if d := f.mon.Dashboard(); d.Fleet.Beacons.Total != 2 || d.Fleet.Beacons.Stale != 0 || d.IssuesTotal != 0 {
		t.Fatalf("at start: %+v", d.Fleet)
	}
	f.clk.Advance(61 * time.Minute)
	f.mon.checkFleet()
	d := f.mon.Dashboard()
	if d.Fleet.Beacons.Stale != 1 || d.Fleet.Beacons.NeverSeen != 1 || d.Fleet.Gateways.Stale != 1 || d.IssuesTotal != 3 {
		t.Fatalf("after an hour: %+v issues %+v", d.Fleet, d.Issues)
	}
	// The panic beacon is heard again, the sensor is reminted (its old uid
	// disappears): both resolve; the gateway stays stale.
	now := f.clk.Now().UnixMilli()
	f.set(func(f *fixture) {
		f.fleet[0].LastSeen = now
		f.fleet[1].UID = "SEN-A1-2"
		f.fleet[1].LastSeen = now
	})
	f.mon.checkFleet()
	active := f.conds.Active()
	if len(active) != 1 || active[0].Key != "fleet:stale:GW-A1-1" {
		t.Errorf("active = %+v", active)
	}
	if got := len(f.transitions()); got != 5 {
		t.Errorf("transitions = %v", f.transitions())
	}
}

func TestRecheckValidation(t *testing.T) {
	f := newFixture(t)
	if _, err := f.mon.Recheck(context.Background(), "nope"); apperr.KindOf(err) != apperr.KindInvalid {
		t.Errorf("bad target: %v", err)
	}
	if _, err := f.mon.Recheck(context.Background(), TargetAlertsys); apperr.KindOf(err) != apperr.KindUnavailable {
		t.Errorf("alertsys without the feature: %v", err)
	}
	if st := f.mon.AlertsysStatus(); st.State != "disabled" || st.Enabled {
		t.Errorf("alertsys status = %+v", st)
	}
}

// TestAlertsysRefusalIsNamed: alertsys answering 4xx (credentials, a rule)
// raises alertsys_down as an outage does, but its message says alertsys
// refused rather than that it is unreachable (a review: a 400 read
// "alertsys unreachable").
func TestAlertsysRefusalIsNamed(t *testing.T) {
	f := newFixture(t)
	f.mon.alertsysOutcome(alerting.Status{State: alerting.StateDown, HTTPStatus: 400, Message: "convene: convene answered HTTP 400"})
	f.mu.Lock()
	got := f.heard[len(f.heard)-1]
	f.mu.Unlock()
	if got.Key != KeyAlertsysDown || got.Phase != store.HealthActive || !strings.HasPrefix(got.Message, "alertsys refuses the request: ") {
		t.Fatalf("after a 400: %+v", got)
	}
	for _, st := range []alerting.Status{{Message: "convene: connection refused"}, {HTTPStatus: 429, Message: "busy"}, {HTTPStatus: 408, Message: "slow"}} {
		f.mon.alertsysOutcome(alerting.Status{State: alerting.StateOK})
		st.State = alerting.StateDown
		// Unreachable or busy is raised once it lasted a check interval:
		// the first failure alone is not an outage.
		f.mon.alertsysOutcome(st)
		if f.conds.IsActive(KeyAlertsysDown) {
			t.Fatalf("raised at the first failure %+v", st)
		}
		f.clk.Advance(10 * time.Second)
		f.mon.alertsysOutcome(st)
		f.mu.Lock()
		got = f.heard[len(f.heard)-1]
		f.mu.Unlock()
		if !strings.HasPrefix(got.Message, "alertsys unreachable: ") {
			t.Fatalf("after %+v: %+v", st, got)
		}
	}
}

// TestAlertsysSettingsChangeProbesAtOnce: emptying alertsys's URL left
// alertsys_down active until the next periodic probe (a black-box check
// saw 16 s; up to a minute), and a corrected URL stayed "down" as long.
// A change of alertsys's settings probes at once, the clock standing.
func TestAlertsysSettingsChangeProbesAtOnce(t *testing.T) {
	f := newFixture(t)
	fake := alertsystest.New()
	t.Cleanup(fake.Close)
	fake.Set(func(s *alertsystest.Server) { s.FailStatus = 503 })
	cfg := *f.live.Get()
	cfg.AlertsysURLBase, cfg.AlertsysUsername, cfg.AlertsysPassword = fake.URL, alertsystest.User, alertsystest.Pass
	live := config.NewLive(&cfg, nil, "")
	patch := func(url string) {
		t.Helper()
		if _, err := live.Patch(map[string]json.RawMessage{"server_alertsys_url_base": json.RawMessage(strconv.Quote(url))}); err != nil {
			t.Fatal(err)
		}
	}
	client := alerting.NewClient(alerting.ClientOptions{Live: live, Clock: f.clk})
	mon := NewMonitor(Options{Live: live, Clock: f.clk, Logger: quiet, Conditions: f.conds, Alertsys: client})
	t.Cleanup(mon.Stop)
	mon.checkAlertsys(context.Background())
	f.clk.Advance(10 * time.Second) // an outage once it lasted a check interval
	mon.checkAlertsys(context.Background())
	if !f.conds.IsActive(KeyAlertsysDown) {
		t.Fatal("alertsys answering 503: not down")
	}
	mon.Start()
	patch("")
	waitFor(t, "alertsys_down resolved by emptying the URL", func() bool { return !f.conds.IsActive(KeyAlertsysDown) })
	fake.Set(func(s *alertsystest.Server) { s.FailStatus = 0 })
	patch(fake.URL)
	waitFor(t, "the restored URL probed", func() bool { return mon.AlertsysStatus().State == alerting.StateOK })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, bounded by the deadline
	}
}

// TestACorrectedAlertsysIsNotHeldDown: a convene failure holds alertsys
// down against logins (a convene-only outage must not flap), but only
// logins to the same alertsys and account: after the URL was corrected,
// the at-once probe's login was ignored and alertsys_down held for 10
// minutes; emptied and restored, the status read "not checked yet"
// (a review).
func TestACorrectedAlertsysIsNotHeldDown(t *testing.T) {
	for _, how := range []string{"corrected", "emptied and restored"} {
		t.Run(how, func(t *testing.T) {
			f := newFixture(t)
			broken, fixed := alertsystest.New(), alertsystest.New()
			t.Cleanup(broken.Close)
			t.Cleanup(fixed.Close)
			broken.Set(func(s *alertsystest.Server) { s.FailConvene = 503 })
			cfg := *f.live.Get()
			cfg.AlertsysURLBase, cfg.AlertsysUsername, cfg.AlertsysPassword = broken.URL, alertsystest.User, alertsystest.Pass
			live := config.NewLive(&cfg, nil, "")
			client := alerting.NewClient(alerting.ClientOptions{Live: live, Clock: f.clk})
			mon := NewMonitor(Options{Live: live, Clock: f.clk, Logger: quiet, Conditions: f.conds, Alertsys: client})
			t.Cleanup(mon.Stop)
			mon.Start()
			for i := 0; i < 2; i++ { // an outage once it lasted a check interval
				if _, err := client.Convene(context.Background(), alerting.ConveneRequest{Rule: "sos", EventID: 1}); err == nil {
					t.Fatal("convene answered 503: no error")
				}
				f.clk.Advance(10 * time.Second)
			}
			if !f.conds.IsActive(KeyAlertsysDown) {
				t.Fatal("not down after the failed convene")
			}
			patch := func(url string) {
				if _, err := live.Patch(map[string]json.RawMessage{"server_alertsys_url_base": json.RawMessage(strconv.Quote(url))}); err != nil {
					t.Fatal(err)
				}
			}
			to := fixed.URL
			if how != "corrected" {
				patch("")
				waitFor(t, "emptied", func() bool { return !f.conds.IsActive(KeyAlertsysDown) })
				to = broken.URL
				broken.Set(func(s *alertsystest.Server) { s.FailConvene = 0 })
			}
			patch(to)
			waitFor(t, "the new URL's login counted", func() bool {
				st := mon.AlertsysStatus()
				return st.State == alerting.StateOK && st.CheckedAt != nil
			})
			if f.conds.IsActive(KeyAlertsysDown) {
				t.Fatal("alertsys_down still active")
			}
		})
	}
}

// TestDashboardShowsFailingStore: a full disk showed nowhere but the log
// (a black-box check): readings, events and conditions not stored, and
// the alerts raised from them not sent. The dashboard leads with it.
func TestDashboardShowsFailingStore(t *testing.T) {
	f := newFixture(t)
	var since time.Time
	mon := NewMonitor(Options{Live: f.live, Clock: f.clk, Logger: quiet, Conditions: f.conds,
		Store: func() (time.Time, string) { return since, "write service.db: no space left on device" }})
	if d := mon.Dashboard(); !d.OK || len(d.Issues) != 0 {
		t.Fatalf("a working store: %+v", d)
	}
	since = t0.Add(-time.Minute)
	f.conds.Set(KeyMQTTDown, true, "broker down")
	d := mon.Dashboard()
	if d.OK || d.IssuesTotal != 2 || d.Issues[0].Key != StoreIssueKey || d.Issues[0].Since != since.UnixMilli() ||
		!strings.Contains(d.Issues[0].Message, "no space left") {
		t.Fatalf("a failing store: %+v", d)
	}
}

// TestFleetConditionsSurviveARestart: ages count from the later of the
// last sighting and the process start, so a restart does not flag the
// whole fleet; but that grace resolved every fleet condition already
// active, told staff and the vendor "Resolved", and raised them again
// ten minutes later (a black-box check). Active ones stay until their
// device is heard.
func TestFleetConditionsSurviveARestart(t *testing.T) {
	f := newFixture(t)
	start := t0.UnixMilli()
	f.set(func(f *fixture) {
		f.fleet = []FleetAsset{
			{UID: "GW-A1-1", Kind: "gateway", LastSeen: start},
			{UID: "GW-A1-2", Kind: "gateway", CreatedAt: start},
		}
	})
	f.clk.Advance(11 * time.Minute)
	f.mon.checkFleet()
	if n := len(f.conds.Active()); n != 2 {
		t.Fatalf("before the restart: %+v", f.conds.Active())
	}
	heard := len(f.transitions())
	f.mon.Stop()
	_ = f.db.Close()
	f.open() // a restart: the monitor's start is now
	f.mon.checkFleet()
	if n := len(f.conds.Active()); n != 2 || len(f.transitions()) != heard {
		t.Fatalf("after the restart: active %+v, transitions %v", f.conds.Active(), f.transitions())
	}
	// Heard again: resolved at once.
	now := f.clk.Now().UnixMilli()
	f.set(func(f *fixture) { f.fleet[0].LastSeen = now })
	f.mon.checkFleet()
	if active := f.conds.Active(); len(active) != 1 || active[0].Key != "fleet:never_seen:GW-A1-2" {
		t.Fatalf("after GW-A1-1 was heard: %+v", active)
	}
}

// TestAStaleConditionResolvesOnALaggingGatewayClock: an active condition
// is judged on the sighting's age alone; "heard after it began" held it
// when a gateway's clock, a few minutes slow as ingest allows, stamped the
// sighting before that (a review).
func TestAStaleConditionResolvesOnALaggingGatewayClock(t *testing.T) {
	since := t0.UnixMilli()
	_, want := evaluateFleet(since+2*60e3, since-24*3600e3,
		[]FleetAsset{{UID: "SEN-1", Kind: "beacon", Type: "sensor", LastSeen: since - 2*60e3}},
		map[string]bool{FleetKey("stale", "SEN-1"): true})
	if _, stale := want[FleetKey("stale", "SEN-1")]; stale {
		t.Fatal("heard two minutes ago by a gateway running late, still stale")
	}
}

// A flaky alertsys (every other convene busy) does not flip
// alertsys_down on every request: unreachable or busy is an outage once
// failures lasted a check interval with no success between. Raised at
// the first failure, it flipped ten times in ten seconds, two messages
// each to staff and the vendor now that critical recoveries go at once
// (a review).
func TestAFlakyAlertsysDoesNotFlap(t *testing.T) {
	f := newFixture(t)
	for i := 0; i < 20; i++ {
		st := alerting.Status{State: alerting.StateOK}
		if i%2 == 0 {
			st = alerting.Status{State: alerting.StateDown, HTTPStatus: 429, Message: "busy"}
		}
		f.mon.alertsysOutcome(st)
		f.clk.Advance(time.Second)
	}
	if got := f.transitions(); len(got) != 0 {
		t.Fatalf("a flaky alertsys flipped alertsys_down: %v", got)
	}
}

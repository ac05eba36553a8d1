package bridge_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"beaconhub/appliance/bridge"
	"beaconhub/appliance/bridge/zabbixtest"
	"beaconhub/appliance/clock"
)

// mainServer stands in for the main server's /lld lists; body can be
// swapped to stage partial answers and outages.
type mainServer struct {
	*httptest.Server
	mu       sync.Mutex
	beacons  string
	gateways string
	status   int
	hits     atomic.Int64
}

func newMainServer(t *testing.T) *mainServer {
	m := &mainServer{status: http.StatusOK,
		beacons:  `{"data":[{"{#ASSET_UID}":"SEN-H1-1","{#MAC}":"c30000000a01","{#NAME}":"Fridge"},{"{#ASSET_UID}":"bad uid,x","{#MAC}":"C30000000A09","{#NAME}":"x"}]}`,
		gateways: `{"data":[{"{#ASSET_UID}":"GW-H1-1","{#MAC}":"AC233FA0B1C2","{#NAME}":"Kitchen"}]}`}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.hits.Add(1)
		m.mu.Lock()
		status, body := m.status, m.beacons
		if r.URL.Path == "/base/lld/gateways" {
			body = m.gateways
		} else if r.URL.Path != "/base/lld/beacons" {
			status = http.StatusNotFound
		}
		m.mu.Unlock()
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *mainServer) set(status int, beacons string) {
	m.mu.Lock()
	m.status, m.beacons = status, beacons
	m.mu.Unlock()
}

type rig struct {
	clk    *clock.Fake
	b      *bridge.Bridge
	tr     *zabbixtest.Trapper
	main   *mainServer
	logBuf *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newRig(t *testing.T, serverURL, monitor string, tweak ...func(*bridge.Options)) *rig {
	t.Helper()
	r := &rig{clk: clock.NewFake(time.Unix(1795331000, 0)), logBuf: &syncBuffer{}}
	if serverURL == "" {
		r.main = newMainServer(t)
		serverURL = r.main.URL + "/base"
	}
	if monitor == "" {
		r.tr = zabbixtest.NewTrapper(t)
		monitor = r.tr.Addr
	}
	o := bridge.Options{ServerURL: serverURL, BeaconEndpoint: "lld/beacons", GatewayEndpoint: "/lld/gateways",
		MonitorAddr: monitor, Host: "TST000", BeaconEvery: 60 * time.Second, GatewayEvery: 120 * time.Second,
		RefreshEvery: time.Hour, Timeout: 2 * time.Second, MaxBackoff: 30 * time.Second, Clock: r.clk,
		Logger: slog.New(slog.NewTextHandler(r.logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	for _, f := range tweak {
		f(&o)
	}
	b, err := bridge.New(o)
	if err != nil {
		t.Fatal(err)
	}
	r.b = b
	b.Start()
	t.Cleanup(b.Stop)
	return r
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, bounded by the deadline
	}
}

func (r *rig) value(key string) func() string {
	return func() string {
		v, _ := r.tr.Last(key)
		return v.Value
	}
}

func TestBridgeSendsDiscoveryThenValues(t *testing.T) {
	r := newRig(t, "", "")
	r.advance(0)
	waitFor(t, "discovery", func() bool { return r.value(bridge.KeyGatewayDiscovery)() != "" })
	if got := r.value(bridge.KeyBeaconDiscovery)(); got != `{"data":[{"{#ASSET_UID}":"SEN-H1-1","{#MAC}":"C30000000A01","{#NAME}":"Fridge"}]}` {
		t.Fatalf("beacon discovery = %s", got)
	}
	if got := r.value(bridge.KeyGatewayDiscovery)(); got != `{"data":[{"{#ASSET_UID}":"GW-H1-1","{#MAC}":"AC233FA0B1C2","{#NAME}":"Kitchen"}]}` {
		t.Fatalf("gateway discovery = %s", got)
	}
	if v, _ := r.tr.Last(bridge.KeyBeaconDiscovery); v.Host != "TST000" || v.Clock != r.clk.Now().Unix() {
		t.Fatalf("discovery value %+v", v)
	}
	if !strings.Contains(r.logBuf.String(), "skipped assets") {
		t.Error("the unusable uid was not reported")
	}
	if r.value(bridge.AssetKey(bridge.KindBeacon, bridge.MetricOnline, "SEN-H1-1"))() != "" {
		t.Fatal("values sent before the first interval")
	}
	r.advance(60 * time.Second)
	waitFor(t, "beacon values", func() bool { return r.value(bridge.KeyCacheAge)() != "" })
	for key, want := range map[string]string{
		bridge.AssetKey(bridge.KindBeacon, bridge.MetricOnline, "SEN-H1-1"): "1",
		bridge.AssetKey(bridge.KindBeacon, bridge.MetricMAC, "SEN-H1-1"):    "C30000000A01",
		bridge.AssetKey(bridge.KindBeacon, bridge.MetricName, "SEN-H1-1"):   "Fridge",
		bridge.KeyMainUp: "1", bridge.KeyBeacons: "1", bridge.KeyGateways: "1", bridge.KeyCacheAge: "60",
	} {
		if got := r.value(key)(); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	if r.value(bridge.AssetKey(bridge.KindGateway, bridge.MetricMAC, "GW-H1-1"))() != "" {
		t.Fatal("gateway values before their interval")
	}
	r.advance(60 * time.Second)
	waitFor(t, "gateway values", func() bool {
		return r.value(bridge.AssetKey(bridge.KindGateway, bridge.MetricMAC, "GW-H1-1"))() == "AC233FA0B1C2"
	})
	if st := r.b.Status(); !st.OK || st.State != "ok" || st.Main.Beacons != 1 || st.Monitor.Processed == 0 {
		t.Fatalf("status %+v", st)
	}
}

// A partial answer from the main server keeps the cached lists: the fleet
// must not vanish from Zabbix because of one truncated response. Per-asset
// values pause while the main server is not answering; the bridge's own
// items say so.
func TestBridgeKeepsCacheOnPartialAnswer(t *testing.T) {
	r := newRig(t, "", "")
	r.advance(0)
	waitFor(t, "first fetch", func() bool { return r.b.Status().State == "ok" })
	r.main.set(http.StatusOK, `{"data":[{"{#ASSET_UID}":"SEN-H1-1","{#MA`)
	r.advance(time.Hour) // cache refresh
	waitFor(t, "main_down", func() bool { return r.b.Status().State == "main_down" })
	st := r.b.Status()
	if st.Main.Beacons != 1 || st.Main.Failures < 1 || !strings.Contains(st.Main.LastError, "malformed") {
		t.Fatalf("status %+v", st.Main)
	}
	n := len(r.tr.Values())
	r.advance(60 * time.Second) // beacon round
	waitFor(t, "bridge items", func() bool { return len(r.tr.Values()) > n })
	for _, v := range r.tr.Values()[n:] {
		if strings.HasPrefix(v.Key, "beaconhub.beacon.") {
			t.Fatalf("per-asset value sent while the main server is down: %+v", v)
		}
	}
	if got := r.value(bridge.KeyMainUp)(); got != "0" {
		t.Fatalf("main_up = %s", got)
	}
	// Recovery: the backoff retry (1 s after the first failure) succeeds.
	r.main.set(http.StatusOK, `{"data":[]}`)
	waitFor(t, "recovery", func() bool {
		r.advance(time.Second)
		return r.b.Status().State == "ok"
	})
	if st := r.b.Status(); st.Main.Beacons != 0 {
		t.Fatalf("cache not replaced: %+v", st.Main)
	}
	waitFor(t, "empty discovery", func() bool { return r.value(bridge.KeyBeaconDiscovery)() == `{"data":[]}` })
}

// Every way Zabbix can fail (refused connection, garbage, hang past the
// timeout, closed without reply) is retried with a doubling, capped
// delay, and none of them leaves goroutines behind.
func TestBridgeMonitorFaultsBackoffNoLeak(t *testing.T) {
	for _, mode := range []zabbixtest.Mode{zabbixtest.Garbage, zabbixtest.Close, zabbixtest.Hang} {
		// Value rounds far apart: the retries seen are the discovery's.
		r := newRig(t, "", "", func(o *bridge.Options) {
			o.BeaconEvery, o.GatewayEvery = time.Hour, time.Hour
			o.Timeout = 200 * time.Millisecond // Hang: each try waits this long
		})
		r.tr.SetMode(mode)
		r.advance(0)
		waitFor(t, "first failure", func() bool { return r.b.Status().Monitor.Failures == 1 })
		before := runtime.NumGoroutine()
		// Retries at +1, +2, +4, +8, +16, +30, +30 ... seconds.
		for _, step := range []time.Duration{1, 2, 4, 8, 16, 30, 30, 30} {
			n := r.b.Status().Monitor.Failures
			r.advance(step*time.Second - time.Millisecond)
			if got := r.b.Status().Monitor.Failures; got != n {
				t.Fatalf("mode %d: retried before %s", mode, step*time.Second)
			}
			r.advance(time.Millisecond)
			waitFor(t, "retry", func() bool { return r.b.Status().Monitor.Failures > n })
			r.settled()
		}
		st := r.b.Status()
		if st.OK || st.State != "monitor_down" || st.Monitor.LastError == "" {
			t.Fatalf("mode %d: status %+v", mode, st)
		}
		waitFor(t, "goroutines to settle", func() bool { return runtime.NumGoroutine() <= before+1 })
		r.tr.SetMode(zabbixtest.Accept)
		waitFor(t, "recovery", func() bool {
			r.advance(30 * time.Second)
			return r.b.Status().OK
		})
	}
}

// With nothing listening anywhere, many failed rounds leave the goroutine
// count where it was.
func TestBridgeGoroutinesStableUnderFailures(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	_ = ln.Close()
	r := newRig(t, "http://"+dead+"/", dead)
	r.advance(0)
	waitFor(t, "first failure", func() bool { return r.b.Status().State == "main_down" })
	r.advance(60 * time.Second)
	waitFor(t, "state down", func() bool { return r.b.Status().State == "down" })
	before := runtime.NumGoroutine()
	for r.b.Status().Main.Failures < 100 {
		n := r.b.Status().Main.Failures
		r.advance(30 * time.Second)
		waitFor(t, "another failure", func() bool { return r.b.Status().Main.Failures > n })
		r.settled()
	}
	waitFor(t, "goroutines to settle", func() bool { return runtime.NumGoroutine() <= before+1 })
	if c := strings.Count(r.logBuf.String(), "cannot fetch from the main server"); c > 30 {
		t.Fatalf("%d warnings for one outage", c)
	}
}

// Values Zabbix refuses (items it does not know) are logged with the keys
// of the batch; the exchange itself counts as working.
func TestBridgeLogsRefusedKeys(t *testing.T) {
	r := newRig(t, "", "")
	r.tr.SetMode(zabbixtest.Refuse)
	r.advance(0)
	waitFor(t, "refusal", func() bool { return r.b.Status().Monitor.Refused == 2 })
	if st := r.b.Status(); !st.Monitor.OK {
		t.Fatalf("status %+v", st.Monitor)
	}
	log := r.logBuf.String()
	if !strings.Contains(log, "monitoring server refused values") || !strings.Contains(log, "TST000:"+bridge.KeyBeaconDiscovery) {
		t.Fatalf("log: %s", log)
	}
}

// The main server URL may carry credentials; they appear in no status
// field and no log line: a password, nor a token given as the user alone
// (url.URL.Redacted showed that one: a black-box check).
func TestBridgeRedactsServerURL(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	_ = ln.Close()
	for _, userinfo := range []string{"bridge:s3cret-pw", "s3cret-pw"} {
		r := newRig(t, "http://"+userinfo+"@"+dead+"/", "")
		r.advance(0)
		waitFor(t, "failure", func() bool { return r.b.Status().Main.LastError != "" })
		st := r.b.Status()
		for _, s := range []string{st.Main.URL, st.Main.LastError, r.logBuf.String()} {
			if strings.Contains(s, "s3cret-pw") {
				t.Fatalf("secret leaked: %s", s)
			}
		}
		if st.Main.URL != "http://********@"+dead+"/" {
			t.Errorf("shown URL %q", st.Main.URL)
		}
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	good := bridge.Options{ServerURL: "http://127.0.0.1:1/", MonitorAddr: "127.0.0.1:10051", Host: "H",
		BeaconEvery: time.Second, GatewayEvery: time.Second, RefreshEvery: time.Second}
	for name, mut := range map[string]func(*bridge.Options){
		"url":      func(o *bridge.Options) { o.ServerURL = "ftp://x/" },
		"monitor":  func(o *bridge.Options) { o.MonitorAddr = "nohostport" },
		"host":     func(o *bridge.Options) { o.Host = "" },
		"interval": func(o *bridge.Options) { o.RefreshEvery = 0 },
	} {
		o := good
		mut(&o)
		if _, err := bridge.New(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if b, err := bridge.New(good); err != nil || b == nil {
		t.Fatal(err)
	}
}

// settled waits until the bridge has re-armed all three of its task
// timers (refresh, beacons, gateways), so advancing the clock next cannot
// race a task that is still finishing.
func (r *rig) settled() {
	deadline := time.Now().Add(10 * time.Second)
	for r.clk.Pending() < 3 {
		if time.Now().After(deadline) {
			panic("bridge never re-armed its timers")
		}
		time.Sleep(time.Millisecond) // polling a condition, bounded by the deadline
	}
}

// advance moves the fake clock once the bridge is idle with its timers
// armed.
func (r *rig) advance(d time.Duration) {
	r.settled()
	r.clk.Advance(d)
}

// Each value round reads the lists afresh: last sighting and latest
// readings reach Zabbix as item values, discovery keeps carrying the
// macros only, and an asset not yet discovered gets no values (Zabbix has
// no item for it until the next discovery).
func TestBridgeSendsFreshValues(t *testing.T) {
	r := newRig(t, "", "")
	r.advance(0)
	waitFor(t, "discovery", func() bool { return r.value(bridge.KeyGatewayDiscovery)() != "" })
	seen := r.clk.Now().Add(-30 * time.Second).UnixMilli()
	r.main.set(http.StatusOK, fmt.Sprintf(`{"data":[{"{#ASSET_UID}":"SEN-H1-1","{#MAC}":"C30000000A01","{#NAME}":"Fridge",`+
		`"type":"sensor","last_seen":%d,"temperature":4.25,"humidity":55.5,"battery_mv":2950},`+
		`{"{#ASSET_UID}":"NEW-1","{#MAC}":"C30000000A05","{#NAME}":"New","last_seen":%d}]}`, seen, seen))
	r.advance(60 * time.Second)
	waitFor(t, "beacon values", func() bool { return r.value(bridge.KeyCacheAge)() != "" })
	for key, want := range map[string]string{
		bridge.AssetKey(bridge.KindBeacon, bridge.MetricLastSeenAge, "SEN-H1-1"): "90",
		bridge.AssetKey(bridge.KindBeacon, bridge.MetricTemperature, "SEN-H1-1"): "4.25",
		bridge.AssetKey(bridge.KindBeacon, bridge.MetricHumidity, "SEN-H1-1"):    "55.5",
		bridge.AssetKey(bridge.KindBeacon, bridge.MetricBattery, "SEN-H1-1"):     "2950",
		bridge.AssetKey(bridge.KindBeacon, bridge.MetricLastSeenAge, "NEW-1"):    "",
	} {
		if got := r.value(key)(); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	if got := r.value(bridge.KeyBeaconDiscovery)(); strings.Contains(got, "temperature") || strings.Contains(got, "NEW-1") {
		t.Errorf("discovery changed by a value round: %s", got)
	}
}

// TestBridgeValuesFollowRenamesAndRemovals: a value round sends the MAC and
// name the main server lists now, and online = 0 for a discovered asset it
// no longer lists; they went out as cached until the hourly refresh, a
// deleted gateway reading online all the while (a black-box check against
// Zabbix 6.0). The refresh that drops it from discovery sends 0 first, so
// Zabbix keeps 0 as its last value.
func TestBridgeValuesFollowRenamesAndRemovals(t *testing.T) {
	r := newRig(t, "", "")
	r.main.set(http.StatusOK, `{"data":[{"{#ASSET_UID}":"SEN-H1-1","{#MAC}":"C30000000A01","{#NAME}":"Fridge"},`+
		`{"{#ASSET_UID}":"SEN-H1-2","{#MAC}":"C30000000A02","{#NAME}":"Freezer"}]}`)
	r.advance(0)
	waitFor(t, "discovery", func() bool { return r.value(bridge.KeyGatewayDiscovery)() != "" })
	r.main.set(http.StatusOK, `{"data":[{"{#ASSET_UID}":"SEN-H1-1","{#MAC}":"C30000000B10","{#NAME}":"Fridge renamed"}]}`)
	r.advance(60 * time.Second)
	online2 := bridge.AssetKey(bridge.KindBeacon, bridge.MetricOnline, "SEN-H1-2")
	waitFor(t, "the removed beacon offline", func() bool { return r.value(online2)() == "0" })
	for key, want := range map[string]string{
		bridge.AssetKey(bridge.KindBeacon, bridge.MetricMAC, "SEN-H1-1"):    "C30000000B10",
		bridge.AssetKey(bridge.KindBeacon, bridge.MetricName, "SEN-H1-1"):   "Fridge renamed",
		bridge.AssetKey(bridge.KindBeacon, bridge.MetricOnline, "SEN-H1-1"): "1",
	} {
		if got := r.value(key)(); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	// Only online goes out for it: its name and MAC stay as last sent.
	for _, v := range r.tr.Values() {
		if strings.HasSuffix(v.Key, "[SEN-H1-2]") && v.Key != online2 && v.Clock == r.clk.Now().Unix() {
			t.Errorf("value for the removed beacon: %+v", v)
		}
	}
}

// twoDiscoveredBeforeARefresh is a bridge whose value rounds come every
// 25 minutes (never at the hourly refresh), with SEN-H1-1 and SEN-H1-2
// discovered and the round at 50 minutes sent: the next thing due is the
// refresh. It returns SEN-H1-2's online key.
func twoDiscoveredBeforeARefresh(t *testing.T) (*rig, string) {
	t.Helper()
	r := newRig(t, "", "", func(o *bridge.Options) { o.BeaconEvery, o.GatewayEvery = 25*time.Minute, 25*time.Minute })
	r.main.set(http.StatusOK, `{"data":[{"{#ASSET_UID}":"SEN-H1-1","{#MAC}":"C30000000A01","{#NAME}":"Fridge"},`+
		`{"{#ASSET_UID}":"SEN-H1-2","{#MAC}":"C30000000A02","{#NAME}":"Freezer"}]}`)
	r.advance(0)
	waitFor(t, "discovery", func() bool { return r.value(bridge.KeyGatewayDiscovery)() != "" })
	online2 := bridge.AssetKey(bridge.KindBeacon, bridge.MetricOnline, "SEN-H1-2")
	r.advance(50 * time.Minute) // value rounds at 25 and 50 min
	waitFor(t, "the second round", func() bool { return r.value(bridge.KeyCacheAge)() == "3000" })
	return r, online2
}

// TestBridgeRefreshSaysOfflineBeforeDropping: an asset removed after the
// last value round before a refresh last read online = 1 in Zabbix for
// the item's whole lost-resource lifetime; the refresh sends 0 for it
// ahead of the discovery that drops it.
func TestBridgeRefreshSaysOfflineBeforeDropping(t *testing.T) {
	r, online2 := twoDiscoveredBeforeARefresh(t)
	if got := r.value(online2)(); got != "1" {
		t.Fatalf("online before removal = %q", got)
	}
	r.main.set(http.StatusOK, `{"data":[{"{#ASSET_UID}":"SEN-H1-1","{#MAC}":"C30000000A01","{#NAME}":"Fridge"}]}`)
	n := len(r.tr.Values())
	r.advance(10 * time.Minute) // the hourly refresh, no value round between
	waitFor(t, "the refresh", func() bool { return !strings.Contains(r.value(bridge.KeyBeaconDiscovery)(), "SEN-H1-2") })
	offline, discovery := -1, -1
	for i, v := range r.tr.Values()[n:] {
		switch v.Key {
		case online2:
			if v.Value == "0" {
				offline = i
			}
		case bridge.KeyBeaconDiscovery:
			discovery = i
		}
	}
	if offline < 0 || offline > discovery {
		t.Fatalf("refresh: online=0 at %d, discovery at %d: %+v", offline, discovery, r.tr.Values()[n:])
	}
}

// TestBridgeStatusErrorFieldsAreNullBeforeAnError: last_error and
// last_error_at were left out until a first error, where docs/api.md
// lists them and the MQTT part shows null.
func TestBridgeStatusErrorFieldsAreNullBeforeAnError(t *testing.T) {
	r := newRig(t, "", "")
	r.advance(0)
	waitFor(t, "first fetch", func() bool { return r.b.Status().State == "ok" })
	data, err := json.Marshal(r.b.Status())
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Main, Monitor map[string]any
	}
	if err := json.Unmarshal(data, &struct {
		Main    *map[string]any `json:"main_server"`
		Monitor *map[string]any `json:"monitor"`
	}{&st.Main, &st.Monitor}); err != nil {
		t.Fatal(err)
	}
	for name, part := range map[string]map[string]any{"main_server": st.Main, "monitor": st.Monitor} {
		for _, k := range []string{"last_error", "last_error_at"} {
			if v, ok := part[k]; !ok || v != nil {
				t.Errorf("%s.%s = %v (present %v), want null: %s", name, k, v, ok, data)
			}
		}
		if part["ok"] != true {
			t.Errorf("%s lost its other fields: %s", name, data)
		}
	}
}

// TestBridgeRefreshRetryStillSaysOffline: the offline values go with the
// refresh's discovery; when that delivery failed, the retry compared the
// new lists with a cache the failed refresh had already replaced, found
// nothing gone, and Zabbix kept online=1 for the removed asset (a review).
func TestBridgeRefreshRetryStillSaysOffline(t *testing.T) {
	r, online2 := twoDiscoveredBeforeARefresh(t)
	r.main.set(http.StatusOK, `{"data":[{"{#ASSET_UID}":"SEN-H1-1","{#MAC}":"C30000000A01","{#NAME}":"Fridge"}]}`)
	r.tr.SetMode(zabbixtest.Close) // one missed delivery
	fails := r.b.Status().Monitor.Failures
	r.advance(10 * time.Minute) // the hourly refresh
	waitFor(t, "the refresh's delivery failed", func() bool { return r.b.Status().Monitor.Failures > fails })
	r.tr.SetMode(zabbixtest.Accept)
	waitFor(t, "the refresh retried", func() bool {
		r.advance(time.Second)
		return !strings.Contains(r.value(bridge.KeyBeaconDiscovery)(), "SEN-H1-2")
	})
	if got := r.value(online2)(); got != "0" {
		t.Fatalf("the removed beacon's last online value in Zabbix = %q, want 0", got)
	}
}

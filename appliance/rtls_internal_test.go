package appliance

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/ingest"
	"beaconhub/broker/brokertest"
	"beaconhub/store"
)

// rtlsAppliance is an appliance (not started) with feature rtls, on a
// fake clock, in a home of its own.
func rtlsAppliance(t *testing.T) (*App, *clock.Fake) {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "config"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config", "main.config.json"), []byte(`{"server_features":["rtls"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Now().Truncate(time.Second))
	a, err := New(Options{Home: home, HTTPListen: "127.0.0.1:0", MQTTListen: "127.0.0.1:0", BcryptCost: 4, Clock: clk,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Shutdown(context.Background()) })
	return a, clk
}

// A gateway created, given a new device or deleted through the registry
// (not through the map endpoints) is in the engine's site at once, with
// no clock advanced: a replaced gateway's reports were skipped until the
// next recheck, 15 s later (a review). The reload runs beside the write,
// not under the registry's lock. The periodic recheck still catches a
// site left stale, as a failed reload leaves it.
func TestRTLSSiteFollowsGatewayRegistry(t *testing.T) {
	a, clk := rtlsAppliance(t)
	if a.rtls == nil {
		t.Fatal("feature rtls built no engine")
	}
	sig := func() string { a.rtls.mu.Lock(); defer a.rtls.mu.Unlock(); return a.rtls.gateways }
	until := func(what string, ok func(string) bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !ok(sig()) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: site %q", what, sig())
			}
			time.Sleep(time.Millisecond) // polling a condition, bounded by the deadline
		}
	}
	mac, name := "AC233FA0B1C9", "Stairs"
	g, err := a.assets.CreateGateway(assets.GatewayInput{MAC: &mac, Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	until("created gateway not in the site", func(s string) bool { return strings.Contains(s, mac) })
	if _, err := a.assets.Replace(store.KindGateway, g.AssetUID, assets.ReplaceInput{MAC: "AC233FA0B1CA"}); err != nil {
		t.Fatal(err)
	}
	until("site after a device replace", func(s string) bool { return strings.Contains(s, "AC233FA0B1CA") && !strings.Contains(s, mac) })
	if _, err := a.assets.DeleteGateway(g.AssetUID); err != nil {
		t.Fatal(err)
	}
	until("deleted gateway still in the site", func(s string) bool { return !strings.Contains(s, "AC233FA0B1CA") })

	// A reload that failed leaves the site stale; the recheck repairs it.
	a.rtls.mu.Lock()
	a.rtls.gateways = "stale"
	a.rtls.mu.Unlock()
	clk.Advance(gatewayRecheck)
	deadline := time.Now().Add(5 * time.Second)
	for sig() == "stale" {
		if time.Now().After(deadline) {
			t.Fatal("the recheck never reloaded a stale site")
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, bounded by the deadline
	}
}

// A stored survey sample reaches the engine with how many readings each
// mean holds and their spread (grid's fading); an entry under a MAC that
// does not parse is dropped, and a sample stored before they were
// recorded has neither.
func TestSampleFromStore(t *testing.T) {
	mac, _ := ingest.ParseMAC("AC233FA0B1C9")
	got := sampleFromStore(store.ZoneSample{Zone: 4,
		RSSI:     map[string]float64{"AC233FA0B1C9": -61.5, "nope": -50},
		Readings: map[string]int{"AC233FA0B1C9": 2, "nope": 3},
		RSSISD:   map[string]float64{"AC233FA0B1C9": 2.5, "nope": 1}}, nil)
	if got.Zone != 4 || len(got.RSSI) != 1 || got.RSSI[mac] != -61.5 || len(got.N) != 1 || got.N[mac] != 2 || len(got.SD) != 1 || got.SD[mac] != 2.5 {
		t.Fatalf("sample %+v", got)
	}
	old := sampleFromStore(store.ZoneSample{Zone: 4, RSSI: map[string]float64{"AC233FA0B1C9": -61.5}}, nil)
	if old.N != nil || old.SD != nil || old.RSSI[mac] != -61.5 {
		t.Fatalf("sample stored without readings: %+v", old)
	}
}

// Survey samples record the device that heard them; the engine models
// the gateway, the place. After gateway 1's device is replaced (A by
// C), gateway 2's taken over by A (B out), and gateway 3 deleted, a
// sample stored before reads A's mean as C's (gateway 1 now), B's as
// A's (gateway 2 now), drops D's (gateway 3 is gone) and keeps E's (a
// gateway never registered); so does one stored (before the recording
// time was kept) after the first replace, when A was on no gateway and
// had last been on gateway 1; and one recorded before both replaces and
// stored after them (a survey during which the devices moved). Until a
// review the samples stayed under the old MACs: the old one's silence
// for good read as every tag being away from it, and the new one was
// unsurveyed.
func TestSurveyFollowsGatewayDevices(t *testing.T) {
	a, clk := rtlsAppliance(t)
	img, err := a.db.PutMapImage("image/png", []byte("png"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := a.db.PutMap(store.Map{Name: "floor", ImageID: img, Width: 100, Height: 50}, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	z, err := a.db.PutZone(store.Zone{MapID: m.ID, Name: "Ward", X2: 10, Y2: 10})
	if err != nil {
		t.Fatal(err)
	}
	const A, B, C, D, E = "AC233FA0B1A0", "AC233FA0B1B0", "AC233FA0B1C0", "AC233FA0B1D0", "AC233FA0B1E0"
	var gws []assets.GatewayView
	for i, mac := range []string{A, B, D} {
		name := fmt.Sprintf("G%d", i+1)
		g, err := a.assets.CreateGateway(assets.GatewayInput{MAC: &mac, Name: &name})
		if err != nil {
			t.Fatal(err)
		}
		gws = append(gws, g)
	}
	clk.Advance(time.Minute)
	store1 := func() {
		t.Helper()
		if _, _, _, err := a.db.AddZoneSamples([]store.ZoneSample{{Zone: z.ID, AssetUID: "WCH-1",
			RSSI: map[string]float64{A: -60, B: -70, D: -80, E: -90}, Readings: map[string]int{A: 3, B: 4, D: 5, E: 6}}}, clk.Now()); err != nil {
			t.Fatal(err)
		}
	}
	store1()
	recorded := clk.Now().UnixMilli()
	clk.Advance(time.Minute)
	if _, err := a.assets.Replace(store.KindGateway, gws[0].AssetUID, assets.ReplaceInput{MAC: C}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	store1() // recorded before the replace, stored after
	clk.Advance(time.Minute)
	if _, err := a.assets.Replace(store.KindGateway, gws[1].AssetUID, assets.ReplaceInput{MAC: A}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.assets.DeleteGateway(gws[2].AssetUID); err != nil {
		t.Fatal(err)
	}
	// A survey recorded before both replaces and stored after them: its
	// recording time decides (at its store time A is gateway 2's, and
	// it was read so: a review).
	if _, _, _, err := a.db.AddZoneSamples([]store.ZoneSample{{Zone: z.ID, AssetUID: "WCH-1", RecordedAt: recorded,
		RSSI: map[string]float64{A: -60, B: -70, D: -80, E: -90}, Readings: map[string]int{A: 3, B: 4, D: 5, E: 6}}}, clk.Now()); err != nil {
		t.Fatal(err)
	}
	got, err := a.rtls.engineSamples()
	if err != nil {
		t.Fatal(err)
	}
	mac := func(s string) [6]byte { p, _ := ingest.ParseMAC(s); return p }
	if len(got) != 3 {
		t.Fatalf("%d samples, want 3", len(got))
	}
	// The second was stored when A was on no gateway: it was last on
	// gateway 1.
	want := map[[6]byte]float64{mac(C): -60, mac(A): -70, mac(E): -90}
	wantN := map[[6]byte]int{mac(C): 3, mac(A): 4, mac(E): 6}
	for i, sm := range got {
		if !maps.Equal(sm.RSSI, want) || !maps.Equal(sm.N, wantN) {
			t.Fatalf("sample %d: rssi %v readings %v, want %v and %v", i, sm.RSSI, sm.N, want, wantN)
		}
	}
}

// heardBy's edge cases, at a window's recording time (exact) and, for
// samples stored before that was kept, at the store time: a device on
// two gateways in turn stands for each in its own time; between its
// spells, heard, it was off the site (dropped: a replaced one on a
// shelf), stored, it counts for the gateway it was last on; before its
// first spell it counts for that gateway if it had no device then
// (surveyed before it was registered: a review), and is dropped if it
// had (a spare powered on a bench: a review); of two spells begun in one
// millisecond the later assignment wins (a review); one never on a
// gateway is kept; one whose gateway has no device now is dropped; where
// a sample names both the old and the new device of one gateway, the
// new one's own mean wins.
func TestHeardBy(t *testing.T) {
	mac := func(s string) [6]byte { p, _ := ingest.ParseMAC(s); return p }
	gws := []assets.GatewayView{{ID: 1, MAC: "AC233FA0B1A0"}, {ID: 2, MAC: "AC233FA0B1B0"}, {ID: 3, MAC: ""}, {ID: 4, MAC: "AC233FA0B1D1"}}
	spells := []assets.GatewaySpell{
		{ID: 2, MAC: "AC233FA0B1F0", GatewayID: 2, From: 300, To: 400},
		{ID: 1, MAC: "AC233FA0B1F0", GatewayID: 1, From: 100, To: 200},
		{ID: 3, MAC: "AC233FA0B1A0", GatewayID: 1, From: 200},
		{ID: 4, MAC: "AC233FA0B1B0", GatewayID: 2, From: 400},
		{ID: 5, MAC: "AC233FA0B1C0", GatewayID: 3, From: 0, To: 50},
		// put on gateway 1 and taken to gateway 4 in one millisecond,
		// then replaced there
		{ID: 7, MAC: "AC233FA0B1D0", GatewayID: 4, From: 600, To: 700},
		{ID: 6, MAC: "AC233FA0B1D0", GatewayID: 1, From: 600, To: 600},
		{ID: 8, MAC: "AC233FA0B1D1", GatewayID: 4, From: 700},
	}
	at := heardBy(gws, spells)
	for _, c := range []struct {
		mac   string
		t     int64
		exact bool
		want  string // "" dropped
	}{
		{"AC233FA0B1F0", 150, true, "AC233FA0B1A0"},  // on gateway 1 then
		{"AC233FA0B1F0", 250, false, "AC233FA0B1A0"}, // stored between spells: last on gateway 1
		{"AC233FA0B1F0", 250, true, ""},              // heard between spells: off the site
		{"AC233FA0B1F0", 350, true, "AC233FA0B1B0"},  // on gateway 2 then
		{"AC233FA0B1F0", 500, false, "AC233FA0B1B0"}, // stored after: last on gateway 2
		{"AC233FA0B1F0", 500, true, ""},              // heard after: off the site
		{"AC233FA0B1A0", 150, true, ""},              // before its first spell, gateway 1 had F0: off the site
		{"AC233FA0B1F0", 50, true, "AC233FA0B1A0"},   // before it was on any: its first gateway's
		{"AC233FA0B1F0", 50, false, "AC233FA0B1A0"},
		{"AC233FA0B1E0", 50, true, "AC233FA0B1E0"}, // never on one
		{"AC233FA0B1C0", 10, true, ""},             // gateway 3 has no device now
		{"AC233FA0B1A0", 250, true, "AC233FA0B1A0"},
		{"AC233FA0B1D0", 650, true, "AC233FA0B1D1"},  // gateway 4's, not 1's
		{"AC233FA0B1D0", 800, false, "AC233FA0B1D1"}, // last on gateway 4
	} {
		got, ok := at(mac(c.mac), c.t, c.exact)
		if c.want == "" {
			if ok {
				t.Errorf("%s at %d (exact %v) read as %X, want dropped", c.mac, c.t, c.exact, got)
			}
			continue
		}
		if !ok || got != mac(c.want) {
			t.Errorf("%s at %d (exact %v) read as %X (%v), want %s", c.mac, c.t, c.exact, got, ok, c.want)
		}
	}
	s := sampleFromStore(store.ZoneSample{Zone: 1, CreatedAt: 250, RSSI: map[string]float64{"AC233FA0B1F0": -80, "AC233FA0B1A0": -60}}, at)
	if len(s.RSSI) != 1 || s.RSSI[mac("AC233FA0B1A0")] != -60 {
		t.Fatalf("old and new device of one gateway: %v, want the new one's -60 alone", s.RSSI)
	}
	// Recorded on gateway 2, stored after the device was off the site:
	// the recording time decides.
	s = sampleFromStore(store.ZoneSample{Zone: 1, CreatedAt: 500, RecordedAt: 350, RSSI: map[string]float64{"AC233FA0B1F0": -70}}, at)
	if len(s.RSSI) != 1 || s.RSSI[mac("AC233FA0B1B0")] != -70 || s.At != 350 {
		t.Fatalf("recorded at 350, stored at 500: %v (at %d), want gateway 2's device", s.RSSI, s.At)
	}
}

// The engine asks the pipeline when a gateway last sent anything: a
// status heartbeat, published over real MQTT, counts (a gateway still
// talking is never judged down, docs/rtls.md).
func TestRTLSSeesGatewayHeartbeats(t *testing.T) {
	a, clk := rtlsAppliance(t)
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	gw := [6]byte{0xAC, 0x23, 0x3F, 0xA0, 0xB1, 0xC5}
	if v := a.gatewaySeen(gw); v != 0 {
		t.Fatalf("seen %d before any message", v)
	}
	cfg := a.Live().Get()
	brokertest.Pub(t, a.MQTTAddr(), cfg.MQTTUser, cfg.MQTTPass, "-q", "1", "-i", "AC233FA0B1C5", "-t", "gw/AC233FA0B1C5/status",
		"-m", `{"ts":1732290000123,"ip":"192.0.2.10","fw":"1.4.2","uptime":86400}`)
	if v, want := a.gatewaySeen(gw), clk.Now().UnixMilli(); v != want {
		t.Fatalf("seen %d after a heartbeat, want %d", v, want)
	}
}

// TestTrackingStartStopRecordsWhatRuns: a start or a stop and its record
// are one step, under the lock the other takes, so racing each other
// they leave the recorded choice what the engine runs and a restart
// resumes it. They changed the engine and recorded the change in two
// steps, and a stop between a start's two left the engine stopped with
// the start recorded (a review).
func TestTrackingStartStopRecordsWhatRuns(t *testing.T) {
	a, _ := rtlsAppliance(t)
	windows := 0
	betweenRunAndRecord = func(c *rtlsControl) {
		windows++
		if c.runMu.TryLock() {
			c.runMu.Unlock()
			t.Error("between the engine's change and its record, a start or stop could run")
		}
	}
	t.Cleanup(func() { betweenRunAndRecord = nil })
	if err := a.rtls.Start("strongest"); err != nil {
		t.Fatal(err)
	}
	a.rtls.Stop()
	if windows != 2 {
		t.Fatalf("the hook ran %d times, want 2", windows)
	}
	if rec, _ := a.db.RTLSAlgorithm(); rec != "" || a.rtls.Status().Running {
		t.Fatalf("after a stop: recorded %q, running %v", rec, a.rtls.Status().Running)
	}
}

// A full server whose bridge URL is the default follows the address it
// serves on: with another port the default reached another program, or
// nothing (a review). A URL set otherwise is kept.
func TestBridgeFollowsTheListener(t *testing.T) {
	for _, explicit := range []bool{false, true} {
		home := t.TempDir()
		if err := os.MkdirAll(filepath.Join(home, "config"), 0o750); err != nil {
			t.Fatal(err)
		}
		cfg := `{"server_features":["bridge","sensors"],"server_bridge_monitor_host":"127.0.0.1"`
		if explicit {
			cfg += `,"server_bridge_server_url":"http://127.0.0.1:1/"`
		}
		if err := os.WriteFile(filepath.Join(home, "config", "main.config.json"), []byte(cfg+"}"), 0o600); err != nil {
			t.Fatal(err)
		}
		a, err := New(Options{Home: home, HTTPListen: "127.0.0.1:0", MQTTListen: "127.0.0.1:0", BcryptCost: 4,
			Clock: clock.NewFake(time.Now()), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Start(); err != nil {
			t.Fatal(err)
		}
		got, want := a.bridge.Status().Main.URL, "http://"+a.HTTPAddr()+"/"
		if explicit {
			want = "http://127.0.0.1:1/"
		}
		_ = a.Shutdown(context.Background())
		if got != want {
			t.Errorf("explicit URL %v: the bridge fetches from %s, want %s", explicit, got, want)
		}
	}
}

// A device heard by a survey while off the site says nothing of the
// gateway it goes on later (a review, both end to end on the binary): a
// replacement powered on a bench elsewhere, then fitted to gateway 1,
// replaced gateway 1's own reading in the windows that heard both; an
// old device left on a shelf, then reused on gateway 3, replaced gateway
// 3's. Each window reads the device on each gateway when it was
// recorded.
func TestHeardByIgnoresDevicesOffTheSite(t *testing.T) {
	mac := func(s string) [6]byte { p, _ := ingest.ParseMAC(s); return p }
	// Bench: OLD on gateway 1 from 100, NEW heard on a bench at 150,
	// fitted to gateway 1 at 200.
	gws := []assets.GatewayView{{ID: 1, MAC: "AA0000000016"}}
	spells := []assets.GatewaySpell{
		{ID: 1, MAC: "AA0000000011", GatewayID: 1, From: 100, To: 200},
		{ID: 2, MAC: "AA0000000016", GatewayID: 1, From: 200},
	}
	s := sampleFromStore(store.ZoneSample{Zone: 1, RSSI: map[string]float64{"AA0000000011": -55, "AA0000000016": -88}, CreatedAt: 300, RecordedAt: 150}, heardBy(gws, spells))
	if len(s.RSSI) != 1 || s.RSSI[mac("AA0000000016")] != -55 {
		t.Fatalf("spare on a bench: %v, want gateway 1 (now AA0000000016) at OLD's -55 alone", s.RSSI)
	}
	// Shelf: A on gateway 1 until 200, heard on a shelf at 250, fitted
	// to gateway 3 (C's until then) at 300.
	gws = []assets.GatewayView{{ID: 1, MAC: "AA000000000B"}, {ID: 3, MAC: "AA000000000A"}}
	spells = []assets.GatewaySpell{
		{ID: 1, MAC: "AA000000000A", GatewayID: 1, From: 100, To: 200},
		{ID: 2, MAC: "AA000000000B", GatewayID: 1, From: 200},
		{ID: 3, MAC: "AA000000000C", GatewayID: 3, From: 100, To: 300},
		{ID: 4, MAC: "AA000000000A", GatewayID: 3, From: 300},
	}
	s = sampleFromStore(store.ZoneSample{Zone: 3, RSSI: map[string]float64{"AA000000000A": -81, "AA000000000C": -60}, CreatedAt: 400, RecordedAt: 250}, heardBy(gws, spells))
	if len(s.RSSI) != 1 || s.RSSI[mac("AA000000000A")] != -60 {
		t.Fatalf("old device on a shelf: %v, want gateway 3 (now AA000000000A) at C's -60 alone", s.RSSI)
	}
}

func macOf(s string) [6]byte { p, _ := ingest.ParseMAC(s); return p }

// Gateway 1 is registered at 500 (from the discovery list) with X,
// which the survey at 100 heard where gateway 1 stands; X is replaced by
// Y at 600, a spare powered on a bench during that survey. Y was heard
// before its first spell while gateway 1 had no device yet, but X went
// on it before Y did: Y's reading was off the site, and, its key gateway
// 1's MAC now, it beat X's real one (a review).
func TestHeardByBenchSpareBeforeRegistration(t *testing.T) {
	gws := []assets.GatewayView{{ID: 1, MAC: "AA00000000B1"}}
	spells := []assets.GatewaySpell{
		{ID: 1, MAC: "AA00000000A1", GatewayID: 1, From: 500, To: 600},
		{ID: 2, MAC: "AA00000000B1", GatewayID: 1, From: 600},
	}
	s := sampleFromStore(store.ZoneSample{Zone: 1, CreatedAt: 200, RecordedAt: 100,
		RSSI: map[string]float64{"AA00000000A1": -60, "AA00000000B1": -88}}, heardBy(gws, spells))
	if len(s.RSSI) != 1 || s.RSSI[macOf("AA00000000B1")] != -60 {
		t.Fatalf("bench spare before registration: %v, want gateway 1 (now B1) at X's -60", s.RSSI)
	}
}

// A sample whose two keys come to one MAC, neither of them that MAC,
// reads the same every time, its mean, count and spread one device's:
// map order chose each apart, and a reload could change the model (a
// review: all 8 combinations in 500 reads).
func TestSampleFromStoreIsDeterministic(t *testing.T) {
	// O1 replaced by O2 replaced by N during a survey stored (before
	// recorded_at was kept) after; a window heard O1 and O2, not N. (A
	// sample with its recording time cannot bring two keys to one MAC.)
	gws := []assets.GatewayView{{ID: 1, MAC: "AA00000000E1"}}
	spells := []assets.GatewaySpell{
		{ID: 1, MAC: "AA00000000C1", GatewayID: 1, From: 100, To: 200},
		{ID: 2, MAC: "AA00000000D1", GatewayID: 1, From: 200, To: 300},
		{ID: 3, MAC: "AA00000000E1", GatewayID: 1, From: 300},
	}
	at := heardBy(gws, spells)
	zs := store.ZoneSample{Zone: 1, CreatedAt: 400,
		RSSI:     map[string]float64{"AA00000000C1": -80, "AA00000000D1": -60},
		Readings: map[string]int{"AA00000000C1": 2, "AA00000000D1": 12},
		RSSISD:   map[string]float64{"AA00000000C1": 7, "AA00000000D1": 1}}
	if seen := readings500(zs, at, macOf("AA00000000E1")); len(seen) != 1 {
		t.Errorf("legacy: 500 reads of one sample gave %d outcomes (RSSI N SD): %v", len(seen), seen)
	}
}

// readings500 reads zs 500 times and counts each outcome of gateway q's
// mean, count and spread.
func readings500(zs store.ZoneSample, at gatewayAt, q [6]byte) map[string]int {
	seen := map[string]int{}
	for range 500 {
		s := sampleFromStore(zs, at)
		seen[fmt.Sprint(s.RSSI[q], s.N[q], s.SD[q])]++
	}
	return seen
}

// A device put on gateway 1 and taken to gateway 4 in one millisecond
// was never on gateway 1: heard before, it counts for gateway 4 (a
// review).
func TestHeardBySkipsSpellsThatNeverLasted(t *testing.T) {
	gws := []assets.GatewayView{{ID: 1, MAC: "AA00000000E1"}, {ID: 4, MAC: "AA00000000D4"}}
	spells := []assets.GatewaySpell{
		{ID: 6, MAC: "AA00000000D4", GatewayID: 1, From: 600, To: 600},
		{ID: 7, MAC: "AA00000000D4", GatewayID: 4, From: 600},
		{ID: 8, MAC: "AA00000000E1", GatewayID: 1, From: 650},
	}
	got, ok := heardBy(gws, spells)(macOf("AA00000000D4"), 500, true)
	if !ok || got != macOf("AA00000000D4") {
		t.Fatalf("D4 heard at 500, before it went (for good) on gateway 4: %X %v, want gateway 4's D4", got, ok)
	}
}

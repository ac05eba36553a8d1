package appliance_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"beaconhub/appliance"
	"beaconhub/appliance/bridge"
	"beaconhub/appliance/bridge/zabbixtest"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/status"
)

// waitAdvancing advances clk by step until cond holds, within a real-time
// deadline (the bridge works on its own goroutine).
func waitAdvancing(t *testing.T, what string, clk *clock.Fake, step time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		clk.Advance(step)
		time.Sleep(5 * time.Millisecond) // polling a condition, bounded by the deadline
	}
}

// A bridge-only process outlives its main server: while the main server is
// stopped it reports main_up=0 and pauses per-asset values; when the main
// server comes back on the same address it recovers by itself.
func TestBridgeOnlySurvivesMainServerRestart(t *testing.T) {
	main := startApp(t, nil)
	addr, home := main.HTTPAddr(), main.Paths().Home
	tr := zabbixtest.NewTrapper(t)
	clk := clock.NewFake(time.Unix(1795331000, 0))
	b := startBridgeOnly(t, "http://"+addr+"/", tr.Addr, "BRIDGE01", clk, nil).Bridge()
	last := func(key string) string { v, _ := tr.Last(key); return v.Value }
	macKey := bridge.AssetKey(bridge.KindBeacon, bridge.MetricMAC, "SEN-A1-1")

	waitAdvancing(t, "first values", clk, 0, func() bool { return b.Status().OK && last(bridge.KeyBeaconDiscovery) != "" })
	waitAdvancing(t, "beacon values", clk, time.Second, func() bool { return last(macKey) == "C30000000A01" })

	if err := main.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitAdvancing(t, "main_down", clk, time.Second, func() bool { return b.Status().State == "main_down" })
	waitAdvancing(t, "main_up=0 sent", clk, time.Second, func() bool { return last(bridge.KeyMainUp) == "0" })
	n := len(tr.Values())
	clk.Advance(time.Second)
	waitAdvancing(t, "a round while down", clk, 0, func() bool { return len(tr.Values()) > n })
	for _, v := range tr.Values()[n:] {
		if v.Key == macKey {
			t.Fatal("per-asset value sent while the main server was down")
		}
	}

	// The same home and address: the main server restarts, the bridge
	// does not.
	main2, err := appliance.New(appliance.Options{Home: home, HTTPListen: addr, MQTTListen: "127.0.0.1:0",
		BcryptCost: 4, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = main2.Shutdown(context.Background()) })
	if err := main2.Start(); err != nil {
		t.Fatal(err)
	}
	waitAdvancing(t, "recovery", clk, time.Second, func() bool { return b.Status().OK })
	waitAdvancing(t, "main_up=1 sent", clk, time.Second, func() bool { return last(bridge.KeyMainUp) == "1" })
	n = len(tr.Values())
	waitAdvancing(t, "asset values again", clk, time.Second, func() bool {
		for _, v := range tr.Values()[n:] {
			if v.Key == macKey && v.Value == "C30000000A01" {
				return true
			}
		}
		return false
	})
	if st := b.Status(); st.Main.Failures != 0 || st.Main.Beacons != 1 {
		t.Fatalf("status after recovery %+v", st.Main)
	}
}

// Inside the full server the bridge's state is on the status dashboard,
// and a failing bridge is an issue there.
func TestDashboardShowsBridge(t *testing.T) {
	main := startApp(t, nil)
	tr := zabbixtest.NewTrapper(t)
	_, port := splitHostPort(t, tr.Addr)
	clk := clock.NewFake(time.Unix(1795331000, 0))
	home := t.TempDir()
	cfg := map[string]any{"server_features": []string{"bridge", "service"},
		"server_bridge_server_url": "http://" + main.HTTPAddr() + "/", "server_bridge_monitor_host": "127.0.0.1",
		"server_bridge_monitor_port": port, "server_bridge_cache_update_interval": 10}
	data, _ := json.Marshal(cfg)
	if err := os.MkdirAll(filepath.Join(home, "config"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config", "main.config.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	full, err := appliance.New(appliance.Options{Home: home, HTTPListen: "127.0.0.1:0", MQTTListen: "127.0.0.1:0",
		BcryptCost: 4, Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = full.Shutdown(context.Background()) })
	if err := full.Start(); err != nil {
		t.Fatal(err)
	}
	tok := adminToken(t, full)
	dashboard := func() status.Dashboard {
		req, _ := http.NewRequest("GET", "http://"+full.HTTPAddr()+"/api/v1/status/dashboard", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var env struct {
			Payload status.Dashboard `json:"payload"`
		}
		if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&env) != nil {
			t.Fatalf("dashboard: %d", resp.StatusCode)
		}
		return env.Payload
	}
	hasIssue := func(d status.Dashboard) bool {
		for _, is := range d.Issues {
			if is.Key == status.BridgeIssueKey {
				return true
			}
		}
		return false
	}
	waitAdvancing(t, "bridge ok on the dashboard", clk, 0, func() bool {
		d := dashboard()
		return d.Bridge != nil && d.Bridge.OK && d.Bridge.Main.Beacons == 1
	})
	if d := dashboard(); hasIssue(d) {
		t.Fatalf("issue while ok: %+v", d.Issues)
	}
	tr.SetMode(zabbixtest.Close)
	waitAdvancing(t, "bridge_down issue", clk, time.Second, func() bool {
		d := dashboard()
		return d.Bridge != nil && d.Bridge.State == "monitor_down" && hasIssue(d) && !d.OK
	})
}

// TestASecondBridgeOnTheSameHomeIsRefused: the database's lock keeps a
// second process off a home; a bridge-only box keeps no database, and two
// bridges on one home both fed the monitoring server (a black-box check).
func TestASecondBridgeOnTheSameHomeIsRefused(t *testing.T) {
	home := t.TempDir()
	data, _ := json.Marshal(map[string]any{"server_features": []string{"bridge"},
		"server_bridge_server_url": "http://127.0.0.1:1/", "server_bridge_monitor_host": "127.0.0.1"})
	if err := os.MkdirAll(filepath.Join(home, "config"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config", "main.config.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	open := func() (*appliance.App, error) {
		return appliance.New(appliance.Options{Home: home, HTTPListen: "127.0.0.1:0", BcryptCost: 4,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}
	first, err := open()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := open(); err == nil || !strings.Contains(err.Error(), "another beaconhub") {
		t.Fatalf("a second bridge on the home: %v", err)
	}
	if err := first.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	again, err := open()
	if err != nil {
		t.Fatalf("after the first stopped: %v", err)
	}
	_ = again.Shutdown(context.Background())

	// Nor beside a full server running the bridge on that home (a
	// review): only the database's lock was taken there.
	full := startAppWith(t, appRig{extra: map[string]any{"server_features": []string{"bridge", "service"},
		"server_bridge_server_url": "http://127.0.0.1:1/", "server_bridge_monitor_host": "127.0.0.1"}, home: home})
	if err := os.WriteFile(filepath.Join(home, "config", "main.config.json"), data, 0o600); err != nil {
		t.Fatal(err) // the bridge-only configuration again, for the second process
	}
	if _, err := open(); err == nil || !strings.Contains(err.Error(), "another beaconhub") {
		t.Fatalf("a bridge beside the full server: %v", err)
	}
	_ = full.Shutdown(context.Background())
}

package appliance_test

import (
	"beaconhub/broker/brokertest"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"beaconhub/appliance"
	"beaconhub/appliance/bridge"
	"beaconhub/appliance/bridge/zabbixtest"
	"beaconhub/appliance/clock"
	"beaconhub/store"
)

// startBridgeOnly starts a bridge-only appliance (server_features
// ["bridge"]) that feeds the main server at mainURL to the trapper at
// monitor (host:port).
func startBridgeOnly(t *testing.T, mainURL, monitor, serverID string, clk clock.Clock, logger *slog.Logger) *appliance.App {
	t.Helper()
	host, port := splitHostPort(t, monitor)
	home := t.TempDir()
	cfg := map[string]any{
		"server_id":                           serverID,
		"server_features":                     []string{"bridge"},
		"server_bridge_server_url":            mainURL,
		"server_bridge_monitor_host":          host,
		"server_bridge_monitor_port":          port,
		"server_bridge_delay_beacon":          1,
		"server_bridge_delay_gateway":         1,
		"server_bridge_cache_update_interval": 10,
	}
	data, _ := json.Marshal(cfg)
	if err := os.MkdirAll(filepath.Join(home, "config"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config", "main.config.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	app, err := appliance.New(appliance.Options{Home: home, HTTPListen: "127.0.0.1:0", Clock: clk, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Shutdown(t.Context()) })
	if app.DB() != nil {
		t.Fatal("bridge-only mode opened a database")
	}
	if _, err := os.Stat(filepath.Join(home, "db")); !os.IsNotExist(err) {
		t.Fatalf("bridge-only mode created a database directory: %v", err)
	}
	if app.Bridge() == nil {
		t.Fatal("bridge not built")
	}
	if err := app.Start(); err != nil {
		t.Fatal(err)
	}
	if app.MQTTAddr() != "" {
		t.Fatal("bridge-only mode started the MQTT broker")
	}
	return app
}

func splitHostPort(t *testing.T, addr string) (string, int) {
	t.Helper()
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			p, err := strconv.Atoi(addr[i+1:])
			if err != nil {
				t.Fatal(err)
			}
			return addr[:i], p
		}
	}
	t.Fatalf("no port in %s", addr)
	return "", 0
}

// The real peer: a Zabbix 6.0 server from Debian's packages imports the
// shipped template; a bridge-only appliance feeds it from a real main
// server; Zabbix's own API then shows the discovered items holding the
// values sent.
func TestBridgeFeedsRealZabbix(t *testing.T) {
	const anyValue = "<any>" // the value changes with time: its presence is the check
	zs := zabbixtest.Start(t)
	zs.ImportTemplate(filepath.Join("..", "packaging", "zabbix", "beaconhub_template.yaml"))
	hostID := zs.CreateHost("BRIDGE01", "BeaconHub by bridge")
	zs.ReloadConfigCache()

	main := startApp(t, nil) // beacon SEN-A1-1 (C30000000A01), gateway GW-A1-1 (AC233FA0B1C2)
	if err := main.DB().CreateBeacon(&store.Beacon{AssetUID: "WAT-A1-2", MAC: "C30000000A02", Name: "Watch 2", Type: "watch", Active: true}); err != nil {
		t.Fatal(err)
	}
	c := main.Live().Get()
	brokertest.Pub(t, main.MQTTAddr(), c.MQTTUser, c.MQTTPass, "-q", "1", "-i", "AC233FA0B1C2", "-t", "gw/AC233FA0B1C2/adv1",
		"-m", `{"reports":[{"mac":"C30000000A01","rssi":-70,"temperature":4.25,"vbatt":2950}]}`)
	startBridgeOnly(t, "http://"+main.HTTPAddr()+"/", zs.TrapperAddr, "BRIDGE01", nil, nil)

	want := map[string]string{
		bridge.AssetKey(bridge.KindBeacon, bridge.MetricOnline, "SEN-A1-1"):      "1",
		bridge.AssetKey(bridge.KindBeacon, bridge.MetricMAC, "SEN-A1-1"):         "C30000000A01",
		bridge.AssetKey(bridge.KindBeacon, bridge.MetricName, "SEN-A1-1"):        "Fridge",
		bridge.AssetKey(bridge.KindBeacon, bridge.MetricMAC, "WAT-A1-2"):         "C30000000A02",
		bridge.AssetKey(bridge.KindGateway, bridge.MetricOnline, "GW-A1-1"):      "1",
		bridge.AssetKey(bridge.KindGateway, bridge.MetricMAC, "GW-A1-1"):         "AC233FA0B1C2",
		bridge.AssetKey(bridge.KindGateway, bridge.MetricName, "GW-A1-1"):        "Kitchen",
		bridge.AssetKey(bridge.KindBeacon, bridge.MetricTemperature, "SEN-A1-1"): "4.25",
		bridge.AssetKey(bridge.KindBeacon, bridge.MetricBattery, "SEN-A1-1"):     "2950",
		bridge.AssetKey(bridge.KindBeacon, bridge.MetricLastSeenAge, "SEN-A1-1"): anyValue,
		bridge.KeyMainUp:   "1",
		bridge.KeyBeacons:  "2",
		bridge.KeyGateways: "1",
	}
	// Discovery creates the items; a configuration cache reload makes the
	// trapper accept values for them; the bridge sends every second.
	deadline := time.Now().Add(3 * time.Minute)
	missing := map[string]string{}
	for {
		items, err := zs.Items(hostID)
		if err != nil {
			t.Fatal(err)
		}
		byKey := map[string]zabbixtest.Item{}
		for _, it := range items {
			byKey[it.Key] = it
		}
		clear(missing)
		for key, val := range want {
			it, ok := byKey[key]
			if !ok {
				missing[key] = "no item"
				continue
			}
			if it.Flags == "0" && key != bridge.KeyMainUp && key != bridge.KeyBeacons && key != bridge.KeyGateways {
				t.Fatalf("%s exists but was not created by discovery (flags %s)", key, it.Flags)
			}
			hist, err := zs.History(it.ID, it.ValueType)
			if err != nil {
				t.Fatal(err)
			}
			if len(hist) == 0 || (val != anyValue && hist[0].Value != val) {
				missing[key] = "history " + strconv.Quote(val) + " not there"
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Zabbix never held the values: %v\nzabbix_server log:\n%s", missing, zs.Log())
		}
		zs.ReloadConfigCache()
		time.Sleep(2 * time.Second) // polling the real server, bounded by the deadline
	}
}

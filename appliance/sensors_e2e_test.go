package appliance_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"beaconhub/appliance"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/sensors"
	"beaconhub/broker/brokertest"
	"beaconhub/store"
)

// The sensor-condition monitor is wired into the running appliance: a
// reading outside the beacon's range published over MQTT opens a range
// condition, one back in range resolves it.
func TestSensorRangeConditionEndToEnd(t *testing.T) {
	home := t.TempDir()
	data, _ := json.Marshal(map[string]any{"server_features": []string{"service"}})
	if err := os.MkdirAll(filepath.Join(home, "config"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config", "main.config.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Now())
	app, err := appliance.New(appliance.Options{Home: home, HTTPListen: "127.0.0.1:0", MQTTListen: "127.0.0.1:0",
		BcryptCost: 4, Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Shutdown(context.Background()) })
	db := app.DB()
	if err := db.CreateBeacon(&store.Beacon{AssetUID: "SEN-A1-1", MAC: "C30000000A01", Name: "Fridge", Type: "sensor", Active: true,
		TemperatureRange: &store.Range{Min: 2, Max: 8}}); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateGateway(&store.Gateway{AssetUID: "GW-A1-1", MAC: "AC233FA0B1C2", Name: "Kitchen"}); err != nil {
		t.Fatal(err)
	}
	if err := app.Registry().Reload(); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(); err != nil {
		t.Fatal(err)
	}
	conds := app.SensorConditions()
	if conds == nil {
		t.Fatal("no sensor conditions with feature sensors on")
	}
	clk.Advance(sensors.NotSeenEvery) // the monitor picks up the new beacon's range
	c := app.Live().Get()
	pub := func(temp string) {
		brokertest.Pub(t, app.MQTTAddr(), c.MQTTUser, c.MQTTPass, "-q", "1", "-i", "AC233FA0B1C2", "-t", "gw/AC233FA0B1C2/adv1",
			"-m", `{"reports":[{"mac":"C30000000A01","rssi":-70,"temperature":`+temp+`}]}`)
	}
	pub("9.5") // QoS 1: acknowledged means the batch, and its records, are durable
	if !conds.IsActive(sensors.CondRange, "SEN-A1-1") {
		t.Fatal("out-of-range reading did not open the condition")
	}
	pub("5")
	if conds.IsActive(sensors.CondRange, "SEN-A1-1") {
		t.Fatal("reading back in range did not resolve it")
	}
	recs, err := conds.Records("", 10)
	if err != nil || len(recs) != 2 || recs[0].Phase != store.HealthActive || recs[1].Phase != store.HealthResolved {
		t.Fatalf("records %+v %v", recs, err)
	}
}

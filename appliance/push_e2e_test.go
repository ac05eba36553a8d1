package appliance_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"beaconhub/appliance"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/push"
	"beaconhub/appliance/push/ntfytest"
	"beaconhub/appliance/sensors"
	"beaconhub/broker/brokertest"
	"beaconhub/store"
)

// TestSensorAlertReachesPushServer: an out-of-range reading over MQTT
// becomes one urgent message on {server_id}-sensors of a fake ntfy, with
// its alert data v1 record, and feeds the dashboard's delivery probe.
func TestSensorAlertReachesPushServer(t *testing.T) {
	fake := ntfytest.New()
	t.Cleanup(fake.Close)
	home := t.TempDir()
	data, _ := json.Marshal(map[string]any{"server_features": []string{"service"}, "server_push_server_url": fake.URL,
		"server_push_ops_enabled": false})
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
	if app.Push() == nil {
		t.Fatal("push not wired")
	}
	clk.Advance(sensors.NotSeenEvery)
	c := app.Live().Get()
	brokertest.Pub(t, app.MQTTAddr(), c.MQTTUser, c.MQTTPass, "-q", "1", "-i", "AC233FA0B1C2", "-t", "gw/AC233FA0B1C2/adv1",
		"-m", `{"reports":[{"mac":"C30000000A01","rssi":-70,"temperature":9.5}]}`)
	app.Push().Idle()
	var got []ntfytest.Message
	for _, m := range fake.Messages() {
		if m.Topic == c.ServerID+"-sensors" {
			got = append(got, m)
		}
	}
	if len(got) != 1 || !strings.HasPrefix(got[0].Title, "temperature 9.50") || got[0].Priority != 5 {
		t.Fatalf("sensors topic: %+v", got)
	}
	rec, err := push.ParseRecord(got[0].Message)
	if err != nil || rec.Subject != "range:SEN-A1-1" || rec.Device.Name != "Fridge" {
		t.Fatalf("record %+v %v", rec, err)
	}
}

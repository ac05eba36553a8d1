package appliance_test

import (
	"context"
	"encoding/json"
	"fmt"
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

// condRig is one appliance home that can be restarted, with a fake ntfy.
type condRig struct {
	t    *testing.T
	home string
	clk  *clock.Fake
	fake *ntfytest.Server
	app  *appliance.App
	cfg  map[string]any
}

func newCondRig(t *testing.T, extra map[string]any, seed func(db *store.DB)) *condRig {
	t.Helper()
	r := &condRig{t: t, home: t.TempDir(), clk: clock.NewFake(time.Now().Truncate(time.Second)), fake: ntfytest.New()}
	t.Cleanup(r.fake.Close)
	r.cfg = map[string]any{"server_features": []string{"service"}, "server_push_server_url": r.fake.URL, "server_push_ops_enabled": false}
	for k, v := range extra {
		r.cfg[k] = v
	}
	data, _ := json.Marshal(r.cfg)
	_ = os.MkdirAll(filepath.Join(r.home, "config"), 0o750)
	if err := os.WriteFile(filepath.Join(r.home, "config", "main.config.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	r.open(func(db *store.DB) {
		if err := db.CreateGateway(&store.Gateway{AssetUID: "GW-A1-1", MAC: "AC233FA0B1C2", Name: "Kitchen"}); err != nil {
			t.Fatal(err)
		}
		if err := db.CreateGateway(&store.Gateway{AssetUID: "GW-A1-2", MAC: "AC233FA0B1C3", Name: "Corridor"}); err != nil {
			t.Fatal(err)
		}
		seed(db)
	})
	// The monitor picks the seeded beacons (written straight to the
	// store, not through the asset service) up at its minute's reload.
	r.step(time.Minute)
	return r
}

func (r *condRig) open(seed func(db *store.DB)) {
	r.t.Helper()
	app, err := appliance.New(appliance.Options{Home: r.home, HTTPListen: "127.0.0.1:0", MQTTListen: "127.0.0.1:0",
		BcryptCost: 4, Clock: r.clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = app.Shutdown(context.Background()) })
	if seed != nil {
		seed(app.DB())
		if err := app.Registry().Reload(); err != nil {
			r.t.Fatal(err)
		}
	}
	if err := app.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.app = app
}

func (r *condRig) restart() {
	r.t.Helper()
	if err := r.app.Shutdown(context.Background()); err != nil {
		r.t.Fatal(err)
	}
	r.open(nil)
}

func (r *condRig) pub(gw, kind, payload string) {
	r.t.Helper()
	c := r.app.Live().Get()
	brokertest.Pub(r.t, r.app.MQTTAddr(), c.MQTTUser, c.MQTTPass, "-q", "1", "-i", gw, "-t", "gw/"+gw+"/"+kind, "-m", payload)
	r.app.Push().Idle()
}

// step advances the fake clock a minute at a time, letting push work.
func (r *condRig) step(d time.Duration) {
	for ; d > 0; d -= time.Minute {
		r.clk.Advance(min(d, time.Minute))
		r.app.Push().Idle()
	}
}

func (r *condRig) msgs(topic string) []ntfytest.Message {
	var out []ntfytest.Message
	for _, m := range r.fake.Messages() {
		if m.Topic == "TST000-"+topic {
			out = append(out, m)
		}
	}
	return out
}

func condFridge(db *store.DB, t *testing.T) {
	if err := db.CreateBeacon(&store.Beacon{AssetUID: "SEN-A1-1", MAC: "C30000000A01", Name: "Fridge", Type: "sensor", Active: true,
		TemperatureRange: &store.Range{Min: 2, Max: 8}}); err != nil {
		t.Fatal(err)
	}
}

func condReading(ts int64, temp float64) string {
	return fmt.Sprintf(`{"ts":%d,"reports":[{"mac":"C30000000A01","rssi":-70,"temperature":%.2f}]}`, ts, temp)
}

// End to end through MQTT: one flap (out, in) and then the fridge goes
// out and stays out: announced again at once (staff last heard "Back in
// range"), and reminded of after the cooldown (6 h). It was never
// announced, 24 h on (a review).
func TestFlapThenStaysOutEndToEnd(t *testing.T) {
	r := newCondRig(t, nil, func(db *store.DB) { condFridge(db, t) })
	reading := func(temp float64) {
		r.pub("AC233FA0B1C2", "adv1", condReading(r.clk.Now().UnixMilli(), temp))
	}
	reading(9.5)
	r.step(2 * time.Minute)
	reading(7.5) // back in range for a moment
	r.step(2 * time.Minute)
	reading(14) // and out for good
	for h := 0; h < 7; h++ {
		r.step(time.Hour)
		reading(14) // still reporting, still 14 °C
	}
	var alerts int
	var last string
	for _, m := range r.msgs("sensors") {
		rec, err := push.ParseRecord(m.Message)
		if err != nil || rec.Intent == push.IntentSnapshot {
			continue
		}
		if rec.Phase == push.PhaseActive {
			alerts++
		}
		last = fmt.Sprintf("%s (prio %d)", m.Title, m.Priority)
	}
	if alerts < 3 || !strings.Contains(last, "°C") {
		t.Fatalf("fridge at 14 °C for 7 h after one flap: %d alert(s) in all; last message staff got: %s", alerts, last)
	}
}

// Restart (graceful) while a range condition is active: not raised a
// second time, and its recovery after the restart is still sent.
func TestRestartWithActiveRangeNotDoubledRecoverySent(t *testing.T) {
	r := newCondRig(t, nil, func(db *store.DB) { condFridge(db, t) })
	r.pub("AC233FA0B1C2", "adv1", condReading(r.clk.Now().UnixMilli(), 11))
	r.step(time.Minute)
	r.restart()
	r.step(time.Minute)
	r.pub("AC233FA0B1C2", "adv1", condReading(r.clk.Now().UnixMilli(), 11.5))
	r.pub("AC233FA0B1C2", "adv1", condReading(r.clk.Now().UnixMilli(), 5))
	var got []string
	for _, m := range r.msgs("sensors") {
		got = append(got, m.Title)
	}
	if len(got) != 2 || !strings.HasPrefix(got[0], "temperature 11.00") || got[1] != "Back in range" {
		t.Fatalf("sensors topic across a restart: %q", got)
	}
}

// Not-seen across a restart: a fridge (sData interval 60 s, timeout
// max(10 min, 120 s) = 10 min) heard just before a restart must not be
// reported at start, and must be reported ~10 min after its last
// reading, not 10 min after the restart.
func TestNotSeenTimerContinuesAcrossRestart(t *testing.T) {
	r := newCondRig(t, map[string]any{"server_push_sensor_notseen_mode": "individual"}, func(db *store.DB) { condFridge(db, t) })
	r.pub("AC233FA0B1C2", "sData", `{"reports":[{"mac":"C30000000A01","rssi":-70,"temperature":5,"interval":60}]}`)
	heard := r.clk.Now()
	r.step(time.Minute) // last-seen flush is every 30 s
	r.restart()
	r.step(time.Minute)
	if r.app.SensorConditions().IsActive(sensors.CondNotSeen, "SEN-A1-1") {
		t.Fatal("false not-seen right after the restart")
	}
	for r.clk.Now().Sub(heard) < 10*time.Minute {
		r.step(time.Minute)
		if r.app.SensorConditions().IsActive(sensors.CondNotSeen, "SEN-A1-1") {
			t.Fatalf("not-seen after only %v", r.clk.Now().Sub(heard))
		}
	}
	r.step(2 * time.Minute)
	if !r.app.SensorConditions().IsActive(sensors.CondNotSeen, "SEN-A1-1") {
		t.Fatalf("no not-seen %v after the last reading (timeout 10 min)", r.clk.Now().Sub(heard))
	}
	if n := len(r.msgs("notseen")); n != 1 {
		t.Fatalf("notseen topic (individual mode): %d messages", n)
	}
}

// Not-seen timeout = max(10 min, 2 x interval) exactly, for an interval
// above 5 min (interval 400 s: 800 s = 13 min 20 s).
func TestFridgeNotSeenTimeoutTwiceInterval(t *testing.T) {
	r := newCondRig(t, nil, func(db *store.DB) { condFridge(db, t) })
	r.pub("AC233FA0B1C2", "sData", `{"reports":[{"mac":"C30000000A01","rssi":-70,"temperature":5,"interval":400}]}`)
	heard := r.clk.Now()
	for r.clk.Now().Sub(heard) < 800*time.Second {
		if r.app.SensorConditions().IsActive(sensors.CondNotSeen, "SEN-A1-1") {
			t.Fatalf("not-seen after only %v (timeout 800 s)", r.clk.Now().Sub(heard))
		}
		r.clk.Advance(10 * time.Second)
	}
	r.clk.Advance(70 * time.Second)
	if !r.app.SensorConditions().IsActive(sensors.CondNotSeen, "SEN-A1-1") {
		t.Fatalf("no not-seen %v after the last reading (timeout 800 s)", r.clk.Now().Sub(heard))
	}
}

// Low battery (adv8 < 2800 mV) in individual mode: raised once, not for
// every report; a replaced battery resolves it ("Battery ok") once.
func TestBatteryRaisedOnceRecoversOnce(t *testing.T) {
	r := newCondRig(t, map[string]any{"server_push_batteries_mode": "individual"}, func(db *store.DB) { condFridge(db, t) })
	bat := func(mv int) {
		r.pub("AC233FA0B1C2", "adv8", fmt.Sprintf(`{"reports":[{"mac":"C30000000A01","rssi":-70,"vbatt":%d}]}`, mv))
	}
	bat(2700)
	bat(2690)
	bat(2650)
	r.pub("AC233FA0B1C2", "adv1", `{"reports":[{"mac":"C30000000A01","rssi":-70,"vbatt":3100}]}`) // adv1 not evaluated
	bat(3200)
	bat(3190)
	var got []string
	for _, m := range r.msgs("batteries") {
		got = append(got, m.Title)
	}
	if len(got) != 2 || got[0] != "Low battery 2.70 V" || got[1] != "Battery ok" {
		t.Fatalf("batteries topic: %q", got)
	}
}

// A fridge sensor in alarm is deleted (decommissioned): the minute's
// check resolves its range condition as no longer monitored, and push
// says so. No reading could resolve it, and push repeated an urgent
// "Still active" every cooldown for good (a review).
func TestADeletedSensorStopsPaging(t *testing.T) {
	r := newCondRig(t, nil, func(db *store.DB) { condFridge(db, t) })
	r.pub("AC233FA0B1C2", "adv1", condReading(r.clk.Now().UnixMilli(), 11))
	if _, err := r.app.Assets().DeleteBeacon("SEN-A1-1"); err != nil {
		t.Fatal(err)
	}
	r.step(2 * time.Minute)
	n0 := len(r.msgs("sensors"))
	r.step(7 * time.Hour)
	var stills []string
	for _, m := range r.msgs("sensors")[n0:] {
		if rec, err := push.ParseRecord(m.Message); err == nil && rec.Intent == push.IntentAlert {
			stills = append(stills, fmt.Sprintf("%s prio %d", m.Title, m.Priority))
		}
	}
	active := r.app.SensorConditions().IsActive(sensors.CondRange, "SEN-A1-1")
	if active || len(stills) > 0 {
		t.Fatalf("deleted sensor: range condition active=%v; urgent repeats over 7 h: %q", active, stills)
	}
	ended := false
	for _, m := range r.msgs("sensors") {
		ended = ended || m.Title == store.ConditionUnmonitored
	}
	if !ended {
		t.Fatalf("no %q message", store.ConditionUnmonitored)
	}
}

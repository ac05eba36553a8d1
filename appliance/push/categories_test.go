package push

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"beaconhub/store"
)

// TestCategoryTable drives one trigger per category through the service
// to the fake ntfy and checks the exact topic, title, tags and priority.
func TestCategoryTable(t *testing.T) {
	r := newRig(t, false)
	r.patch(map[string]any{"server_push_batteries_mode": "individual", "server_push_sensor_notseen_mode": "individual",
		"server_push_calibration_mode": "individual", "server_push_fleet_health_mode": "individual"})
	press := func(typ string, test bool) func() {
		return func() {
			r.svc.OnEvent(store.Event{ID: 7, Status: "alert", Test: test, AssetUID: "P1", MAC: "AABBCCDDEE01", BeaconName: "Panic 1", BeaconType: typ, CreatedAt: t0.UnixMilli()})
		}
	}
	now := r.clk.Now()
	cases := []struct {
		name     string
		trigger  func()
		topic    string
		title    string
		tags     []string
		priority int
	}{
		{"sensors", func() {
			r.svc.OnSensor(sensorRec("range", "F1", "active", "temperature 9.10 °C outside 2..8", now))
		}, "TST000-sensors", "temperature 9.10 °C outside 2..8", []string{"warning", "thermometer"}, 5},
		{"sos", press("panic", false), "TST000-sos", "Panic button pushed", []string{"warning", "rotating_light"}, 5},
		{"watches", press("watch", false), "TST000-watches", "Watch button pushed", []string{"warning", "rotating_light"}, 5},
		{"batteries", func() {
			r.svc.OnSensor(sensorRec("battery", "F2", "active", "battery 2650 mV", now))
		}, "TST000-batteries", "Low battery 2.65 V", []string{"warning", "battery"}, 5},
		{"notseen panic", func() {
			r.svc.OnSensor(sensorRec("notseen", "P1", "active", "Not seen for more than 60 minutes", now))
		}, "TST000-notseen", "Not seen for more than 60 minutes", []string{"warning", "rotating_light"}, 5},
		{"notseen sensor", func() {
			r.svc.OnSensor(sensorRec("notseen", "F3", "active", "Not seen for more than 10 minutes", now))
		}, "TST000-notseen", "Not seen for more than 10 minutes", []string{"warning", "thermometer"}, 5},
		{"calibration", func() {
			r.svc.OnSensor(sensorRec("calibration", "F4", "active", "uid F4, type sensor, last calibrated 2025-01-01, interval 365 days", now))
		}, "TST000-calibration", "Calibration expired: F4", []string{"warning", "wrench"}, 3},
		{"test", press("panic", true), "TST000-test", "Test: Panic button pushed", []string{"warning", "rotating_light"}, 5},
		{"health", func() {
			r.svc.OnHealth(store.HealthRecord{Key: "mqtt_down", Phase: "active", At: now.UnixMilli(), Message: "MQTT broker connection lost"})
		}, "TST000-health", "MQTT broker connection lost", []string{"warning", "triangular_flag_on_post"}, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(r.ntfy.Messages())
			c.trigger()
			r.svc.Idle()
			got := r.ntfy.Messages()[before:]
			var staff []int
			for i, m := range got {
				if m.Topic != "beaconhub-ops" {
					staff = append(staff, i)
				}
			}
			if len(staff) != 1 {
				t.Fatalf("want 1 staff message, got %+v", got)
			}
			m := got[staff[0]]
			if m.Topic != c.topic || m.Title != c.title || !slices.Equal(m.Tags, c.tags) || m.Priority != c.priority {
				t.Fatalf("got %q %q %v %d", m.Topic, m.Title, m.Tags, m.Priority)
			}
			rec, err := ParseRecord(m.Message)
			if err != nil || rec.Seq == 0 || rec.Subject == "" {
				t.Fatalf("record: %+v %v in %q", rec, err, m.Message)
			}
		})
	}
	// Health also went to the vendor ops topic with the server id prefix.
	ops := r.msgs("beaconhub-ops")
	if len(ops) != 1 || ops[0].Title != "TST000: MQTT broker connection lost" || ops[0].Priority != 4 {
		t.Fatalf("ops: %+v", ops)
	}
}

func TestGatingPushEnabledAndOps(t *testing.T) {
	r := newRig(t, true)
	r.patch(map[string]any{"server_push_enabled": false})
	r.svc.OnHealth(store.HealthRecord{Key: "alertsys_down", Phase: "active", At: t0.UnixMilli(), Message: "alertsys unreachable"})
	r.svc.OnEvent(store.Event{ID: 1, Status: "alert", Test: true, BeaconType: "watch"})
	r.svc.Idle()
	if n := len(r.msgs("TST000-health")) + len(r.msgs("TST000-test")); n != 0 {
		t.Fatalf("staff/test published while disabled: %d", n)
	}
	if len(r.msgs("beaconhub-ops")) != 1 {
		t.Fatal("ops copy must not depend on server_push_enabled")
	}
	if r.pub.Transport() != "go" {
		t.Fatalf("transport %q", r.pub.Transport())
	}
}

func TestRecordTextIsDeterministicAndParses(t *testing.T) {
	rec := Record{Category: CatSensors, Kind: KindCondition, Phase: PhaseActive, Intent: IntentAlert, Subject: "range:F1",
		Device: Device{Name: "Fridge", AssetUID: "F1"}, At: 1, Seq: 2}
	want := `alert-data-v1: {"v":1,"category":"sensors","kind":"condition","phase":"active","intent":"alert","subject":"range:F1","device":{"name":"Fridge","asset_uid":"F1"},"at":1,"seq":2}`
	if got := rec.Text(); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	back, err := ParseRecord("Title line\nbody\n\n" + want)
	if err != nil || back.Subject != "range:F1" || back.V != 1 {
		t.Fatalf("%+v %v", back, err)
	}
	if _, err := ParseRecord("legacy message"); err == nil || !strings.Contains(err.Error(), "no alert data") {
		t.Fatal("legacy must not parse")
	}
}

// TestLowBatteryVoltsAreCut: 2799 mV is below the 2800 mV threshold and
// must not read 2.80 V.
func TestLowBatteryVoltsAreCut(t *testing.T) {
	for mv, want := range map[int]string{2799: "Low battery 2.79 V", 2650: "Low battery 2.65 V", 2500: "Low battery 2.50 V", 999: "Low battery 0.99 V"} {
		m := BatteryAlert(store.SensorConditionRecord{Kind: "battery", Phase: store.HealthActive, Message: fmt.Sprintf("battery %d mV", mv)}, Device{})
		if m.Title != want {
			t.Errorf("%d mV: %q, want %q", mv, m.Title, want)
		}
	}
}

// TestRecoveryIntents pins the intent of each recovery to docs/push.md:
// only a sensor's recovery is a quiet state update (the spec's sensor
// cadence); battery, not-seen and calibration recoveries are news to the
// staff alerted, and the doc had named them state (a review).
func TestRecoveryIntents(t *testing.T) {
	d := Device{Name: "Dev", AssetUID: "D1", Type: "watch"}
	rec := func(kind string) store.SensorConditionRecord {
		return store.SensorConditionRecord{Key: kind + ":D1", Kind: kind, Subject: "D1", Phase: store.HealthResolved, At: 1, Since: 1}
	}
	for _, c := range []struct {
		m      Message
		intent string
	}{
		{SensorRecovery(rec("range"), d), IntentState},
		{BatteryAlert(rec("battery"), d), IntentAlert},
		{NotSeenAlert(rec("notseen"), d), IntentAlert},
		{CalibrationAlert(rec("calibration"), d), IntentAlert},
		{HealthAlert(store.HealthRecord{Key: "fleet:stale:D1", Phase: store.HealthResolved, At: 1}), IntentAlert},
	} {
		if c.m.Record.Phase != PhaseResolved || c.m.Record.Intent != c.intent {
			t.Errorf("%s %q: phase %s intent %s, docs/push.md says %s", c.m.Category, c.m.Title, c.m.Record.Phase, c.m.Record.Intent, c.intent)
		}
	}
}

// TestAFleetRecordNamesItsDevice: a fleet condition's record carried the
// asset_uid alone though the registry knows its name and MAC (a
// black-box check); it names the device as a sensor's record does.
func TestAFleetRecordNamesItsDevice(t *testing.T) {
	r := newRig(t, false)
	r.patch(map[string]any{"server_push_fleet_health_mode": "individual"})
	now := r.clk.Now().UnixMilli()
	r.health(store.HealthRecord{Key: "fleet:stale:P1", Phase: store.HealthActive, At: now, Since: now, Message: "beacon Panic 1 not heard for more than 60 minutes"})
	r.svc.Idle()
	for _, topic := range []string{"TST000-health", "beaconhub-ops"} {
		ms := r.msgs(topic)
		if len(ms) != 1 {
			t.Fatalf("%s: %+v", topic, ms)
		}
		rec, err := ParseRecord(ms[0].Message)
		if err != nil || rec.Device != (Device{Name: "Panic 1", MAC: "AABBCCDDEE01", AssetUID: "P1", Type: "panic"}) {
			t.Errorf("%s record device %+v (%v)", topic, rec.Device, err)
		}
	}
}

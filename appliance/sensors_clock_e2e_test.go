package appliance_test

import (
	"fmt"
	"testing"
	"time"

	"beaconhub/appliance/push"
	"beaconhub/appliance/sensors"
	"beaconhub/store"
)

func condTitles(r *condRig, topic string) []string {
	var out []string
	for _, m := range r.msgs(topic) {
		out = append(out, fmt.Sprintf("%s (prio %d)", m.Title, m.Priority))
	}
	return out
}

// The Kitchen gateway's clock is 4 min ahead (inside the 5-minute
// trust window of gateway-mqtt.md). It hears the fridge once at 5 °C. The
// fridge then warms to 12 °C for 3.5 min, heard every minute by the
// Corridor gateway (clock right). Readings are judged as they arrive: by
// their ts, each of those genuine readings was older than the Kitchen
// one and not judged, and the excursion was never announced (a review).
func TestAGatewayAheadHidesNoOtherGatewaysReadings(t *testing.T) {
	r := newCondRig(t, nil, func(db *store.DB) { condFridge(db, t) })
	now := r.clk.Now().UnixMilli()
	r.pub("AC233FA0B1C2", "adv1", condReading(now+4*60_000, 5)) // Kitchen, 4 min ahead
	for i := 0; i < 3; i++ {
		r.step(time.Minute)
		r.pub("AC233FA0B1C3", "adv1", condReading(r.clk.Now().UnixMilli(), 12)) // Corridor, right clock
	}
	active := r.app.SensorConditions().IsActive(sensors.CondRange, "SEN-A1-1")
	r.step(30 * time.Second)
	r.pub("AC233FA0B1C3", "adv1", condReading(r.clk.Now().UnixMilli(), 5))
	if !active || len(r.msgs("sensors")) == 0 {
		t.Fatalf("fridge at 12 °C for 3 min (3 readings from a gateway with a right clock): condition active=%v; sensors topic: %q", active, condTitles(r, "sensors"))
	}
}

// End to end through MQTT: the corridor gateway, stalled for 2 minutes,
// delivers a reading of 12 °C taken before the kitchen gateway's 5 °C,
// which came on time. No "out of range" goes to staff for a fridge that
// is fine; the corridor's next, fresh reading of 12 °C is judged.
func TestALateReadingPagesNobody(t *testing.T) {
	r := newCondRig(t, nil, func(db *store.DB) { condFridge(db, t) })
	for i := 0; i < 3; i++ { // both on time, ts a few ms before receipt
		r.pub("AC233FA0B1C2", "adv1", condReading(r.clk.Now().UnixMilli()-20, 5))
		r.pub("AC233FA0B1C3", "adv1", condReading(r.clk.Now().UnixMilli()-30, 5))
		r.clk.Advance(20 * time.Second)
	}
	r.step(2 * time.Minute)
	r.pub("AC233FA0B1C2", "adv1", condReading(r.clk.Now().UnixMilli()-20, 5))
	r.pub("AC233FA0B1C3", "adv1", condReading(r.clk.Now().UnixMilli()-2*60_000, 12)) // taken 2 min ago
	if n := len(r.msgs("sensors")); n != 0 || r.app.SensorConditions().IsActive(sensors.CondRange, "SEN-A1-1") {
		t.Fatalf("a late 12 °C reading of a fridge at 5 °C: sensors topic %q", condTitles(r, "sensors"))
	}
	r.clk.Advance(10 * time.Second)
	r.pub("AC233FA0B1C3", "adv1", condReading(r.clk.Now().UnixMilli()-30, 12))
	if !r.app.SensorConditions().IsActive(sensors.CondRange, "SEN-A1-1") || len(r.msgs("sensors")) != 1 {
		t.Fatalf("a fresh 12 °C reading: sensors topic %q", condTitles(r, "sensors"))
	}
}

// The appliance's clock is stepped back 30 min (an NTP correction of a
// box whose RTC ran fast). Gateways send no ts (the server's receive
// time is used, per the contract). A 20-minute excursion at 14 °C is
// announced; judging readings by time, none was for 30 min (a review).
func TestAClockSteppedBackKeepsJudgingReadings(t *testing.T) {
	r := newCondRig(t, nil, func(db *store.DB) { condFridge(db, t) })
	noTS := func(temp float64) string {
		return fmt.Sprintf(`{"reports":[{"mac":"C30000000A01","rssi":-70,"temperature":%.2f}]}`, temp)
	}
	r.pub("AC233FA0B1C2", "adv1", noTS(5))
	r.clk.Advance(-30 * time.Minute) // NTP steps the clock back
	for i := 0; i < 20; i++ {
		r.pub("AC233FA0B1C2", "adv1", noTS(14))
		r.step(time.Minute)
	}
	if !r.app.SensorConditions().IsActive(sensors.CondRange, "SEN-A1-1") {
		t.Fatalf("fridge at 14 °C for 20 min after a clock correction: no range condition; sensors topic %q", condTitles(r, "sensors"))
	}
}

// An ordinary graceful restart, with a fridge out of range, a low
// battery (individual), a not-seen sensor (individual) and a panic not
// seen: nothing is announced a second time at either of two restarts.
func TestGracefulRestartsAnnounceNothingTwice(t *testing.T) {
	r := newCondRig(t, map[string]any{"server_push_batteries_mode": "individual", "server_push_sensor_notseen_mode": "individual"},
		func(db *store.DB) {
			condFridge(db, t)
			if err := db.CreateBeacon(&store.Beacon{AssetUID: "SEN-A1-2", MAC: "C30000000A02", Name: "Room", Type: "sensor", Active: true}); err != nil {
				t.Fatal(err)
			}
			if err := db.CreateBeacon(&store.Beacon{AssetUID: "PAN-A1-1", MAC: "C30000000B01", Name: "Panic", Type: "panic", Active: true}); err != nil {
				t.Fatal(err)
			}
		})
	r.pub("AC233FA0B1C2", "sData", `{"reports":[{"mac":"C30000000A02","rssi":-70,"temperature":20,"interval":60}]}`)
	r.pub("AC233FA0B1C2", "adv4", `{"reports":[{"mac":"C30000000B01","rssi":-60,"beacon_is_pushed":false}]}`)
	for i := 0; i < 35; i++ {
		r.pub("AC233FA0B1C2", "adv1", condReading(r.clk.Now().UnixMilli(), 11))
		r.pub("AC233FA0B1C2", "adv8", `{"reports":[{"mac":"C30000000A01","rssi":-70,"vbatt":2600}]}`)
		r.step(time.Minute)
	}
	count := func() map[string]int {
		got := map[string]int{}
		for _, m := range r.fake.Messages() {
			if rec, err := push.ParseRecord(m.Message); err == nil && rec.Intent != push.IntentSnapshot {
				got[rec.Subject+" "+rec.Phase]++
			}
		}
		return got
	}
	before := count()
	t.Logf("before the restarts: %v", before)
	for k := 0; k < 2; k++ {
		r.restart()
		r.step(time.Minute)
		r.pub("AC233FA0B1C2", "adv1", condReading(r.clk.Now().UnixMilli(), 11))
		r.pub("AC233FA0B1C2", "adv8", `{"reports":[{"mac":"C30000000A01","rssi":-70,"vbatt":2600}]}`)
		r.step(time.Minute)
	}
	after := count()
	for k, n := range after {
		if n != before[k] {
			t.Errorf("%s: %d messages before the restarts, %d after", k, before[k], n)
		}
	}
}

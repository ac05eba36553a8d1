package appliance_test

import (
	"testing"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/sensors"
	"beaconhub/broker/brokertest"
	"beaconhub/store"
)

// The sensor-condition monitor is wired into the running appliance: a
// reading outside the beacon's range published over MQTT opens a range
// condition, one back in range resolves it.
func TestSensorRangeConditionEndToEnd(t *testing.T) {
	clk := clock.NewFake(time.Now())
	app := startAppWith(t, appRig{clock: clk, fridge: func(b *store.Beacon) { b.TemperatureRange = &store.Range{Min: 2, Max: 8} }})
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

// A range set through the asset service is judged from the sensor's next
// reading: the monitor reloads after every registry write. It reloaded
// only with the minute's not-seen check, and the readings in between
// were never judged (a review).
func TestSensorRangeJudgedFromTheNextReading(t *testing.T) {
	app := startAppWith(t, appRig{clock: clock.NewFake(time.Now())})
	if _, err := app.Assets().UpdateBeacon("SEN-A1-1", assets.BeaconInput{TemperatureRange: assets.Opt[store.Range]{Set: true, V: store.Range{Min: 2, Max: 8}}}); err != nil {
		t.Fatal(err)
	}
	c := app.Live().Get()
	brokertest.Pub(t, app.MQTTAddr(), c.MQTTUser, c.MQTTPass, "-q", "1", "-i", "AC233FA0B1C2", "-t", "gw/AC233FA0B1C2/adv1",
		"-m", `{"reports":[{"mac":"C30000000A01","rssi":-70,"temperature":9.5}]}`)
	if !app.SensorConditions().IsActive(sensors.CondRange, "SEN-A1-1") {
		t.Fatal("a reading outside the range set a moment before was not judged")
	}
}

package appliance_test

import (
	"strings"
	"testing"
	"time"

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
	clk := clock.NewFake(time.Now())
	app := startAppWith(t, appRig{clock: clk,
		extra:  map[string]any{"server_push_server_url": fake.URL, "server_push_ops_enabled": false},
		fridge: func(b *store.Beacon) { b.TemperatureRange = &store.Range{Min: 2, Max: 8} }})
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

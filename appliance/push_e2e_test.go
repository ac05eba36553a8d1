package appliance_test

import (
	"strings"
	"testing"
	"time"

	"beaconhub/appliance"
	"beaconhub/appliance/assets"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/push"
	"beaconhub/appliance/push/ntfytest"
	"beaconhub/appliance/sensors"
	"beaconhub/broker/brokertest"
	"beaconhub/store"
)

// startPushApp starts an appliance whose push server is a fake ntfy (ops
// copies off), its fridge SEN-A1-1 ranged 2..8 °C and picked up by the
// sensor monitor.
func startPushApp(t *testing.T) (*appliance.App, *ntfytest.Server) {
	t.Helper()
	app, fake, _ := startPushAppClock(t)
	return app, fake
}

// startPushAppClock is startPushApp that also returns the app's clock.
func startPushAppClock(t *testing.T) (*appliance.App, *ntfytest.Server, *clock.Fake) {
	t.Helper()
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
	return app, fake, clk
}

// TestSensorAlertReachesPushServer: an out-of-range reading over MQTT
// becomes one urgent message on {server_id}-sensors of a fake ntfy, with
// its alert data v1 record, and feeds the dashboard's delivery probe.
func TestSensorAlertReachesPushServer(t *testing.T) {
	app, fake := startPushApp(t)
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

// A sensor created a moment after a push looked its devices up is named
// in its own alert: the device list follows registry writes. It was read
// at most once a minute, and such an alert went out with the uid alone
// (a review).
func TestPushNamesASensorCreatedMomentsBefore(t *testing.T) {
	app, fake := startPushApp(t)
	c := app.Live().Get()
	pub := func(mac string, temp string) {
		brokertest.Pub(t, app.MQTTAddr(), c.MQTTUser, c.MQTTPass, "-q", "1", "-i", "AC233FA0B1C2", "-t", "gw/AC233FA0B1C2/adv1",
			"-m", `{"reports":[{"mac":"`+mac+`","rssi":-70,"temperature":`+temp+`}]}`)
		app.Push().Idle()
	}
	pub("C30000000A01", "9.5") // the fridge's alert reads the device list
	mac, name, typ := "C30000000A02", "Freezer", "sensor"
	v, err := app.Assets().CreateBeacon(assets.BeaconInput{MAC: &mac, Name: &name, Type: &typ,
		TemperatureRange: assets.Opt[store.Range]{Set: true, V: store.Range{Min: -25, Max: -15}}})
	if err != nil {
		t.Fatal(err)
	}
	pub(mac, "-5")
	for _, m := range fake.Messages() {
		if rec, err := push.ParseRecord(m.Message); err == nil && rec.Subject == "range:"+v.AssetUID {
			if rec.Device.Name != "Freezer" || !strings.Contains(m.Message, "Device: Freezer "+v.AssetUID) {
				t.Fatalf("the new sensor's alert: %q, device %+v", m.Message, rec.Device)
			}
			return
		}
	}
	t.Fatalf("no alert for the new sensor %s: %+v", v.AssetUID, fake.Messages())
}

// TestRateLimitedAlertsShowAndGoAfterARecheck: a 429 asking for an hour
// holds an alert a minute at most, the dashboard says an alert waits
// (a recheck's test publish had it read "last delivery ok" while the
// alert waited out the hour), and a recheck that gets through sends it.
func TestRateLimitedAlertsShowAndGoAfterARecheck(t *testing.T) {
	app, fake, clk := startPushAppClock(t)
	c := app.Live().Get()
	fake.Set(func(s *ntfytest.Server) { s.RateLimited, s.RetryAfter = 1, 3600 })
	brokertest.Pub(t, app.MQTTAddr(), c.MQTTUser, c.MQTTPass, "-q", "1", "-i", "AC233FA0B1C2", "-t", "gw/AC233FA0B1C2/adv1",
		"-m", `{"reports":[{"mac":"C30000000A01","rssi":-70,"temperature":9.5}]}`)
	app.Push().Idle()
	if n, until := app.Push().Held(); n != 1 || until.Sub(clk.Now()) > push.MaxBackoff {
		t.Fatalf("held %d until %v (now %v)", n, until, clk.Now())
	}
	ps := app.Monitor().Dashboard().Push
	if ps.OK || !strings.HasPrefix(ps.Message, "1 alert(s) waiting for the push server, which is rate limiting") {
		t.Fatalf("dashboard while an alert waits: %+v", ps)
	}
	d, err := app.Monitor().Recheck(t.Context(), "push")
	if err != nil || !d.Push.Delivery.OK {
		t.Fatalf("recheck: %+v %v", d.Push, err)
	}
	app.Push().Idle()
	var got int
	for _, m := range fake.Messages() {
		if m.Topic == c.ServerID+"-sensors" {
			got++
		}
	}
	if n, _ := app.Push().Held(); got != 1 || n != 0 {
		t.Fatalf("after the recheck: %d delivered, %d held", got, n)
	}
	if ps := app.Monitor().Dashboard().Push; !ps.OK || ps.Message != "push server reachable; last delivery ok" {
		t.Fatalf("dashboard after delivery: %+v", ps)
	}
}

// TestARecheck429PausesAlertsAndSaysUntil: "a 429 from the push server
// starts a global backoff" (spec), the recheck's test publish included:
// it started none, so the next alert was posted into the limit, and the
// dashboard said "rate limiting" without for how long (a black-box
// check). ntfy sends no Retry-After: the default pause, 30 s.
func TestARecheck429PausesAlertsAndSaysUntil(t *testing.T) {
	app, fake, clk := startPushAppClock(t)
	c := app.Live().Get()
	fake.Set(func(s *ntfytest.Server) { s.RateLimited = 1 })
	d, err := app.Monitor().Recheck(t.Context(), "push")
	if err != nil {
		t.Fatal(err)
	}
	until := clk.Now().Add(push.DefaultBackoff).UTC().Format(time.RFC3339)
	if d.Push.Delivery.ErrorCode != "rate_limited" || d.Push.Delivery.Message != "push server is rate limiting (HTTP 429) until "+until {
		t.Fatalf("recheck delivery probe: %+v", d.Push.Delivery)
	}
	brokertest.Pub(t, app.MQTTAddr(), c.MQTTUser, c.MQTTPass, "-q", "1", "-i", "AC233FA0B1C2", "-t", "gw/AC233FA0B1C2/adv1",
		"-m", `{"reports":[{"mac":"C30000000A01","rssi":-70,"temperature":9.5}]}`)
	app.Push().Idle()
	sensorsSent := func() (n int) {
		for _, m := range fake.Messages() {
			if m.Topic == c.ServerID+"-sensors" {
				n++
			}
		}
		return n
	}
	if n, _ := app.Push().Held(); n != 1 || sensorsSent() != 0 {
		t.Fatalf("an alert during the pause: held %d, sent %d", n, sensorsSent())
	}
	clk.Advance(push.DefaultBackoff)
	eventually(t, "the held alert sent after the pause", func() bool {
		app.Push().Idle()
		return sensorsSent() == 1
	})
}

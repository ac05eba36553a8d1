package appliance_test

import (
	"context"
	"net"
	"net/url"
	"slices"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"beaconhub/appliance"
	"beaconhub/appliance/clock"
	"beaconhub/broker/brokertest"
)

// A gateway that loses power drops its connection to the embedded
// broker: the tracking engine judges it down (GET
// /api/v1/tracking/status lists it in gateways_down) once the
// connection has stayed closed 20 s, with no tag about, and brings it
// back when it connects again, also after a takeover of its client id.
// A publisher that connects for each batch (mosquitto_pub, a real one)
// is not judged down between batches.
func TestAGatewayWhoseConnectionClosesIsJudgedDown(t *testing.T) {
	clk, _, app, c := hallApp(t)
	down := func() []string {
		var st struct {
			GatewaysDown []string `json:"gateways_down"`
		}
		c.must("GET", "/api/v1/tracking/status", nil, &st)
		return st.GatewaysDown
	}
	connected := func(want bool) func() bool {
		return func() bool {
			var st struct {
				Pipeline struct {
					Gateways []struct {
						MAC       string `json:"mac"`
						Connected bool   `json:"connected"`
					} `json:"gateways"`
				} `json:"pipeline"`
			}
			c.must("GET", "/api/v1/status/mqtt", nil, &st)
			for _, g := range st.Pipeline.Gateways {
				if g.MAC == "AC233FA0B1C2" {
					return g.Connected == want
				}
			}
			return false
		}
	}
	advance := func(d time.Duration) {
		for end := clk.Now().Add(d); clk.Now().Before(end); {
			clk.Advance(time.Second)
		}
	}

	publish := hallPublisher(t, app)
	for range 4 {
		publish()
		advance(30 * time.Second)
	}
	if d := down(); len(d) != 0 {
		t.Fatalf("a gateway that connects for each batch judged down: %v", d)
	}

	cfg := app.Live().Get()
	var conn net.Conn
	open := func() paho.Client {
		opts := paho.NewClientOptions().AddBroker("tcp://" + app.MQTTAddr()).SetClientID("AC233FA0B1C2").
			SetUsername(cfg.MQTTUser).SetPassword(cfg.MQTTPass).SetAutoReconnect(false).SetConnectRetry(false).
			SetCustomOpenConnectionFn(func(u *url.URL, _ paho.ClientOptions) (net.Conn, error) {
				nc, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
				conn = nc
				return nc, err
			})
		cl := paho.NewClient(opts)
		if tok := cl.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			t.Fatalf("connect: %v", tok.Error())
		}
		return cl
	}
	gw := open()
	eventually(t, "the gateway connected", connected(true))
	if tok := gw.Publish("gw/AC233FA0B1C2/adv1", 1, false, `{"reports":[{"mac":"C3:00:00:00:0B:01","rssi":-58}]}`); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("publish: %v", tok.Error())
	}
	advance(2 * time.Minute)
	if d := down(); len(d) != 0 {
		t.Fatalf("a connected gateway judged down: %v", d)
	}

	// The power cut: the connection drops without a DISCONNECT.
	_ = conn.Close()
	eventually(t, "the broker seeing the connection closed", connected(false))
	advance(15 * time.Second)
	if d := down(); len(d) != 0 {
		t.Fatalf("judged down within the 20 s grace: %v", d)
	}
	eventually(t, "the gateway judged down", func() bool {
		clk.Advance(time.Second)
		return slices.Contains(down(), "AC233FA0B1C2")
	})

	gw.Disconnect(0)
	gw = open()
	eventually(t, "the gateway connected again", connected(true))
	eventually(t, "the gateway back up", func() bool {
		clk.Advance(time.Second)
		return len(down()) == 0
	})

	// It reconnects with the same client id before the broker noticed
	// the old connection dead (a takeover: the old one's close is not
	// reported), runs a while, and loses power: judged down all the same.
	first := conn
	second := open()
	defer second.Disconnect(0)
	defer gw.Disconnect(0)
	advance(2 * time.Minute)
	if d := down(); len(d) != 0 {
		t.Fatalf("judged down after a takeover: %v", d)
	}
	if conn == first {
		t.Fatal("the second client reused the first connection")
	}
	_ = conn.Close()
	eventually(t, "the broker seeing the newer connection closed", connected(false))
	eventually(t, "the gateway judged down after the takeover", func() bool {
		clk.Advance(time.Second)
		return slices.Contains(down(), "AC233FA0B1C2")
	})
}

// A gateway that kept its connection before the appliance restarted and
// does not connect to the new one (it died across the restart: a power
// cut that outlived the appliance's) is judged down two minutes after
// the start, which a connection it never made could not otherwise say,
// also with the clock come up behind; it is back once it connects.
func TestAGatewayDeadAcrossARestartIsJudgedDown(t *testing.T) {
	clk, home, app, c := hallApp(t)
	gw := gatewayClient(t, app, "AC233FA0B1C2")
	for range 60 {
		clk.Advance(time.Second)
	}
	lastMessage := clk.Now()
	if tok := gw.Publish("gw/AC233FA0B1C2/adv1", 1, false, `{"reports":[{"mac":"C3:00:00:00:0B:01","rssi":-58}]}`); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("publish: %v", tok.Error())
	}
	for range 30 {
		clk.Advance(time.Second)
	}
	if err := app.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	gw.Disconnect(0)

	down := func() []string {
		var st struct {
			Algorithm    string   `json:"algorithm"`
			GatewaysDown []string `json:"gateways_down"`
		}
		c.must("GET", "/api/v1/tracking/status", nil, &st)
		if st.Algorithm != "strongest" {
			t.Fatalf("tracking after the restart: %q", st.Algorithm)
		}
		return st.GatewaysDown
	}
	// Restarted on an external broker, which reports no connections: no
	// gateway reads as never back (it would, idle, be judged down).
	m := brokertest.StartMosquitto(t, "gwuser", "gwpass-123")
	app = rtlsAppWith(t, home, clk, `{"server_features":["service"],"server_mqtt_broker":"external","server_mqtt_url":"`+m.URL()+
		`","server_mqtt_user":"gwuser","server_mqtt_pass":"gwpass-123"}`)
	t.Cleanup(func() { _ = app.Shutdown(context.Background()) })
	c = &client{t: t, base: "http://" + app.HTTPAddr(), token: c.token}
	for range 180 {
		clk.Advance(time.Second)
	}
	if d := down(); len(d) != 0 {
		t.Fatalf("judged down on an external broker: %v", d)
	}
	if err := app.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	// Back on the embedded broker, the gateway still not back, and the
	// clock come up behind the gateway's last message (a box without a
	// battery clock, before NTP): it was never judged, the pipeline's
	// last word on it lying after the start (a review). (Not behind the
	// admin's creation: tokens from before it are refused.)
	clk.Advance(lastMessage.Add(-20 * time.Second).Sub(clk.Now()))
	app = rtlsApp(t, home, clk)
	t.Cleanup(func() { _ = app.Shutdown(context.Background()) })
	// A token issued in the clock's future is refused: a new one.
	c = &client{t: t, base: "http://" + app.HTTPAddr(), token: login(t, app, "ops@example.org", "ops-password-1")}
	start := clk.Now()
	for clk.Now().Sub(start) < 110*time.Second {
		clk.Advance(time.Second)
		if d := down(); len(d) != 0 {
			t.Fatalf("judged down %v after the start: %v", clk.Now().Sub(start), d)
		}
	}
	eventually(t, "the gateway judged down", func() bool {
		clk.Advance(time.Second)
		return slices.Contains(down(), "AC233FA0B1C2")
	})
	gw = gatewayClient(t, app, "AC233FA0B1C2")
	defer gw.Disconnect(0)
	eventually(t, "the gateway back up", func() bool {
		clk.Advance(time.Second)
		return len(down()) == 0
	})
}

// gatewayClient connects to app's embedded broker as client id, without
// reconnecting: a gateway, or (id not a MAC) something talking for one.
func gatewayClient(t *testing.T, app *appliance.App, id string) paho.Client {
	t.Helper()
	cfg := app.Live().Get()
	opts := paho.NewClientOptions().AddBroker("tcp://" + app.MQTTAddr()).SetClientID(id).
		SetUsername(cfg.MQTTUser).SetPassword(cfg.MQTTPass).SetAutoReconnect(false).SetConnectRetry(false)
	cl := paho.NewClient(opts)
	if tok := cl.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("connect: %v", tok.Error())
	}
	return cl
}

// The appliance restarts with tracking stopped; the hall gateway had
// kept a lasting connection under its MAC before, and after the restart
// talks (a status heartbeat every 10 s) only through a client id that is
// not its MAC. Tracking started 5 minutes later must not judge it down:
// it has talked since the restart (a review: the engine took the word it
// found at its first look, at the start, for the one from before the
// restart, and judged the gateway at once).
func TestATalkingRestoredGatewayIsNotJudgedAtALateStart(t *testing.T) {
	clk, home, app, c := hallApp(t)
	status := func(cl paho.Client) {
		t.Helper()
		// QoS 1: acknowledged once the pipeline has it.
		if tok := cl.Publish("gw/AC233FA0B1C2/status", 1, false, `{"ip":"192.0.2.10","fw":"1.4.2","uptime":86400}`); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			t.Fatalf("publish: %v", tok.Error())
		}
	}
	gw := gatewayClient(t, app, "AC233FA0B1C2")
	for range 90 {
		clk.Advance(time.Second)
	}
	status(gw)
	c.must("GET", "/api/v1/tracking/stop", nil, nil)
	for range 30 {
		clk.Advance(time.Second)
	}
	if err := app.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	gw.Disconnect(0)

	clk.Advance(20 * time.Second) // the appliance's downtime
	app = rtlsApp(t, home, clk)
	t.Cleanup(func() { _ = app.Shutdown(context.Background()) })
	c = &client{t: t, base: "http://" + app.HTTPAddr(), token: c.token}
	down := func() []string {
		var st struct {
			GatewaysDown []string `json:"gateways_down"`
		}
		c.must("GET", "/api/v1/tracking/status", nil, &st)
		return st.GatewaysDown
	}
	talker := gatewayClient(t, app, "hall-status")
	defer talker.Disconnect(0)
	start := clk.Now()
	step := func() {
		clk.Advance(time.Second)
		if clk.Now().Sub(start)%(10*time.Second) == 0 {
			status(talker)
		}
	}
	for clk.Now().Sub(start) < 5*time.Minute {
		step()
	}
	c.must("GET", "/api/v1/tracking/start/strongest", nil, nil)
	for clk.Now().Sub(start) < 8*time.Minute {
		if slices.Contains(down(), "AC233FA0B1C2") {
			t.Fatalf("%v after the restart (tracking started at 5 min), talking every 10 s: judged down", clk.Now().Sub(start))
		}
		step()
	}
}

// hallApp starts the appliance on a fake clock and a fresh home with
// the hall site, tracking on: its clock, home, app and an admin client.
func hallApp(t *testing.T) (*clock.Fake, string, *appliance.App, *client) {
	t.Helper()
	clk := clock.NewFake(time.Now().Truncate(time.Second))
	home := t.TempDir()
	app := rtlsApp(t, home, clk)
	t.Cleanup(func() { _ = app.Shutdown(context.Background()) })
	c := &client{t: t, base: "http://" + app.HTTPAddr(), token: adminToken(t, app)}
	hallSite(c)
	return clk, home, app, c
}

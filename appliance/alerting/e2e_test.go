package alerting_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"beaconhub/appliance"
	"beaconhub/appliance/alerting/alertsystest"
	"beaconhub/broker/brokertest"
	"beaconhub/store"
)

// startAppliance runs the whole appliance (embedded broker, HTTP) in a temp
// home with alertsys pointed at fake, five gateways and the rig's beacons.
func startAppliance(t testing.TB, fake *alertsystest.Server, extra map[string]any) *appliance.App {
	t.Helper()
	home := t.TempDir()
	cfg := map[string]any{"server_features": []string{"alerting"}, "server_id": "TST000",
		"server_alertsys_url_base": fake.URL, "server_alertsys_credentials_username": alertsystest.User,
		"server_alertsys_credentials_password": alertsystest.Pass, "server_push_server_url": ""}
	for k, v := range extra {
		cfg[k] = v
	}
	data, _ := json.Marshal(cfg)
	if err := os.MkdirAll(filepath.Join(home, "config"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config", "main.config.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	app, err := appliance.New(appliance.Options{Home: home, HTTPListen: "127.0.0.1:0", MQTTListen: "127.0.0.1:0",
		BcryptCost: 4, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Shutdown(context.Background()) })
	seed(t, app.DB())
	if err := app.Registry().Reload(); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(); err != nil {
		t.Fatal(err)
	}
	return app
}

func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, bounded by the deadline
	}
}

func allEvents(t testing.TB, db *store.DB) []store.Event {
	t.Helper()
	evs, _, err := db.EventsAfter(store.EventFilter{}, 0, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestEndToEndPressFromFiveGatewaysThroughMosquittoPub(t *testing.T) {
	fake := alertsystest.New()
	defer fake.Close()
	app := startAppliance(t, fake, nil)
	c := app.Live().Get()
	for gw := 1; gw <= 5; gw++ {
		payload := fmt.Sprintf(`{"reports":[{"mac":"c3:00:00:00:b0:01","rssi":%d,"beacon_is_pushed":true,"press":"double"}]}`, -50-gw)
		brokertest.Pub(t, app.MQTTAddr(), c.MQTTUser, c.MQTTPass, "-q", "1", "-i", gatewayMAC(gw),
			"-t", "gw/"+gatewayMAC(gw)+"/adv4", "-m", payload)
		// QoS 1 was acknowledged: the event is already durable.
		if n := len(allEvents(t, app.DB())); n != 1 {
			t.Fatalf("after gateway %d: %d events", gw, n)
		}
	}
	eventually(t, "the alertsys call", func() bool { return len(fake.Convenes()) >= 1 })
	eventually(t, "the delivery recorded", func() bool {
		evs := allEvents(t, app.DB())
		return len(evs) == 1 && evs[0].Alertsys == store.AlertsysSent
	})
	e := allEvents(t, app.DB())[0]
	if e.Status != store.EventAlert || e.Type != "double" || e.AssetUID != panicUID || e.Reports != 5 || len(e.Gateways) != 5 {
		t.Errorf("event = %+v", e)
	}
	if cs := fake.Convenes(); len(cs) != 1 || cs[0].Body.EventID != e.ID || cs[0].Body.Asset.AssetUID != panicUID || cs[0].Body.Rule != "sos" {
		t.Errorf("convenes = %+v", cs)
	}
	if st := app.Alertsys().Stats(); st.Sent != 1 || st.QueueLen != 0 {
		t.Errorf("worker = %+v", st)
	}

	// The same through HTTP: the events list, and the cached alertsys status.
	tok := login(t, app)
	var page struct {
		Payload struct {
			Events []store.Event `json:"events"`
		} `json:"payload"`
	}
	getJSON(t, app, tok, "/api/v1/events?status=alert", &page)
	if len(page.Payload.Events) != 1 || page.Payload.Events[0].ID != e.ID {
		t.Errorf("GET /events = %+v", page.Payload.Events)
	}
	var st struct {
		Payload struct {
			State   string `json:"state"`
			Enabled bool   `json:"enabled"`
		} `json:"payload"`
	}
	getJSON(t, app, tok, "/api/v1/status/alertsys", &st)
	if st.Payload.State != "ok" || !st.Payload.Enabled {
		t.Errorf("status/alertsys = %+v", st.Payload)
	}
}

// login creates an admin that needs no password change (the default admin
// must change its password first) and logs in over HTTP.
func login(t testing.TB, app *appliance.App) string {
	t.Helper()
	const email, pass = "ops@example.com", "ops-password-1"
	if _, err := app.Auth().CreateUser(email, pass, "admin", false); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"email":%q,"password":%q}`, email, pass)
	resp, err := http.Post("http://"+app.HTTPAddr()+"/api/v1/login", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env struct {
		Payload struct {
			Token string `json:"token"`
		} `json:"payload"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || env.Payload.Token == "" {
		t.Fatalf("login: %v %d", err, resp.StatusCode)
	}
	return env.Payload.Token
}

func getJSON(t testing.TB, app *appliance.App, tok, path string, v any) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+app.HTTPAddr()+path, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

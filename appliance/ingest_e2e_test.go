package appliance_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"beaconhub/appliance"
	"beaconhub/appliance/clock"
	"beaconhub/broker/brokertest"
	"beaconhub/store"
)

// startApp builds and starts an appliance in a temp home with the given
// extra configuration, a registered sensor beacon and gateway.
func startApp(t *testing.T, extra map[string]any) *appliance.App {
	t.Helper()
	return startAppWith(t, appRig{extra: extra})
}

// appRig says how startAppWith builds the appliance under test.
type appRig struct {
	extra  map[string]any      // config keys over {"server_features": ["service"]}
	clock  clock.Clock         // nil: the real clock
	fridge func(*store.Beacon) // adjusts the registered sensor SEN-A1-1 (C30000000A01)
	home   string              // "": a fresh temporary directory
}

// startAppWith starts an appliance on loopback in a temporary home with
// one sensor beacon and one gateway (GW-A1-1, AC233FA0B1C2) registered.
func startAppWith(t *testing.T, r appRig) *appliance.App {
	t.Helper()
	home := r.home
	if home == "" {
		home = t.TempDir()
	}
	cfg := map[string]any{"server_features": []string{"service"}}
	for k, v := range r.extra {
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
		BcryptCost: 4, Clock: r.clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Shutdown(context.Background()) })
	db := app.DB()
	fridge := store.Beacon{AssetUID: "SEN-A1-1", MAC: "C30000000A01", Name: "Fridge", Type: "sensor", Active: true}
	if r.fridge != nil {
		r.fridge(&fridge)
	}
	if err := db.CreateBeacon(&fridge); err != nil {
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
	return app
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, bounded by the deadline
	}
}

func temps(t *testing.T, db *store.DB, uid string) []float64 {
	t.Helper()
	var out []float64
	if err := db.QueryHistory(uid, store.MetricTemperature, 0, 1<<62, func(_ int64, v float64) bool {
		out = append(out, v)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// adminToken creates an admin (the default one must change its password
// before it may do anything) and logs it in over HTTP.
func adminToken(t *testing.T, app *appliance.App) string {
	t.Helper()
	if _, err := app.Auth().CreateUser("ops@example.org", "ops-password-1", "admin", false); err != nil {
		t.Fatal(err)
	}
	body := `{"email":"ops@example.org","password":"ops-password-1"}`
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

type mqttStatus struct {
	Mode      string `json:"mode"`
	Listening bool   `json:"listening"`
	Connected bool   `json:"connected"`
	Pipeline  struct {
		Messages int64            `json:"messages_total"`
		Reports  int64            `json:"reports_total"`
		Drops    map[string]int64 `json:"drops"`
		Gateways []struct {
			MAC      string           `json:"mac"`
			Messages int64            `json:"messages"`
			LastSeen int64            `json:"last_seen"`
			Drops    map[string]int64 `json:"drops"`
		} `json:"gateways"`
	} `json:"pipeline"`
	// Named as the rest of the API (they went out as Go field names).
	Broker map[string]any `json:"broker"`
	Writer map[string]any `json:"writer"`
}

func getStatus(t *testing.T, app *appliance.App, token string) mqttStatus {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+app.HTTPAddr()+"/api/v1/status/mqtt", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status/mqtt: %d", resp.StatusCode)
	}
	var env struct {
		Payload mqttStatus `json:"payload"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatal(err)
	}
	return env.Payload
}

func TestMosquittoPubReachesHistoryAndStatusEmbedded(t *testing.T) {
	app := startApp(t, nil)
	c := app.Live().Get()
	brokertest.Pub(t, app.MQTTAddr(), c.MQTTUser, c.MQTTPass, "-q", "1", "-i", "AC233FA0B1C2", "-t", "gw/AC233FA0B1C2/adv1",
		"-m", `{"reports":[{"mac":"C3:00:00:00:0A:01","rssi":-71,"temperature":4.6,"humidity":61.2,"vbatt":2950},{"mac":"bad","rssi":-1}]}`)
	// QoS 1 was acknowledged, so the reading is already durable.
	if got := temps(t, app.DB(), "SEN-A1-1"); len(got) != 1 || got[0] != 4.6 {
		t.Fatalf("history = %v", got)
	}
	tok := adminToken(t, app)
	st := getStatus(t, app, tok)
	if st.Mode != "embedded" || !st.Listening || st.Pipeline.Messages != 1 || st.Pipeline.Reports != 1 || st.Pipeline.Drops["bad_mac"] != 1 {
		t.Fatalf("status = %+v", st)
	}
	if len(st.Pipeline.Gateways) != 1 || st.Pipeline.Gateways[0].MAC != "AC233FA0B1C2" || st.Pipeline.Gateways[0].Drops["bad_mac"] != 1 {
		t.Fatalf("gateways = %+v", st.Pipeline.Gateways)
	}
	if st.Broker["connects_total"] != float64(1) || st.Broker["messages_received"] != float64(1) || st.Broker["listen"] == nil ||
		st.Broker["last_error_at"] != nil || st.Writer["commits"] == nil || st.Writer["max_commit_ms"] == nil {
		t.Fatalf("broker %v, writer %v", st.Broker, st.Writer)
	}
	// Wrong password is refused at CONNECT.
	brokertest.Need(t, "mosquitto_pub")
	if out, err := runPub(app.MQTTAddr(), c.MQTTUser, "wrong", "-t", "gw/AC233FA0B1C2/adv1", "-m", "{}"); err == nil {
		t.Fatalf("wrong password accepted: %s", out)
	}
}

func TestMosquittoPubReachesHistoryAndStatusExternal(t *testing.T) {
	m := brokertest.StartMosquitto(t, "gwuser", "gwpass-123")
	app := startApp(t, map[string]any{"server_mqtt_broker": "external", "server_mqtt_url": m.URL(),
		"server_mqtt_user": "gwuser", "server_mqtt_pass": "gwpass-123"})
	tok := adminToken(t, app)
	eventually(t, "external client connected", func() bool { return getStatus(t, app, tok).Connected })
	brokertest.Pub(t, m.Addr(), "gwuser", "gwpass-123", "-q", "1", "-t", "gw/AC233FA0B1C2/sData",
		"-m", `{"reports":[{"mac":"C30000000A01","rssi":-80,"temperature":-18.4,"interval":120}]}`)
	eventually(t, "reading in history", func() bool {
		got := temps(t, app.DB(), "SEN-A1-1")
		return len(got) == 1 && got[0] == -18.4
	})
	st := getStatus(t, app, tok)
	if st.Mode != "external" || st.Pipeline.Messages != 1 {
		t.Fatalf("status = %+v", st)
	}
}

func runPub(addr, user, pass string, args ...string) ([]byte, error) {
	host, port, _ := strings.Cut(addr, ":")
	full := append([]string{"-h", host, "-p", port, "-u", user, "-P", pass}, args...)
	return exec.Command("mosquitto_pub", full...).CombinedOutput()
}

// TestLLDCarriesLatestValues: the discovery lists the monitoring bridge
// reads carry each beacon's last sighting and latest readings, and never
// need credentials.
func TestLLDCarriesLatestValues(t *testing.T) {
	app := startApp(t, nil)
	c := app.Live().Get()
	brokertest.Pub(t, app.MQTTAddr(), c.MQTTUser, c.MQTTPass, "-q", "1", "-i", "AC233FA0B1C2", "-t", "gw/AC233FA0B1C2/adv1",
		"-m", `{"reports":[{"mac":"C30000000A01","rssi":-70,"temperature":4.25,"humidity":55.5,"vbatt":2950}]}`)
	resp, err := http.Get("http://" + app.HTTPAddr() + "/lld/beacons")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Data []struct {
			UID         string   `json:"{#ASSET_UID}"`
			LastSeen    int64    `json:"last_seen"`
			Temperature *float64 `json:"temperature"`
			Humidity    *float64 `json:"humidity"`
			BatteryMV   *int64   `json:"battery_mv"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("lld: %d %v", resp.StatusCode, err)
	}
	if len(got.Data) != 1 {
		t.Fatalf("rows %+v", got.Data)
	}
	d := got.Data[0]
	if d.UID != "SEN-A1-1" || d.LastSeen == 0 || d.Temperature == nil || *d.Temperature != 4.25 ||
		d.Humidity == nil || *d.Humidity != 55.5 || d.BatteryMV == nil || *d.BatteryMV != 2950 {
		t.Fatalf("row %+v", d)
	}
}

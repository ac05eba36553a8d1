package appliance_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"beaconhub/broker/brokertest"
)

// adminCall sends an admin request to the running appliance and decodes
// the payload into out (when not nil).
func adminCall(t *testing.T, addr, token, method, path string, body any, out any) {
	t.Helper()
	data, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, "http://"+addr+path, bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env struct {
		Message string          `json:"message"`
		Payload json.RawMessage `json:"payload"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&env)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, env.Message)
	}
	if out != nil {
		if err := json.Unmarshal(env.Payload, out); err != nil {
			t.Fatal(err)
		}
	}
}

// A reading published after a replace lands on the asset's uid, at once:
// the replace reloads the MAC -> asset cache before it answers. The same
// holds for a remint through an update.
func TestReadingAfterReplaceAndRemintLandsOnUID(t *testing.T) {
	app := startApp(t, nil)
	c := app.Live().Get()
	tok := adminToken(t, app)
	pub := func(mac string, temp string) {
		brokertest.Pub(t, app.MQTTAddr(), c.MQTTUser, c.MQTTPass, "-q", "1", "-i", "AC233FA0B1C2", "-t", "gw/AC233FA0B1C2/adv1",
			"-m", `{"reports":[{"mac":"`+mac+`","rssi":-70,"temperature":`+temp+`}]}`)
	}

	adminCall(t, app.HTTPAddr(), tok, "POST", "/api/v1/beacon/SEN-A1-1/replace-device",
		map[string]any{"mac": "C3:00:00:00:0B:02", "require_calibrated": false}, nil)
	pub("C30000000B02", "5.5") // QoS 1: acknowledged means durable
	pub("C30000000A01", "9.9") // the old device no longer belongs to the asset
	if got := temps(t, app.DB(), "SEN-A1-1"); len(got) != 1 || got[0] != 5.5 {
		t.Fatalf("SEN-A1-1 history = %v", got)
	}

	var loc struct {
		ID uint64 `json:"id"`
	}
	adminCall(t, app.HTTPAddr(), tok, "POST", "/api/v1/locations", map[string]any{"name": "Ward", "code": "W1"}, &loc)
	var b struct {
		AssetUID string `json:"asset_uid"`
	}
	adminCall(t, app.HTTPAddr(), tok, "POST", "/api/v1/beacons", map[string]any{"mac": "C30000000C03", "name": "Fridge 2"}, &b)
	pub("C30000000C03", "3.1")
	adminCall(t, app.HTTPAddr(), tok, "POST", "/api/v1/beacon/"+b.AssetUID, map[string]any{"type": "sensor", "location_id": loc.ID}, &b)
	if b.AssetUID != "SEN-W1-1" {
		t.Fatalf("reminted as %s", b.AssetUID)
	}
	pub("C30000000C03", "3.2")
	if got := temps(t, app.DB(), "SEN-W1-1"); len(got) != 2 {
		t.Errorf("SEN-W1-1 history = %v", got)
	}
	if got := temps(t, app.DB(), "LEGACY-C30000000C03"); len(got) != 0 {
		t.Errorf("history left under the legacy uid: %v", got)
	}
}

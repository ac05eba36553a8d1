package appliance_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"beaconhub/broker/brokertest"

	"golang.org/x/text/encoding/charmap"
)

// A reading published over MQTT shows on an approved e-ink display at its
// next poll: the appliance wires the recorder into the e-ink service.
func TestEInkShowsLiveReading(t *testing.T) {
	app := startApp(t, nil)
	c := app.Live().Get()
	tok := adminToken(t, app)
	poll := func() string {
		t.Helper()
		resp, err := http.Get("http://" + app.HTTPAddr() + "/eink/display?mac=e1e2e3e4e5e6&voltage=3.0")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json; charset=windows-1250" {
			t.Fatalf("poll: %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
		}
		s, _ := charmap.Windows1250.NewDecoder().Bytes(raw)
		return string(s)
	}
	if body := poll(); !strings.Contains(body, "E1E2E3E4E5E6") {
		t.Fatalf("pending screen = %s", body)
	}
	brokertest.Pub(t, app.MQTTAddr(), c.MQTTUser, c.MQTTPass, "-q", "1", "-i", "AC233FA0B1C2", "-t", "gw/AC233FA0B1C2/adv1",
		"-m", `{"reports":[{"mac":"C30000000A01","rssi":-70,"temperature":4.55}]}`)
	layout := map[string]any{"decimal_separator": ",", "objects": []any{map[string]any{
		"t": "sensor", "sensor_mac": "C30000000A01", "metric": 2, "label": "Teplota:", "unit": "°C", "decimals": 1, "x": 20, "y": 80}}}
	adminCall(t, app.HTTPAddr(), tok, "POST", "/api/v1/eink/display/LEGACY-E1E2E3E4E5E6", map[string]any{"layout": layout}, nil)
	adminCall(t, app.HTTPAddr(), tok, "POST", "/api/v1/eink/display/LEGACY-E1E2E3E4E5E6/state", map[string]any{"state": "approved"}, nil)
	if body := poll(); !strings.Contains(body, `"s":"Teplota: 4,6 °C"`) {
		t.Errorf("approved screen = %s", body)
	}
}

package appliance_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"beaconhub/appliance/clock"
	"beaconhub/appliance/config"
	"beaconhub/broker/brokertest"
	"beaconhub/store"

	"golang.org/x/text/encoding/charmap"
)

type einkReply struct {
	Version int `json:"version"`
	Objects []struct {
		S string `json:"s"`
	} `json:"objects"`
}

func einkPoll(t *testing.T, addr, mac string) einkReply {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/eink/display?mac=" + mac + "&voltage=3.0")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("poll: %d %q", resp.StatusCode, raw)
	}
	s, _ := charmap.Windows1250.NewDecoder().Bytes(raw)
	var r einkReply
	if err := json.Unmarshal(s, &r); err != nil {
		t.Fatalf("poll body %q: %v", s, err)
	}
	return r
}

// A fridge sensor shown on an approved door sign is reminted through the
// admin API (it got a coded home location). Its reading is unchanged, so
// the display must keep showing the value with the same version. The
// next poll showed "--" (and redrew), and the value only returned after
// the e-ink cache's one-minute TTL, a second redraw (a review).
func TestEInkSensorRemintViaAPI(t *testing.T) {
	clk := clock.NewFake(time.Now())
	app := startAppWith(t, appRig{clock: clk, fridge: func(b *store.Beacon) { b.AssetUID = "LEGACY-C30000000A01" }})
	c := app.Live().Get()
	tok := adminToken(t, app)
	const dmac = "E1E2E3E4E5E6"
	einkPoll(t, app.HTTPAddr(), dmac)
	brokertest.Pub(t, app.MQTTAddr(), c.MQTTUser, c.MQTTPass, "-q", "1", "-i", "AC233FA0B1C2", "-t", "gw/AC233FA0B1C2/adv1",
		"-m", `{"reports":[{"mac":"C30000000A01","rssi":-70,"temperature":4.55}]}`)
	eventually(t, "the reading", func() bool { _, ok := app.Recorder().Latest("LEGACY-C30000000A01", 2); return ok })
	layout := map[string]any{"decimal_separator": ",", "objects": []any{map[string]any{
		"t": "sensor", "sensor_mac": "C30000000A01", "metric": 2, "label": "Teplota:", "unit": "°C", "decimals": 1, "x": 20, "y": 80}}}
	adminCall(t, app.HTTPAddr(), tok, "POST", "/api/v1/eink/display/LEGACY-"+dmac, map[string]any{"layout": layout, "validity": 30}, nil)
	adminCall(t, app.HTTPAddr(), tok, "POST", "/api/v1/eink/display/LEGACY-"+dmac+"/state", map[string]any{"state": "approved"}, nil)
	before := einkPoll(t, app.HTTPAddr(), dmac)
	if len(before.Objects) != 1 || before.Objects[0].S != "Teplota: 4,6 °C" {
		t.Fatalf("before remint: %+v", before)
	}

	if uid := remintIntoWard(t, app.HTTPAddr(), tok, "LEGACY-C30000000A01"); uid != "SEN-W1-1" {
		t.Fatalf("reminted as %q", uid)
	}
	clk.Advance(30 * time.Second) // the display's next poll (validity 30 s)
	after := einkPoll(t, app.HTTPAddr(), dmac)
	if len(after.Objects) != 1 || after.Objects[0].S != "Teplota: 4,6 °C" || after.Version != before.Version {
		t.Errorf("next poll after the sensor's remint: %+v (before: %+v); want the same text and version", after, before)
	}
}

// Restart: an approved display with an unchanged screen keeps its version
// across a graceful restart (no needless full refresh), and a change after
// the restart gets a new version.
func TestEInkRestartVersion(t *testing.T) {
	home := t.TempDir()
	clk := clock.NewFake(time.Now().Truncate(time.Second))
	app := rtlsApp(t, home, clk)
	tok := adminToken(t, app)
	const dmac = "E1E2E3E4E5E7"
	einkPoll(t, app.HTTPAddr(), dmac)
	adminCall(t, app.HTTPAddr(), tok, "POST", "/api/v1/eink/display/LEGACY-"+dmac, map[string]any{"layout": map[string]any{"objects": []any{
		map[string]any{"t": 0, "x": 1, "y": 2, "s": "Łódź – pokój 12"}}}}, nil)
	adminCall(t, app.HTTPAddr(), tok, "POST", "/api/v1/eink/display/LEGACY-"+dmac+"/state", map[string]any{"state": "approved"}, nil)
	v1 := einkPoll(t, app.HTTPAddr(), dmac)
	if err := app.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	app2, _ := restart(t, home, clk)
	v2 := einkPoll(t, app2.HTTPAddr(), dmac)
	if v2.Version != v1.Version || len(v2.Objects) != 1 || !strings.Contains(v2.Objects[0].S, "Łódź") {
		t.Errorf("after restart %+v, before %+v", v2, v1)
	}
}

// A branded build (BrandName set at link time) must show its product name
// on the neutral screen: the contract says "the product name". Every
// brand showed "BeaconHub" (a review).
func TestEInkNeutralScreenUsesBrandProduct(t *testing.T) {
	old := config.BrandName
	config.BrandName = "acme"
	t.Cleanup(func() { config.BrandName = old })
	app := startApp(t, nil)
	resp, err := http.Get("http://" + app.HTTPAddr() + "/eink/display?mac=e1e2e3e4e5e8")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	body, _ := charmap.Windows1250.NewDecoder().String(string(raw))
	if want := config.ActiveBrand().Product; want != "Acme Locate" || !strings.Contains(body, `"s":"`+want+`"`) {
		t.Errorf("neutral screen of brand %q (product %q): %s", config.ActiveBrand().Name, want, body)
	}
}

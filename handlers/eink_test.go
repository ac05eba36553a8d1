package handlers

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"beaconhub/appliance/eink"
	"beaconhub/store"
	"beaconhub/web"

	"golang.org/x/text/encoding/charmap"
)

// einkHarness wires the e-ink service the way the appliance does.
type einkHarness struct {
	*assetHarness
	svc *eink.Service
	w   *store.Writer
}

func newEInkHarness(t *testing.T) *einkHarness {
	t.Helper()
	h := newAssetHarness(t)
	w := store.NewWriter(h.db, store.WriterOptions{})
	t.Cleanup(func() { _ = w.Close() })
	svc := eink.New(eink.Options{DB: h.db, Writer: w, Clock: h.clock, Logger: h.logger})
	h.srv = New(Deps{Live: h.live, DB: h.db, Auth: h.auth, AppLog: h.applog, Logger: h.logger, Static: web.FS(), Assets: h.reg, EInk: svc})
	return &einkHarness{assetHarness: h, svc: svc, w: w}
}

func TestEInkPollHTTP(t *testing.T) {
	h := newEInkHarness(t)
	for _, tc := range []struct{ method, path string }{
		{"GET", "/eink/display?mac=a0b1c2d3e4f5&voltage=3.01"},
		{"POST", "/eink/display?mac=A0B1C2D3E4F5"},
		{"GET", "/eink/display/?mac=A0B1C2D3E4F5"},
		{"POST", "/eink/display/?mac=A0B1C2D3E4F5"},
	} {
		r := h.do(req{method: tc.method, path: tc.path, remote: "10.1.2.3:4567"})
		if r.Code != http.StatusOK || r.Header.Get("Content-Type") != "application/json; charset=windows-1250" {
			t.Fatalf("%s %s: %d %s %q", tc.method, tc.path, r.Code, r.Header.Get("Content-Type"), r.Body)
		}
		if r.Type != "" || !strings.Contains(r.Body, `"version":`) || !strings.Contains(r.Body, "A0B1C2D3E4F5") {
			t.Errorf("%s %s: body %q is not the device JSON", tc.method, tc.path, r.Body)
		}
		if r.Header.Get("Content-Length") != strconv.Itoa(len(r.Body)) {
			t.Errorf("%s %s: Content-Length %q for %d bytes", tc.method, tc.path, r.Header.Get("Content-Length"), len(r.Body))
		}
	}
	// A mac in a form body too long to read is no "missing mac".
	if r := h.do(req{method: "POST", path: "/eink/display", body: "mac=a0b1c2d3e4f5&pad=" + strings.Repeat("x", 5000),
		header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}); r.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("long form: %d %q", r.Code, r.Body)
	}
	for _, bad := range []string{"/eink/display", "/eink/display?mac=zz", "/eink/display?mac=a0:b1:c2:d3:e4:f5", "/eink/display?mac=A0B1C2D3E4F5A"} {
		r := h.do(req{method: "GET", path: bad})
		if r.Code != http.StatusBadRequest || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") || r.Body == "" {
			t.Errorf("%s: %d %q %q", bad, r.Code, r.Header.Get("Content-Type"), r.Body)
		}
	}
	// Firmwares that post a form body are understood too.
	r := h.do(req{method: "POST", path: "/eink/display", body: "mac=a0b1c2d3e4f5&voltage=3.01", remote: "10.1.2.3:4567",
		header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}})
	if r.Code != http.StatusOK || !strings.Contains(r.Body, "A0B1C2D3E4F5") {
		t.Fatalf("form POST: %d %q", r.Code, r.Body)
	}
	// Exactly one row for the five polls, with the tracking fields.
	if err := h.w.Flush(); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Displays []eink.DisplayView `json:"displays"`
	}
	h.adminGet("/api/v1/eink/displays", http.StatusOK).decodePayload(t, &list)
	if len(list.Displays) != 1 {
		t.Fatalf("displays = %+v", list.Displays)
	}
	d := list.Displays[0]
	if d.State != "pending" || d.PollCount != 5 || d.LastIP != "10.1.2.3" || d.LastVoltage == nil || *d.LastVoltage != 3.01 || d.AssetUID != "LEGACY-A0B1C2D3E4F5" {
		t.Errorf("display = %+v", d)
	}
	// A bad pair beside a good mac does not stop the poll (the query's
	// included), as before 413s were told apart (a review).
	for _, tc := range []struct{ path, body string }{{"/eink/display?fw=1;2", "mac=a0b1c2d3e4f5"},
		{"/eink/display?voltage=3%2", "mac=a0b1c2d3e4f5"}, {"/eink/display", "mac=a0b1c2d3e4f5&note=100%"}} {
		if r := h.do(req{method: "POST", path: tc.path, body: tc.body,
			header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}); r.Code != http.StatusOK {
			t.Errorf("POST %s %s: %d %q", tc.path, tc.body, r.Code, r.Body)
		}
	}
}

func TestEInkAdminHTTP(t *testing.T) {
	h := newEInkHarness(t)
	h.do(req{method: "GET", path: "/eink/display?mac=A0B1C2D3E4F5"}).expect(t, http.StatusOK)
	root := h.location("Hospital", "H1", 0)
	ward := h.location("Ward", "W2", root)
	h.beacon(map[string]any{"mac": "112233445566", "name": "Fridge", "type": "sensor", "location_id": ward})

	var v eink.DisplayView
	h.post("/api/v1/eink/display/1", map[string]any{"name": "Kuchyně", "location_id": ward,
		"layout": map[string]any{"objects": []any{map[string]any{"t": "sensor", "sensor_mac": "112233445566", "metric": 2, "label": "Łódź", "unit": "°C", "decimals": 1}}}},
		http.StatusOK).decodePayload(t, &v)
	if !strings.HasPrefix(v.AssetUID, "EK-H1W2-") || v.LocationName != "Ward" || !strings.Contains(string(v.Layout), `"sensor_uid":"SEN-H1W2-1"`) {
		t.Fatalf("update = %+v layout %s", v, v.Layout)
	}
	h.post("/api/v1/eink/display/1", map[string]any{"rotation": 4}, http.StatusBadRequest)
	h.post("/api/v1/eink/display/1", map[string]any{"bogus": 1}, http.StatusBadRequest)
	h.post("/api/v1/eink/display/"+v.AssetUID+"/state", map[string]any{"state": "approved"}, http.StatusOK)
	h.post("/api/v1/eink/display/1/state", map[string]any{"state": "blocked"}, http.StatusOK)
	h.post("/api/v1/eink/display/1/state", map[string]any{"state": "approved"}, http.StatusConflict)
	h.post("/api/v1/eink/display/1/state", map[string]any{"state": "pending"}, http.StatusOK)
	h.post("/api/v1/eink/display/1/state", map[string]any{"state": "approved"}, http.StatusOK)

	r := h.do(req{method: "GET", path: "/eink/display?mac=A0B1C2D3E4F5"}).expect(t, http.StatusOK)
	utf, _ := charmap.Windows1250.NewDecoder().String(r.Body)
	if !strings.Contains(utf, `"s":"Łódź -- °C"`) {
		t.Errorf("approved reply = %s", utf)
	}

	h.post("/api/v1/eink/display/1/replace-device", map[string]any{"mac": "A0B1C2D3E4F6"}, http.StatusOK).decodePayload(t, &v)
	if v.MAC != "A0B1C2D3E4F6" || !strings.HasPrefix(v.AssetUID, "EK-") {
		t.Errorf("replace = %+v", v)
	}

	// Templates: create from the display's layout, apply onto a second display.
	var tp store.EInkTemplate
	h.post("/api/v1/eink/layout-templates", map[string]any{"name": "Door", "layout": v.Layout}, http.StatusCreated).decodePayload(t, &tp)
	h.do(req{method: "GET", path: "/eink/display?mac=B0B1C2D3E4F5"}).expect(t, http.StatusOK)
	h.post("/api/v1/eink/display/2/apply-template", map[string]any{"template_id": tp.ID, "sensor_map": map[string]string{}}, http.StatusBadRequest)
	if r := h.post("/api/v1/eink/display/2/apply-template", map[string]any{}, http.StatusBadRequest); !strings.Contains(r.Body, `"field":"template_id"`) {
		t.Errorf("apply without template_id: %s", r.Body)
	}
	h.post("/api/v1/eink/display/2/apply-template", map[string]any{"template_id": tp.ID, "sensor_map": map[string]string{"SEN-H1W2-1": "SEN-H1W2-1"}}, http.StatusOK)
	h.post("/api/v1/eink/layout-template/"+strconv.FormatUint(tp.ID, 10), map[string]any{"name": "Door 2"}, http.StatusOK)
	h.adminGet("/api/v1/eink/layout-templates", http.StatusOK)
	h.adminGet("/api/v1/eink/sensors", http.StatusOK)
	h.send("DELETE", "/api/v1/eink/layout-template/"+strconv.FormatUint(tp.ID, 10), h.admin, nil).expect(t, http.StatusOK)

	h.send("DELETE", "/api/v1/eink/display/1", h.admin, nil).expect(t, http.StatusOK)
	h.send("DELETE", "/api/v1/eink/display/1", h.admin, nil).expect(t, http.StatusNotFound)
}

func TestQueryValue(t *testing.T) {
	for _, tc := range []struct{ raw, key, want string }{
		{"mac=A0B1C2D3E4F5&voltage=3.01", "mac", "A0B1C2D3E4F5"},
		{"mac=A0B1C2D3E4F5&voltage=3.01", "voltage", "3.01"},
		{"voltage=3%2E01&mac=x", "voltage", "3.01"},
		{"macx=1&mac=2", "mac", "2"},
		{"mac=1&mac=2", "mac", "1"},
		{"mac", "mac", ""},
		{"mac=%zz", "mac", ""},
		{"", "mac", ""},
	} {
		if got := queryValue(tc.raw, tc.key); got != tc.want {
			t.Errorf("queryValue(%q, %q) = %q, want %q", tc.raw, tc.key, got, tc.want)
		}
	}
}

// A display's device appears in the device list with the display's uid.
func TestEInkDeviceListedWithItsUID(t *testing.T) {
	h := newEInkHarness(t)
	h.do(req{method: "GET", path: "/eink/display?mac=A0B1C2D3E4F6", remote: "10.1.2.3:4567"}).expect(t, http.StatusOK)
	r := h.adminGet("/api/v1/devices?asset_kind=eink", http.StatusOK)
	if !strings.Contains(r.Body, `"asset_uid":"LEGACY-A0B1C2D3E4F6"`) {
		t.Fatalf("devices: %s", r.Body)
	}
}

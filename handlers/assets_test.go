package handlers

import (
	"net/http"
	"strings"
	"testing"

	"beaconhub/appliance/assets"
)

func TestBeaconEndpoints(t *testing.T) {
	h := newAssetHarness(t)
	root := h.location("Hospital", "H1", 0)
	annex := h.location("Annex", "", root)
	b := h.beacon(map[string]any{"mac": "c3:00:00:00:0a:01", "name": "Fridge 1", "type": "sensor", "location_id": root,
		"humidity_range": map[string]any{"min": 20, "max": 60}, "calibrated_at": h.clock.Now().UnixMilli() - 1000, "calibration_interval_days": 365})
	if b.AssetUID != "SEN-H1-1" || b.MAC != "C30000000A01" || b.Calibration != "ok" || b.HumidityRange.Max != 60 || b.CreatedAt != h.clock.Now().UnixMilli() {
		t.Fatalf("created = %+v", b)
	}
	legacy := h.beacon(map[string]any{"mac": "C30000000A02", "name": "Unknown"})
	if legacy.AssetUID != "LEGACY-C30000000A02" || legacy.Type != "unknown" {
		t.Fatalf("legacy = %+v", legacy)
	}

	var got assets.BeaconView
	h.get("/api/v1/beacon/SEN-H1-1", h.token("user")).expect(t, http.StatusOK).decodePayload(t, &got)
	if got.Name != "Fridge 1" {
		t.Errorf("get = %+v", got)
	}
	var list struct {
		Beacons []assets.BeaconView `json:"beacons"`
	}
	h.get("/api/v1/beacons", h.token("maintenance")).expect(t, http.StatusOK).decodePayload(t, &list)
	if len(list.Beacons) != 2 {
		t.Errorf("list = %+v", list)
	}
	h.adminGet("/api/v1/beacons/1", http.StatusOK).decodePayload(t, &list)
	if len(list.Beacons) != 1 || list.Beacons[0].AssetUID != legacy.AssetUID {
		t.Errorf("newest 1 = %+v", list)
	}
	// Newest first however many there are (a limit at or above the count
	// came oldest first: a review).
	for _, n := range []string{"2", "10000"} {
		h.adminGet("/api/v1/beacons/"+n, http.StatusOK).decodePayload(t, &list)
		if len(list.Beacons) != 2 || list.Beacons[0].AssetUID != legacy.AssetUID || list.Beacons[1].AssetUID != b.AssetUID {
			t.Errorf("newest %s = %+v, want %s then %s", n, list.Beacons, legacy.AssetUID, b.AssetUID)
		}
	}
	h.adminGet("/api/v1/beacons/0", http.StatusBadRequest)
	h.adminGet("/api/v1/beacons/abc", http.StatusBadRequest)

	// Bad input: a clear 400 naming the field, and nothing written.
	before := h.snapshot()
	for name, tc := range map[string]struct {
		path  string
		body  any
		field string
	}{
		"malformed mac":       {"/api/v1/beacons", map[string]any{"mac": "C30000000A0", "name": "x"}, "mac"},
		"duplicate mac":       {"/api/v1/beacons", map[string]any{"mac": "c30000000a01", "name": "x"}, "mac"},
		"unknown location":    {"/api/v1/beacons", map[string]any{"mac": "C30000000A03", "name": "x", "location_id": 77}, "location_id"},
		"uncoded location":    {"/api/v1/beacons", map[string]any{"mac": "C30000000A03", "name": "x", "type": "sensor", "location_id": annex}, "location_id"},
		"bad type":            {"/api/v1/beacons", map[string]any{"mac": "C30000000A03", "name": "x", "type": "fridge"}, "type"},
		"bad range":           {"/api/v1/beacons", map[string]any{"mac": "C30000000A03", "name": "x", "temperature_range": map[string]any{"min": 5, "max": 2}}, "temperature_range"},
		"unknown field":       {"/api/v1/beacons", map[string]any{"mac": "C30000000A03", "name": "x", "colour": "red"}, ""},
		"malformed JSON":      {"/api/v1/beacons", `{"mac":`, ""},
		"empty body":          {"/api/v1/beacons", "", ""},
		"mac change":          {"/api/v1/beacon/SEN-H1-1", map[string]any{"mac": "C30000000A09"}, "mac"},
		"uid change":          {"/api/v1/beacon/SEN-H1-1", map[string]any{"asset_uid": "SEN-H1-9"}, "asset_uid"},
		"update bad location": {"/api/v1/beacon/SEN-H1-1", map[string]any{"location_id": 77, "name": "renamed"}, "location_id"},
		"remint uncoded":      {"/api/v1/beacon/LEGACY-C30000000A02", map[string]any{"type": "sensor", "location_id": annex}, "location_id"},
	} {
		t.Run(name, func(t *testing.T) {
			h.send("POST", tc.path, h.admin, tc.body).wantBad(t, tc.field)
		})
	}
	if h.snapshot() != before {
		t.Fatal("refused beacon requests wrote")
	}
	r := h.send("POST", "/api/v1/beacons", h.admin, map[string]any{"mac": "C30000000A03", "name": "x", "type": "sensor", "location_id": annex}).wantBadMsg(t)
	if !strings.Contains(r, `"Annex"`) {
		t.Errorf("uncoded-path message does not name the location: %s", r)
	}

	// Remint through an update moves the history with it.
	h.readings(legacy.AssetUID, 100, 200)
	var re assets.BeaconView
	h.post("/api/v1/beacon/"+legacy.AssetUID, map[string]any{"type": "panic", "location_id": root}, http.StatusOK).decodePayload(t, &re)
	if re.AssetUID != "PAN-H1-1" || h.countHistory("PAN-H1-1") != 2 || h.countHistory(legacy.AssetUID) != 0 {
		t.Errorf("remint: %+v", re)
	}
	h.adminGet("/api/v1/assets/"+legacy.AssetUID, http.StatusOK) // the former uid still resolves

	var info assets.AssetInfo
	h.adminGet("/api/v1/beacon/PAN-H1-1/info", http.StatusOK).decodePayload(t, &info)
	if info.Kind != "beacon" || info.Device == nil || info.Device.MAC != "C30000000A02" || len(info.Assignments) != 1 || info.Records["history"] != 2 {
		t.Errorf("info = %+v", info)
	}
	h.adminGet("/api/v1/assets/PAN-H1-1/info", http.StatusOK)
	var cleared assets.BeaconView
	h.post("/api/v1/beacon/SEN-H1-1", map[string]any{"humidity_range": nil, "poi": true}, http.StatusOK).decodePayload(t, &cleared)
	if cleared.HumidityRange != nil || !cleared.POI || cleared.Name != "Fridge 1" {
		t.Errorf("null clears a range, absent fields stay: %+v", cleared)
	}
	h.adminGet("/api/v1/assets/NOPE-1", http.StatusNotFound)

	h.send("DELETE", "/api/v1/beacon/SEN-H1-1", h.admin, nil).expect(t, http.StatusOK)
	h.get("/api/v1/beacon/SEN-H1-1", h.admin).expect(t, http.StatusNotFound)
	h.send("DELETE", "/api/v1/beacon/SEN-H1-1", h.admin, nil).expect(t, http.StatusNotFound)

	actions := map[string]int{}
	for _, rec := range h.logRecords() {
		actions[rec.Action]++
	}
	if actions["beacon.create"] != 2 || actions["beacon.update"] != 2 || actions["beacon.delete"] != 1 {
		t.Errorf("application log = %v", actions)
	}
}

// wantBadMsg expects a 400 and returns its message.
func (r *response) wantBadMsg(t *testing.T) string {
	t.Helper()
	r.expect(t, http.StatusBadRequest)
	return r.Message
}

func TestGatewayEndpoints(t *testing.T) {
	h := newAssetHarness(t)
	root := h.location("Hospital", "H1", 0)
	var g assets.GatewayView
	h.post("/api/v1/gateways", map[string]any{"mac": "AC233FA0B1C2", "name": "Kitchen", "ip": "10.1.2.3", "location_id": root}, http.StatusCreated).decodePayload(t, &g)
	if g.AssetUID != "GW-H1-1" {
		t.Fatalf("gateway = %+v", g)
	}
	before := h.snapshot()
	for name, tc := range map[string]struct {
		path  string
		body  any
		field string
	}{
		"bad ip":         {"/api/v1/gateways", map[string]any{"mac": "AC233FA0B1C3", "name": "x", "ip": "10.1.2"}, "ip"},
		"duplicate mac":  {"/api/v1/gateways", map[string]any{"mac": "ac:23:3f:a0:b1:c2", "name": "x"}, "mac"},
		"malformed mac":  {"/api/v1/gateways", map[string]any{"mac": "AC233FA0B1", "name": "x"}, "mac"},
		"no name":        {"/api/v1/gateways", map[string]any{"mac": "AC233FA0B1C3"}, "name"},
		"mac change":     {"/api/v1/gateway/GW-H1-1", map[string]any{"mac": "AC233FA0B1C3"}, "mac"},
		"replaced_at":    {"/api/v1/gateway/GW-H1-1/replace-device", map[string]any{"mac": "AC233FA0B1C3", "replaced_at": 1}, "replaced_at"},
		"replace no mac": {"/api/v1/gateway/GW-H1-1/replace-device", map[string]any{}, "mac"},
		"unknown field":  {"/api/v1/gateway/GW-H1-1", map[string]any{"floor": 2}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			h.send("POST", tc.path, h.admin, tc.body).wantBad(t, tc.field)
		})
	}
	if h.snapshot() != before {
		t.Fatal("refused gateway requests wrote")
	}
	h.post("/api/v1/gateway/GW-H1-1", map[string]any{"name": "Kitchen 2", "ip": ""}, http.StatusOK).decodePayload(t, &g)
	if g.Name != "Kitchen 2" || g.IP != "" {
		t.Errorf("update = %+v", g)
	}
	var rp assets.ReplacePlan
	h.post("/api/v1/gateway/GW-H1-1/replace-device", map[string]any{"mac": "AC233FA0B1C3"}, http.StatusOK).decodePayload(t, &rp)
	if rp.OldMAC != "AC233FA0B1C2" || rp.MAC != "AC233FA0B1C3" || rp.Kind != "gateway" {
		t.Errorf("replace = %+v", rp)
	}
	var list struct {
		Gateways []assets.GatewayView `json:"gateways"`
	}
	h.get("/api/v1/gateways", h.token("user")).expect(t, http.StatusOK).decodePayload(t, &list)
	if len(list.Gateways) != 1 || list.Gateways[0].MAC != "AC233FA0B1C3" {
		t.Errorf("list = %+v", list)
	}
	h.get("/api/v1/gateway/GW-H1-1", h.token("user")).expect(t, http.StatusOK)
	h.send("DELETE", "/api/v1/gateway/GW-H1-1", h.admin, nil).expect(t, http.StatusOK)
	h.get("/api/v1/gateway/GW-H1-1", h.admin).expect(t, http.StatusNotFound)
	actions := map[string]int{}
	for _, rec := range h.logRecords() {
		actions[rec.Action]++
	}
	if actions["gateway.create"] != 1 || actions["gateway.update"] != 1 || actions["gateway.delete"] != 1 || actions["gateway.replace_device"] != 1 {
		t.Errorf("application log = %v", actions)
	}
}

// Where no registry runs the routes still answer, with a 503.
func TestAssetRoutesWithoutRegistry(t *testing.T) {
	h := newHarness(t)
	r := h.get("/api/v1/beacons", h.token("admin"))
	if r.Code != http.StatusServiceUnavailable || r.Type != "error" {
		t.Errorf("%d %s", r.Code, r.Body)
	}
}

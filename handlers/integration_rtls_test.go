package handlers

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/rtls"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// site builds a map with two zones and three beacons (a watch, a panic
// button, a sensor) under a coded root location.
type siteFixture struct {
	m              store.Map
	hall, ward     store.Zone
	watch, panicB  string
	sensor, annex  string
	root, annexLoc uint64
}

func (h *rtlsHarness) site() siteFixture {
	h.t.Helper()
	var f siteFixture
	f.root = h.location("Hospital", "H1", 0)
	f.annexLoc = h.location("Annex", "AX", f.root)
	f.m = h.newMap("Ground", 200, 100)
	f.hall = h.newZone(f.m.ID, "Hall", 0, 0, 100, 100)
	f.ward = h.newZone(f.m.ID, "Ward", 100, 0, 200, 100)
	h.post("/api/v1/zone/"+itoa(f.hall.ID)+"/adjacency", map[string]any{"adjacent": []uint64{f.ward.ID}}, http.StatusOK)
	f.watch = h.beacon(map[string]any{"mac": "C30000000B01", "name": "Nurse 1", "type": "watch", "location_id": f.root}).AssetUID
	f.panicB = h.beacon(map[string]any{"mac": "C30000000B02", "name": "Button", "type": "panic", "location_id": f.root}).AssetUID
	f.sensor = h.beacon(map[string]any{"mac": "C30000000B03", "name": "Fridge", "type": "sensor", "location_id": f.root}).AssetUID
	f.annex = h.beacon(map[string]any{"mac": "C30000000B04", "name": "Porter", "type": "watch", "location_id": f.annexLoc}).AssetUID
	return f
}

// The integration shapes are fixed (docs/api.md); decode them into raw
// maps so a renamed or missing key fails, not just a wrong value.
func TestIntegrationRTLSShapes(t *testing.T) {
	h := newRTLSHarness(t, WSOptions{})
	f := h.site()
	api := h.token("api")
	h.fake.set(rtls.Location{AssetUID: f.watch, Zone: f.ward.ID, ZoneName: "Ward", MapID: f.m.ID, X: 150, Y: 40, HasPos: true, Since: 1000, Updated: 2000})
	h.fake.set(rtls.Location{AssetUID: f.panicB}) // seen, but unknown now
	h.fake.lastSeen[f.watch] = 2000

	var bl struct {
		Beacons []map[string]any `json:"beacons"`
	}
	h.get("/api/v1/integration/beacons", api).expect(t, http.StatusOK).decodePayload(t, &bl)
	if len(bl.Beacons) != 3 {
		t.Fatalf("trackable beacons %v", bl.Beacons)
	}
	want := map[string]any{"asset_uid": f.watch, "mac": "C30000000B01", "name": "Nurse 1", "type": "watch", "location_id": float64(f.root)}
	if !sameJSON(bl.Beacons[0], want) {
		t.Fatalf("beacon %v, want %v", bl.Beacons[0], want)
	}
	h.get("/api/v1/integration/beacons?type=panic", api).expect(t, http.StatusOK).decodePayload(t, &bl)
	if len(bl.Beacons) != 1 || bl.Beacons[0]["asset_uid"] != f.panicB {
		t.Fatalf("type=panic %v", bl.Beacons)
	}
	h.get("/api/v1/integration/beacons?type=sensor", api).expect(t, http.StatusBadRequest)
	h.get("/api/v1/integration/beacons?type=bogus", h.admin).expect(t, http.StatusBadRequest)

	var one map[string]any
	h.get("/api/v1/integration/beacons/"+f.watch+"/location", api).expect(t, http.StatusOK).decodePayload(t, &one)
	wantLoc := map[string]any{"asset_uid": f.watch, "name": "Nurse 1", "type": "watch",
		"zone": map[string]any{"id": float64(f.ward.ID), "name": "Ward"}, "map": map[string]any{"id": float64(f.m.ID), "name": "Ground"},
		"position": map[string]any{"x": 150.0, "y": 40.0}, "since": 1000.0, "updated": 2000.0, "last_seen": 2000.0}
	if !sameJSON(one, wantLoc) {
		t.Fatalf("location %v\nwant %v", one, wantLoc)
	}
	h.get("/api/v1/integration/beacons/"+f.panicB+"/location", api).expect(t, http.StatusOK).decodePayload(t, &one)
	wantUnknown := map[string]any{"asset_uid": f.panicB, "name": "Button", "type": "panic", "zone": nil, "map": nil,
		"position": nil, "since": nil, "updated": nil, "last_seen": nil}
	if !sameJSON(one, wantUnknown) {
		t.Fatalf("unknown location %v", one)
	}
	h.get("/api/v1/integration/beacons/"+f.sensor+"/location", api).expect(t, http.StatusNotFound)
	h.get("/api/v1/integration/beacons/WCH-NOPE-1/location", api).expect(t, http.StatusNotFound)
	// The persisted last_seen moves in whole seconds; the engine's
	// sighting, later within that second, is what last_seen reads.
	h.fake.mu.Lock()
	h.fake.lastSeen[f.watch] = 1500
	h.fake.mu.Unlock()
	h.get("/api/v1/integration/beacons/"+f.watch+"/location", api).expect(t, http.StatusOK).decodePayload(t, &one)
	if one["last_seen"] != 2000.0 || one["updated"] != 2000.0 {
		t.Fatalf("last_seen %v, updated %v", one["last_seen"], one["updated"])
	}
	h.fake.mu.Lock()
	h.fake.lastSeen[f.watch] = 2000
	h.fake.mu.Unlock()

	var locs struct {
		Locations []map[string]any `json:"locations"`
	}
	h.get("/api/v1/integration/beacons/locations", api).expect(t, http.StatusOK).decodePayload(t, &locs)
	if len(locs.Locations) != 3 || !sameJSON(locs.Locations[0], wantLoc) {
		t.Fatalf("locations %v", locs.Locations)
	}

	var zl struct {
		Zones []map[string]any `json:"zones"`
	}
	h.get("/api/v1/integration/zones", api).expect(t, http.StatusOK).decodePayload(t, &zl)
	wantZone := map[string]any{"id": float64(f.hall.ID), "name": "Hall", "map_id": float64(f.m.ID), "map_name": "Ground",
		"x1": 0.0, "y1": 0.0, "x2": 100.0, "y2": 100.0, "adjacent": []any{float64(f.ward.ID)}}
	if len(zl.Zones) != 2 || !sameJSON(zl.Zones[0], wantZone) {
		t.Fatalf("zones %v", zl.Zones)
	}
	// Users are not integration clients.
	h.get("/api/v1/integration/zones", h.token("user")).expect(t, http.StatusForbidden)

	// The tracking canvas shows the located beacon (not the unknown one).
	var ov struct {
		Zones   []store.Zone     `json:"zones"`
		Beacons []map[string]any `json:"beacons"`
	}
	h.get("/api/v1/maps/"+itoa(f.m.ID)+"/overview", h.token("user")).expect(t, http.StatusOK).decodePayload(t, &ov)
	wantCanvas := map[string]any{"asset_uid": f.watch, "name": "Nurse 1", "type": "watch", "zone_id": float64(f.ward.ID),
		"position": map[string]any{"x": 150.0, "y": 40.0}, "since": 1000.0, "updated": 2000.0}
	if len(ov.Zones) != 2 || len(ov.Beacons) != 1 || !sameJSON(ov.Beacons[0], wantCanvas) {
		t.Fatalf("canvas %+v", ov)
	}
}

func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// Without feature rtls every RTLS read answers 400, for every role that
// passes the guard.
func TestRTLSOffAnswers400(t *testing.T) {
	h := newAssetHarness(t)
	for _, c := range []struct{ path, role string }{
		{"/api/v1/user/rtls/trackable-beacons", "user"},
		{"/api/v1/user/rtls/beacons/WCH-H1-1/zone-intervals", "user"},
		{"/api/v1/integration/beacons", "api"},
		{"/api/v1/integration/beacons/locations", "api"},
		{"/api/v1/integration/beacons/WCH-H1-1/location", "api"},
		{"/api/v1/tracking/status", "user"},
		{"/api/v1/tracking/WCH-H1-1", "user"},
		{"/ws", "user"},
	} {
		r := h.get(c.path, h.token(c.role))
		if r.Code != http.StatusBadRequest || r.Message != msgRTLSOff {
			t.Errorf("%s as %s: %d %q", c.path, c.role, r.Code, r.Message)
		}
	}
}

// With navigation on and rtls off, the integration zones (which the map
// routes edit with either feature) are served; the rest of the family
// still answers 400.
func TestIntegrationZonesWithNavigationOnly(t *testing.T) {
	h, admin := newNavHarness(t)
	var z struct {
		Zones []map[string]any `json:"zones"`
	}
	h.send("GET", "/api/v1/integration/zones", admin, nil).expect(t, http.StatusOK).decodePayload(t, &z)
	if z.Zones == nil {
		t.Fatal("zones missing")
	}
	if r := h.send("GET", "/api/v1/integration/beacons", admin, nil); r.Code != http.StatusBadRequest || r.Message != msgRTLSOff {
		t.Fatalf("beacons with rtls off: %d %q", r.Code, r.Message)
	}
}

func TestUserRTLSScopeAndIntervals(t *testing.T) {
	h := newRTLSHarness(t, WSOptions{})
	f := h.site()
	user := h.token("user")
	var tb struct {
		Beacons []map[string]any `json:"beacons"`
	}
	h.get("/api/v1/user/rtls/trackable-beacons", user).expect(t, http.StatusOK).decodePayload(t, &tb)
	if len(tb.Beacons) != 3 {
		t.Fatalf("unscoped user sees %d beacons", len(tb.Beacons))
	}
	// Bind the user to the annex: only the porter stays visible.
	if _, err := h.db.UpdateUser(h.users["user"].ID, func(u *store.User) error { u.LocationID = f.annexLoc; return nil }); err != nil {
		t.Fatal(err)
	}
	h.get("/api/v1/user/rtls/trackable-beacons", user).expect(t, http.StatusOK).decodePayload(t, &tb)
	if len(tb.Beacons) != 1 || tb.Beacons[0]["asset_uid"] != f.annex {
		t.Fatalf("annex user sees %v", tb.Beacons)
	}
	h.get("/api/v1/user/rtls/beacons/"+f.watch+"/zone-intervals", user).expect(t, http.StatusNotFound)
	h.get("/api/v1/tracking/"+f.watch, user).expect(t, http.StatusNotFound)
	h.get("/api/v1/tracking/"+f.annex, user).expect(t, http.StatusOK)
	// Admins may ask about any asset, trackable or not.
	h.get("/api/v1/tracking/"+f.sensor, h.admin).expect(t, http.StatusOK)
	h.get("/api/v1/tracking/"+f.sensor, h.token("maintenance")).expect(t, http.StatusNotFound)
	h.get("/api/v1/tracking/NOPE-1", h.admin).expect(t, http.StatusNotFound)
	// An e-ink display is an asset too: it answered 404 "not found".
	if err := h.db.UpdateAssets(time.Now(), func(tx *store.AssetTx) error {
		d := &store.EInkDisplay{MAC: "EE0000000001", AssetUID: "LEGACY-EE0000000001", State: store.EInkPending}
		if err := tx.PutEInk(d, ""); err != nil {
			return err
		}
		return tx.ClaimUID(d.AssetUID, store.AssetRef{Kind: store.KindEInk, ID: d.ID})
	}); err != nil {
		t.Fatal(err)
	}
	var display struct {
		AssetUID string `json:"asset_uid"`
		Located  bool   `json:"located"`
	}
	h.get("/api/v1/tracking/LEGACY-EE0000000001", h.admin).expect(t, http.StatusOK).decodePayload(t, &display)
	if display.AssetUID != "LEGACY-EE0000000001" || display.Located {
		t.Fatalf("e-ink display: %+v", display)
	}

	// Pagination: 45 intervals, pages of 20, with 7 new ones arriving
	// between the pages: the walk sees each of the first 45 exactly once.
	appendZI := func(from, n int) {
		if err := h.db.Update(func(tx *bolt.Tx) error {
			for i := from; i < from+n; i++ {
				if err := store.AppendZoneInterval(tx, f.annex, &store.ZoneInterval{ZoneID: f.hall.ID, Zone: "Hall", Enter: int64(i) * 1000}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	appendZI(1, 45)
	type page struct {
		Intervals  []store.ZoneInterval `json:"intervals"`
		NextCursor *string              `json:"next_cursor"`
	}
	var p page
	base := "/api/v1/user/rtls/beacons/" + f.annex + "/zone-intervals"
	h.get(base, user).expect(t, http.StatusOK).decodePayload(t, &p)
	if len(p.Intervals) != 30 || p.NextCursor == nil {
		t.Fatalf("default page: %d, next %v", len(p.Intervals), p.NextCursor)
	}
	seen := map[uint64]int{}
	url := base + "?limit=20"
	for pages := 0; ; pages++ {
		h.get(url, user).expect(t, http.StatusOK).decodePayload(t, &p)
		for _, iv := range p.Intervals {
			seen[iv.Ordinal]++
		}
		if pages == 0 {
			appendZI(46, 7)
		}
		if p.NextCursor == nil {
			break
		}
		url = base + "?limit=20&cursor=" + *p.NextCursor
	}
	for ord := uint64(1); ord <= 45; ord++ {
		if seen[ord] != 1 {
			t.Fatalf("interval %d seen %d times (%v)", ord, seen[ord], seen)
		}
	}
	if len(seen) != 45 {
		t.Fatalf("walk saw %d intervals, want the 45 that existed when it began", len(seen))
	}
	for _, q := range []string{"?limit=0", "?limit=201", "?limit=x", "?cursor=-1", "?cursor=abc"} {
		h.get(base+q, user).expect(t, http.StatusBadRequest)
	}
	h.get(base+"?limit=200", user).expect(t, http.StatusOK)
}

func TestTrackingEndpoints(t *testing.T) {
	h := newRTLSHarness(t, WSOptions{})
	user := h.token("user")
	h.get("/api/v1/tracking/start/strongest", user).expect(t, http.StatusForbidden)
	h.get("/api/v1/tracking/start/nope", h.admin).expect(t, http.StatusBadRequest)
	var st rtls.Status
	h.get("/api/v1/tracking/start/strongest", h.admin).expect(t, http.StatusOK).decodePayload(t, &st)
	if !st.Running || st.Algorithm != "strongest" {
		t.Fatalf("status %+v", st)
	}
	var cur struct {
		Algorithm *string `json:"algorithm"`
		Running   bool    `json:"running"`
	}
	h.get("/api/v1/tracking/algorithms/current", user).expect(t, http.StatusOK).decodePayload(t, &cur)
	if cur.Algorithm == nil || *cur.Algorithm != "strongest" || !cur.Running {
		t.Fatalf("current %+v", cur)
	}
	var algs struct {
		Algorithms []rtls.AlgorithmInfo `json:"algorithms"`
	}
	h.get("/api/v1/tracking/algorithms", user).expect(t, http.StatusOK).decodePayload(t, &algs)
	if len(algs.Algorithms) != 1 || algs.Algorithms[0].Name != "strongest" {
		t.Fatalf("algorithms %+v", algs)
	}
	// reason is null, not missing, when ready (docs/api.md).
	var raw struct {
		Algorithms []map[string]any `json:"algorithms"`
	}
	h.get("/api/v1/tracking/algorithms", user).expect(t, http.StatusOK).decodePayload(t, &raw)
	if r, ok := raw.Algorithms[0]["reason"]; !ok || r != nil || raw.Algorithms[0]["ready"] != true {
		t.Fatalf("a ready algorithm: reason %v (present %v), want null: %v", r, ok, raw.Algorithms[0])
	}
	var stopped map[string]any
	h.get("/api/v1/tracking/stop", h.admin).expect(t, http.StatusOK).decodePayload(t, &stopped)
	// start, stop and status answer one shape: null, not "", when stopped.
	if a, ok := stopped["algorithm"]; !ok || a != nil || stopped["running"] != false || stopped["since"] != nil {
		t.Fatalf("stop answered %v", stopped)
	}
	h.get("/api/v1/tracking/algorithms/current", user).expect(t, http.StatusOK).decodePayload(t, &cur)
	if cur.Algorithm != nil || cur.Running {
		t.Fatalf("after stop %+v", cur)
	}
	var sm map[string]any
	h.get("/api/v1/tracking/status", user).expect(t, http.StatusOK).decodePayload(t, &sm)
	if since, ok := sm["since"]; !ok || since != nil {
		t.Fatalf("status after stop: since %v (present %v), want null", since, ok)
	}
	if a, ok := sm["algorithm"]; !ok || a != nil || sm["running"] != false {
		t.Fatalf("status after stop: %v", sm)
	}
	var started map[string]any
	h.get("/api/v1/tracking/start/strongest", h.admin).expect(t, http.StatusOK).decodePayload(t, &started)
	if _, ok := started["websocket"]; !ok || started["algorithm"] != "strongest" || started["since"] == nil {
		t.Fatalf("start answered %v, want the status shape with websocket counters", started)
	}
	h.get("/api/v1/tracking/status", user).expect(t, http.StatusOK).decodePayload(t, &sm)
	if sm["algorithm"] != "strongest" || sm["running"] != true {
		t.Fatalf("status while running: %v", sm)
	}
}

func TestSurveySamples(t *testing.T) {
	h := newRTLSHarness(t, WSOptions{})
	f := h.site()
	h.send("POST", "/api/v1/tracking/survey/start", h.admin, map[string]any{"asset_uid": f.watch, "zone_id": 999}).expect(t, http.StatusBadRequest)
	h.send("POST", "/api/v1/tracking/survey/start", h.admin, map[string]any{"asset_uid": "NOPE", "zone_id": f.hall.ID}).expect(t, http.StatusBadRequest)
	h.send("POST", "/api/v1/tracking/survey/start", h.token("user"), map[string]any{"asset_uid": f.watch, "zone_id": f.hall.ID}).expect(t, http.StatusForbidden)
	h.post("/api/v1/tracking/survey/start", map[string]any{"asset_uid": f.watch, "zone_id": f.hall.ID}, http.StatusOK)
	before := h.fake.reloads
	var stopped struct {
		Stored  int                `json:"stored"`
		Samples []store.ZoneSample `json:"samples"`
	}
	h.post("/api/v1/tracking/survey/stop", map[string]any{"asset_uid": f.watch}, http.StatusOK).decodePayload(t, &stopped)
	if stopped.Stored != 2 || stopped.Samples[0].RSSI["AC233F000001"] != -61.5 || stopped.Samples[0].Zone != f.hall.ID {
		t.Fatalf("stopped %+v", stopped)
	}
	if h.fake.reloads == before {
		t.Fatal("samples not handed to the engine")
	}
	var list struct {
		Samples []store.ZoneSample `json:"samples"`
	}
	h.adminGet("/api/v1/tracking/samples?zone_id="+itoa(f.hall.ID), http.StatusOK).decodePayload(t, &list)
	if len(list.Samples) != 2 {
		t.Fatalf("samples %+v", list)
	}
	// How many readings each mean holds and their spread are kept (grid
	// learns from them what one reading is worth); a window of one
	// reading has no spread.
	for _, got := range [][]store.ZoneSample{stopped.Samples, list.Samples} {
		one, two := got[0], got[1]
		if one.RSSI["AC233F000001"] != -61.5 {
			one, two = two, one
		}
		if one.Readings["AC233F000001"] != 2 || one.RSSISD["AC233F000001"] != 2.12 || two.Readings["AC233F000001"] != 1 || two.RSSISD != nil {
			t.Fatalf("readings and spread not kept: %+v", got)
		}
	}
	h.send("DELETE", "/api/v1/tracking/sample/"+itoa(list.Samples[0].ID), h.admin, nil).expect(t, http.StatusOK)
	h.send("DELETE", "/api/v1/tracking/sample/"+itoa(list.Samples[0].ID), h.admin, nil).expect(t, http.StatusNotFound)
	h.adminGet("/api/v1/tracking/samples", http.StatusOK).decodePayload(t, &list)
	if len(list.Samples) != 1 {
		t.Fatalf("after delete %+v", list)
	}

	// Stopping a survey nobody is recording is a 404 and leaves the
	// engine alone: it answered 200 and reloaded the site, which restarts
	// every beacon's decision (a review).
	before = h.fake.reloads
	h.send("POST", "/api/v1/tracking/survey/stop", h.admin, map[string]any{"asset_uid": f.watch}).expect(t, http.StatusNotFound)
	if h.fake.reloads != before {
		t.Fatal("a stop with no survey reloaded the site")
	}

	// A survey that went on in a zone deleted while it recorded keeps
	// the samples of the zones that still exist (it stored none).
	gone := h.newZone(f.m.ID, "Gone", 0, 50, 50, 100)
	h.post("/api/v1/tracking/survey/start", map[string]any{"asset_uid": f.watch, "zone_id": f.ward.ID}, http.StatusOK)
	h.post("/api/v1/tracking/survey/start", map[string]any{"asset_uid": f.watch, "zone_id": gone.ID}, http.StatusOK)
	h.send("DELETE", "/api/v1/zone/"+itoa(gone.ID), h.admin, nil).expect(t, http.StatusOK)
	var partial struct {
		Stored, Dropped int
		Samples         []store.ZoneSample
	}
	h.post("/api/v1/tracking/survey/stop", map[string]any{"asset_uid": f.watch}, http.StatusOK).decodePayload(t, &partial)
	if partial.Stored != 2 || partial.Dropped != 2 || len(partial.Samples) != 2 || partial.Samples[0].Zone != f.ward.ID || partial.Samples[1].Zone != f.ward.ID {
		t.Fatalf("survey through a deleted zone: %+v", partial)
	}
	h.adminGet("/api/v1/tracking/samples?zone_id="+itoa(f.ward.ID), http.StatusOK).decodePayload(t, &list)
	if len(list.Samples) != 2 {
		t.Fatalf("ward samples %+v", list)
	}
	// Every sample dropped: an empty list, not null.
	gone = h.newZone(f.m.ID, "Gone again", 0, 50, 50, 100)
	h.post("/api/v1/tracking/survey/start", map[string]any{"asset_uid": f.watch, "zone_id": gone.ID}, http.StatusOK)
	h.send("DELETE", "/api/v1/zone/"+itoa(gone.ID), h.admin, nil).expect(t, http.StatusOK)
	if r := h.post("/api/v1/tracking/survey/stop", map[string]any{"asset_uid": f.watch}, http.StatusOK); !strings.Contains(r.Body, `"stored":0`) ||
		!strings.Contains(r.Body, `"dropped":2`) || !strings.Contains(r.Body, `"samples":[]`) {
		t.Fatalf("all dropped: %s", r.Body)
	}
	// A survey that ran past its bound says how many windows it did not
	// keep, in the answer and the application log.
	h.post("/api/v1/tracking/survey/start", map[string]any{"asset_uid": f.watch, "zone_id": f.ward.ID}, http.StatusOK)
	h.fake.over = 7
	if r := h.post("/api/v1/tracking/survey/stop", map[string]any{"asset_uid": f.watch}, http.StatusOK); !strings.Contains(r.Body, `"over_limit":7`) ||
		!strings.Contains(r.Body, `7 windows past the survey's bound not kept`) {
		t.Fatalf("a survey past its bound: %s", r.Body)
	}
}

// The guard matrix again, with the engine present, so the RTLS handlers
// themselves run for every role.
func TestGuardMatrixWithRTLS(t *testing.T) {
	h := newRTLSHarness(t, WSOptions{})
	tokens := map[string]string{roleNone: ""}
	for _, role := range harnessRoles {
		tokens[role] = h.token(role)
	}
	for _, rt := range h.srv.Routes() {
		rules := admits[rt.Guard]
		path := concretePath(rt.Path)
		for _, role := range matrixRoles {
			r := h.do(req{method: rt.Method, path: path, token: tokens[role], body: bodyFor(rt.Method)})
			if r.Code == http.StatusNotFound && r.Message == "no such endpoint" || r.Code == http.StatusMethodNotAllowed {
				t.Errorf("%s %s as %s: not reachable", rt.Method, path, role)
			} else if rules[role] == r.isGuardRefusal() {
				t.Errorf("%s %s as %s: %d %q", rt.Method, path, role, r.Code, r.Message)
			}
		}
	}
}

// TestLocationScopeOnBeaconsAndEvents: a user bound to a location sees the
// beacons and events of that location and below, and a beacon outside it
// is 404 (its existence is not disclosed); admins see everything.
func TestLocationScopeOnBeaconsAndEvents(t *testing.T) {
	h := newRTLSHarness(t, WSOptions{})
	f := h.site()
	user := h.token("user")
	for i, uid := range []string{f.watch, f.annex} {
		loc := f.root
		if uid == f.annex {
			loc = f.annexLoc
		}
		if err := h.db.Update(store.InsertEvent(store.Event{ID: uint64(i + 1), Status: store.EventAlert, Type: "single",
			AssetUID: uid, LocationID: loc, CreatedAt: int64(i+1) * 1000}, 0, nil, nil)); err != nil {
			t.Fatal(err)
		}
	}
	count := func(path, token, key string) int {
		var out map[string][]map[string]any
		h.get(path, token).expect(t, http.StatusOK).decodePayload(t, &out)
		return len(out[key])
	}
	if n := count("/api/v1/beacons", user, "beacons"); n != 4 {
		t.Fatalf("unbound user sees %d beacons, want 4", n)
	}
	if _, err := h.db.UpdateUser(h.users["user"].ID, func(u *store.User) error { u.LocationID = f.annexLoc; return nil }); err != nil {
		t.Fatal(err)
	}
	if n := count("/api/v1/beacons", user, "beacons"); n != 1 {
		t.Fatalf("annex user sees %d beacons, want 1", n)
	}
	if n := count("/api/v1/events", user, "events"); n != 1 {
		t.Fatalf("annex user sees %d events, want 1", n)
	}
	h.get("/api/v1/beacon/"+f.annex, user).expect(t, http.StatusOK)
	h.get("/api/v1/beacon/"+f.watch, user).expect(t, http.StatusNotFound)
	h.get("/api/v1/beacon/"+f.watch+"/intervals", user).expect(t, http.StatusNotFound)
	if n := count("/api/v1/beacons", h.admin, "beacons"); n != 4 {
		t.Fatalf("admin sees %d beacons, want 4", n)
	}
	// An admin previewing the bound user sees what that user sees.
	var pv map[string][]map[string]any
	h.do(req{method: "GET", path: "/api/v1/beacons", token: h.admin,
		header: map[string]string{PreviewHeader: itoa(h.users["user"].ID)}}).expect(t, http.StatusOK).decodePayload(t, &pv)
	if len(pv["beacons"]) != 1 || pv["beacons"][0]["asset_uid"] != f.annex {
		t.Fatalf("preview of the annex user: %v", pv["beacons"])
	}
	if n := count("/api/v1/events", h.admin, "events"); n != 2 {
		t.Fatalf("admin sees %d events, want 2", n)
	}
}

// TestRegisterScopedUser: an admin registers a user bound to a location
// (the only way to scope an account through the API), and that user
// sees only the trackable beacons under it; an unknown location, or one
// for an admin or api account, is refused.
func TestRegisterScopedUser(t *testing.T) {
	h := newRTLSHarness(t, WSOptions{})
	f := h.site()
	h.send("POST", "/api/v1/register", h.admin, map[string]any{"email": "porter@example.com", "password": "porter-pw-1", "location_id": f.annexLoc}).expect(t, http.StatusCreated)
	for _, bad := range []map[string]any{
		{"email": "x1@example.com", "password": "x1-password", "location_id": 99999},
		{"email": "x2@example.com", "password": "x2-password", "role": "admin", "location_id": f.annexLoc},
		{"email": "x3@example.com", "password": "x3-password", "role": "api", "location_id": f.annexLoc},
	} {
		h.send("POST", "/api/v1/register", h.admin, bad).wantBad(t, "location_id")
	}
	res, login := h.loginHTTP("porter@example.com", "porter-pw-1")
	if res.Code != http.StatusOK {
		t.Fatalf("login: %d %s", res.Code, res.Body)
	}
	var tb struct {
		Beacons []map[string]any `json:"beacons"`
	}
	h.get("/api/v1/user/rtls/trackable-beacons", login.Token).expect(t, http.StatusOK).decodePayload(t, &tb)
	if len(tb.Beacons) != 1 || tb.Beacons[0]["asset_uid"] != f.annex {
		t.Fatalf("annex user sees %v", tb.Beacons)
	}
	var u struct {
		LocationID uint64 `json:"location_id"`
	}
	h.get("/api/v1/users/"+itoa(login.User.ID), h.admin).expect(t, http.StatusOK).decodePayload(t, &u)
	if u.LocationID != f.annexLoc {
		t.Fatalf("user shown with location %d", u.LocationID)
	}
}

// TestTrackingAssetAnswers: GET /tracking/:id follows a reminted
// asset's former uid to the engine's current one; a beacon seen but
// unknown now has location null, not zeroed fields; and a scoped user
// reads the same 404 for a beacon outside its scope as for a uid that
// does not exist.
func TestTrackingAssetAnswers(t *testing.T) {
	h := newRTLSHarness(t, WSOptions{})
	f := h.site()
	h.fake.set(rtls.Location{AssetUID: f.panicB, Updated: 2000}) // seen, but unknown now
	var got map[string]any
	h.get("/api/v1/tracking/"+f.panicB, h.admin).expect(t, http.StatusOK).decodePayload(t, &got)
	if got["located"] != false || got["location"] != nil {
		t.Fatalf("a beacon seen but unknown now: %v", got)
	}

	legacy := h.beacon(map[string]any{"mac": "C30000000B09", "name": "Visitor"}).AssetUID
	var re assets.BeaconView
	h.send("POST", "/api/v1/beacon/"+legacy, h.admin, map[string]any{"type": "watch", "location_id": f.root}).expect(t, http.StatusOK).decodePayload(t, &re)
	if re.AssetUID == legacy {
		t.Fatalf("no remint: %+v", re)
	}
	h.fake.set(rtls.Location{AssetUID: re.AssetUID, Zone: f.hall.ID, ZoneName: "Hall", MapID: f.m.ID, Since: 1000, Updated: 2000})
	for _, tok := range []string{h.admin, h.token("user")} {
		h.get("/api/v1/tracking/"+legacy, tok).expect(t, http.StatusOK).decodePayload(t, &got)
		if got["asset_uid"] != re.AssetUID || got["located"] != true {
			t.Fatalf("the former uid %s answered %v, want %s located", legacy, got, re.AssetUID)
		}
	}

	if _, err := h.db.UpdateUser(h.users["user"].ID, func(u *store.User) error { u.LocationID = f.annexLoc; return nil }); err != nil {
		t.Fatal(err)
	}
	user := h.token("user")
	for _, base := range []string{"/api/v1/tracking/", "/api/v1/user/rtls/beacons/"} {
		suffix := ""
		if strings.HasPrefix(base, "/api/v1/user") {
			suffix = "/zone-intervals"
		}
		outside := h.get(base+f.watch+suffix, user).expect(t, http.StatusNotFound)
		missing := h.get(base+"WCH-ZZ-99"+suffix, user).expect(t, http.StatusNotFound)
		if strings.ReplaceAll(outside.Message, f.watch, "X") != strings.ReplaceAll(missing.Message, "WCH-ZZ-99", "X") {
			t.Fatalf("%s: out of scope %q, unknown %q: the wording tells them apart", base, outside.Message, missing.Message)
		}
	}
}

// TestSurveyFollowsItsBeaconsUID: ingest reports a beacon by its current
// uid, so a survey started by a former uid (a remint's) records under
// the current one, and a stop by the uid a survey was started with
// finds it after a remint. Both were lost (a review: the first answered
// success and recorded nothing, the second answered 404). A beacon merged
// away is not heard at all: its survey is refused.
func TestSurveyFollowsItsBeaconsUID(t *testing.T) {
	h := newRTLSHarness(t, WSOptions{})
	f := h.site()
	legacy := h.beacon(map[string]any{"mac": "C30000000B09", "name": "Tag", "type": "watch"})
	if !strings.HasPrefix(legacy.AssetUID, "LEGACY-") {
		t.Fatalf("beacon without a location minted %s", legacy.AssetUID)
	}
	h.post("/api/v1/beacon/"+legacy.AssetUID, map[string]any{"location_id": f.root}, http.StatusOK)
	var now assets.BeaconView
	h.adminGet("/api/v1/beacon/"+legacy.AssetUID, http.StatusOK).decodePayload(t, &now)
	if now.AssetUID == legacy.AssetUID {
		t.Fatalf("not reminted: %+v", now)
	}
	var started struct {
		AssetUID string `json:"asset_uid"`
	}
	h.post("/api/v1/tracking/survey/start", map[string]any{"asset_uid": legacy.AssetUID, "zone_id": f.hall.ID}, http.StatusOK).decodePayload(t, &started)
	if started.AssetUID != now.AssetUID || len(h.fake.recording[now.AssetUID]) != 1 {
		t.Fatalf("started %+v; recording %v; want under %s", started, h.fake.recording, now.AssetUID)
	}
	var stopped struct {
		AssetUID string `json:"asset_uid"`
		Stored   int    `json:"stored"`
	}
	h.post("/api/v1/tracking/survey/stop", map[string]any{"asset_uid": legacy.AssetUID}, http.StatusOK).decodePayload(t, &stopped)
	if stopped.AssetUID != now.AssetUID || stopped.Stored != 2 {
		t.Fatalf("stopped by the former uid: %+v", stopped)
	}

	// Merged away: not active, not heard.
	other := h.beacon(map[string]any{"mac": "C30000000B0A", "name": "Spare", "type": "watch", "location_id": f.root})
	h.send("POST", "/api/v1/beacon/"+now.AssetUID+"/merge", h.admin, map[string]any{"source_ids": []uint64{other.ID}}).expect(t, http.StatusOK)
	r := h.send("POST", "/api/v1/tracking/survey/start", h.admin, map[string]any{"asset_uid": other.AssetUID, "zone_id": f.hall.ID})
	if r.wantBad(t, "asset_uid"); !strings.Contains(r.Message, "records nothing") {
		t.Fatalf("survey of a merged-away beacon: %s", r.Body)
	}
}

// TestSurveySamplesAtTheSiteCap: with the site's samples at the bound a
// survey is refused at its start (its samples would not be stored), and
// samples are deleted many at a time, by zone, by beacon or all, with
// one model rebuild; one at a time, making room took thousands (a
// review). Surveys under way show in the status to admins only.
func TestSurveySamplesAtTheSiteCap(t *testing.T) {
	h := newRTLSHarness(t, WSOptions{})
	f := h.site()
	fill := make([]store.ZoneSample, store.MaxZoneSamples)
	for i := range fill {
		fill[i] = store.ZoneSample{Zone: f.hall.ID, AssetUID: f.watch, RSSI: map[string]float64{"AC233F000001": -60}}
	}
	fill[0].Zone, fill[1].AssetUID = f.ward.ID, f.annex
	if _, _, full, err := h.db.AddZoneSamples(fill, time.Now()); err != nil || full != 0 {
		t.Fatalf("filling: %d not stored, %v", full, err)
	}
	r := h.send("POST", "/api/v1/tracking/survey/start", h.admin, map[string]any{"asset_uid": f.watch, "zone_id": f.hall.ID})
	if r.Code != http.StatusConflict || !strings.Contains(r.Message, "delete some first") {
		t.Fatalf("survey at the cap: %d %s", r.Code, r.Body)
	}
	h.send("DELETE", "/api/v1/tracking/samples", h.admin, nil).expect(t, http.StatusBadRequest)
	h.send("DELETE", "/api/v1/tracking/samples?all=true&zone_id="+itoa(f.hall.ID), h.admin, nil).expect(t, http.StatusBadRequest)
	h.send("DELETE", "/api/v1/tracking/samples?zone_id=99999", h.admin, nil).expect(t, http.StatusNotFound)
	h.send("DELETE", "/api/v1/tracking/samples", h.token("user"), nil).expect(t, http.StatusForbidden)
	var del struct {
		Deleted int `json:"deleted"`
	}
	before := h.fake.reloads
	h.send("DELETE", "/api/v1/tracking/samples?zone_id="+itoa(f.ward.ID), h.admin, nil).expect(t, http.StatusOK).decodePayload(t, &del)
	if del.Deleted != 1 || h.fake.reloads != before+1 {
		t.Fatalf("by zone: %d deleted, %d reloads", del.Deleted, h.fake.reloads-before)
	}
	h.send("DELETE", "/api/v1/tracking/samples?asset_uid="+f.annex, h.admin, nil).expect(t, http.StatusOK).decodePayload(t, &del)
	if del.Deleted != 1 {
		t.Fatalf("by beacon: %d deleted", del.Deleted)
	}
	// Two places left: one survey under way with two windows takes them
	// (a review: with room left, two surveys started and lost theirs).
	h.post("/api/v1/tracking/survey/start", map[string]any{"asset_uid": f.annex, "zone_id": f.hall.ID}, http.StatusOK)
	h.send("POST", "/api/v1/tracking/survey/start", h.admin, map[string]any{"asset_uid": f.watch, "zone_id": f.hall.ID}).expect(t, http.StatusConflict)
	// The beacon under way moving on to another zone is no new survey.
	h.post("/api/v1/tracking/survey/start", map[string]any{"asset_uid": f.annex, "zone_id": f.ward.ID}, http.StatusOK)
	h.post("/api/v1/tracking/survey/stop", map[string]any{"asset_uid": f.annex}, http.StatusOK)
	h.send("DELETE", "/api/v1/tracking/samples?zone_id="+itoa(f.hall.ID)+"&asset_uid="+f.annex, h.admin, nil).expect(t, http.StatusOK).decodePayload(t, &del)
	if del.Deleted != 2 {
		t.Fatalf("by zone and beacon: %d deleted", del.Deleted)
	}
	h.post("/api/v1/tracking/survey/start", map[string]any{"asset_uid": f.watch, "zone_id": f.hall.ID}, http.StatusOK)
	var st struct {
		Surveys []map[string]any `json:"surveys"`
	}
	h.get("/api/v1/tracking/status", h.admin).expect(t, http.StatusOK).decodePayload(t, &st)
	if len(st.Surveys) != 1 || st.Surveys[0]["asset_uid"] != f.watch {
		t.Fatalf("admin's status surveys %v", st.Surveys)
	}
	h.get("/api/v1/tracking/status", h.token("user")).expect(t, http.StatusOK).decodePayload(t, &st)
	if st.Surveys == nil || len(st.Surveys) != 0 {
		t.Fatalf("a user's status shows surveys %v", st.Surveys)
	}
	h.send("DELETE", "/api/v1/tracking/samples?all=true", h.admin, nil).expect(t, http.StatusOK).decodePayload(t, &del)
	if n, _ := h.db.ZoneSampleCount(); del.Deleted != store.MaxZoneSamples-2 || n != 0 {
		t.Fatalf("all: %d deleted, %d left", del.Deleted, n)
	}
}

// TestSurveySamplesPaged: the samples come in pages (limit default
// 1000, at most 5000) in id order, with next_cursor null on the last;
// samples stored between pages come on a later page, none twice, and a
// zone's filter pages the same way. One answer held all 20,000 (a
// review: tens of megabytes).
func TestSurveySamplesPaged(t *testing.T) {
	h := newRTLSHarness(t, WSOptions{})
	f := h.site()
	add := func(n int) {
		t.Helper()
		ss := make([]store.ZoneSample, n)
		for i := range ss {
			ss[i] = store.ZoneSample{Zone: f.hall.ID, AssetUID: f.watch, RSSI: map[string]float64{"AC233F000001": -60}}
			if i%3 == 0 {
				ss[i].Zone = f.ward.ID
			}
		}
		if _, _, full, err := h.db.AddZoneSamples(ss, time.Now()); err != nil || full != 0 {
			t.Fatalf("adding: %d not stored, %v", full, err)
		}
	}
	type page struct {
		Samples    []store.ZoneSample `json:"samples"`
		NextCursor *string            `json:"next_cursor"`
	}
	walk := func(query string, each func(n int)) (ids []uint64, pages int) {
		t.Helper()
		cursor := ""
		for {
			var p page
			h.adminGet("/api/v1/tracking/samples?"+query+cursor, http.StatusOK).decodePayload(t, &p)
			pages++
			for _, s := range p.Samples {
				if len(ids) > 0 && s.ID <= ids[len(ids)-1] {
					t.Fatalf("page %d: id %d after %d", pages, s.ID, ids[len(ids)-1])
				}
				ids = append(ids, s.ID)
			}
			if each != nil {
				each(pages)
			}
			if p.NextCursor == nil {
				return ids, pages
			}
			cursor = "&cursor=" + *p.NextCursor
		}
	}
	add(2500)
	if ids, pages := walk("", nil); len(ids) != 2500 || pages != 3 {
		t.Fatalf("%d samples in %d pages, want 2500 in 3", len(ids), pages)
	}
	// 100 more stored after the first page: they come, once each.
	ids, _ := walk("limit=900", func(n int) {
		if n == 1 {
			add(100)
		}
	})
	if len(ids) != 2600 {
		t.Fatalf("%d samples with inserts between pages, want 2600", len(ids))
	}
	ward, _ := walk("limit=7&zone_id="+itoa(f.ward.ID), nil)
	if len(ward) != 834+34 {
		t.Fatalf("%d ward samples, want %d", len(ward), 834+34)
	}
	for _, q := range []string{"limit=0", "limit=5001", "cursor=abc", "cursor=0", "cursor=-1"} {
		h.send("GET", "/api/v1/tracking/samples?"+q, h.admin, nil).expect(t, http.StatusBadRequest)
	}
	var last page
	h.adminGet("/api/v1/tracking/samples?cursor=18446744073709551615", http.StatusOK).decodePayload(t, &last)
	if last.Samples == nil || len(last.Samples) != 0 || last.NextCursor != nil {
		t.Fatalf("past the last id: %+v", last)
	}
}

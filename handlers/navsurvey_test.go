package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"beaconhub/appliance/config"
	"beaconhub/appliance/nav"
	"beaconhub/store"
)

// surveyLines is a small JSONL survey: n points along a corridor, two
// scans each, two beacons whose RSSI falls with distance.
func surveyLines(n int, offset float64) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		x := offset + float64(i*10)
		for scan := 0; scan < 2; scan++ {
			fmt.Fprintf(&b, `{"x":%g,"y":5,"device":{"model":"test"},"wifi":[{"mac":"00:11:22:33:44:55","rssi":%d}],"ble":[{"mac":"AABBCCDDEE01","rssi":%d},{"mac":"aabbccddee02","rssi":%d}]}`+"\n",
				x, -40-i-scan, -40-2*i, -90+2*i)
		}
	}
	return b.String()
}

func TestSurveyUploadExportModelAndEval(t *testing.T) {
	h, admin := newNavHarness(t)
	var f store.Floor
	h.send("POST", "/api/v1/floors", admin, map[string]any{"name": "G"}).expect(t, http.StatusCreated).decodePayload(t, &f)
	base := "/api/v1/navigation/floor/" + itoa(f.ID)

	// Nothing surveyed yet: no model.
	h.get(base+"/fingerprint-model", admin).expect(t, http.StatusNotFound)

	var up struct{ Added, Total int }
	h.send("POST", base+"/survey", admin, surveyLines(5, 0)).expect(t, http.StatusCreated).decodePayload(t, &up)
	if up.Added != 10 || up.Total != 10 {
		t.Fatalf("upload %+v", up)
	}
	// A bad line refuses the whole upload and names the line.
	bad := surveyLines(1, 100) + `{"x": 1, "y": 2, "ble": [{"mac": "nope", "rssi": -50}]}` + "\n"
	r := h.send("POST", base+"/survey", admin, bad).expect(t, http.StatusBadRequest)
	var p map[string]any
	r.decodePayload(t, &p)
	if !strings.HasPrefix(r.Message, "line 3: ") || p["line"] != float64(3) || p["field"] != "line" {
		t.Fatalf("bad line: %q %v", r.Message, p)
	}
	h.send("POST", "/api/v1/navigation/floor/999/survey", admin, surveyLines(1, 0)).expect(t, http.StatusNotFound)
	big := strings.Repeat("\n", nav.MaxSurveyBody+1)
	h.send("POST", base+"/survey", admin, big).expect(t, http.StatusRequestEntityTooLarge)

	var list []store.SurveySample
	h.get(base+"/survey", admin).expect(t, http.StatusOK).decodePayload(t, &struct {
		Samples *[]store.SurveySample `json:"samples"`
	}{&list})
	if len(list) != 10 || list[0].BLE[1].MAC != "AABBCCDDEE02" || list[0].ID == 0 {
		t.Fatalf("list %+v", list)
	}
	ex := h.get(base+"/survey/export", admin).expect(t, http.StatusOK)
	if ct := ex.Header.Get("Content-Type"); ct != "application/x-ndjson" || strings.Count(ex.Body, "\n") != 10 {
		t.Fatalf("export %q:\n%s", ct, ex.Body)
	}

	mr := h.get(base+"/fingerprint-model", h.token("user")).expect(t, http.StatusOK)
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(mr.Body), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"version", "generated_at", "floor_id", "k", "missing_rssi", "features", "samples"} {
		if _, ok := m[k]; !ok {
			t.Errorf("model has no %q: %s", k, mr.Body)
		}
	}
	if len(m) != 7 || string(m["features"]) != `["ble:AABBCCDDEE01","ble:AABBCCDDEE02","wifi:001122334455"]` {
		t.Fatalf("model %s", mr.Body)
	}
	h.conditional(t, base+"/fingerprint-model", admin, nil, mr.Header.Get("ETag"), "")

	var ev nav.FloorEvaluation
	h.get(base+"/fingerprint-model/eval", admin).expect(t, http.StatusOK).decodePayload(t, &ev)
	if ev.Samples != 10 || ev.Points != 5 || ev.LOO.N != 5 || ev.LOO.Mean <= 0 || ev.LOO.Mean >= ev.Centroid.Mean {
		t.Fatalf("eval %+v", ev)
	}

	// Deleting one sample, then the floor's survey.
	h.send("DELETE", "/api/v1/navigation/survey/"+itoa(list[0].ID), admin, nil).expect(t, http.StatusOK)
	h.send("DELETE", "/api/v1/navigation/survey/"+itoa(list[0].ID), admin, nil).expect(t, http.StatusNotFound)
	var del struct{ Deleted int }
	h.send("DELETE", base+"/survey", admin, nil).expect(t, http.StatusOK).decodePayload(t, &del)
	if del.Deleted != 9 {
		t.Fatalf("deleted %d", del.Deleted)
	}
	h.get(base+"/fingerprint-model", admin).expect(t, http.StatusNotFound)
	h.get(base+"/fingerprint-model/eval", admin).expect(t, http.StatusNotFound)

	// Survey data is admin-only; a navigation token cannot write.
	h.send("POST", base+"/survey", h.token("user"), surveyLines(1, 0)).expect(t, http.StatusForbidden)
	h.get(base+"/survey/export", h.token("user")).expect(t, http.StatusForbidden)

	// Deleting the floor deletes its survey.
	h.send("POST", base+"/survey", admin, surveyLines(2, 0)).expect(t, http.StatusCreated)
	h.send("DELETE", "/api/v1/floor/"+itoa(f.ID), admin, nil).expect(t, http.StatusOK)
	if samples, _, err := h.db.SurveySamples(f.ID); err != nil || len(samples) != 0 {
		t.Fatalf("survey left after floor delete: %d %v", len(samples), err)
	}
}

// TestProjectHashFollowsSurvey: the model is part of the project, so the
// hash changes when the survey does and only then.
func TestProjectHashFollowsSurvey(t *testing.T) {
	h, admin := newNavHarness(t, withConfig(func(c *config.Config) { c.MobileAPIKey = "k" }))
	h.locationsUpTo(4)
	var f, other store.Floor
	h.send("POST", "/api/v1/floors", admin, map[string]any{"name": "G", "location_id": 3}).expect(t, http.StatusCreated).decodePayload(t, &f)
	h.send("POST", "/api/v1/floors", admin, map[string]any{"name": "X", "location_id": 4}).expect(t, http.StatusCreated).decodePayload(t, &other)
	sha := func() string {
		var p struct{ SHA string }
		h.get("/api/v1/navigation/project/3/sha", admin).expect(t, http.StatusOK).decodePayload(t, &p)
		return p.SHA
	}
	s0 := sha()
	surveyURL := "/api/v1/navigation/floor/" + itoa(f.ID) + "/survey"
	h.send("POST", surveyURL, admin, surveyLines(3, 0)).expect(t, http.StatusCreated)
	s1 := sha()
	if s1 == s0 {
		t.Fatal("hash unchanged after a survey upload")
	}
	// Time passing, reads, re-saving the floor, a refused upload and
	// another project's survey change nothing.
	h.clock.Advance(time.Hour)
	h.get("/api/v1/navigation/floor/"+itoa(f.ID)+"/fingerprint-model", admin).expect(t, http.StatusOK)
	h.send("POST", "/api/v1/floor/"+itoa(f.ID), admin, map[string]any{"name": "G", "location_id": 3}).expect(t, http.StatusOK)
	h.send("POST", surveyURL, admin, "not json\n").expect(t, http.StatusBadRequest)
	h.send("POST", "/api/v1/navigation/floor/"+itoa(other.ID)+"/survey", admin, surveyLines(2, 0)).expect(t, http.StatusCreated)
	if s := sha(); s != s1 {
		t.Fatal("hash changed without a change to the project's content")
	}
	var proj struct {
		Project nav.Project `json:"project"`
	}
	h.do(req{method: "GET", path: "/api/v1/navigation/mobile/project/3", token: admin, header: map[string]string{MobileKeyHeader: "k"}}).
		expect(t, http.StatusOK).decodePayload(t, &proj)
	if fm := proj.Project.Floors[0].FingerprintModel; fm == nil || fm.FloorID != f.ID || len(fm.Samples) != 3 {
		t.Fatalf("project model %+v", fm)
	}
	h.send("POST", surveyURL, admin, surveyLines(1, 500)).expect(t, http.StatusCreated)
	s2 := sha()
	if s2 == s1 {
		t.Fatal("hash unchanged after adding a survey point")
	}
	h.send("DELETE", surveyURL, admin, nil).expect(t, http.StatusOK)
	if s := sha(); s == s2 {
		t.Fatal("hash unchanged after deleting the survey")
	}
}

// TestNavAppLogRecords: every navigation change leaves an application
// log record, and no token secret is written into one.
func TestNavAppLogRecords(t *testing.T) {
	h, admin := newNavHarness(t)
	var f store.Floor
	h.send("POST", "/api/v1/floors", admin, map[string]any{"name": "G"}).expect(t, http.StatusCreated).decodePayload(t, &f)
	fb := "/api/v1/floor/" + itoa(f.ID)
	h.send("POST", fb, admin, map[string]any{"name": "G1"}).expect(t, http.StatusOK)
	var a, b store.NavNode
	h.send("POST", fb+"/nodes", admin, map[string]any{"x": 0, "y": 0}).expect(t, http.StatusCreated).decodePayload(t, &a)
	h.send("POST", fb+"/nodes", admin, map[string]any{"x": 0, "y": 3}).expect(t, http.StatusCreated).decodePayload(t, &b)
	h.send("POST", "/api/v1/node/"+itoa(a.ID), admin, map[string]any{"x": 0, "y": 1}).expect(t, http.StatusOK)
	var e store.NavEdge
	h.send("POST", fb+"/edges", admin, map[string]any{"from": a.ID, "to": b.ID}).expect(t, http.StatusCreated).decodePayload(t, &e)
	h.send("POST", "/api/v1/edge/"+itoa(e.ID), admin, map[string]any{"from": a.ID, "to": b.ID, "weight": 4}).expect(t, http.StatusOK)
	h.send("DELETE", "/api/v1/edge/"+itoa(e.ID), admin, nil).expect(t, http.StatusOK)
	h.send("DELETE", "/api/v1/node/"+itoa(b.ID), admin, nil).expect(t, http.StatusOK)
	h.send("POST", fb+"/graph", admin, map[string]any{"nodes": []map[string]any{{"key": "a", "x": 1, "y": 1}}}).expect(t, http.StatusOK)
	h.send("POST", fb+"/map", admin, string(pngOf(t, 4, 4))).expect(t, http.StatusOK)
	var tok struct {
		Token string `json:"token"`
		ID    uint64 `json:"id"`
	}
	h.send("POST", "/api/v1/navigation/tokens", admin, map[string]any{"name": "kiosk"}).expect(t, http.StatusCreated).decodePayload(t, &tok)
	h.send("DELETE", "/api/v1/navigation/token/"+itoa(tok.ID), admin, nil).expect(t, http.StatusOK)
	h.send("POST", "/api/v1/navigation/floor/"+itoa(f.ID)+"/survey", admin, surveyLines(1, 0)).expect(t, http.StatusCreated)
	h.send("DELETE", "/api/v1/navigation/floor/"+itoa(f.ID)+"/survey", admin, nil).expect(t, http.StatusOK)
	h.send("DELETE", fb, admin, nil).expect(t, http.StatusOK)

	got := map[string]int{}
	for _, rec := range h.logRecords() {
		got[rec.Action]++
		if strings.Contains(fmt.Sprintf("%+v", rec), tok.Token) {
			t.Errorf("token secret in log record %+v", rec)
		}
	}
	for _, action := range []string{"floor.create", "floor.update", "floor.delete", "floor.graph", "floor.map",
		"node.create", "node.update", "node.delete", "edge.create", "edge.update", "edge.delete",
		"navtoken.create", "navtoken.delete", "survey.upload", "survey.delete"} {
		if got[action] == 0 {
			t.Errorf("no %s record; have %v", action, got)
		}
	}
	if strings.Contains(h.logBuf.String(), tok.Token) {
		t.Error("token secret in the slog output")
	}
}

// TestSurveyRoutesTokenMatrix: a navigation token downloads the model
// (Token/Auth) but can neither read nor write the survey (Admin), and the
// mobile routes still need the mobile key with a token.
func TestSurveyRoutesTokenMatrix(t *testing.T) {
	h, admin := newNavHarness(t, withConfig(func(c *config.Config) { c.MobileAPIKey = "k" }))
	var f store.Floor
	h.send("POST", "/api/v1/floors", admin, map[string]any{"name": "G"}).expect(t, http.StatusCreated).decodePayload(t, &f)
	base := "/api/v1/navigation/floor/" + itoa(f.ID)
	h.send("POST", base+"/survey", admin, surveyLines(3, 0)).expect(t, http.StatusCreated)
	var tok struct {
		Token string `json:"token"`
		ID    uint64 `json:"id"`
	}
	h.send("POST", "/api/v1/navigation/tokens", admin, map[string]any{"name": "app"}).expect(t, http.StatusCreated).decodePayload(t, &tok)
	as := func(method, path, body string, extra map[string]string) *response {
		hd := map[string]string{"Authorization": "Token " + tok.Token}
		for k, v := range extra {
			hd[k] = v
		}
		var b any
		if body != "" {
			b = body
		}
		return h.do(req{method: method, path: path, body: b, header: hd})
	}
	as("GET", base+"/fingerprint-model", "", nil).expect(t, http.StatusOK)
	for _, c := range []struct{ method, path, body string }{
		{"POST", base + "/survey", surveyLines(1, 0)},
		{"GET", base + "/survey", ""},
		{"GET", base + "/survey/export", ""},
		{"DELETE", base + "/survey", ""},
		{"DELETE", "/api/v1/navigation/survey/1", ""},
		{"GET", base + "/fingerprint-model/eval", ""},
	} {
		if r := as(c.method, c.path, c.body, nil); r.Code != http.StatusForbidden || !r.isGuardRefusal() {
			t.Errorf("%s %s with a token: %d %q", c.method, c.path, r.Code, r.Message)
		}
	}
	as("GET", "/api/v1/navigation/mobile/project/0", "", nil).expect(t, http.StatusForbidden)
	as("GET", "/api/v1/navigation/mobile/project/0", "", map[string]string{MobileKeyHeader: "k"}).expect(t, http.StatusOK)
	h.send("DELETE", "/api/v1/navigation/token/"+itoa(tok.ID), admin, nil).expect(t, http.StatusOK)
	if r := as("GET", base+"/fingerprint-model", "", nil); r.Code != http.StatusForbidden {
		t.Fatalf("revoked token: %d", r.Code)
	}
}

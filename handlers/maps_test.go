package handlers

import (
	"bytes"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"beaconhub/appliance/config"
	"beaconhub/store"
)

// pngOf encodes a real w x h PNG.
func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	img.Set(1, 1, color.White)
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

type uploaded struct {
	ImageID     uint64  `json:"image_id"`
	ContentType string  `json:"content_type"`
	Width       float64 `json:"width"`
	Height      float64 `json:"height"`
}

// upload sends data as a browser form would, under the given file name.
func (h *rtlsHarness) upload(name string, data []byte) *response {
	h.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile("file", name)
	if err != nil {
		h.t.Fatal(err)
	}
	_, _ = fw.Write(data)
	_ = mw.Close()
	return h.do(req{method: "POST", path: "/api/v1/maps/upload", token: h.admin, body: body.Bytes(),
		header: map[string]string{"Content-Type": mw.FormDataContentType()}})
}

// newMap uploads a PNG of w x h and creates a map from it.
func (h *rtlsHarness) newMap(name string, w, ht int) store.Map {
	h.t.Helper()
	var up uploaded
	h.upload("plan.png", pngOf(h.t, w, ht)).expect(h.t, http.StatusCreated).decodePayload(h.t, &up)
	var m store.Map
	h.post("/api/v1/maps", map[string]any{"name": name, "pixels_per_meter": 20, "image_id": up.ImageID}, http.StatusCreated).decodePayload(h.t, &m)
	return m
}

func (h *rtlsHarness) newZone(mapID uint64, name string, x1, y1, x2, y2 float64) store.Zone {
	h.t.Helper()
	var z store.Zone
	h.post("/api/v1/maps/"+itoa(mapID)+"/zones", map[string]any{"name": name, "x1": x1, "y1": y1, "x2": x2, "y2": y2},
		http.StatusCreated).decodePayload(h.t, &z)
	return z
}

// TestMapUploadCharsetsAndCutBodies: an SVG declared in a single-byte
// encoding is an SVG (a review: refused as "not PNG, JPEG or SVG"), one
// in an encoding nobody knows is refused; a multipart body whose file
// part never meets its closing boundary is the client's error, 400, not
// a 500 logged as the server's (a review).
func TestMapUploadCharsetsAndCutBodies(t *testing.T) {
	h := newRTLSHarness(t, WSOptions{})
	// "Přízemí" (ground floor) in ISO-8859-2 and windows-1250: bytes
	// that are not UTF-8.
	for _, enc := range []string{"ISO-8859-2", "windows-1250", "iso-8859-1"} {
		svg := `<?xml version="1.0" encoding="` + enc + `"?><!-- P` + "\xf8\xed" + `zem` + "\xed" + ` --><svg xmlns="http://www.w3.org/2000/svg" width="120" height="40"><title>P` + "\xf8\xed" + `zem` + "\xed" + `</title></svg>`
		var got uploaded
		h.upload("plan.svg", []byte(svg)).expect(t, http.StatusCreated).decodePayload(t, &got)
		if got.ContentType != "image/svg+xml" || got.Width != 120 || got.Height != 40 {
			t.Errorf("SVG in %s: %+v", enc, got)
		}
	}
	h.upload("plan.svg", []byte(`<?xml version="1.0" encoding="x-no-such"?><svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>`)).expect(t, http.StatusBadRequest)
	// What a browser would not draw, and a declaration after the first
	// (each wrapped the reader in one more decoder; a review).
	le := func(s string) string {
		var out []byte
		for _, u := range utf16.Encode([]rune(s)) {
			out = append(out, byte(u), byte(u>>8))
		}
		return string(out)
	}
	const root = `<svg xmlns="http://www.w3.org/2000/svg" width="7" height="3">`
	for name, doc := range map[string]string{
		"a second declaration inside the root":   root + `<?xml encoding="windows-1250"?></svg>`,
		"a utf-8 declaration, then a second":     `<?xml version="1.0" encoding="utf-8"?><?xml encoding="l1"?>` + root + `</svg>`,
		"an ASCII declaration naming UTF-16":     `<?xml version="1.0" encoding="utf-16"?>` + le(root+`</svg>`),
		"labelled utf8, bytes not UTF-8":         `<?xml version="1.0" encoding="utf8"?>` + root + "<title>\xff\xfe</title></svg>",
		"the replacement encoding (iso-2022-kr)": `<?xml version="1.0" encoding="iso-2022-kr"?>` + root + `</svg>`,
	} {
		if r := h.upload("plan.svg", []byte(doc)); r.Code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", name, r.Code)
		}
	}
	var many bytes.Buffer
	many.WriteString(`<?xml version="1.0" encoding="l1"?>` + root)
	for range 16000 {
		many.WriteString(`<?xml encoding="l1"?>`)
	}
	many.WriteString(`</svg>`)
	alloc := testing.AllocsPerRun(1, func() {
		if r := h.upload("plan.svg", many.Bytes()); r.Code != http.StatusBadRequest {
			t.Errorf("%d KB of repeated declarations: %d, want 400", many.Len()>>10, r.Code)
		}
	})
	// One decoder is a few allocations; one per declaration was 16000
	// layers of them (measured 190 MB).
	if alloc > 50000 {
		t.Errorf("repeated declarations: %.0f allocations for one upload", alloc)
	}
	// Undeclared, the same bytes are not UTF-8: refused, as before.
	h.upload("plan.svg", []byte("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1\" height=\"1\"><title>\xf8</title></svg>")).expect(t, http.StatusBadRequest)

	cut := "--XX\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.svg\"\r\n\r\n" +
		`<svg xmlns="http://www.w3.org/2000/svg" width="6" height="2"/>`
	r := h.do(req{method: "POST", path: "/api/v1/maps/upload", token: h.admin, body: []byte(cut),
		header: map[string]string{"Content-Type": "multipart/form-data; boundary=XX"}})
	if r.Code != http.StatusBadRequest || !strings.Contains(r.Message, "cut short") {
		t.Fatalf("multipart without its closing boundary: %d %s, want 400 naming the cut", r.Code, r.Body)
	}
}

// The bytes decide the type, never the name: a PNG named .svg is a PNG,
// HTML named .png is refused, and an SVG is served so it cannot script.
func TestMapUploadSniffsContent(t *testing.T) {
	h := newRTLSHarness(t, WSOptions{})
	var up uploaded
	h.upload("plan.svg", pngOf(t, 40, 30)).expect(t, http.StatusCreated).decodePayload(t, &up)
	if up.ContentType != "image/png" || up.Width != 40 || up.Height != 30 {
		t.Fatalf("PNG named .svg: %+v", up)
	}
	h.upload("plan.png", []byte("<html><script>alert(1)</script></html>")).expect(t, http.StatusBadRequest)
	// Magic bytes alone are not an image.
	h.upload("plan.png", append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 40)...)).expect(t, http.StatusBadRequest)
	for _, n := range []int{maxMapImage + 1, maxMapImage + 200<<10} { // under and over the body's cap
		if r := h.upload("big.png", make([]byte, n)).expect(t, http.StatusRequestEntityTooLarge); !strings.Contains(r.Message, "at most 5242880 bytes") {
			t.Errorf("%d bytes: %q, want the image's limit", n, r.Message)
		}
		raw := h.do(req{method: "POST", path: "/api/v1/maps/upload", token: h.admin, body: make([]byte, n)}).expect(t, http.StatusRequestEntityTooLarge)
		if !strings.Contains(raw.Message, "at most 5242880 bytes") {
			t.Errorf("%d bytes, raw body: %q, want the image's limit", n, raw.Message)
		}
	}
	h.upload("x.svg", []byte(`<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY a "b">]><svg width="10" height="10"/>`)).expect(t, http.StatusBadRequest)
	// The whole SVG must be well-formed, not only its root element: a
	// truncated or mismatched file would be stored and drawn broken.
	for name, bad := range map[string]string{
		"mismatched tags":    `<svg xmlns="http://www.w3.org/2000/svg" width="100" height="50"><rect></svg>`,
		"truncated":          `<svg xmlns="http://www.w3.org/2000/svg" width="100" height="50"><rect x="1"`,
		"text before root":   `hello <svg width="10" height="10"/>`,
		"html root":          `<!-- <svg> --><html><svg width="10" height="10"/></html>`,
		"second root":        `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/><svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>`,
		"doctype after root": `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg><!DOCTYPE x>`,
		// Browsers draw neither: stored, the plan would show blank.
		"no namespace":    `<svg width="10" height="10"></svg>`,
		"xhtml namespace": `<h:svg xmlns:h="http://www.w3.org/1999/xhtml" width="10" height="10"><h:script>alert(1)</h:script></h:svg>`,
	} {
		if r := h.upload("plan.svg", []byte(bad)); r.Code != http.StatusBadRequest {
			t.Errorf("%s SVG: %d %s, want 400", name, r.Code, r.Body)
		}
	}
	// Exported plans often open with a generator or licence comment, of
	// any length: still an SVG.
	for name, good := range map[string]string{
		"comment first":   `<!-- Ground floor, exported by CAD --><svg xmlns="http://www.w3.org/2000/svg" width="100" height="50"/>`,
		"long licence":    `<?xml version="1.0"?><!-- ` + strings.Repeat("licence text ", 100) + `--><svg xmlns="http://www.w3.org/2000/svg" width="100" height="50"/>`,
		"byte order mark": "\ufeff<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100\" height=\"50\"/>",
	} {
		var got uploaded
		h.upload("plan.svg", []byte(good)).expect(t, http.StatusCreated).decodePayload(t, &got)
		if got.ContentType != "image/svg+xml" || got.Width != 100 || got.Height != 50 {
			t.Errorf("%s: %+v", name, got)
		}
	}

	// A raw body works too; an SVG gives its size from the viewBox.
	svg := `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 800 600"><script>alert(1)</script></svg>`
	h.do(req{method: "POST", path: "/api/v1/maps/upload", token: h.admin, body: svg}).expect(t, http.StatusCreated).decodePayload(t, &up)
	if up.ContentType != "image/svg+xml" || up.Width != 800 || up.Height != 600 {
		t.Fatalf("svg: %+v", up)
	}
	var m store.Map
	h.post("/api/v1/maps", map[string]any{"name": "Ground", "image_id": up.ImageID}, http.StatusCreated).decodePayload(t, &m)
	r := h.get("/api/v1/maps/image?id="+itoa(m.ID), h.token("user")).expect(t, http.StatusOK)
	if r.Header.Get("Content-Type") != "image/svg+xml" || r.Header.Get("X-Content-Type-Options") != "nosniff" ||
		!strings.Contains(r.Header.Get("Content-Security-Policy"), "sandbox") || !strings.Contains(r.Body, "<svg") {
		t.Fatalf("svg served with %v", r.Header)
	}
	h.upload("plan.png", pngOf(t, 4, 4)).expect(t, http.StatusCreated)
	h.do(req{method: "POST", path: "/api/v1/maps/upload", token: h.token("user"), body: svg}).expect(t, http.StatusForbidden)
}

func TestMapsCRUD(t *testing.T) {
	h := newRTLSHarness(t, WSOptions{})
	m := h.newMap("Ground", 200, 100)
	if m.Width != 200 || m.Height != 100 || m.PixelsPerMeter != 20 {
		t.Fatalf("map %+v", m)
	}
	for name, body := range map[string]map[string]any{
		"no name":      {"image_id": m.ImageID},
		"no image":     {"name": "x"},
		"bad image":    {"name": "x", "image_id": 999},
		"negative ppm": {"name": "x", "image_id": m.ImageID, "pixels_per_meter": -1},
		"bad location": {"name": "x", "image_id": m.ImageID, "location_id": 999},
		"unknown key":  {"name": "x", "image_id": m.ImageID, "colour": "red"},
		"long name":    {"name": strings.Repeat("ž", 101), "image_id": m.ImageID},
		"control name": {"name": "Ground\nfloor", "image_id": m.ImageID},
	} {
		if r := h.send("POST", "/api/v1/maps", h.admin, body); r.Code != http.StatusBadRequest {
			t.Errorf("%s: %d %s", name, r.Code, r.Body)
		}
	}
	// 100 characters fit however many bytes they take.
	h.post("/api/v1/map/"+itoa(m.ID), map[string]any{"name": strings.Repeat("ž", 100), "image_id": m.ImageID}, http.StatusOK)
	h.post("/api/v1/map/"+itoa(m.ID), map[string]any{"name": "Ground floor", "image_id": m.ImageID, "pixels_per_meter": 25}, http.StatusOK)
	var got store.Map
	h.get("/api/v1/map/"+itoa(m.ID), h.token("user")).expect(t, http.StatusOK).decodePayload(t, &got)
	if got.Name != "Ground floor" || got.PixelsPerMeter != 25 {
		t.Fatalf("updated %+v", got)
	}
	h.get("/api/v1/map/999", h.admin).expect(t, http.StatusNotFound)
	h.send("DELETE", "/api/v1/map/999", h.admin, nil).expect(t, http.StatusNotFound)
	h.get("/api/v1/maps/image?id=999", h.admin).expect(t, http.StatusNotFound)
	h.get("/api/v1/maps/image", h.admin).expect(t, http.StatusBadRequest)

	z := h.newZone(m.ID, "Hall", 0, 0, 50, 50)
	var del struct {
		DeletedZones int `json:"deleted_zones"`
	}
	h.send("DELETE", "/api/v1/map/"+itoa(m.ID), h.admin, nil).expect(t, http.StatusOK).decodePayload(t, &del)
	if del.DeletedZones != 1 {
		t.Fatalf("cascade %+v", del)
	}
	h.get("/api/v1/zone/"+itoa(z.ID), h.admin).expect(t, http.StatusNotFound)
	if h.fake.reloads == 0 {
		t.Fatal("the engine was never told about the edits")
	}
}

func TestZoneValidation(t *testing.T) {
	h := newRTLSHarness(t, WSOptions{})
	m := h.newMap("Ground", 200, 100)
	other := h.newMap("First", 200, 100)
	a := h.newZone(m.ID, "A", 0, 0, 50, 50)
	b := h.newZone(m.ID, "B", 50, 0, 100, 50)
	up := h.newZone(other.ID, "Up", 0, 0, 10, 10)
	path := "/api/v1/maps/" + itoa(m.ID) + "/zones"
	// payload.field names the field at fault, so a form can mark it
	// (docs/api.md).
	cases := map[string]struct {
		body  map[string]any
		want  string
		field string
	}{
		"no name":          {map[string]any{"x1": 0, "y1": 0, "x2": 1, "y2": 1}, "name", "name"},
		"name too long":    {map[string]any{"name": strings.Repeat("ř", 101), "x1": 0, "y1": 0, "x2": 1, "y2": 1}, "1 to 100 characters", "name"},
		"missing corner":   {map[string]any{"name": "z", "x1": 0, "y1": 0, "x2": 1}, "y2", "y2"},
		"inverted":         {map[string]any{"name": "z", "x1": 10, "y1": 0, "x2": 5, "y2": 5}, "x1 < x2", "x2"},
		"zero height":      {map[string]any{"name": "z", "x1": 0, "y1": 5, "x2": 5, "y2": 5}, "y1 < y2", "y2"},
		"negative":         {map[string]any{"name": "z", "x1": -1, "y1": 0, "x2": 5, "y2": 5}, "x1", "x1"},
		"outside map":      {map[string]any{"name": "z", "x1": 0, "y1": 0, "x2": 201, "y2": 5}, "inside its map", "x2"},
		"below the map":    {map[string]any{"name": "z", "x1": 0, "y1": 0, "x2": 20, "y2": 101}, "inside its map", "y2"},
		"extra field":      {map[string]any{"name": "z", "x1": 0, "y1": 0, "x2": 1, "y2": 1, "z": 3}, "unknown field", ""},
		"not a rectangle":  {map[string]any{"name": "z", "x1": "0", "y1": 0, "x2": 1, "y2": 1}, "", ""},
		"empty after trim": {map[string]any{"name": "  ", "x1": 0, "y1": 0, "x2": 1, "y2": 1}, "name", "name"},
		"control only":     {map[string]any{"name": "\u0000\u0007", "x1": 0, "y1": 0, "x2": 1, "y2": 1}, "control characters", "name"},
	}
	for name, c := range cases {
		r := h.send("POST", path, h.admin, c.body)
		var p struct {
			Field string `json:"field"`
		}
		_ = json.Unmarshal(r.Payload, &p)
		if r.Code != http.StatusBadRequest || !strings.Contains(r.Message, c.want) || (c.field != "" && p.Field != c.field) {
			t.Errorf("%s: %d %s (want 400 mentioning %q, field %q)", name, r.Code, r.Body, c.want, c.field)
		}
	}
	// A number no float holds is out of range, not of the wrong type.
	if r := h.do(req{method: "POST", path: path, token: h.admin, body: []byte(`{"name":"z","x1":0,"y1":0,"x2":1e309,"y2":1}`)}); r.Code != http.StatusBadRequest || !strings.Contains(r.Message, "x2 is out of range") {
		t.Errorf("x2 1e309: %d %s", r.Code, r.Body)
	}
	// A name is counted in characters, not bytes: 100 Czech letters fit.
	h.newZone(other.ID, strings.Repeat("ř", 100), 100, 0, 150, 50)
	h.send("POST", "/api/v1/maps/999/zones", h.admin, map[string]any{"name": "z", "x1": 0, "y1": 0, "x2": 1, "y2": 1}).expect(t, http.StatusNotFound)
	h.send("POST", "/api/v1/zone/999", h.admin, map[string]any{"name": "z", "x1": 0, "y1": 0, "x2": 1, "y2": 1}).expect(t, http.StatusNotFound)

	adjPath := "/api/v1/zone/" + itoa(a.ID) + "/adjacency"
	for name, c := range map[string]struct {
		body map[string]any
		want string
	}{
		"self":      {map[string]any{"adjacent": []uint64{a.ID}}, "itself"},
		"unknown":   {map[string]any{"adjacent": []uint64{999}}, "does not exist"},
		"cross-map": {map[string]any{"adjacent": []uint64{up.ID}}, "allow_cross_map"},
		"missing":   {map[string]any{}, "adjacent is required"},
	} {
		r := h.send("POST", adjPath, h.admin, c.body)
		var p struct {
			Field string `json:"field"`
		}
		_ = json.Unmarshal(r.Payload, &p)
		if r.Code != http.StatusBadRequest || !strings.Contains(r.Message, c.want) || p.Field != "adjacent" {
			t.Errorf("adjacency %s: %d %s", name, r.Code, r.Body)
		}
	}
	// The bound is on neighbours: one named 1001 times is one.
	h.post(adjPath, map[string]any{"adjacent": slices.Repeat([]uint64{b.ID}, 1001)}, http.StatusOK)
	h.post(adjPath, map[string]any{"adjacent": []uint64{b.ID, up.ID}, "allow_cross_map": true}, http.StatusOK)
	var gotB, gotUp store.Zone
	h.get("/api/v1/zone/"+itoa(b.ID), h.admin).expect(t, http.StatusOK).decodePayload(t, &gotB)
	h.get("/api/v1/zone/"+itoa(up.ID), h.admin).expect(t, http.StatusOK).decodePayload(t, &gotUp)
	if len(gotB.Adjacent) != 1 || gotB.Adjacent[0] != a.ID || len(gotUp.Adjacent) != 1 || gotUp.Adjacent[0] != a.ID {
		t.Fatalf("not symmetric: b=%v up=%v", gotB.Adjacent, gotUp.Adjacent)
	}
	// Moving a zone keeps its edges; deleting it removes them from b.
	h.post("/api/v1/zone/"+itoa(a.ID), map[string]any{"name": "A2", "x1": 1, "y1": 1, "x2": 40, "y2": 40}, http.StatusOK)
	h.send("DELETE", "/api/v1/zone/"+itoa(a.ID), h.admin, nil).expect(t, http.StatusOK)
	h.get("/api/v1/zone/"+itoa(b.ID), h.admin).expect(t, http.StatusOK).decodePayload(t, &gotB)
	if len(gotB.Adjacent) != 0 {
		t.Fatalf("edge to a deleted zone kept: %v", gotB.Adjacent)
	}
	var list struct {
		Zones []store.Zone `json:"zones"`
	}
	h.get("/api/v1/maps/"+itoa(m.ID)+"/zones", h.token("user")).expect(t, http.StatusOK).decodePayload(t, &list)
	if len(list.Zones) != 1 || list.Zones[0].ID != b.ID {
		t.Fatalf("zones %+v", list.Zones)
	}
}

func TestGatewayPlacement(t *testing.T) {
	h := newRTLSHarness(t, WSOptions{})
	m := h.newMap("Ground", 200, 100)
	h.post("/api/v1/gateways", map[string]any{"mac": "AC233FA0B1C2", "name": "Kitchen"}, http.StatusCreated)
	gw := "LEGACY-AC233FA0B1C2"
	path := "/api/v1/maps/" + itoa(m.ID) + "/gateways"
	h.send("POST", path, h.admin, map[string]any{"gateway": "GW-NOPE", "x": 1, "y": 1}).expect(t, http.StatusBadRequest)
	h.send("POST", path, h.admin, map[string]any{"gateway": gw, "x": 201, "y": 1}).expect(t, http.StatusBadRequest)
	h.send("POST", path, h.admin, map[string]any{"gateway": gw, "x": 10}).expect(t, http.StatusBadRequest)
	h.send("POST", "/api/v1/maps/999/gateways", h.admin, map[string]any{"gateway": gw, "x": 1, "y": 1}).expect(t, http.StatusNotFound)
	h.post(path, map[string]any{"gateway": gw, "x": 10, "y": 20}, http.StatusOK)
	var got struct {
		Gateways []placedGateway `json:"gateways"`
	}
	h.get(path, h.token("user")).expect(t, http.StatusOK).decodePayload(t, &got)
	if len(got.Gateways) != 1 || got.Gateways[0].AssetUID != gw || got.Gateways[0].MAC != "AC233FA0B1C2" || got.Gateways[0].X != 10 {
		t.Fatalf("placed %+v", got)
	}
	var ov struct {
		Maps []struct {
			ID       uint64 `json:"id"`
			Gateways int    `json:"gateways"`
		} `json:"maps"`
	}
	h.get("/api/v1/maps/overview", h.token("user")).expect(t, http.StatusOK).decodePayload(t, &ov)
	if len(ov.Maps) != 1 || ov.Maps[0].Gateways != 1 {
		t.Fatalf("overview %+v", ov)
	}
	h.send("DELETE", path+"/"+gw, h.admin, nil).expect(t, http.StatusOK)
	h.send("DELETE", path+"/"+gw, h.admin, nil).expect(t, http.StatusNotFound)
	h.get(path, h.admin).expect(t, http.StatusOK).decodePayload(t, &got)
	if len(got.Gateways) != 0 {
		t.Fatalf("still placed %+v", got)
	}
	// A deleted gateway takes its placement along: the map shrinks past
	// where it stood.
	h.post(path, map[string]any{"gateway": gw, "x": 180, "y": 20}, http.StatusOK)
	h.send("DELETE", "/api/v1/gateway/"+gw, h.admin, nil).expect(t, http.StatusOK)
	h.send("POST", "/api/v1/map/"+itoa(m.ID), h.admin, map[string]any{"name": "Ground", "image_id": m.ImageID, "width": 100, "height": 100}).expect(t, http.StatusOK)
}

// TestMapResizeKeepsZonesInside: a new size that would cut off a zone or a
// placed gateway is refused (409, naming it); replacing the image removes
// the old one once no map uses it.
func TestMapResizeKeepsZonesInside(t *testing.T) {
	h := newRTLSHarness(t, WSOptions{})
	m := h.newMap("Ground", 200, 100)
	h.newZone(m.ID, "Wing", 0, 0, 150, 50)
	save := func(body map[string]any) *response {
		return h.send("POST", "/api/v1/map/"+itoa(m.ID), h.admin, body)
	}
	r := save(map[string]any{"name": "Ground", "image_id": m.ImageID, "width": 120, "height": 100})
	if r.Code != http.StatusConflict || !strings.Contains(r.Message, `"Wing"`) {
		t.Fatalf("shrinking past a zone: %d %s", r.Code, r.Body)
	}
	var got store.Map
	h.get("/api/v1/map/"+itoa(m.ID), h.admin).expect(t, http.StatusOK).decodePayload(t, &got)
	if got.Width != 200 {
		t.Fatalf("the refused size was stored: %+v", got)
	}
	save(map[string]any{"name": "Ground", "image_id": m.ImageID, "width": 160, "height": 100}).expect(t, http.StatusOK)

	// The map's image URL stays the same when the image is replaced: a
	// browser's copy is revalidated by ETag, never served stale.
	byMap := "/api/v1/maps/image?id=" + itoa(m.ID)
	old := h.get(byMap, h.admin).expect(t, http.StatusOK)
	oldTag := old.Header.Get("ETag")
	if oldTag == "" || !strings.Contains(old.Header.Get("Cache-Control"), "no-cache") {
		t.Fatalf("map image served with %v", old.Header)
	}
	h.do(req{method: "GET", path: byMap, token: h.admin, header: map[string]string{"If-None-Match": oldTag}}).expect(t, http.StatusNotModified)
	var up uploaded
	h.upload("new.png", pngOf(t, 300, 150)).expect(t, http.StatusCreated).decodePayload(t, &up)
	save(map[string]any{"name": "Ground", "image_id": up.ImageID}).expect(t, http.StatusOK)
	if r := h.do(req{method: "GET", path: byMap, token: h.admin, header: map[string]string{"If-None-Match": oldTag}}).expect(t, http.StatusOK); r.Header.Get("ETag") == oldTag {
		t.Fatalf("the replaced image kept its ETag %s", oldTag)
	}
	h.get("/api/v1/maps/image?image_id="+itoa(m.ImageID), h.admin).expect(t, http.StatusNotFound)
	h.get("/api/v1/maps/image?image_id="+itoa(up.ImageID), h.admin).expect(t, http.StatusOK)
	// An admin's draft is not everyone's: a user reads plans by map id
	// (a review found drafts readable by any account).
	h.upload("draft.png", pngOf(t, 30, 15)).expect(t, http.StatusCreated).decodePayload(t, &up)
	h.get("/api/v1/maps/image?image_id="+itoa(up.ImageID), h.token("user")).expect(t, http.StatusForbidden)
	h.get(byMap, h.token("user")).expect(t, http.StatusOK)
}

// TestFloorLinksToAMap: a floor's map_id must name a map that exists,
// and deleting the map unlinks its floors rather than leaving them
// pointing at nothing.
func TestFloorLinksToAMap(t *testing.T) {
	h, admin := newNavHarness(t)
	var up uploaded
	h.send("POST", "/api/v1/maps/upload", admin, pngOf(t, 200, 100)).expect(t, http.StatusCreated).decodePayload(t, &up)
	var m store.Map
	h.send("POST", "/api/v1/maps", admin, map[string]any{"name": "Ground", "image_id": up.ImageID}).expect(t, http.StatusCreated).decodePayload(t, &m)
	var f store.Floor
	h.send("POST", "/api/v1/floors", admin, map[string]any{"name": "G", "map_id": m.ID}).expect(t, http.StatusCreated).decodePayload(t, &f)
	if f.MapID != m.ID {
		t.Fatalf("floor %+v", f)
	}
	r := h.send("POST", "/api/v1/floors", admin, map[string]any{"name": "X", "map_id": 999}).expect(t, http.StatusBadRequest)
	if !strings.Contains(r.Body, `"map_id"`) {
		t.Fatalf("unknown map: %s", r.Body)
	}
	h.clock.Advance(time.Minute)
	var del struct {
		Unlinked []uint64 `json:"unlinked_floors"`
	}
	h.send("DELETE", "/api/v1/map/"+itoa(m.ID), admin, nil).expect(t, http.StatusOK).decodePayload(t, &del)
	if len(del.Unlinked) != 1 || del.Unlinked[0] != f.ID {
		t.Fatalf("delete answered unlinked_floors %v, want [%d]", del.Unlinked, f.ID)
	}
	var got store.Floor
	h.send("GET", "/api/v1/floor/"+itoa(f.ID), admin, nil).expect(t, http.StatusOK).decodePayload(t, &got)
	if got.ID != f.ID || got.MapID != 0 || got.Name != "G" {
		t.Fatalf("floor after its map's delete: %+v", got)
	}
	if !got.UpdatedAt.Equal(h.clock.Now()) {
		t.Fatalf("floor updated_at %v after its map's delete at %v", got.UpdatedAt, h.clock.Now())
	}
	if !h.applogHas(t, "floors "+itoa(f.ID)+" no longer show a plan") {
		t.Fatal("the app log does not say which floors lost their plan")
	}
	// The floor can be saved again, now without a map.
	h.send("POST", "/api/v1/floor/"+itoa(f.ID), admin, map[string]any{"name": "G"}).expect(t, http.StatusOK)
}

// TestMapsNeedNavigationOrRTLS: with neither feature that uses maps, the
// map routes answer 503, as the navigation routes do when it is off.
func TestMapsNeedNavigationOrRTLS(t *testing.T) {
	h := newHarness(t, withConfig(func(c *config.Config) { c.ServerFeatures = []string{"sensors"} }))
	r := h.send("GET", "/api/v1/maps", h.token("admin"), nil).expect(t, http.StatusServiceUnavailable)
	if !strings.Contains(r.Body, "navigation or rtls") {
		t.Fatalf("maps without their features: %s", r.Body)
	}
	h.send("POST", "/api/v1/maps/upload", h.token("admin"), pngOf(t, 4, 4)).expect(t, http.StatusServiceUnavailable)
	// The integration zone directory answers as its RTLS family does.
	if r := h.send("GET", "/api/v1/integration/zones", h.token("admin"), nil); r.Code != http.StatusBadRequest {
		t.Fatalf("integration zones with neither feature: %d %s", r.Code, r.Body)
	}
	nh, admin := newNavHarness(t)
	nh.send("GET", "/api/v1/maps", admin, nil).expect(t, http.StatusOK)
	// The navigation routes follow the feature too, though the appliance
	// builds the service whenever it has a database.
	off, offAdmin := newNavHarness(t, withConfig(func(c *config.Config) { c.ServerFeatures = []string{"sensors"} }))
	// Every route of docs/navigation.md answers 503 before anything else:
	// the mobile key (given or not) and the :id are not looked at.
	navRoutes := 0
	for _, rt := range off.srv.Routes() {
		if !strings.HasPrefix(rt.Path, "/api/v1/floor") && !strings.HasPrefix(rt.Path, "/api/v1/node/") &&
			!strings.HasPrefix(rt.Path, "/api/v1/edge/") && !strings.HasPrefix(rt.Path, "/api/v1/navigation/") {
			continue
		}
		navRoutes++
		for _, key := range []string{"", "harness-mobile-key"} {
			path := strings.ReplaceAll(rt.Path, ":id", "x")
			r := off.do(req{method: rt.Method, path: path, token: offAdmin, body: bodyFor(rt.Method), header: map[string]string{MobileKeyHeader: key}})
			if r.Code != http.StatusServiceUnavailable || !strings.Contains(r.Message, "feature navigation") {
				t.Errorf("%s %s (key %q) with navigation off: %d %s", rt.Method, path, key, r.Code, r.Body)
			}
		}
	}
	if navRoutes < 20 {
		t.Fatalf("only %d navigation routes found", navRoutes)
	}
}

// TestMapImageETagFollowsContent: two databases (a live one and one
// restored from an older backup) hold different plans under the same
// image id; a browser's cached copy of one must not be confirmed by the
// other.
func TestMapImageETagFollowsContent(t *testing.T) {
	a, b := newRTLSHarness(t, WSOptions{}), newRTLSHarness(t, WSOptions{})
	var upA, upB uploaded
	a.upload("a.png", pngOf(t, 300, 150)).expect(t, http.StatusCreated).decodePayload(t, &upA)
	b.upload("b.png", pngOf(t, 200, 100)).expect(t, http.StatusCreated).decodePayload(t, &upB)
	if upA.ImageID != upB.ImageID {
		t.Fatalf("image ids %d and %d: the case needs the same id in both", upA.ImageID, upB.ImageID)
	}
	path := "/api/v1/maps/image?image_id=" + itoa(upA.ImageID)
	tagA := a.get(path, a.admin).expect(t, http.StatusOK).Header.Get("ETag")
	r := b.do(req{method: "GET", path: path, token: b.admin, header: map[string]string{"If-None-Match": tagA}}).expect(t, http.StatusOK)
	if r.Header.Get("ETag") == tagA {
		t.Fatalf("different images share the ETag %s", tagA)
	}
	a.do(req{method: "GET", path: path, token: a.admin, header: map[string]string{"If-None-Match": tagA}}).expect(t, http.StatusNotModified)
}

// TestMapDeleteAndOldImages: deleting a map on a box without floors still
// answers unlinked_floors as a list; an image stored before uploads
// refused huge sizes is refused when a map would use it at that size
// (an infinite one made the write fail with a 500), and taken with a
// width and height given.
func TestMapDeleteAndOldImages(t *testing.T) {
	h := newRTLSHarness(t, WSOptions{})
	m := h.newMap("Ground", 200, 100)
	var del map[string]any
	h.send("DELETE", "/api/v1/map/"+itoa(m.ID), h.admin, nil).expect(t, http.StatusOK).decodePayload(t, &del)
	if fl, ok := del["unlinked_floors"].([]any); !ok || len(fl) != 0 {
		t.Fatalf("unlinked_floors = %#v, want []", del["unlinked_floors"])
	}
	for _, w := range []string{"2000000", "1e400"} {
		id, err := h.db.PutMapImage("image/svg+xml", []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="`+w+`" height="20"/>`))
		if err != nil {
			t.Fatal(err)
		}
		r := h.send("POST", "/api/v1/maps", h.admin, map[string]any{"name": "Old", "image_id": id}).expect(t, http.StatusBadRequest)
		if !strings.Contains(r.Body, `"image_id"`) {
			t.Fatalf("an old %s px image: %s", w, r.Body)
		}
		h.send("POST", "/api/v1/maps", h.admin, map[string]any{"name": "Old", "image_id": id, "width": 2000, "height": 20}).expect(t, http.StatusCreated)
	}
}

// A map image, the frontend and the key set answer HEAD with the GET's
// headers and no body; a GET route that acts does not answer HEAD.
func TestHeadServesDocumentHeadersOnly(t *testing.T) {
	h := newRTLSHarness(t, WSOptions{})
	m := h.newMap("Ground", 200, 100)
	srv := httptest.NewServer(h.srv)
	defer srv.Close()
	head := func(path, token string) *http.Response {
		t.Helper()
		r, err := http.NewRequest(http.MethodHead, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if n, _ := io.Copy(io.Discard, resp.Body); n != 0 {
			t.Errorf("HEAD %s: %d body bytes", path, n)
		}
		return resp
	}
	image := "/api/v1/maps/image?id=" + itoa(m.ID)
	get := h.get(image, h.token("user")).expect(t, http.StatusOK)
	resp := head(image, h.token("user"))
	if resp.StatusCode != http.StatusOK || resp.Header.Get("ETag") == "" || resp.Header.Get("ETag") != get.Header.Get("ETag") ||
		resp.Header.Get("Content-Type") != get.Header.Get("Content-Type") || resp.ContentLength != int64(len(get.Body)) {
		t.Fatalf("HEAD image: %d %v (GET: %v, %d bytes)", resp.StatusCode, resp.Header, get.Header, len(get.Body))
	}
	if resp := head(image, ""); resp.StatusCode != http.StatusForbidden {
		t.Errorf("HEAD image without a token: %d", resp.StatusCode)
	}
	if resp := head("/", ""); resp.StatusCode != http.StatusOK {
		t.Errorf("HEAD /: %d", resp.StatusCode)
	}
	if resp := head("/api/v1/tracking/start/strongest", h.admin); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("HEAD tracking/start: %d, want 405", resp.StatusCode)
	}
	var st struct {
		Running bool `json:"running"`
	}
	h.get("/api/v1/tracking/status", h.admin).expect(t, http.StatusOK).decodePayload(t, &st)
	if st.Running {
		t.Error("a HEAD started tracking")
	}
}

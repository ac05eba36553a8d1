package handlers

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"beaconhub/appliance/config"
	"beaconhub/store"
)

func TestNavProjectHashAndMobileKey(t *testing.T) {
	h, admin := newNavHarness(t, withConfig(func(c *config.Config) { c.MobileAPIKey = "mobile-secret" }))
	h.locationsUpTo(8)
	var f store.Floor
	h.send("POST", "/api/v1/floors", admin, map[string]any{"name": "G", "location_id": 7}).expect(t, http.StatusCreated).decodePayload(t, &f)
	sha := func() string {
		var p struct {
			SHA string `json:"sha"`
		}
		h.get("/api/v1/navigation/project/7/sha", admin).expect(t, http.StatusOK).decodePayload(t, &p)
		return p.SHA
	}
	s0 := sha()
	// Re-saving identical content keeps the hash.
	h.send("POST", "/api/v1/floor/"+itoa(f.ID), admin, map[string]any{"name": "G", "location_id": 7}).expect(t, http.StatusOK)
	if s := sha(); s != s0 {
		t.Fatal("hash changed without a content change")
	}
	h.send("POST", "/api/v1/floor/"+itoa(f.ID)+"/nodes", admin, map[string]any{"x": 1, "y": 2}).expect(t, http.StatusCreated)
	s1 := sha()
	if s1 == s0 {
		t.Fatal("hash unchanged after adding a node")
	}
	// Another location's floor is not part of project 7.
	h.send("POST", "/api/v1/floors", admin, map[string]any{"name": "Other", "location_id": 8}).expect(t, http.StatusCreated)
	if sha() != s1 {
		t.Fatal("hash changed by another project")
	}

	r := h.get("/api/v1/navigation/project/7", admin).expect(t, http.StatusOK)
	etag := r.Header.Get("ETag")
	if etag != `"`+s1+`"` {
		t.Fatalf("ETag %q", etag)
	}
	if v := r.Header.Get("Vary"); v != "Accept-Encoding" {
		t.Fatalf("Vary %q", v)
	}
	h.conditional(t, "/api/v1/navigation/project/7", admin, nil, etag, "Accept-Encoding")
	h.conditional(t, "/api/v1/navigation/mobile/project/7", admin, map[string]string{MobileKeyHeader: "mobile-secret"}, etag, "Accept-Encoding")
	h.get("/api/v1/navigation/project/99", admin).expect(t, http.StatusNotFound)

	for _, path := range []string{"/api/v1/navigation/mobile/project/7", "/api/v1/navigation/mobile/catalog", "/api/v1/navigation/mobile/snapshot"} {
		for _, key := range []string{"", "wrong"} {
			r := h.do(req{method: "GET", path: path, token: admin, header: map[string]string{MobileKeyHeader: key}})
			if r.Code != http.StatusForbidden {
				t.Errorf("%s with key %q: %d", path, key, r.Code)
			}
		}
		h.do(req{method: "GET", path: path, token: admin, header: map[string]string{MobileKeyHeader: "mobile-secret"}}).expect(t, http.StatusOK)
	}
	var mk map[string]string
	h.get("/api/v1/navigation/mobile-key", h.token("user")).expect(t, http.StatusOK).decodePayload(t, &mk)
	if mk["mobile_api_key"] != "mobile-secret" || mk["header"] != MobileKeyHeader {
		t.Fatalf("mobile key %v", mk)
	}
}

// conditional checks If-None-Match on path, whose current ETag is etag:
// weak comparison, lists and "*" answer 304 with no body and the ETag
// and Vary (vary, "" for none) of the 200; other tags answer 200.
func (h *harness) conditional(t *testing.T, path, token string, header map[string]string, etag, vary string) {
	t.Helper()
	opaque := strings.Trim(etag, `"`)
	for inm, match := range map[string]bool{
		etag: true, "W/" + etag: true, `"nope", ` + etag: true, `W/"nope",W/` + etag: true, "*": true, opaque: true,
		`"nope"`: false, `W/"nope"`: false, `"` + opaque + `x"`: false, "W/" + opaque: false, `"nope" ` + etag: false,
	} {
		hdr := map[string]string{"If-None-Match": inm}
		for k, v := range header {
			hdr[k] = v
		}
		r := h.do(req{method: "GET", path: path, token: token, header: hdr})
		switch {
		case match && (r.Code != http.StatusNotModified || r.Body != ""):
			t.Errorf("%s If-None-Match %s: %d %q, want 304", path, inm, r.Code, r.Body)
		case match && (r.Header.Get("ETag") != etag || r.Header.Get("Vary") != vary):
			t.Errorf("%s If-None-Match %s: 304 with ETag %q Vary %q, want %q %q", path, inm, r.Header.Get("ETag"), r.Header.Get("Vary"), etag, vary)
		case !match && r.Code != http.StatusOK:
			t.Errorf("%s If-None-Match %s: %d, want 200", path, inm, r.Code)
		}
	}
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }

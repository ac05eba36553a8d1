package handlers

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"

	"beaconhub/appliance/uitemplates"
	"beaconhub/store"
)

func previewAs(id uint64) map[string]string {
	return map[string]string{PreviewHeader: strconv.FormatUint(id, 10)}
}

// Every allowlisted component endpoint is a GET route of the table and
// honours the header with an admin token; any other token is refused.
func TestPreviewOnEveryAllowlistedRoute(t *testing.T) {
	h := newHarness(t)
	admin, user := h.token("admin"), h.token("user")
	target := h.users["maintenance"].ID
	table := map[string]Route{}
	for _, rt := range h.srv.Routes() {
		table[rt.Method+" "+rt.Path] = rt
	}
	allow := uitemplates.PreviewAllowlist()
	if len(allow) < 10 {
		t.Fatalf("allowlist %v", allow)
	}
	for _, p := range allow {
		rt, ok := table["GET "+p]
		if !ok {
			t.Errorf("allowlisted %s is not a GET route of the table", p)
			continue
		}
		path := concretePath(p)
		r := h.do(req{method: "GET", path: path, token: admin, header: previewAs(target)})
		if r.isGuardRefusal() || r.Code == http.StatusForbidden || r.Code == http.StatusMethodNotAllowed ||
			(r.Code == http.StatusNotFound && r.Message == "no such endpoint") {
			t.Errorf("preview of %s (%s): %d %q", p, rt.Guard, r.Code, r.Message)
		}
		for role, tok := range map[string]string{"user": user, "maintenance": h.token("maintenance"), "api": h.token("api")} {
			r = h.do(req{method: "GET", path: path, token: tok, header: previewAs(target)})
			if r.Code != http.StatusForbidden || (r.Message != msgPreviewAdmin && !(role == "api" && r.Message == msgAPIForbidden)) {
				t.Errorf("preview of %s with a %s token: %d %q, want 403", p, role, r.Code, r.Message)
			}
		}
		r = h.do(req{method: "GET", path: path, header: previewAs(target)})
		if r.Code != http.StatusForbidden {
			t.Errorf("preview of %s without a token: %d", p, r.Code)
		}
	}
}

// The previewed answer is the user's own: their identity, role, location
// scope and template.
func TestPreviewResolvesTheUser(t *testing.T) {
	h := newHarness(t)
	admin := h.token("admin")
	tpl := h.createTemplate("maint", "maintenance", defMaint)
	m := h.users["maintenance"]
	h.send("PUT", fmt.Sprintf("/api/v1/users/%d/template", m.ID), admin, map[string]any{"template_id": tpl.ID}).expect(t, http.StatusOK)
	h.locationsUpTo(42) // a scope must name a location
	if _, err := h.db.UpdateUser(m.ID, func(u *store.User) error { u.LocationID = 42; return nil }); err != nil {
		t.Fatal(err)
	}
	r, s := h.session(admin, previewAs(m.ID))
	r.expect(t, http.StatusOK)
	if !s.Preview || s.Role != "maintenance" || s.User.ID != m.ID || s.LocationScope == nil || s.LocationScope.LocationID != 42 ||
		s.Template == nil || s.Template.ID != tpl.ID || s.UIChrome == nil {
		t.Errorf("previewed session %+v", s)
	}
	// Without the header the admin is themself.
	_, s = h.session(admin, nil)
	if s.Preview || s.Role != "admin" {
		t.Errorf("plain admin session %+v", s)
	}
	for v, code := range map[string]int{
		"abc": http.StatusBadRequest, "0": http.StatusBadRequest, "999999": http.StatusNotFound,
		strconv.FormatUint(h.users["admin"].ID, 10): http.StatusBadRequest,
		strconv.FormatUint(h.users["api"].ID, 10):   http.StatusBadRequest,
	} {
		r, _ := h.session(admin, map[string]string{PreviewHeader: v})
		if r.Code != code {
			t.Errorf("header %q: %d %s, want %d", v, r.Code, r.Body, code)
		}
	}
}

// Writes, exports, unrelated routes, unknown paths and the WebSocket are
// refused before routing, whatever the token.
func TestPreviewRefusedElsewhere(t *testing.T) {
	h := newHarness(t)
	admin := h.token("admin")
	target := previewAs(h.users["user"].ID)
	for _, c := range []struct{ method, path string }{
		{"POST", "/api/v1/interface-templates"},
		{"PUT", "/api/v1/interface-templates/1"},
		{"DELETE", "/api/v1/beacon/LEGACY-AABBCCDDEEFF"},
		{"POST", "/api/v1/beacon/LEGACY-AABBCCDDEEFF"},
		{"PATCH", "/api/v1/settings"},
		{"POST", "/api/v1/bugs"},
		{"GET", "/api/v1/events/export"},
		{"GET", "/api/v1/users"},
		{"GET", "/api/v1/settings"},
		{"GET", "/api/v1/integration/alerts"},
		{"GET", "/api/v1/beacon/LEGACY-AABBCCDDEEFF/info"},
		{"GET", "/api/v1/navigation/tokens"},
		{"POST", "/api/v1/login"},
		{"GET", "/ws"},
		{"GET", "/api/v1/no-such-route"},
		{"HEAD", "/api/v1/beacons"},
		{"GET", "/api/v1/beacons/"},
		{"GET", "/api/v1/beacon//intervals"},
		// Static routes beside an allowlisted /tracking/:id: the
		// pattern read as a path took them in (a review).
		{"GET", "/api/v1/tracking/status"},
		{"GET", "/api/v1/tracking/algorithms"},
		{"GET", "/api/v1/tracking/stop"},
		{"GET", "/api/v1/tracking/samples"},
	} {
		hdr := map[string]string{PreviewHeader: target[PreviewHeader], "Connection": "Upgrade", "Upgrade": "websocket"}
		r := h.do(req{method: c.method, path: c.path, token: admin, header: hdr, body: bodyFor(c.method)})
		if r.Code != http.StatusForbidden || r.Message != msgPreviewRoute {
			t.Errorf("%s %s with the preview header: %d %q, want 403 %q", c.method, c.path, r.Code, r.Message, msgPreviewRoute)
		}
	}
	// An empty header value still counts as the header.
	r := h.do(req{method: "GET", path: "/api/v1/users", token: admin, header: map[string]string{PreviewHeader: ""}})
	if r.Code != http.StatusForbidden {
		t.Errorf("empty header on /api/v1/users: %d", r.Code)
	}
}

func TestPreviewAllowedMatcher(t *testing.T) {
	for _, c := range []struct {
		method, path string
		want         bool
	}{
		{"GET", "/api/v1/beacons", true},
		{"GET", "/api/v1/beacon/WAT-A-1", true},
		{"GET", "/api/v1/beacon/WAT-A-1/intervals", true},
		{"GET", "/api/v1/beacon/WAT-A-1/info", false},
		{"GET", "/api/v1/beacon/", false},
		{"POST", "/api/v1/beacons", false},
		{"GET", "/api/v1/user/session", true},
		{"GET", "/api/v1/user/session/x", false},
		{"GET", "/ws", false},
	} {
		if got := previewAllowed(c.method, c.path); got != c.want {
			t.Errorf("previewAllowed(%s %s) = %v", c.method, c.path, got)
		}
	}
}

func TestPreviewHeaderIsCanonical(t *testing.T) {
	if http.CanonicalHeaderKey(PreviewHeader) != PreviewHeader {
		t.Fatal("PreviewHeader must be canonical: the header map is indexed with it directly")
	}
	r := h2Request("x-service-preview-user-id")
	if _, has := r.Header[PreviewHeader]; !has {
		t.Error("a lower-case header is not found")
	}
}

func h2Request(name string) *http.Request {
	r, _ := http.NewRequest("GET", "/", nil)
	r.Header.Set(name, "1")
	return r
}

package handlers

import (
	"fmt"
	"net/http"
	"testing"

	"beaconhub/store"
)

type sessionOut struct {
	User struct {
		ID    uint64 `json:"id"`
		Email string `json:"email"`
	} `json:"user"`
	Role          string         `json:"role"`
	LocationScope *locationScope `json:"location_scope"`
	Template      *templateOut   `json:"template"`
	UIChrome      *uiChrome      `json:"ui_chrome"`
	Preview       bool           `json:"preview"`
}

func (h *harness) session(token string, header map[string]string) (*response, sessionOut) {
	h.t.Helper()
	r := h.do(req{method: "GET", path: "/api/v1/user/session", token: token, header: header})
	var s sessionOut
	if r.Code == http.StatusOK {
		r.decodePayload(h.t, &s)
	}
	return r, s
}

func TestSessionPerRole(t *testing.T) {
	h := newHarness(t)
	tpl := h.createTemplate("ward", "user", defUser)
	h.send("PUT", fmt.Sprintf("/api/v1/users/%d/template", h.users["user"].ID), h.token("admin"),
		map[string]any{"template_id": tpl.ID}).expect(t, http.StatusOK)
	h.locationsUpTo(7) // a scope must name a location
	if _, err := h.db.UpdateUser(h.users["user"].ID, func(u *store.User) error { u.LocationID = 7; return nil }); err != nil {
		t.Fatal(err)
	}

	r, s := h.session(h.token("user"), nil)
	r.expect(t, http.StatusOK)
	if s.Role != "user" || s.User.Email != "user@example.com" || s.Preview {
		t.Errorf("user session %+v", s)
	}
	if s.LocationScope == nil || s.LocationScope.LocationID != 7 {
		t.Errorf("location scope %+v", s.LocationScope)
	}
	if s.Template == nil || s.Template.ID != tpl.ID || string(s.Template.Definition) != string(tpl.Definition) {
		t.Errorf("template %+v", s.Template)
	}
	if s.UIChrome == nil || s.UIChrome.NavOrientation != "horizontal" || !s.UIChrome.ShowBrand || s.UIChrome.ProductName == "" ||
		s.UIChrome.LogoutStyle != "menu" || s.UIChrome.ShowSystemStatus || s.UIChrome.Version == "" || s.UIChrome.BugTrackerEnabled {
		t.Errorf("default chrome %+v", s.UIChrome)
	}

	_, s = h.session(h.token("maintenance"), nil)
	if s.Role != "maintenance" || s.Template != nil || s.UIChrome == nil || s.LocationScope != nil {
		t.Errorf("maintenance session %+v", s)
	}
	_, s = h.session(h.token("admin"), nil)
	if s.Role != "admin" || s.UIChrome != nil || s.Template != nil {
		t.Errorf("admin session %+v (admins keep the fixed admin navbar)", s)
	}
	r, _ = h.session(h.token("api"), nil) // api accounts have no web UI
	r.expect(t, http.StatusForbidden)
}

// A settings PATCH shows at the next session fetch, without a restart.
func TestSessionChromeAppliesLive(t *testing.T) {
	h := newHarness(t)
	user := h.token("user")
	_, before := h.session(user, nil)
	if before.UIChrome.FooterText != "" || before.UIChrome.NavOrientation != "horizontal" {
		t.Fatalf("before %+v", before.UIChrome)
	}
	h.send("PATCH", "/api/v1/settings", h.token("admin"), map[string]any{
		"server_ui_nav_orientation": "vertical", "server_ui_footer_text": "Ward 3 helpdesk: 1234",
		"server_ui_show_brand": false, "server_ui_logout_style": "button", "server_ui_footer_show_version": false,
		"server_bug_tracker_enabled": true, "server_ui_show_system_status": true,
	}).expect(t, http.StatusOK)
	_, after := h.session(user, nil)
	c := after.UIChrome
	if c.NavOrientation != "vertical" || c.FooterText != "Ward 3 helpdesk: 1234" || c.ShowBrand || c.ProductName != "" ||
		c.LogoutStyle != "button" || c.Version != "" || !c.BugTrackerEnabled || !c.ShowSystemStatus {
		t.Errorf("after PATCH %+v", c)
	}
}

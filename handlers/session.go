package handlers

import (
	"encoding/json"
	"errors"
	"net/http"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/auth"
	"beaconhub/appliance/buildinfo"
	"beaconhub/appliance/config"
	"beaconhub/store"

	"github.com/julienschmidt/httprouter"
)

// uiChrome is the resolved shell chrome of the user and maintenance UI,
// read from the server_ui_* keys on every request so a settings PATCH
// shows at the user's next session fetch without a restart.
type uiChrome struct {
	NavOrientation    string `json:"nav_orientation"`
	ShowBrand         bool   `json:"show_brand"`
	ProductName       string `json:"product_name,omitempty"`
	ShowProfile       bool   `json:"show_profile"`
	ShowAccount       bool   `json:"show_account"`
	ShowLogout        bool   `json:"show_logout"`
	LogoutStyle       string `json:"logout_style"`
	ShowSystemStatus  bool   `json:"show_system_status"`
	ShowFooter        bool   `json:"show_footer"`
	FooterShowVersion bool   `json:"footer_show_version"`
	Version           string `json:"version,omitempty"`
	FooterText        string `json:"footer_text"`
	BugTrackerEnabled bool   `json:"bug_tracker_enabled"`
}

func resolveChrome(c *config.Config) *uiChrome {
	ch := &uiChrome{
		NavOrientation: c.UINavOrientation, ShowBrand: c.UIShowBrand, ShowProfile: c.UIShowProfile,
		ShowAccount: c.UIShowAccount, ShowLogout: c.UIShowLogout, LogoutStyle: c.UILogoutStyle,
		ShowSystemStatus: c.UIShowSystemStatus, ShowFooter: c.UIShowFooter,
		FooterShowVersion: c.UIFooterShowVersion, FooterText: c.UIFooterText,
		BugTrackerEnabled: c.BugTrackerEnabled,
	}
	// Values the shell would hide are left out rather than sent unused.
	if ch.ShowBrand {
		ch.ProductName = config.ActiveBrand().Product
	}
	if ch.ShowFooter && ch.FooterShowVersion {
		ch.Version = buildinfo.Version
	}
	return ch
}

// sessionTemplate is the assigned template, definition included.
type sessionTemplate struct {
	ID         uint64          `json:"id"`
	Name       string          `json:"name"`
	Role       string          `json:"role"`
	Definition json.RawMessage `json:"definition"`
	UpdatedAt  int64           `json:"updated_at"`
}

// locationScope is the part of the site a user is limited to; null in the
// answer means system-wide.
type locationScope struct {
	LocationID uint64 `json:"location_id"`
}

// session serves GET /api/v1/user/session: who the caller is (or, under
// live preview, whom the admin is previewing) and what their shell shows.
func (s *Server) session(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	c := claimsFrom(r)
	u, err := s.deps.DB.GetUser(c.UserID)
	if errors.Is(err, store.ErrNotFound) {
		return apperr.NotFound("user not found")
	}
	if err != nil {
		return err
	}
	out := map[string]any{
		"user":           auth.Public(u),
		"role":           u.Role,
		"location_scope": nil,
		"template":       nil,
		"ui_chrome":      nil,
		"preview":        previewerFrom(r) != "",
	}
	if u.LocationID != 0 {
		out["location_scope"] = locationScope{LocationID: u.LocationID}
	}
	if u.Role == auth.RoleUser || u.Role == auth.RoleMaintenance {
		out["ui_chrome"] = resolveChrome(s.deps.Live.Get())
		t, err := s.deps.DB.UserUITemplate(u.ID)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return err
		case t.Role == u.Role:
			// A template of another role (the user's role changed after
			// assignment) would offer components the role may not use.
			out["template"] = sessionTemplate{ID: t.ID, Name: t.Name, Role: t.Role, Definition: t.Definition, UpdatedAt: t.UpdatedAt}
		}
	}
	return ok(w, out)
}

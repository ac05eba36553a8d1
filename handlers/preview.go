package handlers

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/auth"
	"beaconhub/appliance/uitemplates"
	"beaconhub/store"
)

// Live preview: an admin designing a template calls the components' GET
// endpoints with X-Service-Preview-User-Id and gets the answers that user
// would get (their role and location scope). It is deliberately narrow:
// refused before routing on anything but an allowlisted GET (so writes,
// exports, unrelated routes and the WebSocket are covered whatever is
// mounted), and refused in the guard for any token but an admin's.

// PreviewHeader names the user whose view an admin previews. It is
// written in canonical form, so the header map is indexed directly.
const PreviewHeader = "X-Service-Preview-User-Id"

// Preview refusal messages.
const (
	msgPreviewRoute = "the preview header is only accepted on the interface components' GET endpoints"
	msgPreviewAdmin = "the preview header requires an admin token"
)

type previewerKey struct{}

// previewerFrom returns the email of the admin previewing, or "".
func previewerFrom(r *http.Request) string {
	v, _ := r.Context().Value(previewerKey{}).(string)
	return v
}

// previewPatterns are the allowlist split into segments once.
var previewPatterns = func() [][]string {
	var out [][]string
	for _, p := range uitemplates.PreviewAllowlist() {
		out = append(out, strings.Split(p, "/"))
	}
	return out
}()

// previewRoutes are the allowlisted patterns, for routes matched already.
var previewRoutes = func() map[string]bool {
	out := map[string]bool{}
	for _, p := range uitemplates.PreviewAllowlist() {
		out[p] = true
	}
	return out
}()

// previewAllowed reports whether a request for method and path may carry
// the preview header: a GET matching an allowlisted pattern, where a
// :param segment matches any one non-empty segment.
func previewAllowed(method, path string) bool {
	if method != http.MethodGet {
		return false
	}
	segs := strings.Split(path, "/")
	for _, pat := range previewPatterns {
		if len(pat) != len(segs) {
			continue
		}
		match := true
		for i := range pat {
			if strings.HasPrefix(pat[i], ":") {
				match = match && segs[i] != ""
			} else {
				match = match && pat[i] == segs[i]
			}
		}
		if match {
			return true
		}
	}
	return false
}

// refusePreview answers 403 and returns true when r carries the preview
// header where it is not accepted. It runs before routing.
func refusePreview(w http.ResponseWriter, r *http.Request) bool {
	if _, has := r.Header[PreviewHeader]; !has || previewAllowed(r.Method, r.URL.Path) {
		return false
	}
	writeJSONError(w, http.StatusForbidden, msgPreviewRoute)
	return true
}

// previewClaims replaces an admin's claims by those of the previewed user.
// The route's own guard then runs on them, so the answer is exactly what
// that user would get.
func (s *Server) previewClaims(rt Route, admin *auth.Claims, raw string) (*auth.Claims, error) {
	// The route's own pattern, exactly: read as a path, the pattern
	// /tracking/:id took in /tracking/status and /tracking/algorithms
	// (a review).
	if rt.Method != http.MethodGet || !previewRoutes[rt.Path] {
		return nil, apperr.Forbidden(msgPreviewRoute)
	}
	if admin.Role != auth.RoleAdmin {
		return nil, apperr.Forbidden(msgPreviewAdmin)
	}
	id, err := strconv.ParseUint(strings.TrimSpace(raw), 10, 64)
	if err != nil || id == 0 {
		return nil, apperr.InvalidField(PreviewHeader, "%s must be a user id", PreviewHeader)
	}
	u, err := s.deps.DB.GetUser(id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apperr.NotFound("preview user not found")
	}
	if err != nil {
		return nil, err
	}
	if !uitemplates.ValidRole(u.Role) {
		return nil, apperr.InvalidField(PreviewHeader, "only user and maintenance accounts can be previewed")
	}
	return &auth.Claims{UserID: u.ID, Email: u.Email, Role: u.Role, RegisteredClaims: admin.RegisteredClaims}, nil
}

// withPreview applies the preview header, when present, to r's claims.
func (s *Server) withPreview(rt Route, r *http.Request, claims *auth.Claims) (*http.Request, *auth.Claims, error) {
	raw, has := r.Header[PreviewHeader]
	if !has {
		return r, claims, nil
	}
	pc, err := s.previewClaims(rt, claims, strings.Join(raw, ","))
	if err != nil {
		return r, claims, err
	}
	ctx := context.WithValue(r.Context(), claimsKey{}, pc)
	ctx = context.WithValue(ctx, previewerKey{}, claims.Email)
	return r.WithContext(ctx), pc, nil
}

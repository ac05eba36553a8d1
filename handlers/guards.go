package handlers

import (
	"context"
	"net/http"
	"strings"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/auth"

	"github.com/julienschmidt/httprouter"
)

// Guard says who may call a route. The rules are the spec's guard table:
// admin and auth guards answer 403, database-only answers 400 when the
// database is not ready.
type Guard int

// Guards.
const (
	None        Guard = iota // anyone
	DBOnly                   // anyone, but the database must be ready (400 otherwise)
	Auth                     // any valid JWT (api accounts only on integration routes)
	Admin                    // a valid JWT with admin privilege
	Integration              // api or admin accounts
	TokenAuth                // a navigation token, or a JWT as for Auth
)

func (g Guard) String() string {
	return [...]string{"none", "database-only", "auth", "admin", "integration", "token/auth"}[g]
}

// Guard failure messages; the guard-matrix test recognises refusals by them.
const (
	msgAuthRequired  = "authentication required"
	msgAdminRequired = "admin privileges required"
	// The integration routes also take api accounts: "admin privileges
	// required" sent a user to the wrong remedy (a black-box check).
	msgIntegrationRequired = "an api or admin account is required"
	msgAPIForbidden        = "this route is not available to api accounts"
	msgDBNotReady          = "database is not ready"
	msgMustChange          = "password change required: POST /api/v1/change-password first"
)

type routeKey struct{}
type claimsKey struct{}

// claimsFrom returns the verified claims of the request (nil on None routes).
func claimsFrom(r *http.Request) *auth.Claims {
	c, _ := r.Context().Value(claimsKey{}).(*auth.Claims)
	return c
}

// bearer extracts the token of an `Authorization: Bearer` header.
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// navToken extracts the secret of an `Authorization: Token` header.
func navToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if len(h) > 6 && strings.EqualFold(h[:6], "token ") {
		return strings.TrimSpace(h[6:]), true
	}
	return "", false
}

// guard wraps a handler with its route's checks.
func (s *Server) guard(rt Route, h handlerFunc) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		ctx := context.WithValue(r.Context(), routeKey{}, rt.Path)
		r = r.WithContext(ctx)
		if err := s.check(rt, r, &r); err != nil {
			writeError(w, r, s.log, err)
			return
		}
		if err := h(w, r, p); err != nil {
			writeError(w, r, s.log, err)
		}
	}
}

func (s *Server) check(rt Route, r *http.Request, out **http.Request) error {
	switch rt.Guard {
	case None:
		return nil
	case DBOnly:
		if s.deps.DB == nil {
			return apperr.Invalid(msgDBNotReady)
		}
		return nil
	}
	if rt.Guard == TokenAuth {
		// A navigation token is read-only and has no claims; any other
		// scheme falls through to the JWT checks below.
		if t, isToken := navToken(r); isToken {
			if s.deps.Nav == nil || !s.navigationOn() || !s.deps.Nav.VerifyToken(t) {
				return apperr.Forbidden(msgAuthRequired)
			}
			return nil
		}
	}
	tok := bearer(r)
	if tok == "" || s.deps.Auth == nil {
		return apperr.Forbidden(msgAuthRequired)
	}
	claims, err := s.deps.Auth.Verify(tok)
	if err != nil {
		if apperr.KindOf(err) != apperr.KindForbidden {
			return err // the store failed: a 500, not "sign in again"
		}
		return apperr.Forbidden(msgAuthRequired)
	}
	*out = r.WithContext(context.WithValue(r.Context(), claimsKey{}, claims))
	// The default admin's password is known from the install files until
	// it is changed; nothing but changing it is allowed before that.
	if claims.MustChangePassword && rt.Path != "/api/v1/change-password" {
		return apperr.Forbidden(msgMustChange)
	}
	// Live preview (preview.go): an admin's token stands in for the
	// previewed user's, and the role checks below apply to that user.
	var previewed *http.Request
	if previewed, claims, err = s.withPreview(rt, *out, claims); err != nil {
		return err
	}
	*out = previewed
	switch rt.Guard {
	case Admin:
		if claims.Role != auth.RoleAdmin {
			return apperr.Forbidden(msgAdminRequired)
		}
	case Integration:
		if claims.Role != auth.RoleAdmin && claims.Role != auth.RoleAPI {
			return apperr.Forbidden(msgIntegrationRequired)
		}
	case Auth, TokenAuth:
		if claims.Role == auth.RoleAPI {
			return apperr.Forbidden(msgAPIForbidden)
		}
	}
	return nil
}

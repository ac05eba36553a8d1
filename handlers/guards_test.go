package handlers

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"beaconhub/appliance/auth"
)

// The guard matrix is generated from the route table: no route is listed
// here, only which roles each guard admits. A route added to routes.go is
// covered automatically; a new Guard value fails until it gets its rules.

// roleNone is a caller without credentials.
const roleNone = "none"

var matrixRoles = []string{roleNone, auth.RoleUser, auth.RoleMaintenance, auth.RoleAPI, auth.RoleAdmin}

// admits says which roles pass each guard (database ready).
var admits = map[Guard]map[string]bool{
	None:        {roleNone: true, auth.RoleUser: true, auth.RoleMaintenance: true, auth.RoleAPI: true, auth.RoleAdmin: true},
	DBOnly:      {roleNone: true, auth.RoleUser: true, auth.RoleMaintenance: true, auth.RoleAPI: true, auth.RoleAdmin: true},
	Auth:        {auth.RoleUser: true, auth.RoleMaintenance: true, auth.RoleAdmin: true},
	Admin:       {auth.RoleAdmin: true},
	Integration: {auth.RoleAPI: true, auth.RoleAdmin: true},
	// Navigation tokens are covered by TestNavTokenMatrix; for JWTs the
	// rule is Auth's.
	TokenAuth: {auth.RoleUser: true, auth.RoleMaintenance: true, auth.RoleAdmin: true},
}

// concretePath substitutes plausible values for :params and *catch-alls.
func concretePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if s == "" || (s[0] != ':' && s[0] != '*') {
			continue
		}
		name := strings.ToLower(s[1:])
		switch {
		case strings.Contains(name, "mac"):
			segs[i] = "LEGACY-AABBCCDDEEFF"
		case strings.HasSuffix(name, "id") || name == "id":
			segs[i] = "999999"
		case name == "filename" || name == "filepath":
			segs[i] = "missing.js"
		case name == "alg":
			segs[i] = "nearest"
		default:
			segs[i] = "x"
		}
	}
	return strings.Join(segs, "/")
}

func bodyFor(method string) any {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		return "{}"
	}
	return nil
}

func TestGuardMatrix(t *testing.T) {
	h := newHarness(t)
	tokens := map[string]string{roleNone: ""}
	for _, role := range harnessRoles {
		tokens[role] = h.token(role)
	}
	routes := h.srv.Routes()
	if len(routes) == 0 {
		t.Fatal("empty route table")
	}
	for _, rt := range routes {
		rules, known := admits[rt.Guard]
		if !known {
			t.Errorf("%s %s: guard %s has no rules in the guard-matrix test; add them", rt.Method, rt.Path, rt.Guard)
			continue
		}
		path := concretePath(rt.Path)
		for _, role := range matrixRoles {
			name := fmt.Sprintf("%s %s as %s", rt.Method, rt.Path, role)
			r := h.do(req{method: rt.Method, path: path, token: tokens[role], body: bodyFor(rt.Method)})
			if r.Code == http.StatusNotFound && r.Message == "no such endpoint" || r.Code == http.StatusMethodNotAllowed {
				t.Errorf("%s: route not reachable at %s (%d %s)", name, path, r.Code, r.Message)
				continue
			}
			if rules[role] {
				if r.isGuardRefusal() {
					t.Errorf("%s: refused by the %s guard (%d %q)", name, rt.Guard, r.Code, r.Message)
				}
				continue
			}
			if r.Code != http.StatusForbidden || !r.isGuardRefusal() || r.Type != "error" {
				t.Errorf("%s: got %d %q, want a 403 guard refusal", name, r.Code, r.Message)
			}
		}
	}
}

func TestGuardMatrixDatabaseNotReady(t *testing.T) {
	h := newHarness(t, withoutDB())
	tokens := map[string]string{roleNone: ""}
	for _, role := range harnessRoles {
		tokens[role] = h.token(role)
	}
	n := 0
	for _, rt := range h.srv.Routes() {
		if rt.Guard != DBOnly {
			continue
		}
		n++
		for _, role := range matrixRoles {
			r := h.do(req{method: rt.Method, path: concretePath(rt.Path), token: tokens[role], body: bodyFor(rt.Method)})
			if r.Code != http.StatusBadRequest || r.Message != msgDBNotReady || r.Type != "error" {
				t.Errorf("%s %s as %s without a database: %d %q, want 400 %q", rt.Method, rt.Path, role, r.Code, r.Message, msgDBNotReady)
			}
		}
	}
	if n == 0 {
		t.Skip("no database-only routes in the table")
	}
}

// Credentials that are present but wrong are refused like missing ones.
func TestGuardRefusesBadCredentials(t *testing.T) {
	h := newHarness(t)
	var target Route
	for _, rt := range h.srv.Routes() {
		if rt.Guard == Auth && rt.Method == http.MethodGet && !strings.Contains(rt.Path, ":") {
			target = rt
			break
		}
	}
	if target.Path == "" {
		t.Skip("no parameterless GET Auth route")
	}
	good := h.token(auth.RoleUser)
	for name, header := range map[string]string{
		"garbage bearer":  "Bearer not-a-token",
		"basic auth":      "Basic dXNlcjpwYXNz",
		"token scheme":    "Token " + good,
		"no scheme":       good,
		"empty bearer":    "Bearer ",
		"truncated token": "Bearer " + good[:len(good)-5],
	} {
		r := h.do(req{method: "GET", path: target.Path, header: map[string]string{"Authorization": header}})
		if r.Code != http.StatusForbidden || r.Message != msgAuthRequired {
			t.Errorf("%s: %d %q, want 403 %q", name, r.Code, r.Message, msgAuthRequired)
		}
	}
	// The scheme is case-insensitive.
	r := h.do(req{method: "GET", path: target.Path, header: map[string]string{"Authorization": "bearer " + good}})
	if r.isGuardRefusal() {
		t.Errorf("lower-case bearer scheme refused: %d %q", r.Code, r.Message)
	}
}

// A store that fails while a token is checked is the server's fault, not
// the caller's: 500, never the 403 "sign in" that would send every
// client to its login screen on one disk error. A deleted account's
// token is still refused with 403.
func TestGuardStoreFailureIsNotAnAuthRefusal(t *testing.T) {
	h := newHarness(t)
	path := "/api/v1/user/session"
	good := h.token(auth.RoleUser)
	h.do(req{method: "GET", path: path, token: good}).expect(t, http.StatusOK)
	if err := h.db.DeleteUser(h.users[auth.RoleUser].ID); err != nil {
		t.Fatal(err)
	}
	if r := h.do(req{method: "GET", path: path, token: good}); r.Code != http.StatusForbidden || r.Message != msgAuthRequired {
		t.Fatalf("deleted account: %d %q", r.Code, r.Message)
	}
	admin := h.token(auth.RoleAdmin)
	if err := h.db.Close(); err != nil {
		t.Fatal(err)
	}
	if r := h.do(req{method: "GET", path: path, token: admin}); r.Code != http.StatusInternalServerError {
		t.Fatalf("store closed: %d %q, want 500", r.Code, r.Message)
	}
}

func TestConcretePath(t *testing.T) {
	for in, want := range map[string]string{
		"/api/v1/users/:userId":                         "/api/v1/users/999999",
		"/css/:filename":                                "/css/missing.js",
		"/api/v1/tracking/start/:alg":                   "/api/v1/tracking/start/nearest",
		"/api/v1/user/rtls/beacons/:mac/zone-intervals": "/api/v1/user/rtls/beacons/LEGACY-AABBCCDDEEFF/zone-intervals",
		"/api/v1/version":                               "/api/v1/version",
		"/integration/docs/*filepath":                   "/integration/docs/missing.js",
		"/api/v1/interface-templates/:id/clone":         "/api/v1/interface-templates/999999/clone",
	} {
		if got := concretePath(in); got != want {
			t.Errorf("concretePath(%s) = %s, want %s", in, got, want)
		}
	}
}

// An api account gets through exactly the integration routes and the
// unauthenticated ones; every other route refuses it with 403, the live
// preview header included.
func TestAPIAccountAllowlist(t *testing.T) {
	h := newHarness(t)
	tok := h.token(auth.RoleAPI)
	passed := 0
	for _, rt := range h.srv.Routes() {
		r := h.do(req{method: rt.Method, path: concretePath(rt.Path), token: tok, body: bodyFor(rt.Method)})
		if rt.Guard == Integration && !strings.HasPrefix(rt.Path, "/api/v1/integration/") {
			t.Errorf("%s %s: integration guard outside /api/v1/integration/", rt.Method, rt.Path)
		}
		allowed := rt.Guard == Integration || rt.Guard == None || rt.Guard == DBOnly
		if allowed {
			if r.isGuardRefusal() {
				t.Errorf("%s %s: api account refused (%d %q)", rt.Method, rt.Path, r.Code, r.Message)
			}
			if rt.Guard == Integration {
				passed++
			}
			continue
		}
		if r.Code != http.StatusForbidden || !r.isGuardRefusal() {
			t.Errorf("%s %s: api account got %d %q, want 403", rt.Method, rt.Path, r.Code, r.Message)
		}
	}
	if passed == 0 {
		t.Error("no integration route admitted the api account")
	}
}

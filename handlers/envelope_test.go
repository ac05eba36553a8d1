package handlers

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"beaconhub/appliance/apperr"

	"github.com/julienschmidt/httprouter"
)

func checkErrorEnvelope(t *testing.T, name string, r *response, status int) {
	t.Helper()
	if r.Code != status {
		t.Errorf("%s: status %d, want %d; body %s", name, r.Code, status, r.Body)
		return
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Errorf("%s: Content-Type %q", name, r.Header.Get("Content-Type"))
	}
	if r.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("%s: no nosniff header", name)
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.Body), &env); err != nil {
		t.Errorf("%s: body is not a JSON envelope: %s", name, r.Body)
		return
	}
	for _, k := range []string{"type", "message", "payload"} {
		if _, ok := env[k]; !ok {
			t.Errorf("%s: envelope lacks %q: %s", name, k, r.Body)
		}
	}
	if r.Type != "error" || r.Message == "" {
		t.Errorf("%s: envelope type %q message %q", name, r.Type, r.Message)
	}
}

func TestUnknownPathsAre404(t *testing.T) {
	h := newHarness(t)
	admin := h.token("admin")
	for _, tc := range []struct{ method, path string }{
		{"GET", "/api/v1/no-such-thing"},
		{"GET", "/api/v1/users/1/extra"},
		{"POST", "/api/v1/nope"},
		{"GET", "/api/v2/version"},
		// Unprefixed application paths are not aliases.
		{"POST", "/login"},
		{"GET", "/users"},
		{"GET", "/settings"},
		{"GET", "/version"},
		{"POST", "/auth/refresh"},
		// No trailing-slash redirects either.
		{"GET", "/api/v1/version/"},
	} {
		r := h.do(req{method: tc.method, path: tc.path, token: admin, body: bodyFor(tc.method)})
		checkErrorEnvelope(t, tc.method+" "+tc.path, r, http.StatusNotFound)
	}
}

func TestWrongMethodIs405(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct{ method, path string }{
		{"GET", "/api/v1/login"},
		{"DELETE", "/api/v1/settings"},
		{"PUT", "/api/v1/version"},
	} {
		r := h.do(req{method: tc.method, path: tc.path})
		checkErrorEnvelope(t, tc.method+" "+tc.path, r, http.StatusMethodNotAllowed)
		if r.Header.Get("Allow") == "" {
			t.Errorf("%s %s: 405 without an Allow header", tc.method, tc.path)
		}
	}
}

func TestSuccessEnvelope(t *testing.T) {
	h := newHarness(t)
	r := h.get("/api/v1/version", "").expect(t, http.StatusOK)
	if r.Type != "success" {
		t.Errorf("type %q", r.Type)
	}
	var p map[string]any
	r.decodePayload(t, &p)
	if p["version"] == "" || p["version"] == nil {
		t.Errorf("version payload %v", p)
	}
	if r.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Error("no nosniff header")
	}
}

func TestStrictBodyDecoding(t *testing.T) {
	h := newHarness(t)
	big := `{"email":"a@example.com","password":"` + strings.Repeat("p", 1<<20) + `"}`
	for _, tc := range []struct {
		name   string
		body   string
		status int
	}{
		{"over 1 MiB", big, http.StatusRequestEntityTooLarge},
		{"unknown field", `{"email":"admin@example.com","password":"x","remember":true}`, http.StatusBadRequest},
		{"trailing garbage", `{"email":"admin@example.com","password":"x"} garbage`, http.StatusBadRequest},
		{"second object", `{"email":"admin@example.com","password":"x"}{"email":"b"}`, http.StatusBadRequest},
		{"empty body", ``, http.StatusBadRequest},
		{"not JSON", `email=a&password=b`, http.StatusBadRequest},
		{"array", `[1,2]`, http.StatusBadRequest},
		{"wrong type", `{"email":["a"],"password":"x"}`, http.StatusBadRequest},
		{"truncated", `{"email":"a`, http.StatusBadRequest},
	} {
		r := h.do(req{method: "POST", path: "/api/v1/login", body: tc.body})
		checkErrorEnvelope(t, tc.name, r, tc.status)
		if strings.Contains(r.Message, "struct") || strings.Contains(r.Message, "Go value") {
			t.Errorf("%s: message leaks Go types: %q", tc.name, r.Message)
		}
	}
	// A body that is no object says so; a field of the wrong type is named.
	for body, want := range map[string]string{
		`[1,2]`: "the body must be a JSON object, not array", `"x"`: "the body must be a JSON object, not string",
		`{"email":["a"],"password":"x"}`: "field email has the wrong type",
	} {
		if r := h.do(req{method: "POST", path: "/api/v1/login", body: body}); !strings.Contains(r.Message, want) {
			t.Errorf("%s: message %q, want %q", body, r.Message, want)
		}
	}
	// ... and in payload.field, as every invalid field is (it was not: a
	// black-box check); a body that is no object has no field.
	for body, field := range map[string]string{`{"email":["a"],"password":"x"}`: `"field":"email"`, `[1,2]`: `"payload":{}`} {
		if r := h.do(req{method: "POST", path: "/api/v1/login", body: body}); !strings.Contains(r.Body, field) {
			t.Errorf("%s: %s, want %s", body, r.Body, field)
		}
	}
	// A missing email or password is named (it was not: a black-box check).
	for body, field := range map[string]string{`{"email":"a@example.com"}`: "password", `{"password":"x"}`: "email", `{}`: "email"} {
		r := h.do(req{method: "POST", path: "/api/v1/login", body: body})
		checkErrorEnvelope(t, body, r, http.StatusBadRequest)
		if !strings.Contains(r.Body, `"field":"`+field+`"`) {
			t.Errorf("login %s: %s, want field %s", body, r.Body, field)
		}
	}
	// Trailing whitespace is fine.
	r := h.do(req{method: "POST", path: "/api/v1/login", body: `{"email":"admin@example.com","password":"` + userPassword + `"}` + "\n\t "})
	r.expect(t, http.StatusOK)
}

// A route that fails with a plain error or panics answers a generic 500;
// the detail goes to the log only.
func TestInternalErrorsDoNotLeak(t *testing.T) {
	h := newHarness(t)
	const secret = "bolt page 42 at /var/lib/beaconhub/db/service.db is corrupt"
	h.srv.router.Handle("GET", "/test/fail", h.srv.guard(Route{Method: "GET", Path: "/test/fail", Guard: None},
		func(http.ResponseWriter, *http.Request, httprouter.Params) error { return errors.New(secret) }))
	h.srv.router.Handle("GET", "/test/wrapped", h.srv.guard(Route{Method: "GET", Path: "/test/wrapped", Guard: None},
		func(http.ResponseWriter, *http.Request, httprouter.Params) error {
			return &apperr.Error{Kind: apperr.KindInternal, Msg: secret}
		}))
	h.srv.router.Handle("GET", "/test/panic", h.srv.guard(Route{Method: "GET", Path: "/test/panic", Guard: None},
		func(http.ResponseWriter, *http.Request, httprouter.Params) error { panic(secret) }))
	for _, p := range []string{"/test/fail", "/test/wrapped", "/test/panic"} {
		r := h.get(p, "")
		checkErrorEnvelope(t, p, r, http.StatusInternalServerError)
		if strings.Contains(r.Body, "corrupt") || strings.Contains(r.Body, "/var/lib") {
			t.Errorf("%s: response leaks the internal error: %s", p, r.Body)
		}
		if r.Message != "internal error" {
			t.Errorf("%s: message %q", p, r.Message)
		}
	}
	if !strings.Contains(h.logBuf.String(), "is corrupt") {
		t.Error("internal error not logged")
	}

	// A real one: the store fails under a handler.
	if err := h.db.Close(); err != nil {
		t.Fatal(err)
	}
	r := h.send("POST", "/api/v1/login", "", map[string]string{"email": "admin@example.com", "password": userPassword})
	checkErrorEnvelope(t, "login with a closed store", r, http.StatusInternalServerError)
	if r.Message != "internal error" || strings.Contains(r.Body, "database") {
		t.Errorf("closed store: %s", r.Body)
	}
}

// A 503 (a feature not configured, a connection limit) is a state the
// server chose: logged as a warning, while a 500 is an error.
func TestUnavailableIsLoggedAsAWarning(t *testing.T) {
	h := newHarness(t)
	h.srv.router.Handle("GET", "/test/off", h.srv.guard(Route{Method: "GET", Path: "/test/off", Guard: None},
		func(http.ResponseWriter, *http.Request, httprouter.Params) error {
			return apperr.Unavailable("feature frobnicate is not enabled")
		}))
	h.get("/test/off", "").expect(t, http.StatusServiceUnavailable)
	var found bool
	for _, line := range strings.Split(h.logBuf.String(), "\n") {
		if !strings.Contains(line, "frobnicate") {
			continue
		}
		found = true
		if !strings.Contains(line, `"level":"WARN"`) {
			t.Errorf("503 logged as %s", line)
		}
	}
	if !found {
		t.Error("503 not logged")
	}
}

func TestWriteErrorMapping(t *testing.T) {
	h := newHarness(t)
	tooMany := apperr.TooMany(1500*time.Millisecond, "slow down")
	withDetails := apperr.Conflict("incompatible")
	withDetails.Details = map[string]any{"incompatible_components": []string{"map"}}
	for _, tc := range []struct {
		err    error
		status int
		check  func(t *testing.T, rec *httptest.ResponseRecorder, p map[string]any)
	}{
		{apperr.Invalid("bad"), 400, nil},
		{apperr.InvalidField("email", "bad email"), 400, func(t *testing.T, _ *httptest.ResponseRecorder, p map[string]any) {
			if p["field"] != "email" {
				t.Errorf("payload.field = %v", p["field"])
			}
		}},
		{apperr.Unauthorized("who"), 401, nil},
		{apperr.Forbidden("no"), 403, nil},
		{apperr.NotFound("gone"), 404, nil},
		{withDetails, 409, func(t *testing.T, _ *httptest.ResponseRecorder, p map[string]any) {
			if _, ok := p["incompatible_components"]; !ok {
				t.Errorf("details missing from payload: %v", p)
			}
		}},
		{apperr.TooLarge("big"), 413, nil},
		{tooMany, 429, func(t *testing.T, rec *httptest.ResponseRecorder, _ map[string]any) {
			if got := rec.Header().Get("Retry-After"); got != "2" {
				t.Errorf("Retry-After = %q, want 2 (rounded up)", got)
			}
		}},
		{apperr.Unavailable("later"), 503, nil},
		{&http.MaxBytesError{Limit: 10}, 413, nil},
	} {
		rec := httptest.NewRecorder()
		writeError(rec, httptest.NewRequest("GET", "/x", nil), h.logger, tc.err)
		if rec.Code != tc.status {
			t.Errorf("%v: status %d, want %d", tc.err, rec.Code, tc.status)
			continue
		}
		var env struct {
			Type    string         `json:"type"`
			Message string         `json:"message"`
			Payload map[string]any `json:"payload"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env.Type != "error" || env.Payload == nil {
			t.Errorf("%v: envelope %s", tc.err, rec.Body)
			continue
		}
		if tc.check != nil {
			tc.check(t, rec, env.Payload)
		}
	}
}

// Every path of the route table answers another method with 405, not
// 404: the routes httprouter cannot hold (matched by exact path or by
// segments) were outside its own 405 (a review: GET /maps/upload, POST
// /maps/overview and DELETE /tracking/:id answered "no such endpoint").
func TestWrongMethodIs405OnEveryRoute(t *testing.T) {
	h := newHarness(t)
	methods := map[string]map[string]bool{}
	for _, rt := range h.srv.Routes() {
		if methods[rt.Path] == nil {
			methods[rt.Path] = map[string]bool{}
		}
		methods[rt.Path][rt.Method] = true
	}
	for path, has := range methods {
		segs := strings.Split(path, "/")
		for i, s := range segs {
			if strings.HasPrefix(s, ":") || strings.HasPrefix(s, "*") {
				segs[i] = "X1"
			}
		}
		concrete := strings.Join(segs, "/")
		for _, m := range []string{"GET", "POST", "PUT", "DELETE"} {
			if has[m] || (m == "GET" && has["HEAD"]) {
				continue
			}
			r := h.do(req{method: m, path: concrete, body: bodyFor(m)})
			if r.Code == http.StatusNotFound && r.Message == "no such endpoint" {
				t.Errorf("%s %s (route %s): 404 no such endpoint, want 405", m, concrete, path)
			}
			if r.Code == http.StatusMethodNotAllowed && r.Header.Get("Allow") == "" {
				t.Errorf("%s %s: 405 without an Allow header", m, concrete)
			}
		}
	}
}

// The router's own 405 lists the exact routes' methods too: GET
// /maps/image is exact while its HEAD is in the router, and a PUT there
// was told Allow: HEAD, OPTIONS (a review).
func TestAllowListsTheExactRoutesMethods(t *testing.T) {
	h := newHarness(t)
	for _, m := range []string{"PUT", "DELETE", "POST"} {
		r := h.do(req{method: m, path: "/api/v1/maps/image", body: bodyFor(m)})
		if allow := r.Header.Get("Allow"); r.Code != http.StatusMethodNotAllowed || !strings.Contains(allow, "GET") {
			t.Errorf("%s /api/v1/maps/image: %d Allow=%q, want 405 with GET in Allow", m, r.Code, allow)
		}
	}
}

// OPTIONS on an exact or segment-matched path answers as on the router's
// own paths: 200 with Allow (it was a 405: a review).
func TestOptionsOnAnExactRoute(t *testing.T) {
	h := newHarness(t)
	ref := h.do(req{method: "OPTIONS", path: "/api/v1/maps"})
	for _, p := range []string{"/api/v1/maps/upload", "/api/v1/tracking/X1"} {
		r := h.do(req{method: "OPTIONS", path: p})
		if r.Code != ref.Code || !strings.Contains(r.Header.Get("Allow"), "OPTIONS") {
			t.Errorf("OPTIONS %s: %d Allow=%q; OPTIONS /api/v1/maps: %d Allow=%q", p, r.Code, r.Header.Get("Allow"), ref.Code, ref.Header.Get("Allow"))
		}
	}
}

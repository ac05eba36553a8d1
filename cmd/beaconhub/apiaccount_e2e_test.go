package main

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	integrationdocs "beaconhub/web/integration-docs"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
)

// End to end: `beaconhub api-account create` on a home, the real binary
// serving it, and the printed credentials used against the integration API,
// every answer validated against the embedded OpenAPI document.
func TestAPIAccountEndToEnd(t *testing.T) {
	home := writeHome(t, testConfig)
	code, out, errOut := runCLI(t, "api-account", "create", "e2e-bridge", "--home", home)
	if code != 0 {
		t.Fatalf("api-account create: %d %s", code, errOut)
	}
	creds := map[string]string{}
	for _, m := range credLine.FindAllStringSubmatch(out, -1) {
		creds[m[1]] = m[2]
	}
	if creds["email"] == "" || creds["password"] == "" {
		t.Fatalf("output %q", out)
	}
	doc, err := libopenapi.NewDocument(integrationdocs.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}

	s := start(t, home)
	code, login := s.login(creds["email"], creds["password"])
	if code != http.StatusOK || login.User.Role != "api" || login.MustChangePassword {
		t.Fatalf("login with the printed credentials: %d %+v", code, login)
	}
	get := func(path, token string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest("GET", s.base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if strings.HasPrefix(path, "/api/v1/integration/") {
			if ok, verrs := v.ValidateHttpResponse(req, resp); !ok {
				for _, e := range verrs {
					t.Errorf("GET %s: %s: %s", path, e.Message, e.Reason)
				}
			}
		}
		return resp, body
	}
	for path, want := range map[string]int{
		"/api/v1/integration/alerts":            http.StatusOK,
		"/api/v1/integration/alerts?after_id=0": http.StatusOK,
		"/api/v1/integration/alerts?limit=501":  http.StatusBadRequest,
		"/api/v1/integration/openapi.json":      http.StatusOK,
		"/api/v1/beacons":                       http.StatusForbidden,
		"/api/v1/user/session":                  http.StatusForbidden,
		"/api/v1/users":                         http.StatusForbidden,
		"/integration/docs":                     http.StatusOK,
		"/integration/docs/redoc.standalone.js": http.StatusOK,
	} {
		if resp, body := get(path, login.Token); resp.StatusCode != want {
			t.Errorf("GET %s as api: %d %.200s, want %d", path, resp.StatusCode, body, want)
		}
	}
	s.stop()
	if strings.Contains(s.stderr.String(), creds["password"]) || strings.Contains(s.stdout.String(), creds["password"]) {
		t.Error("the api account's password reached the server log")
	}
}

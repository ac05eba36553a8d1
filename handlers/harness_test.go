package handlers

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"beaconhub/appliance/applog"
	"beaconhub/appliance/auth"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/config"
	"beaconhub/store"
	"beaconhub/web"
)

// The harness is shared by every handler test: a real bbolt store in
// t.TempDir(), the default configuration persisted to a temp home, auth
// with bcrypt cost 4 and a fake clock, one user of each role, and slog
// writing (through applog.Redact) into a buffer tests can inspect.

// signingKeyPEM is generated once per test binary: RSA generation is the
// slow part of auth.New.
var (
	keyOnce sync.Once
	keyPEM  []byte
)

func sharedSigningKey(t *testing.T) []byte {
	t.Helper()
	keyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			panic(err)
		}
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	})
	return keyPEM
}

// harnessStart is the fake clock's start: a whole second, so iat and the
// password-change time compare exactly.
var harnessStart = time.Date(2026, 4, 5, 6, 7, 8, 0, time.UTC)

// Passwords of the harness users.
const userPassword = "harness-password-1"

// syncBuffer is a goroutine-safe bytes.Buffer for slog output.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type harness struct {
	t      *testing.T
	home   string
	paths  config.Paths
	db     *store.DB
	live   *config.Live
	clock  *clock.Fake
	auth   *auth.Service
	applog *applog.Log
	logBuf *syncBuffer
	logger *slog.Logger
	srv    *Server
	// users by role: "admin", "user", "maintenance", "api".
	users map[string]*store.User
}

// harnessRoles are the roles a harness has a user of.
var harnessRoles = []string{auth.RoleAdmin, auth.RoleUser, auth.RoleMaintenance, auth.RoleAPI}

type harnessOption func(*harnessOpts)

type harnessOpts struct {
	noDB      bool
	noUsers   bool
	configure func(*config.Config)
}

// withoutUsers leaves the store without accounts (a first install).
func withoutUsers() harnessOption { return func(o *harnessOpts) { o.noUsers = true } }

// withoutDB builds the Server with Deps.DB nil (database not ready).
func withoutDB() harnessOption { return func(o *harnessOpts) { o.noDB = true } }

// withConfig edits the configuration before anything is built.
func withConfig(fn func(*config.Config)) harnessOption {
	return func(o *harnessOpts) { o.configure = fn }
}

func newHarness(t *testing.T, opts ...harnessOption) *harness {
	t.Helper()
	var o harnessOpts
	for _, fn := range opts {
		fn(&o)
	}
	h := &harness{t: t, home: t.TempDir(), logBuf: &syncBuffer{}, users: map[string]*store.User{}}
	h.paths = config.Paths{Home: h.home}
	h.logger = slog.New(slog.NewJSONHandler(h.logBuf, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: applog.Redact}))

	cfg := config.Defaults(config.ActiveBrand())
	cfg.DefaultPassword = "default-admin-password"
	cfg.MobileAPIKey = "harness-mobile-key"
	cfg.GatewayAdminPassword = "harness-gateway-password"
	if o.configure != nil {
		o.configure(cfg)
	}
	if err := os.MkdirAll(filepath.Dir(h.paths.ConfigFile()), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := config.WriteFile(h.paths.ConfigFile(), cfg, nil); err != nil {
		t.Fatal(err)
	}
	h.live = config.NewLive(cfg, nil, h.paths.ConfigFile())
	h.clock = clock.NewFake(harnessStart)

	db, err := store.Open(h.paths.DBFile(cfg), store.OpenOptions{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	h.db = db
	if err := db.PutKV(store.KeyJWTSigningKey, sharedSigningKey(t)); err != nil {
		t.Fatal(err)
	}
	h.auth, err = auth.New(db, h.live, auth.Options{Clock: h.clock, BcryptCost: 4, Logger: h.logger})
	if err != nil {
		t.Fatal(err)
	}
	h.applog = applog.New(db, h.live, h.clock, h.logger)
	for _, role := range harnessRoles {
		if o.noUsers {
			break
		}
		u, err := h.auth.CreateUser(role+"@example.com", userPassword, role, false)
		if err != nil {
			t.Fatal(err)
		}
		h.users[role] = u
	}
	deps := Deps{Live: h.live, DB: db, Auth: h.auth, AppLog: h.applog, Logger: h.logger, Static: web.FS()}
	if o.noDB {
		deps.DB = nil
	}
	h.srv = New(deps)
	return h
}

// response is a decoded envelope plus the raw recorder.
type response struct {
	Code    int
	Header  http.Header
	Body    string
	Type    string          `json:"type"`
	Message string          `json:"message"`
	Payload json.RawMessage `json:"payload"`
}

// decodePayload unmarshals the payload into v.
func (r *response) decodePayload(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Payload, v); err != nil {
		t.Fatalf("payload %s: %v", r.Payload, err)
	}
}

// req describes one request through the router.
type req struct {
	method, path string
	body         any // string or []byte: sent as is; anything else: JSON-encoded
	token        string
	remote       string // RemoteAddr; default 127.0.0.1:50000
	header       map[string]string
}

func (h *harness) do(r req) *response {
	h.t.Helper()
	var body io.Reader
	switch b := r.body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	case []byte:
		body = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			h.t.Fatal(err)
		}
		body = bytes.NewReader(data)
	}
	hr := httptest.NewRequest(r.method, r.path, body)
	hr.RemoteAddr = "127.0.0.1:50000"
	if r.remote != "" {
		hr.RemoteAddr = r.remote
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	if r.token != "" {
		hr.Header.Set("Authorization", "Bearer "+r.token)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.srv.ServeHTTP(rec, hr)
	out := &response{Code: rec.Code, Header: rec.Header(), Body: rec.Body.String()}
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") && strings.HasPrefix(out.Body, "{") {
		_ = json.Unmarshal(rec.Body.Bytes(), out)
		// Every answer of the API is the spec's envelope, whose payload
		// is an object: checked on every request any test makes, since
		// a list answered bare was found route by route by black-box
		// checks (navigation's seven, then the sensors' lists).
		if p := bytes.TrimSpace(out.Payload); len(p) > 0 && p[0] != '{' && strings.HasPrefix(r.path, "/api/") {
			h.t.Errorf("%s %s: payload is not an object: %.200s", r.method, r.path, p)
		}
		// An answer carrying a secret is kept by no cache (they went out
		// cacheable: a black-box check).
		var keys map[string]json.RawMessage
		if out.Code < 300 && json.Unmarshal(out.Payload, &keys) == nil && rec.Header().Get("Cache-Control") != "no-store" {
			for _, k := range []string{"token", "refresh_token", "mobile_api_key", "password", "token_kind"} {
				if _, has := keys[k]; has {
					h.t.Errorf("%s %s: answer with %q is not Cache-Control: no-store", r.method, r.path, k)
				}
			}
		}
	}
	return out
}

// get, post... are shorthands.
func (h *harness) get(path, token string) *response {
	h.t.Helper()
	return h.do(req{method: "GET", path: path, token: token})
}

func (h *harness) send(method, path, token string, body any) *response {
	h.t.Helper()
	return h.do(req{method: method, path: path, token: token, body: body})
}

// loginHTTP logs in through the API and returns the payload.
func (h *harness) loginHTTP(email, password string) (*response, *auth.LoginResult) {
	h.t.Helper()
	r := h.send("POST", "/api/v1/login", "", map[string]string{"email": email, "password": password})
	if r.Code != http.StatusOK {
		return r, nil
	}
	var res auth.LoginResult
	r.decodePayload(h.t, &res)
	return r, &res
}

// token returns a fresh access token for the harness user of role.
func (h *harness) token(role string) string {
	h.t.Helper()
	u, ok := h.users[role]
	if !ok {
		h.t.Fatalf("no harness user with role %s", role)
	}
	res, err := h.auth.Login(u.Email, userPassword, "127.0.0.1")
	if err != nil {
		h.t.Fatalf("login %s: %v", role, err)
	}
	return res.Token
}

// expect fails the test unless r has the status; it prints the body.
func (r *response) expect(t *testing.T, status int) *response {
	t.Helper()
	if r.Code != status {
		t.Fatalf("status %d, want %d; body %s", r.Code, status, r.Body)
	}
	return r
}

// isGuardRefusal reports whether r is a refusal by a route guard (as
// opposed to the handler's own answer).
func (r *response) isGuardRefusal() bool {
	switch r.Code {
	case http.StatusForbidden:
		return r.Message == msgAuthRequired || r.Message == msgAdminRequired || r.Message == msgAPIForbidden || r.Message == msgIntegrationRequired
	case http.StatusBadRequest:
		return r.Message == msgDBNotReady
	}
	return false
}

// logRecords returns the application-log records, newest first.
func (h *harness) logRecords() []store.LogRecord {
	h.t.Helper()
	recs, _, err := h.db.ListLogs(0, 1000)
	if err != nil {
		h.t.Fatal(err)
	}
	return recs
}

// setVerbosity changes server_log_verbosity directly on the live config.
func (h *harness) setVerbosity(v string) {
	h.t.Helper()
	if _, err := h.live.Patch(map[string]json.RawMessage{"server_log_verbosity": json.RawMessage(`"` + v + `"`)}); err != nil {
		h.t.Fatal(err)
	}
}

// applogHas reports whether one of the newest 100 app-log entries
// contains text.
func (h *harness) applogHas(t *testing.T, text string) bool {
	t.Helper()
	recs, _, err := h.applog.List(0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if strings.Contains(r.Message, text) {
			return true
		}
	}
	return false
}

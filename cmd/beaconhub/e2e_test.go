package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// End-to-end: the real binary, started as a subprocess on loopback ports
// with a temp home, driven over HTTP.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// binary builds ./cmd/beaconhub once per test run.
func binary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "beaconhub-e2e-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "beaconhub")
		cmd := exec.Command("go", "build", "-o", binPath, ".")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// testConfig keeps every network peer on loopback and off by default.
const testConfig = `{
  "server_id": "E2E001",
  "server_features": ["service"],
  "server_mqtt_listen": "127.0.0.1:0",
  "server_push_enabled": false,
  "server_push_ops_enabled": false,
  "server_push_server_url": "http://127.0.0.1:9/",
  "server_push_ops_server_url": "http://127.0.0.1:9/",
  "server_bridge_server_url": "http://127.0.0.1:9/",
  "server_bridge_monitor_host": "127.0.0.1"
}
`

func writeHome(t *testing.T, content string) string {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "config"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config", "main.config.json"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func cleanEnv() []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "BEACONHUB_HOME=") {
			env = append(env, e)
		}
	}
	return env
}

type server struct {
	t      *testing.T
	cmd    *exec.Cmd
	base   string
	stdout *lockedBuffer
	stderr *lockedBuffer
	done   chan struct{}
	err    error
}

// start runs `beaconhub serve` and waits until /api/v1/version answers.
func start(t *testing.T, home string) *server {
	t.Helper()
	addr := freeAddr(t)
	s := &server{t: t, base: "http://" + addr, stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan struct{})}
	s.cmd = exec.Command(binary(t), "serve", "--home", home, "--http-listen", addr)
	s.cmd.Env = cleanEnv()
	s.cmd.Stdout = s.stdout
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.err = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			_ = s.cmd.Process.Kill()
			<-s.done
		}
		if t.Failed() {
			t.Logf("server stdout:\n%s\nserver stderr:\n%s", s.stdout, s.stderr)
		}
	})

	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-s.done:
			t.Fatalf("beaconhub exited during start-up (%v)\nstderr:\n%s", s.err, s.stderr)
		default:
		}
		resp, err := client.Get(s.base + "/api/v1/version")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("beaconhub not ready after 30s (last error %v)\nstderr:\n%s", err, s.stderr)
		}
		// Poll the condition; not a wait for time to pass.
		select {
		case <-s.done:
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM and requires a clean exit with status 0.
func (s *server) stop() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.t.Fatal(err)
	}
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.t.Fatalf("beaconhub did not exit within 30s of SIGTERM\nstderr:\n%s", s.stderr)
	}
	if s.err != nil {
		s.t.Fatalf("beaconhub exit after SIGTERM: %v (want status 0)\nstderr:\n%s", s.err, s.stderr)
	}
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		s.t.Fatalf("exit status %d, want 0", code)
	}
}

type envelope struct {
	Type    string          `json:"type"`
	Message string          `json:"message"`
	Payload json.RawMessage `json:"payload"`
}

func (s *server) call(method, path, token string, body any, out any) (int, envelope) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var env envelope
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, &env); err != nil {
		s.t.Fatalf("%s %s: %d, body is not an envelope: %s", method, path, resp.StatusCode, data)
	}
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(env.Payload, out); err != nil {
			s.t.Fatalf("%s %s: payload %s: %v", method, path, env.Payload, err)
		}
	}
	return resp.StatusCode, env
}

type loginPayload struct {
	Token              string `json:"token"`
	RefreshToken       string `json:"refresh_token"`
	MustChangePassword bool   `json:"must_change_password"`
	User               struct {
		ID    uint64 `json:"id"`
		Email string `json:"email"`
		Role  string `json:"role"`
	} `json:"user"`
}

func (s *server) login(email, password string) (int, loginPayload) {
	s.t.Helper()
	var p loginPayload
	code, _ := s.call("POST", "/api/v1/login", "", map[string]string{"email": email, "password": password}, &p)
	return code, p
}

func readInitialPassword(t *testing.T, home string) (email, password string) {
	t.Helper()
	f, err := os.Open(filepath.Join(home, "config", "initial-admin-password"))
	if err != nil {
		t.Fatalf("initial admin password file: %v", err)
	}
	defer f.Close()
	if fi, _ := f.Stat(); fi.Mode().Perm() != 0o600 {
		t.Errorf("initial-admin-password mode %v, want 0600", fi.Mode().Perm())
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "email":
			email = strings.TrimSpace(v)
		case "password":
			password = strings.TrimSpace(v)
		}
	}
	if email == "" || password == "" {
		t.Fatal("initial-admin-password file lacks email or password")
	}
	return email, password
}

func TestEndToEnd(t *testing.T) {
	home := writeHome(t, testConfig)
	s := start(t, home)

	email, initial := readInitialPassword(t, home)
	code, admin := s.login(email, initial)
	if code != http.StatusOK || admin.Token == "" || admin.RefreshToken == "" {
		t.Fatalf("first admin login: %d %+v", code, admin)
	}
	if !admin.MustChangePassword || admin.User.Role != "admin" {
		t.Errorf("first admin login payload: %+v; want an admin flagged must_change_password", admin)
	}

	const adminPw = "E2E-admin-password-1"
	var changed loginPayload
	code, env := s.call("POST", "/api/v1/change-password", admin.Token, map[string]string{"current_password": initial, "new_password": adminPw}, &changed)
	if code != http.StatusOK || changed.Token == "" || changed.MustChangePassword {
		t.Fatalf("change-password: %d %s %+v", code, env.Message, changed)
	}
	// Its password no longer works, so the file goes at once, not at the
	// next start.
	if _, err := os.Stat(filepath.Join(home, "config", "initial-admin-password")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("initial-admin-password still present right after the password change (stat: %v)", err)
	}

	const userPw = "E2E-user-password-1"
	code, env = s.call("POST", "/api/v1/register", changed.Token, map[string]string{"email": "Operator@Example.com", "password": userPw, "role": "maintenance"}, nil)
	if code != http.StatusCreated {
		t.Fatalf("register: %d %s", code, env.Message)
	}
	code, op := s.login("operator@example.com", userPw)
	if code != http.StatusOK || op.User.Role != "maintenance" {
		t.Fatalf("new user login: %d %+v", code, op)
	}
	if code, env := s.call("GET", "/api/v1/features", op.Token, nil, nil); code != http.StatusOK {
		t.Errorf("new user on an Auth route: %d %s", code, env.Message)
	}
	if code, _ := s.call("GET", "/api/v1/users", op.Token, nil, nil); code != http.StatusForbidden {
		t.Errorf("maintenance user on an Admin route: %d, want 403", code)
	}

	// A second serve on the same home refuses to start (database locked).
	second := exec.Command(binary(t), "serve", "--home", home, "--http-listen", freeAddr(t))
	second.Env = cleanEnv()
	out, err := second.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Errorf("second serve on a busy home: err %v, want a non-zero exit\n%s", err, out)
	} else if !strings.Contains(string(out), "locked") {
		t.Errorf("second serve does not say the database is locked:\n%s", out)
	}

	s.stop()
	if strings.Contains(s.stderr.String(), initial) || strings.Contains(s.stderr.String(), adminPw) {
		t.Error("server log contains a password")
	}

	// Restart: users survive, the old password no longer works.
	s2 := start(t, home)
	if code, _ := s2.login(email, initial); code != http.StatusUnauthorized {
		t.Errorf("initial password after the change and a restart: %d, want 401", code)
	}
	code, again := s2.login(email, adminPw)
	if code != http.StatusOK || again.MustChangePassword {
		t.Errorf("admin login after restart: %d %+v", code, again)
	}
	if code, _ := s2.login("operator@example.com", userPw); code != http.StatusOK {
		t.Errorf("registered user after restart: %d", code)
	}
	// Tokens survive a restart (the signing key is stored).
	if code, env := s2.call("GET", "/api/v1/features", op.Token, nil, nil); code != http.StatusOK {
		t.Errorf("token from before the restart: %d %s", code, env.Message)
	}
	if _, err := os.Stat(filepath.Join(home, "config", "initial-admin-password")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("initial-admin-password still present after the password was changed (stat: %v)", err)
	}
	s2.stop()
}

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = cleanEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("run %v: %v", args, err)
	return 0, "", ""
}

func TestConfigCheck(t *testing.T) {
	home := writeHome(t, `{"server_id":"CHK001","server_mqtt_pass":"visible-if-leaked-123","server_push_publish_token":"restricted-token-456"}`)
	code, out, errOut := runCLI(t, "config", "check", "--home", home)
	if code != 0 {
		t.Fatalf("config check: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, `server_mqtt_pass = "********"`) {
		t.Errorf("masked secret not shown:\n%s", out)
	}
	if !strings.Contains(out, `server_id = "CHK001"`) {
		t.Errorf("plain value not shown:\n%s", out)
	}
	// A check only looks: the file is byte for byte what it was.
	data, err := os.ReadFile(filepath.Join(home, "config", "main.config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != `{"server_id":"CHK001","server_mqtt_pass":"visible-if-leaked-123","server_push_publish_token":"restricted-token-456"}` {
		t.Errorf("config check rewrote the file:\n%s", data)
	}
	for _, secret := range []string{"visible-if-leaked-123", "restricted-token-456"} {
		if strings.Contains(out, secret) {
			t.Errorf("config check prints a secret value")
		}
	}
	for _, s := range []string{"visible-if-leaked-123", "restricted-token-456", "server_push_publish_token", "server_push_token_manager_password"} {
		if strings.Contains(out, s) {
			t.Errorf("config check output contains %q", s)
		}
	}

	bad := writeHome(t, `{"server_http_port": 70000}`)
	code, out, errOut = runCLI(t, "config", "check", "--home", bad)
	if code == 0 {
		t.Fatalf("config check accepted a bad file:\n%s", out)
	}
	if !strings.Contains(errOut, "server_http_port") || !strings.Contains(errOut, "70000") {
		t.Errorf("error does not name the key and value: %q", errOut)
	}
}

func TestVersionCommand(t *testing.T) {
	code, out, errOut := runCLI(t, "version")
	if code != 0 || !strings.Contains(out, "commit") || strings.TrimSpace(out) == "" {
		t.Errorf("version: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, _ := runCLI(t, "no-such-command"); code == 0 {
		t.Error("unknown command exits 0")
	}
}

// TestMobileKeyKeepsTheFileValues: regenerating the mobile key writes the
// file's own values back, not the environment's overrides (a review:
// they became the file's), and the entries of a value the engine partly
// ignores as written. config check counts every warning it prints.
func TestMobileKeyKeepsTheFileValues(t *testing.T) {
	home := writeHome(t, `{"server_http_port":9000,"server_rtls_params":["mean_stay=48h","sigma=4"],"server_mobile_api_key":"old-key-0123456789abcdef","vendor_key":1}`)
	t.Setenv("BEACONHUB_SERVER_HTTP_PORT", "9100")
	t.Setenv("BEACONHUB_SERVER_RTLS_PARAMS", "switch_odds=30")
	if code, out, errOut := runCLI(t, "mobile-key", "regenerate", "--home", home); code != 0 {
		t.Fatalf("mobile-key regenerate: exit %d\n%s\n%s", code, out, errOut)
	}
	data, err := os.ReadFile(filepath.Join(home, "config", "main.config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m["server_http_port"] != 9000.0 || fmt.Sprint(m["server_rtls_params"]) != "[mean_stay=48h sigma=4]" ||
		m["server_mobile_api_key"] == "old-key-0123456789abcdef" {
		t.Fatalf("file after regenerate: port %v, rtls %v, key changed %v", m["server_http_port"], m["server_rtls_params"],
			m["server_mobile_api_key"] != "old-key-0123456789abcdef")
	}
	// With the key itself from the environment, a restart would not
	// apply the new one, and the command says so.
	t.Setenv("BEACONHUB_SERVER_MOBILE_API_KEY", "env-key-0123456789abcdef")
	if code, out, _ := runCLI(t, "mobile-key", "regenerate", "--home", home); code != 0 || !strings.Contains(out, "applies only once BEACONHUB_SERVER_MOBILE_API_KEY is unset") {
		t.Errorf("regenerate with the key from the environment: exit %d\n%s", code, out)
	}
	os.Unsetenv("BEACONHUB_SERVER_MOBILE_API_KEY")
	t.Setenv("BEACONHUB_SERVER_RTLS_PARAMS", "")
	os.Unsetenv("BEACONHUB_SERVER_RTLS_PARAMS")
	code, out, _ := runCLI(t, "config", "check", "--home", home)
	if code != 0 || !strings.Contains(out, "valid, with 2 warnings below") || strings.Count(out, "# warning:") != 2 {
		t.Fatalf("config check: exit %d\n%s", code, out)
	}
}

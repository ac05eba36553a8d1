package applog

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"beaconhub/appliance/clock"
	"beaconhub/appliance/config"
	"beaconhub/store"
)

func newLog(t *testing.T) (*Log, *config.Live, *clock.Fake) {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "service.db"), store.OpenOptions{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	live := config.NewLive(config.Defaults(config.ActiveBrand()), nil, "")
	clk := clock.NewFake(time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC))
	return New(db, live, clk, slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))), live, clk
}

func setVerbosity(t *testing.T, live *config.Live, v string) {
	t.Helper()
	if _, err := live.Patch(map[string]json.RawMessage{"server_log_verbosity": json.RawMessage(`"` + v + `"`)}); err != nil {
		t.Fatal(err)
	}
}

func TestVerbosityGatesRecords(t *testing.T) {
	l, live, clk := newLog(t)
	write := func(tag string) {
		l.Record(Normal, "user.create", tag, "admin@example.com", "normal "+tag)
		l.Record(Verbose, "login", tag, "admin@example.com", "verbose "+tag)
	}
	write("default") // normal is the default
	setVerbosity(t, live, "none")
	write("none")
	setVerbosity(t, live, "verbose")
	clk.Advance(time.Second)
	write("verbose")
	setVerbosity(t, live, "normal")
	write("normal")

	recs, _, err := l.List(0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Message)
	}
	want := "normal normal,verbose verbose,normal verbose,normal default"
	if strings.Join(got, ",") != want {
		t.Errorf("records newest first = %q, want %q", strings.Join(got, ","), want)
	}
	if len(recs) > 0 && !recs[0].Time.Equal(clk.Now()) {
		t.Errorf("record time %v, want the clock's %v", recs[0].Time, clk.Now())
	}
}

func TestNilLogIsSilent(t *testing.T) {
	var l *Log
	l.Record(Normal, "a", "b", "c", "d") // must not panic
}

func TestIsSecretKey(t *testing.T) {
	for _, k := range []string{"password", "new_password", "Password", "refresh_token", "token", "Authorization", "server_mqtt_pass", "client_secret", "api_key", "apiKey", "private_key", "PASSWD"} {
		if !IsSecretKey(k) {
			t.Errorf("IsSecretKey(%q) = false", k)
		}
	}
	for _, k := range []string{"email", "route", "asset_uid", "mac", "err", "status", "key"} {
		if IsSecretKey(k) {
			t.Errorf("IsSecretKey(%q) = true", k)
		}
	}
}

func TestRedactInSlog(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: Redact}))
	log.Info("login", "email", "a@example.com", "password", "hunter2-secret",
		slog.Group("req", "authorization", "Bearer abc.def.ghi", "route", "/api/v1/login"),
		"refresh_token", "rt-value-123")
	out := buf.String()
	for _, secret := range []string{"hunter2-secret", "abc.def.ghi", "rt-value-123"} {
		if strings.Contains(out, secret) {
			t.Errorf("slog output contains %q: %s", secret, out)
		}
	}
	for _, kept := range []string{"a@example.com", "/api/v1/login", "[redacted]"} {
		if !strings.Contains(out, kept) {
			t.Errorf("slog output lacks %q: %s", kept, out)
		}
	}
}

package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var testBrand = Brand{
	Name: "test", Product: "Test", Company: "Test Co", BinaryName: "testhub",
	AdminEmail: "admin@test.example", Features: []string{"bridge", "service"},
	AuthIssuer: "https://auth.test.example", AuthAudience: "https://aud.test.example",
	PushServerURL: "https://push.test.example",
}

// writeConfig writes content as home/config/main.config.json.
func writeConfig(t *testing.T, home string, content string) string {
	t.Helper()
	p := Paths{Home: home}.ConfigFile()
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s is not JSON: %v", path, err)
	}
	return m
}

func TestLoadCreatesFileWithEveryKey(t *testing.T) {
	home := t.TempDir()
	c, extra, res, err := Load(Paths{Home: home}, testBrand)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if !res.Created {
		t.Error("LoadResult.Created is false for a fresh home")
	}
	if len(extra) != 0 {
		t.Errorf("extra keys on a fresh home: %v", extra)
	}
	path := Paths{Home: home}.ConfigFile()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("config file not written: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("config file mode = %v, want 0600", fi.Mode().Perm())
	}
	m := readJSON(t, path)
	for _, o := range Options {
		if _, ok := m[o.Key]; !ok {
			t.Errorf("written file lacks key %s", o.Key)
		}
	}
	if len(m) != len(Options) {
		t.Errorf("written file has %d keys, want %d", len(m), len(Options))
	}
	// Brand-derived defaults.
	if c.DefaultEmail != testBrand.AdminEmail || c.JWTIssuer != testBrand.AuthIssuer || c.JWTAudience != testBrand.AuthAudience {
		t.Errorf("brand defaults not applied: %s %s %s", c.DefaultEmail, c.JWTIssuer, c.JWTAudience)
	}
	if c.PushOpsTopic != "testhub-ops" {
		t.Errorf("server_push_ops_topic = %q, want testhub-ops", c.PushOpsTopic)
	}
	if c.HTTPPort != 8088 || c.JWTExpiry != "8h" || c.LogVerbosity != "normal" || c.ServerID != "TST000" {
		t.Errorf("fixed defaults wrong: %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
	// A second load finds nothing to fill and does not rewrite the file.
	before, _ := os.ReadFile(path)
	_, _, res2, err := Load(Paths{Home: home}, testBrand)
	if err != nil {
		t.Fatal(err)
	}
	if res2.Created || len(res2.FilledKeys) != 0 || len(res2.GeneratedKeys) != 0 {
		t.Errorf("second load changed something: %+v", res2)
	}
	after, _ := os.ReadFile(path)
	if string(before) != string(after) {
		t.Error("second load rewrote the file")
	}
}

func TestLoadFillsMissingKeysAndKeepsGiven(t *testing.T) {
	home := t.TempDir()
	path := writeConfig(t, home, `{"server_id":"SITE42","server_features":["navigation"],"server_http_port":9090}`)
	c, _, res, err := Load(Paths{Home: home}, testBrand)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.ServerID != "SITE42" || c.HTTPPort != 9090 || len(c.ServerFeatures) != 1 || c.ServerFeatures[0] != "navigation" {
		t.Errorf("given values not kept: %s %d %v", c.ServerID, c.HTTPPort, c.ServerFeatures)
	}
	if len(res.FilledKeys) != len(Options)-3 {
		t.Errorf("filled %d keys, want %d", len(res.FilledKeys), len(Options)-3)
	}
	m := readJSON(t, path)
	if m["server_id"] != "SITE42" || m["server_http_port"] != float64(9090) {
		t.Errorf("write-back lost given values: %v %v", m["server_id"], m["server_http_port"])
	}
	if _, ok := m["server_log_verbosity"]; !ok {
		t.Error("write-back lacks a filled key")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("rewritten file mode = %v, want 0600", fi.Mode().Perm())
	}
}

func TestLoadMigratesRootFile(t *testing.T) {
	home := t.TempDir()
	root := filepath.Join(home, "main.config.json")
	if err := os.WriteFile(root, []byte(`{"server_id":"OLD001","server_features":["bridge"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c, _, res, err := Load(Paths{Home: home}, testBrand)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if !res.Migrated {
		t.Error("LoadResult.Migrated is false")
	}
	if res.Created {
		t.Error("a migrated file counts as created")
	}
	if c.ServerID != "OLD001" {
		t.Errorf("migrated server_id = %q", c.ServerID)
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("root file still present after migration (stat err %v)", err)
	}
	path := Paths{Home: home}.ConfigFile()
	m := readJSON(t, path)
	if m["server_id"] != "OLD001" {
		t.Errorf("config/main.config.json server_id = %v", m["server_id"])
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("migrated file mode = %v, want 0600", fi.Mode().Perm())
	}
}

func TestLoadPrefersConfigDirOverRootFile(t *testing.T) {
	home := t.TempDir()
	writeConfig(t, home, `{"server_id":"NEW001"}`)
	root := filepath.Join(home, "main.config.json")
	if err := os.WriteFile(root, []byte(`{"server_id":"OLD001"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, _, res, err := Load(Paths{Home: home}, testBrand)
	if err != nil {
		t.Fatal(err)
	}
	if res.Migrated || c.ServerID != "NEW001" {
		t.Errorf("root file migrated over an existing config/ file: migrated=%v id=%s", res.Migrated, c.ServerID)
	}
}

func TestGeneratedSecretsStable(t *testing.T) {
	home := t.TempDir()
	c1, _, res, err := Load(Paths{Home: home}, testBrand)
	if err != nil {
		t.Fatal(err)
	}
	var gen []string
	for _, o := range Options {
		if o.Generated {
			gen = append(gen, o.Key)
		}
	}
	if len(gen) == 0 {
		t.Fatal("no generated options in the table")
	}
	got := append([]string(nil), res.GeneratedKeys...)
	sort.Strings(got)
	sort.Strings(gen)
	if strings.Join(got, ",") != strings.Join(gen, ",") {
		t.Errorf("GeneratedKeys = %v, want %v", got, gen)
	}
	for _, k := range gen {
		v := c1.Get(k).(string)
		if len(v) < 20 {
			t.Errorf("generated %s = %q is too short", k, v)
		}
	}
	// A second install gets different secrets.
	c2, _, _, err := Load(Paths{Home: t.TempDir()}, testBrand)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range gen {
		if c1.Get(k) == c2.Get(k) {
			t.Errorf("two installs share %s", k)
		}
	}
	// Reloading the same home keeps them.
	c3, _, res3, err := Load(Paths{Home: home}, testBrand)
	if err != nil {
		t.Fatal(err)
	}
	if len(res3.GeneratedKeys) != 0 {
		t.Errorf("reload generated %v again", res3.GeneratedKeys)
	}
	for _, k := range gen {
		if c1.Get(k) != c3.Get(k) {
			t.Errorf("%s changed across reload", k)
		}
	}
}

func TestEmptyGeneratedSecretIsGenerated(t *testing.T) {
	home := t.TempDir()
	writeConfig(t, home, `{"server_mobile_api_key":""}`)
	c, _, res, err := Load(Paths{Home: home}, testBrand)
	if err != nil {
		t.Fatal(err)
	}
	if c.MobileAPIKey == "" {
		t.Fatal("empty server_mobile_api_key not generated")
	}
	found := false
	for _, k := range res.GeneratedKeys {
		found = found || k == "server_mobile_api_key"
	}
	if !found {
		t.Errorf("GeneratedKeys %v lacks server_mobile_api_key", res.GeneratedKeys)
	}
	c2, _, _, _ := Load(Paths{Home: home}, testBrand)
	if c2.MobileAPIKey != c.MobileAPIKey {
		t.Error("generated key was not persisted")
	}
}

func TestUnknownKeysKept(t *testing.T) {
	home := t.TempDir()
	path := writeConfig(t, home, `{
  "server_id": "KEEP01",
  "server_future_option": 7,
  "Legacy_CamelKey": {"InnerKey": [1, "two"], "dotted.name": true},
  "vendor.setting": "x",
  "nothing": null
}`)
	_, extra, res, err := Load(Paths{Home: home}, testBrand)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Legacy_CamelKey", "nothing", "server_future_option", "vendor.setting"}
	if strings.Join(res.UnknownKeys, ",") != strings.Join(want, ",") {
		t.Errorf("UnknownKeys = %v, want %v", res.UnknownKeys, want)
	}
	if len(extra) != len(want) {
		t.Errorf("extra = %v", extra)
	}
	// The write-back (missing keys were filled) keeps them exactly.
	m := readJSON(t, path)
	if m["server_future_option"] != float64(7) {
		t.Errorf("server_future_option = %#v", m["server_future_option"])
	}
	if v, ok := m["nothing"]; !ok || v != nil {
		t.Errorf("null unknown key not kept: %#v (present %v)", v, ok)
	}
	if m["vendor.setting"] != "x" {
		t.Errorf("dotted unknown key not kept as is: %#v", m)
	}
	obj, ok := m["Legacy_CamelKey"].(map[string]any)
	if !ok {
		t.Fatalf("Legacy_CamelKey not kept as an object with its case: %#v", m)
	}
	if _, ok := obj["InnerKey"]; !ok {
		t.Errorf("nested key case changed: %#v", obj)
	}
	if _, ok := obj["dotted.name"]; !ok {
		t.Errorf("nested dotted key changed: %#v", obj)
	}
	// A PATCH through Live keeps them too.
	c, extra, _, err := Load(Paths{Home: home}, testBrand)
	if err != nil {
		t.Fatal(err)
	}
	l := NewLive(c, extra, path)
	if _, err := l.Patch(map[string]json.RawMessage{"server_log_verbosity": json.RawMessage(`"verbose"`)}); err != nil {
		t.Fatal(err)
	}
	m = readJSON(t, path)
	if m["server_future_option"] != float64(7) || m["vendor.setting"] != "x" {
		t.Errorf("PATCH write-back dropped unknown keys: %v", m)
	}
}

func TestLoadRejectsBrokenFile(t *testing.T) {
	for name, content := range map[string]string{
		"not json":      `{"server_id": `,
		"array":         `["server_id"]`,
		"trailing data": `{"server_id":"A"} {"x":1}`,
	} {
		t.Run(name, func(t *testing.T) {
			home := t.TempDir()
			path := writeConfig(t, home, content)
			if _, _, _, err := Load(Paths{Home: home}, testBrand); err == nil {
				t.Fatal("Load accepted a broken file")
			}
			if b, _ := os.ReadFile(path); string(b) != content {
				t.Error("a refused file was rewritten")
			}
		})
	}
}

func TestNullKnownKeyTakesDefault(t *testing.T) {
	home := t.TempDir()
	path := writeConfig(t, home, `{"server_id": null, "server_http_port": 9000}`)
	c, _, res, err := Load(Paths{Home: home}, testBrand)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.ServerID != "TST000" || c.HTTPPort != 9000 {
		t.Errorf("server_id=%q port=%d; want the default id and the given port", c.ServerID, c.HTTPPort)
	}
	filled := strings.Join(res.FilledKeys, ",")
	if !strings.Contains(filled, "server_id") {
		t.Errorf("server_id not reported as filled: %v", res.FilledKeys)
	}
	if m := readJSON(t, path); m["server_id"] != "TST000" {
		t.Errorf("write-back server_id = %v", m["server_id"])
	}
}

func TestPathsResolve(t *testing.T) {
	p := Paths{Home: "/srv/hub"}
	if got := p.Resolve("db/x.db"); got != "/srv/hub/db/x.db" {
		t.Errorf("Resolve(rel) = %s", got)
	}
	if got := p.Resolve("/var/x.db"); got != "/var/x.db" {
		t.Errorf("Resolve(abs) = %s", got)
	}
	c := &Config{DBPath: "db/service.db"}
	if got := p.DBFile(c); got != "/srv/hub/db/service.db" {
		t.Errorf("DBFile = %s", got)
	}
	if p.ConfigFile() != "/srv/hub/config/main.config.json" || p.LogDir() != "/srv/hub/logs" {
		t.Errorf("ConfigFile/LogDir = %s %s", p.ConfigFile(), p.LogDir())
	}
}

// TestTightenedRTLSParamsDoNotStopTheStart: tracking parameters a
// release now refuses (an older one accepted mean_stay=48h) do not stop
// the start: the load warns which the engine will ignore, and keeps the
// entries as written, so that the file's write-back (keys filled, a
// settings change) keeps the operator's text; they stopped the whole
// appliance at the upgrade, alerting with it, and a first fix wrote
// the kept entries back over them (reviews). From the environment too.
// A value of the wrong type is still refused, as is any other bad key.
func TestTightenedRTLSParamsDoNotStopTheStart(t *testing.T) {
	home := t.TempDir()
	content := `{"server_rtls_params": ["mean_stay=48h", "sigma=4", "stand_for=0"]}`
	path := writeConfig(t, home, content)
	c, _, res, err := Check(Paths{Home: home}, testBrand)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if strings.Join(c.RTLSParams, " ") != "mean_stay=48h sigma=4 stand_for=0" {
		t.Errorf("loaded %q, want the entries as written", c.RTLSParams)
	}
	if len(res.Degraded) != 1 || !strings.Contains(res.Degraded[0], `"mean_stay=48h"`) || !strings.Contains(res.Degraded[0], `"stand_for=0"`) ||
		!strings.HasPrefix(res.Degraded[0], "server_rtls_params: ") {
		t.Errorf("degraded %q", res.Degraded)
	}
	if b, _ := os.ReadFile(path); string(b) != content {
		t.Error("the file was rewritten")
	}
	// Load fills the missing keys and writes the file back.
	if _, _, _, err := Load(Paths{Home: home}, testBrand); err != nil {
		t.Fatal(err)
	}
	if got := readJSON(t, path)["server_rtls_params"]; fmt.Sprint(got) != "[mean_stay=48h sigma=4 stand_for=0]" {
		t.Errorf("written back: %v", got)
	}

	t.Setenv("BEACONHUB_SERVER_RTLS_PARAMS", "decide_every=2m")
	if c, _, res, err = Check(Paths{Home: home}, testBrand); err != nil || strings.Join(c.RTLSParams, " ") != "decide_every=2m" ||
		len(res.Degraded) != 2 || !strings.HasSuffix(res.Degraded[1], "tracking runs with the defaults") {
		t.Errorf("from the environment: %q, %q, %v", c.RTLSParams, res.Degraded, err)
	}

	for _, bad := range []string{`{"server_rtls_params": "sigma=4"}`, `{"server_rtls_params": [], "server_http_port": 70000}`} {
		writeConfig(t, home, bad)
		if _, _, _, err := Check(Paths{Home: home}, testBrand); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// A snapshot directory outside the home, written in the file before the
// settings page was held to the home, does not stop the start: kept as
// written, with a warning (the page refuses it: options_test).
func TestDebugLogDirOutsideTheHomeInTheFileIsKept(t *testing.T) {
	home := t.TempDir()
	writeConfig(t, home, `{"server_debug_log_dir": "/var/log/beaconhub"}`)
	c, _, res, err := Check(Paths{Home: home}, testBrand)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if c.DebugLogDir != "/var/log/beaconhub" || len(res.Degraded) != 1 || !strings.HasPrefix(res.Degraded[0], "server_debug_log_dir: ") {
		t.Errorf("loaded %q, degraded %q", c.DebugLogDir, res.Degraded)
	}
}

// Bridge values a later release refuses (a monitor host with a port, an
// endpoint with a query) do not stop the start of a box whose older file
// holds them: kept as written, with a warning naming the rule (the
// upgrade stopped everything, alerting with it, bridge on or off: a
// black-box check).
func TestBridgeValuesOfAnOlderFileAreKept(t *testing.T) {
	home := t.TempDir()
	writeConfig(t, home, `{"server_bridge_monitor_host": "zabbix.example.org:10051", "server_bridge_endpoint_beacon": "lld/beacons?site=42"}`)
	c, _, res, err := Check(Paths{Home: home}, testBrand)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if c.BridgeMonitorHost != "zabbix.example.org:10051" || c.BridgeEndpointBeacon != "lld/beacons?site=42" || len(res.Degraded) != 2 ||
		!strings.Contains(strings.Join(res.Degraded, "\n"), "server_bridge_monitor_host: \"zabbix.example.org:10051\" must be a host name") {
		t.Errorf("loaded %q %q, degraded %q", c.BridgeMonitorHost, c.BridgeEndpointBeacon, res.Degraded)
	}
	// Empty was always refused, and still is.
	for _, body := range []string{`{"server_bridge_monitor_host": ""}`, `{"server_bridge_monitor_host": "   "}`,
		`{"server_bridge_endpoint_beacon": ""}`, `{"server_bridge_endpoint_gateway": " "}`} {
		home := t.TempDir()
		writeConfig(t, home, body)
		if _, _, res, err := Check(Paths{Home: home}, testBrand); err == nil {
			t.Errorf("%s accepted, degraded %q", body, res.Degraded)
		}
	}
}

// A root file left beside config/'s (the pre-8.0 place, edited there
// out of habit after the upgrade) is reported, not silently ignored; a
// root file alone is moved and is no stray.
func TestARootFileBesideConfigIsReported(t *testing.T) {
	home := t.TempDir()
	writeConfig(t, home, `{"server_id": "CFG001"}`)
	if err := os.WriteFile(filepath.Join(home, "main.config.json"), []byte(`{"server_id": "ROOT01"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, load := range []func(Paths, Brand) (*Config, map[string]any, LoadResult, error){Check, Load} {
		c, _, res, err := load(Paths{Home: home}, testBrand)
		if err != nil || c.ServerID != "CFG001" || !res.StrayLegacy {
			t.Fatalf("server_id %q, stray %v, %v", c.ServerID, res.StrayLegacy, err)
		}
	}
	alone := t.TempDir()
	if err := os.WriteFile(filepath.Join(alone, "main.config.json"), []byte(`{"server_id": "ROOT01"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, load := range []func(Paths, Brand) (*Config, map[string]any, LoadResult, error){Check, Load} {
		if c, _, res, err := load(Paths{Home: alone}, testBrand); err != nil || c.ServerID != "ROOT01" || res.StrayLegacy || !res.Migrated {
			t.Fatalf("root file alone: %+v %v", res, err)
		}
	}
}

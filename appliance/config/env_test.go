package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnvironmentOverridesApplyButAreNotWrittenBack(t *testing.T) {
	home := t.TempDir()
	p := Paths{Home: home}
	_ = os.MkdirAll(filepath.Join(home, "config"), 0o750)
	if err := os.WriteFile(p.ConfigFile(), []byte(`{"server_http_port":9000,"server_id":"FILE01"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BEACONHUB_SERVER_HTTP_PORT", "9100")
	t.Setenv("BEACONHUB_SERVER_FEATURES", "sensors, rtls")
	t.Setenv("BEACONHUB_SERVER_PUSH_ENABLED", "false")
	c, extra, res, err := Load(p, testBrand)
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPPort != 9100 || strings.Join(c.ServerFeatures, ",") != "sensors,rtls" || c.PushEnabled {
		t.Fatalf("overrides not applied: %d %v %v", c.HTTPPort, c.ServerFeatures, c.PushEnabled)
	}
	if len(res.EnvKeys) != 3 {
		t.Fatalf("EnvKeys = %v", res.EnvKeys)
	}
	l := NewLive(c, extra, p.ConfigFile())
	l.Pin(res.Pinned)
	if _, err := l.Patch(map[string]json.RawMessage{"server_id": json.RawMessage(`"PATCH1"`)}); err != nil {
		t.Fatal(err)
	}
	var file map[string]any
	data, _ := os.ReadFile(p.ConfigFile())
	_ = json.Unmarshal(data, &file)
	if file["server_http_port"].(float64) != 9000 || file["server_id"] != "PATCH1" || file["server_push_enabled"] != true {
		t.Fatalf("environment leaked into the file: port %v id %v push %v", file["server_http_port"], file["server_id"], file["server_push_enabled"])
	}
	if l.Get().HTTPPort != 9100 {
		t.Fatal("override lost after a PATCH")
	}
}

func TestBadEnvironmentValueNamesTheKey(t *testing.T) {
	t.Setenv("BEACONHUB_SERVER_HTTP_PORT", "eighty")
	_, _, _, err := Load(Paths{Home: t.TempDir()}, testBrand)
	if err == nil || !strings.Contains(err.Error(), "server_http_port") || !strings.Contains(err.Error(), "BEACONHUB_SERVER_HTTP_PORT") {
		t.Fatalf("err = %v", err)
	}
	t.Setenv("BEACONHUB_SERVER_HTTP_PORT", "70000")
	_, _, _, err = Load(Paths{Home: t.TempDir()}, testBrand)
	if err == nil || !strings.Contains(err.Error(), "between 1 and 65535") {
		t.Fatalf("err = %v", err)
	}
}

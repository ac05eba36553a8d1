package config

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// badValues lists, for every option with a validator, values it must
// refuse. A new validated option without an entry fails the test below, so
// the table stays complete.
var badValues = map[string][]any{
	"server_id":                                   {"", "has space", "x/y", strings.Repeat("A", 33)},
	"server_features":                             {[]any{}, []any{"teleport"}, []any{"service", "Bridge"}},
	"server_mode":                                 {"turbo", "PROD"},
	"server_http_port":                            {0, 70000, -1, 80.5},
	"server_db_path":                              {"", "a\x00b"},
	"server_url_prod":                             {"api/v1/", ""},
	"server_url_ws":                               {"ws"},
	"server_credentials_default_email":            {"", "   "},
	"server_auth_jwt_issuer":                      {""},
	"server_auth_jwt_audience":                    {" "},
	"server_auth_jwt_expiry":                      {"forever", "8", "10s", "9000h", "-1h"},
	"server_mqtt_broker":                          {"cloud"},
	"server_mqtt_listen":                          {"1883", ":70000", ":port", "host:-1"},
	"server_mqtt_url":                             {"http://broker:1883", "localhost:1883", "mqtt://"},
	"server_mqtt_user":                            {""},
	"server_mqtt_pass":                            {"", "  "},
	"server_bridge_server_url":                    {"", "ftp://x/", "localhost:8088"},
	"server_bridge_monitor_host":                  {"", "127.0.0.1:20551", "zabbix.local:10051", "http://zabbix/", "[::1]"},
	"server_bridge_monitor_port":                  {0, 65536},
	"server_bridge_endpoint_beacon":               {"", "lld/beacons?x=1", "lld/beacons#top", "http://other/lld/beacons"},
	"server_bridge_endpoint_gateway":              {"", "lld/gateways?x=1"},
	"server_bridge_delay_beacon":                  {0, 86401},
	"server_bridge_delay_gateway":                 {0},
	"server_bridge_cache_update_interval":         {9},
	"server_alertsys_url_base":                    {"not a url", "ftp://x"},
	"server_alertsys_url_path_login":              {"api/login"},
	"server_alertsys_url_path_convene":            {"convene"},
	"server_devices_cache_sync_interval":          {9, 86401},
	"server_perf_memory_threshold":                {15},
	"server_sensors_history_retention_days":       {0, 36501},
	"server_events_retention_days":                {0, 36501},
	"server_events_warning_retention_days":        {0, 36501},
	"server_rtls_intervals_retention_days":        {0, 36501},
	"server_debug_snapshot_interval":              {9},
	"server_debug_log_dir":                        {"", "/etc", "../../outside", "logs/../../x"},
	"server_debug_max_files":                      {0},
	"server_log_verbosity":                        {"loud", "Verbose"},
	"server_gateway_admin_http_transport":         {"wget"},
	"server_gateway_admin_timeout_sec":            {0, 601},
	"server_gateway_scan_default_subnet":          {"10.0.0.0/33", "10.0.0.1"},
	"server_push_cooldown_seconds":                {-1},
	"server_push_sensors_cooldown_seconds":        {-1, 604801},
	"server_push_button_dedup_seconds":            {0, 3601},
	"server_push_critical_cooldown_seconds":       {-5},
	"server_push_digest_timezone":                 {"Mars/Olympus_Mons", "", "CEST+2"},
	"server_push_digest_time":                     {"25:00", "9:00", "09:60", "noon"},
	"server_push_batteries_mode":                  {"both"},
	"server_push_batteries_interval_seconds":      {59},
	"server_push_sensor_notseen_mode":             {"Bulk"},
	"server_push_sensor_notseen_interval_seconds": {0},
	"server_push_calibration_mode":                {""},
	"server_push_calibration_interval_seconds":    {604801},
	"server_push_fleet_health_mode":               {"x"},
	"server_push_fleet_health_interval_seconds":   {1},
	"server_push_server_url":                      {"push.example.com"},
	"server_push_ops_server_url":                  {"ws://push.example.com"},
	"server_push_ops_topic":                       {"bad topic", "a/b", strings.Repeat("t", 65)},
	"server_ui_nav_orientation":                   {"diagonal"},
	"server_ui_logout_style":                      {"link"},
	"server_ui_footer_text":                       {strings.Repeat("é", 241)},
	"server_rtls_params":                          {[]string{"switch_odds"}, []string{"=3"}, []string{"nope=1"}, []string{"diffusion=1"}, []string{"switch_odds=30", "switch_odds=20"}},
}

// wrongType returns a JSON value of the wrong type for kind.
func wrongType(k Kind) []any {
	switch k {
	case KindString:
		return []any{42, true, []any{"a"}}
	case KindInt:
		return []any{"8088", true, []any{1}}
	case KindBool:
		return []any{"true", 1}
	case KindStrings:
		return []any{"service", []any{1}, map[string]any{"a": "b"}}
	}
	return nil
}

func checkRefusal(t *testing.T, o Option, v any, err error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s = %#v accepted", o.Key, v)
		return
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Errorf("%s = %#v: error %T %v is not a *ValidationError", o.Key, v, err, err)
		return
	}
	if ve.Key != o.Key || !strings.Contains(err.Error(), o.Key) {
		t.Errorf("%s = %#v: error %q does not name the key", o.Key, v, err)
	}
	raw, _ := json.Marshal(v)
	if o.Secret {
		if len(raw) > 2 && strings.Contains(err.Error(), strings.Trim(string(raw), `"`)) {
			t.Errorf("%s: error %q shows the secret value", o.Key, err)
		}
		return
	}
	want := string(raw)
	if len(want) > 40 {
		want = want[:40]
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("%s = %s: error %q does not show the value", o.Key, raw, err)
	}
}

func TestEveryValidatorRefusesBadValues(t *testing.T) {
	for _, o := range Options {
		bad, listed := badValues[o.Key]
		if o.Validate == nil {
			if listed {
				t.Errorf("%s has bad values listed but no validator", o.Key)
			}
			continue
		}
		if !listed {
			t.Errorf("%s has a validator but no bad values in this test's table", o.Key)
			continue
		}
		// The default itself must pass.
		if err := o.Validate(o.Default(testBrand)); err != nil {
			t.Errorf("%s: default %#v refused: %v", o.Key, o.Default(testBrand), err)
		}
		for _, v := range bad {
			c := Defaults(testBrand)
			checkRefusal(t, o, v, c.apply(o, v))
		}
	}
}

func TestEveryOptionRefusesWrongJSONType(t *testing.T) {
	for _, o := range Options {
		for _, v := range wrongType(o.Kind) {
			c := Defaults(testBrand)
			checkRefusal(t, o, v, c.apply(o, v))
		}
	}
}

// TestLoadRefusesBadFileNamingKeyAndValue goes through the file, as an
// operator would: the error names the key and the offending value.
func TestLoadRefusesBadFileNamingKeyAndValue(t *testing.T) {
	for _, tc := range []struct {
		name, file, key, value string
	}{
		{"unknown feature", `{"server_features":["bridge","teleport"]}`, "server_features", "teleport"},
		{"port out of range", `{"server_http_port":70000}`, "server_http_port", "70000"},
		{"string port", `{"server_http_port":"8088"}`, "server_http_port", `"8088"`},
		{"fractional port", `{"server_http_port":8088.5}`, "server_http_port", "8088.5"},
		{"bad duration", `{"server_auth_jwt_expiry":"eight hours"}`, "server_auth_jwt_expiry", "eight hours"},
		{"bad timezone", `{"server_push_digest_timezone":"Europe/Atlantis"}`, "server_push_digest_timezone", "Europe/Atlantis"},
		{"long footer", `{"server_ui_footer_text":"` + strings.Repeat("f", 241) + `"}`, "server_ui_footer_text", "ffffffffff"},
		{"bool as string", `{"server_push_enabled":"yes"}`, "server_push_enabled", `"yes"`},
		{"bad verbosity", `{"server_log_verbosity":"debug"}`, "server_log_verbosity", "debug"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			writeConfig(t, home, tc.file)
			_, _, _, err := Load(Paths{Home: home}, testBrand)
			if err == nil {
				t.Fatal("Load accepted the file")
			}
			if !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), tc.value) {
				t.Errorf("error %q does not name %s and %s", err, tc.key, tc.value)
			}
		})
	}
}

func TestSecretValueNeverInValidationError(t *testing.T) {
	home := t.TempDir()
	writeConfig(t, home, `{"server_mqtt_pass": 123456789}`)
	_, _, _, err := Load(Paths{Home: home}, testBrand)
	if err == nil {
		t.Fatal("numeric password accepted")
	}
	if strings.Contains(err.Error(), "123456789") {
		t.Errorf("error shows the secret: %v", err)
	}
	if !strings.Contains(err.Error(), "server_mqtt_pass") {
		t.Errorf("error does not name the key: %v", err)
	}
}

func TestFooterLimitCountsCharacters(t *testing.T) {
	o, _ := Lookup("server_ui_footer_text")
	c := Defaults(testBrand)
	if err := c.apply(o, strings.Repeat("é", 240)); err != nil {
		t.Errorf("240 two-byte characters refused: %v", err)
	}
	if err := c.apply(o, ""); err != nil {
		t.Errorf("empty footer refused: %v", err)
	}
}

func TestGoodValuesAccepted(t *testing.T) {
	good := map[string]any{
		"server_features":                    []any{"bridge"},
		"server_http_port":                   json.Number("8443"),
		"server_auth_jwt_expiry":             "15m",
		"server_mqtt_listen":                 "127.0.0.1:0",
		"server_mqtt_url":                    "mqtts://broker.example:8883",
		"server_push_digest_timezone":        "UTC",
		"server_push_digest_time":            "23:59",
		"server_gateway_scan_default_subnet": "192.0.2.0/24",
		"server_alertsys_url_base":           "",
		"server_push_ops_topic":              "",
		"server_bridge_monitor_host":         "::1",
		"server_bridge_endpoint_beacon":      "/api/lld/beacons",
		"server_bridge_endpoint_gateway":     "lld/gateways.json",
	}
	for k, v := range good {
		o, ok := Lookup(k)
		if !ok {
			t.Fatalf("no option %s", k)
		}
		c := Defaults(testBrand)
		if err := c.apply(o, v); err != nil {
			t.Errorf("%s = %#v refused: %v", k, v, err)
		}
	}
}

func TestTableMatchesConfigStruct(t *testing.T) {
	seen := map[string]bool{}
	for _, o := range Options {
		if seen[o.Key] {
			t.Errorf("duplicate option %s", o.Key)
		}
		seen[o.Key] = true
		if o.Restricted && !o.Secret {
			t.Errorf("%s is restricted but not secret", o.Key)
		}
		if o.Secret && o.Kind != KindString {
			t.Errorf("%s is secret but not a string", o.Key)
		}
		if o.UI && o.Restart {
			t.Errorf("%s is both UI-editable and restart-only", o.Key)
		}
		if o.Generated && !o.Secret {
			t.Errorf("%s is generated but not secret", o.Key)
		}
	}
	if len(fieldIndex) != len(Options) {
		t.Errorf("Config has %d fields but the table %d options", len(fieldIndex), len(Options))
	}
	// Every default has the option's kind.
	c := Defaults(testBrand)
	for _, o := range Options {
		v := c.Get(o.Key)
		var ok bool
		switch o.Kind {
		case KindString:
			_, ok = v.(string)
		case KindInt:
			_, ok = v.(int)
		case KindBool:
			_, ok = v.(bool)
		case KindStrings:
			_, ok = v.([]string)
		}
		if !ok {
			t.Errorf("%s default %#v does not match its kind", o.Key, v)
		}
	}
}

func TestServiceExpands(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"service"}, "navigation,alerting,rtls,sensors"},
		{[]string{"bridge", "service"}, "bridge,navigation,alerting,rtls,sensors"},
		{[]string{"bridge"}, "bridge"},
		{[]string{"navigation", "alerting"}, "navigation,alerting"},
		{[]string{"sensors", "service", "sensors"}, "navigation,alerting,rtls,sensors"},
	} {
		c := &Config{ServerFeatures: tc.in}
		got := strings.Join(c.EnabledFeatures(), ",")
		if got != tc.want {
			t.Errorf("EnabledFeatures(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
	c := &Config{ServerFeatures: []string{"service"}}
	if c.Has(FeatureBridge) || !c.Has(FeatureRTLS) || c.Has(FeatureService) {
		t.Error("Has disagrees with the expansion of service")
	}
}

func TestJWTExpiryDuration(t *testing.T) {
	if d := (&Config{JWTExpiry: "15m"}).JWTExpiryDuration(); d.Minutes() != 15 {
		t.Errorf("15m parsed as %v", d)
	}
	if d := (&Config{JWTExpiry: "junk"}).JWTExpiryDuration(); d.Hours() != 8 {
		t.Errorf("junk falls back to %v, want 8h", d)
	}
}

func TestCloneIsDeep(t *testing.T) {
	c := Defaults(testBrand)
	cp := c.Clone()
	cp.ServerFeatures[0] = "changed"
	cp.ServerID = "OTHER"
	if c.ServerFeatures[0] == "changed" || c.ServerID == "OTHER" {
		t.Error("Clone shares state with the original")
	}
}

func TestBrands(t *testing.T) {
	names := BrandNames()
	if len(names) < 2 {
		t.Fatalf("BrandNames = %v", names)
	}
	for _, n := range names {
		b := brands[n]
		c := Defaults(b)
		// Generated secrets are empty before Load; everything else must
		// validate for every brand.
		if err := c.Validate(); err != nil {
			t.Errorf("brand %s: defaults invalid: %v", n, err)
		}
	}
	old := BrandName
	t.Cleanup(func() { BrandName = old })
	BrandName = "no-such-brand"
	if ActiveBrand().Name != "neutral" {
		t.Errorf("unknown brand did not fall back to neutral")
	}
}

// TestAdviceOnTheDefaultServerID: the spec calls server_id required; the
// default keeps a fresh box starting, and config check and the start log
// say to set a unique one (two sites on the default share push topics).
func TestAdviceOnTheDefaultServerID(t *testing.T) {
	c := Defaults(testBrand)
	if a := c.Advice(testBrand); len(a) != 1 || !strings.Contains(a[0], "server_id") {
		t.Fatalf("advice on the default: %v", a)
	}
	c.ServerID = "HOSP01"
	if a := c.Advice(testBrand); len(a) != 0 {
		t.Fatalf("advice on a set server_id: %v", a)
	}
}

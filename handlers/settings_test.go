package handlers

import (
	"net/http"
	"strings"
	"testing"

	"beaconhub/appliance/config"
)

type settingsPayload struct {
	Editable map[string]any `json:"editable"`
	ReadOnly map[string]any `json:"read_only"`
	Options  []optionInfo   `json:"options"`
	Changed  []string       `json:"changed"`
}

func TestGetSettings(t *testing.T) {
	h := newHarness(t, withConfig(func(c *config.Config) {
		c.PushPublishToken = "publish-token-value"
		c.PushTokenManagerPassword = "token-manager-pw-value"
		c.MQTTPass = "mqtt-pass-value"
	}))
	r := h.get("/api/v1/settings", h.token("admin")).expect(t, http.StatusOK)
	if r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q", r.Header.Get("Cache-Control"))
	}
	var p settingsPayload
	r.decodePayload(t, &p)
	if len(p.Editable) == 0 || len(p.ReadOnly) == 0 {
		t.Fatalf("groups empty: %s", r.Payload)
	}
	cfg := h.live.Get()
	for _, secret := range []string{cfg.MQTTPass, cfg.DefaultPassword, cfg.MobileAPIKey, cfg.GatewayAdminPassword, "publish-token-value", "token-manager-pw-value"} {
		if strings.Contains(r.Body, secret) {
			t.Errorf("settings response contains secret %q", secret)
		}
	}
	for _, k := range []string{"server_push_publish_token", "server_push_token_manager_password"} {
		if strings.Contains(r.Body, k) {
			t.Errorf("restricted key %s appears in the settings response", k)
		}
	}
	if p.Editable["server_mqtt_pass"] != config.Mask {
		t.Errorf("server_mqtt_pass shown as %v", p.Editable["server_mqtt_pass"])
	}
	if p.ReadOnly["server_mobile_api_key"] != config.Mask {
		t.Errorf("server_mobile_api_key shown as %v", p.ReadOnly["server_mobile_api_key"])
	}
	if _, ok := p.Editable["server_log_verbosity"]; !ok {
		t.Error("server_log_verbosity not editable")
	}
	if _, ok := p.ReadOnly["server_http_port"]; !ok {
		t.Error("server_http_port not read-only")
	}
	if len(p.Options) != len(p.Editable)+len(p.ReadOnly) {
		t.Errorf("%d options described, %d values shown", len(p.Options), len(p.Editable)+len(p.ReadOnly))
	}
}

func TestPatchSettingsAppliesAndPersists(t *testing.T) {
	h := newHarness(t)
	admin := h.token("admin")
	// Default verbosity is normal: a user creation is recorded.
	h.send("POST", "/api/v1/register", admin, map[string]string{"email": "a@example.com", "password": "password-a1"}).expect(t, http.StatusCreated)
	if n := len(h.logRecords()); n != 1 {
		t.Fatalf("%d log records at normal verbosity, want 1", n)
	}

	r := h.send("PATCH", "/api/v1/settings", admin, map[string]any{"server_log_verbosity": "none"}).expect(t, http.StatusOK)
	var p settingsPayload
	r.decodePayload(t, &p)
	if len(p.Changed) != 1 || p.Changed[0] != "server_log_verbosity" || p.Editable["server_log_verbosity"] != "none" {
		t.Errorf("PATCH payload changed=%v value=%v", p.Changed, p.Editable["server_log_verbosity"])
	}
	if h.live.Get().LogVerbosity != "none" {
		t.Fatal("PATCH not applied to the live config")
	}
	// The very next write obeys it: a new user creation is not recorded.
	// (The PATCH that switched logging off is not recorded either: the
	// record is written after the change applies.)
	before := len(h.logRecords())
	h.send("POST", "/api/v1/register", admin, map[string]string{"email": "b@example.com", "password": "password-b1"}).expect(t, http.StatusCreated)
	if after := len(h.logRecords()); after != before {
		t.Errorf("a write at verbosity none was recorded (%d -> %d)", before, after)
	}
	// Persisted: a reload from disk sees it.
	reloaded, _, _, err := config.Load(h.paths, config.ActiveBrand())
	if err != nil {
		t.Fatal(err)
	}
	if reloaded.LogVerbosity != "none" {
		t.Errorf("reloaded verbosity %q", reloaded.LogVerbosity)
	}
	// A no-op PATCH reports no change.
	r = h.send("PATCH", "/api/v1/settings", admin, map[string]any{"server_log_verbosity": "none"}).expect(t, http.StatusOK)
	r.decodePayload(t, &p)
	if len(p.Changed) != 0 {
		t.Errorf("no-op PATCH changed %v", p.Changed)
	}
	// An empty list, not null (a black-box check).
	if !strings.Contains(r.Body, `"changed":[]`) {
		t.Errorf("no-op PATCH answered %s, want \"changed\":[]", r.Body)
	}
}

func TestPatchSettingsRefusals(t *testing.T) {
	h := newHarness(t)
	admin := h.token("admin")
	for _, tc := range []struct {
		name string
		body string
		key  string
	}{
		{"read-only key", `{"server_http_port": 9000}`, "server_http_port"},
		{"read-only with an editable one", `{"server_log_verbosity": "verbose", "server_features": ["bridge"]}`, "server_features"},
		{"restricted key", `{"server_push_publish_token": "sneaky-token-value"}`, "server_push_publish_token"},
		{"unknown key", `{"server_made_up": 1}`, "server_made_up"},
		{"bad value", `{"server_log_verbosity": "verbose", "server_push_digest_timezone": "Nowhere/Land"}`, "server_push_digest_timezone"},
		{"wrong type", `{"server_debug_max_files": "12"}`, "server_debug_max_files"},
		{"too long footer", `{"server_ui_footer_text": "` + strings.Repeat("z", 241) + `"}`, "server_ui_footer_text"},
		{"bad secret", `{"server_mqtt_pass": ""}`, "server_mqtt_pass"},
		{"snapshots outside the home", `{"server_debug_log_dir": "/etc"}`, "server_debug_log_dir"},
		{"snapshots above the home", `{"server_debug_log_dir": "../../outside"}`, "server_debug_log_dir"},
	} {
		r := h.do(req{method: "PATCH", path: "/api/v1/settings", token: admin, body: tc.body})
		checkErrorEnvelope(t, tc.name, r, http.StatusBadRequest)
		if !strings.Contains(r.Message, tc.key) {
			t.Errorf("%s: message %q does not name %s", tc.name, r.Message, tc.key)
		}
		var p map[string]any
		r.decodePayload(t, &p)
		if p["field"] != tc.key {
			t.Errorf("%s: payload.field = %v", tc.name, p["field"])
		}
		if strings.Contains(r.Body, "sneaky-token-value") {
			t.Errorf("%s: response echoes a secret", tc.name)
		}
	}
	if h.live.Get().LogVerbosity != "normal" {
		t.Error("part of a refused PATCH was applied")
	}
	checkErrorEnvelope(t, "empty PATCH", h.do(req{method: "PATCH", path: "/api/v1/settings", token: admin, body: `{}`}), http.StatusBadRequest)
	checkErrorEnvelope(t, "array PATCH", h.do(req{method: "PATCH", path: "/api/v1/settings", token: admin, body: `[]`}), http.StatusBadRequest)
	if n := len(h.logRecords()); n != 0 {
		t.Errorf("refused PATCHes wrote %d log records", n)
	}
}

func TestPatchSettingsKeepsSigningKey(t *testing.T) {
	h := newHarness(t)
	admin := h.token("admin")
	userTok := h.token("user")
	jwksBefore := h.get("/.well-known/jwks.json", "").Body
	h.send("PATCH", "/api/v1/settings", admin, map[string]any{
		"server_mode": "debug", "server_id": "SITE77", "server_log_verbosity": "verbose", "server_mqtt_pass": "rotated-mqtt-pw",
	}).expect(t, http.StatusOK)
	if h.get("/.well-known/jwks.json", "").Body != jwksBefore {
		t.Error("PATCH changed the published key set")
	}
	h.get("/api/v1/features", userTok).expect(t, http.StatusOK)
	h.get("/api/v1/settings", admin).expect(t, http.StatusOK)
	// The features endpoint sees the new server_id at once.
	r := h.get("/api/v1/features", userTok)
	if !strings.Contains(r.Body, "SITE77-sensors") {
		t.Errorf("features after PATCH: %s", r.Body)
	}
}

func TestPatchSecretLeavesNoTrace(t *testing.T) {
	h := newHarness(t)
	admin := h.token("admin")
	const newPass = "Brand-New-MQTT-Secret-9f3a"
	const alertPass = "Alertsys-Secret-77b1"
	r := h.send("PATCH", "/api/v1/settings", admin, map[string]any{
		"server_mqtt_pass": newPass, "server_alertsys_credentials_password": alertPass,
	}).expect(t, http.StatusOK)
	if h.live.Get().MQTTPass != newPass || h.live.Get().AlertsysPassword != alertPass {
		t.Fatal("secret PATCH not applied")
	}
	var p settingsPayload
	r.decodePayload(t, &p)
	if strings.Join(p.Changed, ",") != "server_alertsys_credentials_password,server_mqtt_pass" {
		t.Errorf("changed = %v", p.Changed)
	}
	for _, where := range []struct{ name, text string }{
		{"response", r.Body},
		{"slog output", h.logBuf.String()},
		{"GET settings", h.get("/api/v1/settings", admin).Body},
		{"GET logs", h.get("/api/v1/logs", admin).Body},
	} {
		for _, s := range []string{newPass, alertPass} {
			if strings.Contains(where.text, s) {
				t.Errorf("%s contains the new secret %q", where.name, s)
			}
		}
	}
	recs := h.logRecords()
	if len(recs) != 1 {
		t.Fatalf("%d log records, want the one settings change", len(recs))
	}
	rec := recs[0]
	if rec.Action != "settings.update" || !strings.Contains(rec.Message, "server_mqtt_pass") || rec.Actor != "admin@example.com" {
		t.Errorf("settings log record %+v", rec)
	}
	for _, s := range []string{newPass, alertPass} {
		if strings.Contains(rec.Message+rec.Subject+rec.Actor, s) {
			t.Errorf("log record carries the secret: %+v", rec)
		}
	}
	// Echoing the mask back keeps the secret.
	h.send("PATCH", "/api/v1/settings", admin, map[string]any{"server_mqtt_pass": config.Mask}).expect(t, http.StatusOK)
	if h.live.Get().MQTTPass != newPass {
		t.Error("masked echo replaced the secret")
	}
}

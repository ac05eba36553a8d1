package handlers

import (
	"net/http"
	"strings"
	"testing"

	"beaconhub/appliance/auth"
)

// Secrets never reach slog output: drive the flows that handle them with
// slog writing (through applog.Redact) at debug level into a buffer.
func TestSecretsNeverInSlogOutput(t *testing.T) {
	h := newHarness(t)
	h.setVerbosity("verbose")
	const wrongPw = "Wrong-Guess-Pw-5521"
	const newPw = "Freshly-Chosen-Pw-8812"
	const mqttPw = "Mqtt-Rotated-Secret-4410"
	const alertPw = "Alertsys-Rotated-Secret-9931"

	var secrets []string
	addTokens := func(res *auth.LoginResult) {
		if res != nil {
			secrets = append(secrets, res.Token, res.RefreshToken)
		}
	}
	r, _ := h.loginHTTP("user@example.com", wrongPw)
	r.expect(t, http.StatusUnauthorized)
	h.loginHTTP("ghost@example.com", wrongPw)
	r, res := h.loginHTTP("user@example.com", userPassword)
	r.expect(t, http.StatusOK)
	addTokens(res)

	// A refused and an accepted password change.
	h.send("POST", "/api/v1/change-password", res.Token, map[string]string{"current_password": wrongPw, "new_password": newPw}).expect(t, http.StatusBadRequest)
	r = h.send("POST", "/api/v1/change-password", res.Token, map[string]string{"current_password": userPassword, "new_password": newPw}).expect(t, http.StatusOK)
	var changed auth.LoginResult
	r.decodePayload(t, &changed)
	addTokens(&changed)
	// Refresh with the new and (reused) old tokens.
	h.send("POST", "/api/v1/auth/refresh", "", map[string]string{"refresh_token": changed.RefreshToken}).expect(t, http.StatusOK)
	h.send("POST", "/api/v1/auth/refresh", "", map[string]string{"refresh_token": changed.RefreshToken}).expect(t, http.StatusUnauthorized)
	// A request with a token that no longer verifies.
	h.get("/api/v1/features", res.Token).expect(t, http.StatusForbidden)

	_, adminRes := h.loginHTTP("admin@example.com", userPassword)
	addTokens(adminRes)
	h.send("PATCH", "/api/v1/settings", adminRes.Token, map[string]any{"server_mqtt_pass": mqttPw, "server_alertsys_credentials_password": alertPw}).expect(t, http.StatusOK)
	// A refused PATCH that carries a secret.
	h.send("PATCH", "/api/v1/settings", adminRes.Token, map[string]any{"server_alertsys_credentials_password": alertPw + "x", "server_http_port": 1}).expect(t, http.StatusBadRequest)
	// Registering a user with a password.
	h.send("POST", "/api/v1/register", adminRes.Token, map[string]string{"email": "n@example.com", "password": newPw + "r"}).expect(t, http.StatusCreated)

	secrets = append(secrets, userPassword, wrongPw, newPw, mqttPw, alertPw)
	out := h.logBuf.String()
	if out == "" {
		t.Fatal("nothing was logged; the test would prove nothing")
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(out, s) {
			t.Errorf("slog output contains a secret (%d chars starting %q)", len(s), s[:4])
		}
	}
	// Nor does the application log.
	for _, rec := range h.logRecords() {
		text := rec.Action + rec.Subject + rec.Actor + rec.Message
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("application log record %d contains a secret", rec.ID)
			}
		}
	}
}

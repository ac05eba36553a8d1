package handlers

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"beaconhub/appliance/config"
	"beaconhub/appliance/push"
	"beaconhub/appliance/push/ntfytest"
	"beaconhub/appliance/status"
	"beaconhub/web"
)

func newPushHarness(t *testing.T, users map[string]string, edits ...func(*config.Config)) (*harness, *ntfytest.Server) {
	t.Helper()
	fake := ntfytest.New()
	t.Cleanup(fake.Close)
	fake.Set(func(s *ntfytest.Server) { s.Users = users })
	h := newHarness(t, withConfig(func(c *config.Config) {
		c.ServerID = "TST000"
		c.PushServerURL = fake.URL
		if users != nil {
			c.PushTokenManagerUser, c.PushTokenManagerPassword = "manager", "s3cret-manager-pw"
		}
		for _, e := range edits {
			e(c)
		}
	}))
	tr := status.NewTransport(status.Limits{Total: 2 * time.Second}, false)
	pub := push.NewPublisher(h.live, h.clock, tr, nil, nil)
	svc, err := push.New(h.live, h.clock, h.db, pub, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); <-svc.Done() })
	svc.Start(ctx)
	h.srv = New(Deps{Live: h.live, DB: h.db, Auth: h.auth, AppLog: h.applog, Logger: h.logger, Static: web.FS(), Push: svc})
	return h, fake
}

func TestCompanionQRDefaultsAndLocalToken(t *testing.T) {
	h, fake := newPushHarness(t, nil)
	h.send("POST", "/api/v1/companion/qr", h.token("user"), map[string]any{}).expect(t, http.StatusForbidden)
	res := h.send("POST", "/api/v1/companion/qr", h.token("admin"), map[string]any{}).expect(t, http.StatusOK)
	var out struct {
		PNG       string         `json:"png_base64"`
		Text      string         `json:"text"`
		Payload   push.QRPayload `json:"payload"`
		TokenKind string         `json:"token_kind"`
		Snapshots int            `json:"snapshots"`
	}
	res.decodePayload(t, &out)
	png, _ := base64.StdEncoding.DecodeString(out.PNG)
	if !strings.HasPrefix(string(png), "\x89PNG") {
		t.Fatal("not a PNG")
	}
	if out.TokenKind != "local" || !strings.HasPrefix(out.Payload.Token, "tk_local_") {
		t.Fatalf("token %+v", out)
	}
	if len(out.Payload.Categories) != 6 || strings.Contains(out.Text, "-health") || strings.Contains(out.Text, "-test") {
		t.Fatalf("defaults: %v", out.Payload.Categories)
	}
	if !strings.HasSuffix(out.Payload.SubscribeAt, "/TST000-sensors,TST000-sos,TST000-watches,TST000-batteries,TST000-notseen,TST000-calibration/json") {
		t.Fatalf("subscribe url %s", out.Payload.SubscribeAt)
	}
	// Four stateful categories among the defaults: one silent snapshot each.
	msgs := fake.Messages()
	if out.Snapshots != 4 || len(msgs) != 4 {
		t.Fatalf("snapshots %d, published %d", out.Snapshots, len(msgs))
	}
	for _, m := range msgs {
		rec, err := push.ParseRecord(m.Message)
		if m.Priority != 1 || err != nil || rec.Intent != push.IntentSnapshot {
			t.Fatalf("snapshot %+v %+v %v", m, rec, err)
		}
	}
	// Notifications off: nothing is published, and the count says so (it
	// said 2 of nothing: a black-box check).
	if _, err := h.live.Patch(map[string]json.RawMessage{"server_push_enabled": json.RawMessage("false")}); err != nil {
		t.Fatal(err)
	}
	h.send("POST", "/api/v1/companion/qr", h.token("admin"), map[string]any{}).expect(t, http.StatusOK).decodePayload(t, &out)
	if out.Snapshots != 0 || len(fake.Messages()) != 4 {
		t.Fatalf("with notifications off: snapshots %d, published %d", out.Snapshots, len(fake.Messages()))
	}
}

func TestCompanionQRConfirmationAndTokenAPI(t *testing.T) {
	h, _ := newPushHarness(t, map[string]string{"manager": "s3cret-manager-pw"})
	admin := h.token("admin")
	h.send("POST", "/api/v1/companion/qr", admin, map[string]any{"categories": []string{"sos", "health"}}).expect(t, http.StatusBadRequest)
	res := h.send("POST", "/api/v1/companion/qr", admin, map[string]any{"categories": []string{"sos", "health", "debug"}, "confirm_unchecked": true}).expect(t, http.StatusOK)
	var out struct {
		Payload   push.QRPayload `json:"payload"`
		TokenKind string         `json:"token_kind"`
	}
	res.decodePayload(t, &out)
	if out.TokenKind != "push_server" || !strings.HasPrefix(out.Payload.Token, "tk_fake") || !out.Payload.DebugAccess {
		t.Fatalf("%+v", out)
	}
	if strings.Contains(h.logBuf.String(), "s3cret-manager-pw") {
		t.Fatal("manager password logged")
	}
}

// TestCompanionQRCarriesNoURLCredential: a push server URL with a user
// and password in it (the publisher's) is the appliance's own; the QR
// reaches every staff phone, which subscribes with the minted token.
func TestCompanionQRCarriesNoURLCredential(t *testing.T) {
	h, fake := newPushHarness(t, nil, func(c *config.Config) {
		c.PushServerURL = strings.Replace(c.PushServerURL, "http://", "http://publisher:pw-in-url@", 1) + "/"
	})
	res := h.send("POST", "/api/v1/companion/qr", h.token("admin"), map[string]any{}).expect(t, http.StatusOK)
	var out struct {
		Text    string         `json:"text"`
		Payload push.QRPayload `json:"payload"`
	}
	res.decodePayload(t, &out)
	if strings.Contains(res.Body, "pw-in-url") || strings.Contains(out.Text, "publisher") {
		t.Fatalf("the QR carries the URL's credential: %s", out.Text)
	}
	if out.Payload.ServerURL != fake.URL+"/" || !strings.HasPrefix(out.Payload.SubscribeAt, fake.URL+"/TST000-sensors,") {
		t.Fatalf("server %q, subscribe %q", out.Payload.ServerURL, out.Payload.SubscribeAt)
	}
}

// A push server URL whose password ends its host early (an unescaped
// '#') makes no QR: 409, and the answer holds none of the password.
func TestCompanionQRRefusesAURLWithAnAtOutsideItsUser(t *testing.T) {
	h, _ := newPushHarness(t, nil, func(c *config.Config) {
		c.PushServerURL = strings.Replace(c.PushServerURL, "http://", "http://publisher:12#pw-in-url@", 1)
	})
	res := h.send("POST", "/api/v1/companion/qr", h.token("admin"), map[string]any{}).expect(t, http.StatusConflict)
	if strings.Contains(res.Body, "pw-in-url") || !strings.Contains(res.Body, "%23") {
		t.Fatalf("%s", res.Body)
	}
}

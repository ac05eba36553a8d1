package push

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"beaconhub/appliance/status"

	qrcode "github.com/skip2/go-qrcode"
)

// DebugAccess is the QR option granting the app debug access; like the
// health and test topics it is off by default.
const DebugAccess = "debug"

// DefaultQRCategories are checked by default: the operational ones.
var DefaultQRCategories = []string{CatSensors, CatSOS, CatWatches, CatBatteries, CatNotSeen, CatCalibration}

// needsConfirm lists the options unchecked by default, which need the
// explicit warning confirmation (spec rule 10).
var needsConfirm = []string{CatHealth, CatTest, DebugAccess}

// ErrConfirmRequired means unchecked-by-default options were asked for
// without the confirmation flag.
var ErrConfirmRequired = errors.New("health, test and debug access need explicit confirmation")

// ErrTokenAPI wraps failures of the push server's token API.
var ErrTokenAPI = errors.New("push server token API")

// QRPayload is what the QR encodes (JSON): where to subscribe, with which
// token, to which topics (one /t1,t2/json connection).
type QRPayload struct {
	V           int      `json:"v"`
	ServerID    string   `json:"server_id"`
	ServerURL   string   `json:"server_url"`
	Token       string   `json:"token"`
	Topics      []string `json:"topics"`
	Categories  []string `json:"categories"`
	DebugAccess bool     `json:"debug_access,omitempty"`
	SubscribeAt string   `json:"subscribe_url"`
}

// QR is a minted companion code.
type QR struct {
	PNG       []byte    `json:"-"`
	Payload   QRPayload `json:"payload"`
	Text      string    `json:"text"`       // the exact encoded string
	TokenKind string    `json:"token_kind"` // "push_server" or "local"
	Snapshots int       `json:"snapshots"`  // silent current-state messages published
}

// Companion mints the QR for the checked options and publishes one
// silent snapshot per included stateful category.
func (s *Service) Companion(ctx context.Context, options []string, confirm bool) (*QR, error) {
	if options == nil {
		options = DefaultQRCategories
	}
	var cats []string
	debug := false
	for _, o := range options {
		switch {
		case o == DebugAccess:
			debug = true
		case slices.Contains(Categories, o):
			if !slices.Contains(cats, o) {
				cats = append(cats, o)
			}
		default:
			return nil, fmt.Errorf("unknown category %q", o)
		}
		if slices.Contains(needsConfirm, o) && !confirm {
			return nil, ErrConfirmRequired
		}
	}
	if len(cats) == 0 {
		return nil, errors.New("no category selected")
	}
	cfg := s.live.Get()
	tok, kind, err := s.SubscribeToken(ctx)
	if err != nil {
		return nil, err
	}
	server, err := withoutUserinfo(cfg.PushServerURL)
	if err != nil {
		return nil, err
	}
	p := QRPayload{V: 1, ServerID: cfg.ServerID, ServerURL: server, Token: tok, Categories: cats, DebugAccess: debug}
	for _, c := range cats {
		p.Topics = append(p.Topics, Topic(cfg.ServerID, c))
	}
	p.SubscribeAt = strings.TrimRight(server, "/") + "/" + strings.Join(p.Topics, ",") + "/json"
	text, _ := json.Marshal(p)
	png, err := qrcode.Encode(string(text), qrcode.Medium, 512)
	if err != nil {
		return nil, err
	}
	n := 0
	if cfg.PushEnabled {
		// With notifications off nothing is published (rule 5), and the
		// count said otherwise (a black-box check); the snapshots are
		// not held either: mint the QR again once they are on.
		n = s.Snapshot(cats)
	}
	return &QR{PNG: png, Payload: p, Text: string(text), TokenKind: kind, Snapshots: n}, nil
}

// ErrServerURLAt refuses a QR for a push server URL holding an "@"
// outside a user part: an unescaped "#", "/" or "?" in a password ends
// the host early (http://pub:12#pw@host/ parses as host pub, port 12),
// and the password went into every phone's QR (a review). Which part is
// the host cannot be told, so no QR is made.
var ErrServerURLAt = errors.New("the push server URL holds an '@' outside a user part: write an '@', '#', '/' or '?' in its password as %40, %23, %2F, %3F")

// withoutUserinfo drops a user and password from the push server URL:
// they are the appliance's publishing credential, and the QR reaches
// every staff phone, which subscribes with the token beside it.
func withoutUserinfo(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// Settings refuse such a URL; never show it (it may hold a password).
		return "", errors.New("the push server URL does not parse")
	}
	if u.User == nil {
		if strings.Contains(raw, "@") {
			return "", ErrServerURLAt
		}
		return raw, nil
	}
	u.User = nil
	if out := u.String(); !strings.Contains(out, "@") {
		return out, nil
	}
	// "https://ops:Pa@ss#pw@host/": the user part ended at the first "@"
	// of a password whose "#" cut the authority short, and the rest of
	// the password went on in the fragment (a review).
	return "", ErrServerURLAt
}

// SubscribeToken mints a subscribe token through the push server's token
// API (ntfy: POST /v1/account/token with basic auth) as the token-manager
// user; without that user, or when the server has no token API (404), it
// falls back to a local tk_local_ credential. The manager password is
// sent only in the Authorization header, never logged or returned.
func (s *Service) SubscribeToken(ctx context.Context) (token, kind string, err error) {
	cfg := s.live.Get()
	if cfg.PushTokenManagerUser != "" && cfg.PushServerURL != "" {
		basic := base64.StdEncoding.EncodeToString([]byte(cfg.PushTokenManagerUser + ":" + cfg.PushTokenManagerPassword))
		resp, err := s.pub.tr.Do(ctx, status.Request{Method: http.MethodPost, URL: strings.TrimRight(cfg.PushServerURL, "/") + "/v1/account/token",
			Header: map[string]string{"Authorization": "Basic " + basic, "Content-Type": "application/json"}, Body: []byte(`{"label":"beaconhub companion"}`)})
		switch {
		case err != nil:
			return "", "", fmt.Errorf("%w: %v", ErrTokenAPI, err)
		case resp.Status == http.StatusNotFound:
		case resp.Status >= 200 && resp.Status < 300:
			var out struct {
				Token string `json:"token"`
			}
			if json.Unmarshal(resp.Body, &out) == nil && out.Token != "" {
				return out.Token, "push_server", nil
			}
			return "", "", fmt.Errorf("%w answered without a token", ErrTokenAPI)
		default:
			return "", "", fmt.Errorf("%w answered HTTP %d", ErrTokenAPI, resp.Status)
		}
	}
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return "tk_local_" + base64.RawURLEncoding.EncodeToString(b), "local", nil
}

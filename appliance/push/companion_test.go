package push

import (
	"errors"
	"strings"
	"testing"

	"beaconhub/appliance/config"
)

func TestWithoutUserinfo(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"https://ops:pw@[fd00::1]:8443/ntfy/", "https://[fd00::1]:8443/ntfy/"},
		{"https://tk_secret@push.example/", "https://push.example/"},
		{"https://ops:pw@push.example:8080/base/a%2Fb?x=1", "https://push.example:8080/base/a%2Fb?x=1"},
		{"https://push.example/", "https://push.example/"},
		{"HTTPS://ops:pw@Push.Example/", "https://Push.Example/"},
	} {
		got, err := withoutUserinfo(c.in)
		if err != nil || got != c.want {
			t.Errorf("%q: %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// A password with an unescaped '#' (or '/', '?'): the settings accept
// the URL (it parses, host "ops" port 12) and mask it, and no QR is
// made of it: which part is the host cannot be told, and the QR, which
// every phone scans, carried the password whole (a review).
func TestNoQRForAURLWithAnAtOutsideItsUser(t *testing.T) {
	const v = "https://ops:12#leak@push.example/"
	c := config.Defaults(config.ActiveBrand())
	c.PushServerURL = v
	if err := c.Validate(); err != nil {
		t.Fatalf("settings refuse it: %v", err)
	}
	if s := c.Masked()["server_push_server_url"].(string); strings.Contains(s, "leak") {
		t.Fatalf("settings show it: %q", s)
	}
	if got, err := withoutUserinfo(v); !errors.Is(err, ErrServerURLAt) || strings.Contains(got, "leak") {
		t.Fatalf("QR server_url %q, %v", got, err)
	}
}

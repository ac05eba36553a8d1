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

// A password with an "@" and a "#": the user part ends at the first "@"
// and the rest of the password goes on in the fragment. No QR (it
// carried "ss#leak@..." whole: a review), and the settings mask all of
// it.
func TestNoQRForAURLWhoseUserPartEndsEarly(t *testing.T) {
	for _, v := range []string{"https://ops:Pa@ss#leak@push.example/", "https://ops:Pa@ss?leak@push.example/"} {
		if got, err := withoutUserinfo(v); !errors.Is(err, ErrServerURLAt) || strings.Contains(got, "leak") {
			t.Errorf("%s: QR server_url %q, %v", v, got, err)
		}
		c := config.Defaults(config.ActiveBrand())
		c.PushServerURL = v
		if s := c.Masked()["server_push_server_url"].(string); strings.Contains(s, "leak") || strings.Contains(s, "ss") {
			t.Errorf("%s: settings show %q", v, s)
		}
	}
}

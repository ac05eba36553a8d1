package config

import (
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// newLive loads a fresh home and wraps it, persisting to the home's file.
func newLive(t *testing.T) (*Live, Paths) {
	t.Helper()
	p := Paths{Home: t.TempDir()}
	c, extra, _, err := Load(p, testBrand)
	if err != nil {
		t.Fatal(err)
	}
	return NewLive(c, extra, p.ConfigFile()), p
}

func patch(kv ...string) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = json.RawMessage(kv[i+1])
	}
	return m
}

func TestPatchAppliesLiveNotifiesAndPersists(t *testing.T) {
	l, p := newLive(t)
	before := l.Get()
	var mu sync.Mutex
	var calls []string
	l.Subscribe(func(old, new *Config) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, old.LogVerbosity+"->"+new.LogVerbosity)
	})
	changed, err := l.Patch(patch("server_log_verbosity", `"verbose"`, "server_debug_max_files", `12`, "server_ui_footer_text", `"hello"`))
	if err != nil {
		t.Fatalf("Patch: %v", err)
	}
	if strings.Join(changed, ",") != "server_debug_max_files,server_log_verbosity,server_ui_footer_text" {
		t.Errorf("changed = %v", changed)
	}
	c := l.Get()
	if c.LogVerbosity != "verbose" || c.DebugMaxFiles != 12 || c.UIFooterText != "hello" {
		t.Errorf("Get after Patch = %s %d %q", c.LogVerbosity, c.DebugMaxFiles, c.UIFooterText)
	}
	if before.LogVerbosity != "normal" {
		t.Error("Patch mutated the previous snapshot")
	}
	mu.Lock()
	if len(calls) != 1 || calls[0] != "normal->verbose" {
		t.Errorf("subscriber calls = %v", calls)
	}
	mu.Unlock()

	reloaded, _, _, err := Load(p, testBrand)
	if err != nil {
		t.Fatal(err)
	}
	if reloaded.LogVerbosity != "verbose" || reloaded.DebugMaxFiles != 12 || reloaded.UIFooterText != "hello" {
		t.Errorf("reload after Patch = %s %d %q", reloaded.LogVerbosity, reloaded.DebugMaxFiles, reloaded.UIFooterText)
	}
	if fi, _ := os.Stat(p.ConfigFile()); fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode after Patch = %v", fi.Mode().Perm())
	}

	// Patching to the current value changes nothing and notifies no one.
	changed, err = l.Patch(patch("server_log_verbosity", `"verbose"`))
	if err != nil || len(changed) != 0 {
		t.Errorf("no-op Patch = %v, %v", changed, err)
	}
	mu.Lock()
	if len(calls) != 1 {
		t.Errorf("no-op Patch notified subscribers: %v", calls)
	}
	mu.Unlock()
}

func TestPatchAllOrNothing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		changes map[string]json.RawMessage
		key     string
		editErr bool
	}{
		{"read-only key", patch("server_log_verbosity", `"verbose"`, "server_http_port", `9000`), "server_http_port", true},
		{"restricted key", patch("server_log_verbosity", `"verbose"`, "server_push_publish_token", `"x"`), "server_push_publish_token", true},
		{"unknown key", patch("server_log_verbosity", `"verbose"`, "server_nonsense", `1`), "server_nonsense", true},
		{"bad value", patch("server_log_verbosity", `"verbose"`, "server_ui_footer_text", `"`+strings.Repeat("x", 241)+`"`), "server_ui_footer_text", false},
		{"wrong type", patch("server_log_verbosity", `"verbose"`, "server_debug_max_files", `"12"`), "server_debug_max_files", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, p := newLive(t)
			fileBefore, _ := os.ReadFile(p.ConfigFile())
			notified := false
			l.Subscribe(func(_, _ *Config) { notified = true })
			_, err := l.Patch(tc.changes)
			if err == nil {
				t.Fatal("Patch accepted")
			}
			var ne *NotEditableError
			var ve *ValidationError
			switch {
			case tc.editErr && !errors.As(err, &ne):
				t.Errorf("error %T %v, want *NotEditableError", err, err)
			case !tc.editErr && !errors.As(err, &ve):
				t.Errorf("error %T %v, want *ValidationError", err, err)
			}
			if !strings.Contains(err.Error(), tc.key) {
				t.Errorf("error %q does not name %s", err, tc.key)
			}
			if l.Get().LogVerbosity != "normal" {
				t.Error("the valid part of a refused Patch was applied")
			}
			if notified {
				t.Error("subscribers notified of a refused Patch")
			}
			if fileAfter, _ := os.ReadFile(p.ConfigFile()); string(fileAfter) != string(fileBefore) {
				t.Error("a refused Patch rewrote the file")
			}
		})
	}
}

func TestPatchMaskedSecretKeepsValue(t *testing.T) {
	l, _ := newLive(t)
	if _, err := l.Patch(patch("server_mqtt_pass", `"s3cret-value"`)); err != nil {
		t.Fatal(err)
	}
	changed, err := l.Patch(patch("server_mqtt_pass", `"`+Mask+`"`))
	if err != nil || len(changed) != 0 {
		t.Errorf("masked echo = %v, %v; want no change", changed, err)
	}
	if l.Get().MQTTPass != "s3cret-value" {
		t.Errorf("masked echo replaced the secret with %q", l.Get().MQTTPass)
	}
}

func TestPatchMemoryOnly(t *testing.T) {
	l := NewLive(Defaults(testBrand), nil, "")
	if _, err := l.Patch(patch("server_mode", `"debug"`)); err != nil {
		t.Fatal(err)
	}
	if l.Get().ServerMode != "debug" {
		t.Error("memory-only Patch not applied")
	}
}

func TestPatchConcurrentReaders(t *testing.T) {
	l, _ := newLive(t)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					c := l.Get()
					_ = c.Masked()
					_ = c.DebugMaxFiles
				}
			}
		}()
	}
	for i := 1; i <= 20; i++ {
		if _, err := l.Patch(map[string]json.RawMessage{"server_debug_max_files": json.RawMessage(strings.Repeat("1", 1+i%3))}); err != nil {
			t.Error(err)
		}
	}
	close(stop)
	wg.Wait()
}

func TestMaskedAndGroups(t *testing.T) {
	l, _ := newLive(t)
	if _, err := l.Patch(patch("server_alertsys_credentials_password", `"alert-pw-123"`, "server_mqtt_pass", `"mqtt-pw-456"`)); err != nil {
		t.Fatal(err)
	}
	c := l.Get().Clone()
	c.PushPublishToken = "publish-tok-xyz"
	c.PushTokenManagerPassword = "mgr-pw-xyz"
	l2 := NewLive(c, nil, "")

	m := c.Masked()
	for _, o := range Options {
		v, present := m[o.Key]
		switch {
		case o.Restricted:
			if present {
				t.Errorf("restricted %s present in Masked()", o.Key)
			}
		case o.Secret:
			if c.Get(o.Key).(string) == "" {
				if v != "" {
					t.Errorf("unset secret %s shown as %v", o.Key, v)
				}
			} else if v != Mask {
				t.Errorf("secret %s shown as %v, want the mask", o.Key, v)
			}
		default:
			if !present {
				t.Errorf("%s missing from Masked()", o.Key)
			}
		}
	}
	for _, k := range []string{"server_push_publish_token", "server_push_token_manager_password"} {
		if _, ok := m[k]; ok {
			t.Errorf("%s present in Masked()", k)
		}
	}

	editable, readOnly := l2.Groups()
	blob, _ := json.Marshal([]any{editable, readOnly})
	for _, secret := range []string{c.MQTTPass, c.AlertsysPassword, c.DefaultPassword, c.MobileAPIKey, c.GatewayAdminPassword, "publish-tok-xyz", "mgr-pw-xyz"} {
		if strings.Contains(string(blob), secret) {
			t.Errorf("Groups() shows a secret value %q", secret)
		}
	}
	for _, o := range Options {
		_, inE := editable[o.Key]
		_, inR := readOnly[o.Key]
		switch {
		case o.Restricted:
			if inE || inR {
				t.Errorf("restricted %s appears in Groups()", o.Key)
			}
		case o.UI:
			if !inE || inR {
				t.Errorf("UI key %s: editable=%v read_only=%v", o.Key, inE, inR)
			}
		default:
			if inE || !inR {
				t.Errorf("read-only key %s: editable=%v read_only=%v", o.Key, inE, inR)
			}
		}
	}
	if editable["server_mqtt_pass"] != Mask || readOnly["server_credentials_default_password"] != Mask {
		t.Errorf("secrets not masked in Groups(): %v %v", editable["server_mqtt_pass"], readOnly["server_credentials_default_password"])
	}
}

// TestURLCredentialsAreMasked: a URL setting given with credentials
// (https://user:password@host/) is shown with them masked, in the
// settings and in a validation error, and a form sending the masked URL
// back keeps the stored one; a new URL replaces it. GET /settings showed
// them in clear (a review).
func TestURLCredentialsAreMasked(t *testing.T) {
	l, _ := newLive(t)
	const withPass = "https://ops:pa55-word@alertsys.example/api"
	const userOnly = "https://tk_abc123@push.example"
	if _, err := l.Patch(patch("server_alertsys_url_base", `"`+withPass+`"`)); err != nil {
		t.Fatal(err)
	}
	m := l.Get().Masked()
	if got := m["server_alertsys_url_base"]; got != "https://ops:"+Mask+"@alertsys.example/api" {
		t.Fatalf("shown as %q", got)
	}
	if got := maskURL(userOnly); got != "https://"+Mask+"@push.example" {
		t.Fatalf("a user alone shown as %q", got)
	}
	for in, want := range map[string]string{
		"https://ops:pa%ss@alertsys.example/": "https://" + Mask + "@alertsys.example/",
		"https://ops:pw@host:80x/api?q=a@b":   "https://" + Mask + "@b", // more than needed: shown, not stored
		"https://ops:p w@bad host/":           "https://" + Mask + "@bad host/",
		"https://ops:pa/ss@alertsys.example/": "https://" + Mask + "@alertsys.example/",
		"https://ops:12#ss@alertsys.example/": "https://" + Mask + "@alertsys.example/",
		"https://ops:12?ss@alertsys.example/": "https://" + Mask + "@alertsys.example/",
	} {
		if got := maskURL(in); got != want {
			t.Errorf("unparseable %q shown as %q", in, got)
		}
	}
	if _, err := l.Patch(patch("server_alertsys_url_base", `"https://ops:pa%ss@alertsys.example/"`)); err == nil || strings.Contains(err.Error(), "pa%ss") {
		t.Fatalf("validation error of an unparseable URL: %v", err)
	}
	if got := maskURL("https://push.example/a"); got != "https://push.example/a" {
		t.Fatalf("no credentials, shown as %q", got)
	}
	changed, err := l.Patch(patch("server_alertsys_url_base", `"https://ops:`+Mask+`@alertsys.example/api"`))
	if err != nil || len(changed) != 0 || l.Get().AlertsysURLBase != withPass {
		t.Fatalf("masked echo: %v %v, stored %q", changed, err, l.Get().AlertsysURLBase)
	}
	if _, err := l.Patch(patch("server_alertsys_url_base", `"https://ops:new-pass@alertsys.example/api"`)); err != nil || l.Get().AlertsysURLBase != "https://ops:new-pass@alertsys.example/api" {
		t.Fatalf("new password: %v, stored %q", err, l.Get().AlertsysURLBase)
	}
	_, err = l.Patch(patch("server_alertsys_url_base", `"ftp://ops:leak-me@alertsys.example"`))
	if err == nil || strings.Contains(err.Error(), "leak-me") {
		t.Fatalf("validation error: %v", err)
	}
	var ve *ValidationError
	if !errors.As(err, &ve) || strings.Contains(ve.Value, "leak-me") {
		t.Fatalf("validation error value: %+v", ve)
	}
}

// maskURL ran on every string setting, and a string
// that parses with no user but holds an "@" is now masked from "://" to
// its last "@". A free-text footer naming a link and a mail address is
// shown mangled in GET /settings and `config check` (before a3dce9b it
// was shown as stored), and an admin who edits any word of what the
// settings form shows stores the mangled text: the link and the
// address are gone from the footer every user sees.
func TestAFooterWithALinkAndAMailAddressIsNotMasked(t *testing.T) {
	l, _ := newLive(t)
	const footer = "Help: https://wiki.example/sos - duty nurse ops@example.org"
	if _, err := l.Patch(patch("server_ui_footer_text", strconv.Quote(footer))); err != nil {
		t.Fatal(err)
	}
	editable, _ := l.Groups()
	shownAs := editable["server_ui_footer_text"].(string)
	if shownAs != footer {
		t.Errorf("footer shown in the settings as %q", shownAs)
	}
	// The admin fixes one word of what the form shows and saves.
	edited := strings.Replace(shownAs, "Help:", "Help (24/7):", 1)
	if _, err := l.Patch(patch("server_ui_footer_text", strconv.Quote(edited))); err != nil {
		t.Fatal(err)
	}
	if got := l.Get().UIFooterText; !strings.Contains(got, "wiki.example/sos") || !strings.Contains(got, "ops@example.org") {
		t.Errorf("after editing one word the footer is stored as %q", got)
	}
}

// A URL with credentials typed with one slash too few (or none,
// or no colon) is refused by validation, and the refusal shows it in
// clear: maskURL returns strings without "://" unchanged. The value goes
// to the PATCH answer, the start error and `config check`.
func TestAMistypedURLIsMaskedInValidationErrors(t *testing.T) {
	l, _ := newLive(t)
	for _, v := range []string{
		"https:/ops:leak-me@alertsys.example/",
		"https//ops:leak-me@alertsys.example/",
		"//ops:leak-me@alertsys.example/",
		"https:ops:leak-me@alertsys.example/",
	} {
		_, err := l.Patch(patch("server_alertsys_url_base", strconv.Quote(v)))
		if err == nil {
			t.Errorf("%q accepted", v)
			continue
		}
		if strings.Contains(err.Error(), "leak-me") {
			t.Errorf("validation error shows the password: %v", err)
		}
	}
	// The same at start (file or environment value, Config.Validate).
	c := Defaults(testBrand)
	c.PushServerURL = "https:/ops:leak-me@push.example/"
	if err := c.Validate(); err == nil || strings.Contains(err.Error(), "leak-me") {
		t.Errorf("start validation: %v", err)
	}
}

// A URL setting given as a JSON value of the wrong type (a list,
// an object) is refused with the value shown unmasked.
func TestAURLOfTheWrongTypeIsMaskedInValidationErrors(t *testing.T) {
	l, _ := newLive(t)
	for _, raw := range []string{`["https://ops:leak-me@alertsys.example/"]`, `{"url":"https://ops:leak-me@alertsys.example/"}`, `{"https://ops:leak-me@alertsys.example/":1}`} {
		_, err := l.Patch(patch("server_alertsys_url_base", raw))
		if err == nil || strings.Contains(err.Error(), "leak-me") {
			t.Errorf("validation error of %s: %v", raw, err)
		}
	}
}

// Every URL-valued option is marked URL, so its credentials are masked:
// a new one left unmarked would show them in clear. JWT issuer and
// audience are names compared as text, never fetched, and route
// prefixes are paths.
func TestURLOptionsAreMarked(t *testing.T) {
	for _, o := range Options {
		if o.Key == "server_auth_jwt_issuer" || o.Key == "server_auth_jwt_audience" {
			continue
		}
		def, _ := o.Default(testBrand).(string)
		looksURL := strings.HasSuffix(o.Key, "_url") || strings.HasSuffix(o.Key, "_url_base") || strings.Contains(def, "://")
		if looksURL != o.URL && !strings.HasPrefix(o.Key, "server_url_") {
			t.Errorf("%s: URL %v, default %q", o.Key, o.URL, def)
		}
	}
}

// Values an admin may type for a URL setting with credentials in them;
// each refused (or accepted) value must not show "leak-me" in the
// refusal, in Masked() or in Validate's error (a review found the first,
// typed before the scheme, shown).
func TestURLCredentialsNeverShown(t *testing.T) {
	vals := []string{
		"ops:leak-me@https://alertsys.example/",        // credentials typed before the scheme
		"ops:leak-me@alertsys.example",                 // no scheme at all
		"https://ops:leak-me@[fd00::1]:8443/api",       // IPv6
		"https://ops:leak-me@alertsys.example:99999/",  // bad port
		"https://ops:leak%ZZme@alertsys.example/",      // bad escape
		" https://ops:leak-me@alertsys.example/",       // leading space
		"https://ops:leak-me@alertsys.example/\n",      // trailing newline (pasted)
		"https://ops:leak-me@alertsys.example/path@x/", // '@' in path too
		"https://ops:leak-me#x@alertsys.example/",      // unescaped '#'
		"mailto:ops:leak-me@alertsys.example",
	}
	for _, v := range vals {
		l, _ := newLive(t)
		_, err := l.Patch(patch("server_alertsys_url_base", strconv.Quote(v)))
		if err != nil && strings.Contains(err.Error(), "leak-me") {
			t.Errorf("%q: refusal shows the password: %v", v, err)
		}
		if err == nil {
			m := l.Get().Masked()
			if s, _ := m["server_alertsys_url_base"].(string); strings.Contains(s, "leak-me") {
				t.Errorf("%q: accepted and shown as %q", v, s)
			}
		}
		c := Defaults(testBrand)
		c.PushServerURL = v
		if err := c.Validate(); err != nil && strings.Contains(err.Error(), "leak-me") {
			t.Errorf("%q: start validation shows the password: %v", v, err)
		}
	}
}

// A long URL: the refusal is cut to 80 characters after masking.
func TestALongURLRefusalIsMaskedBeforeTheCut(t *testing.T) {
	l, _ := newLive(t)
	v := "https:/" + strings.Repeat("a", 60) + ":leak-me@alertsys.example/"
	_, err := l.Patch(patch("server_alertsys_url_base", strconv.Quote(v)))
	if err == nil || strings.Contains(err.Error(), "leak") {
		t.Errorf("%v", err)
	}
}

// TestPatchKeepsTheFilesOtherEdits: a settings save wrote the whole
// running configuration back, undoing what was edited in the file since
// the start (a non-UI key waiting for a restart; the key `mobile-key
// regenerate` wrote, so a rotated key came back at the next restart: a
// black-box check). Only the keys saved change in the file; a file that
// is no JSON object now is left alone and the save refused.
func TestPatchKeepsTheFilesOtherEdits(t *testing.T) {
	l, p := newLive(t)
	var file map[string]any
	data, err := os.ReadFile(p.ConfigFile())
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	file["server_mobile_api_key"] = "rotated-by-the-command"
	file["server_bridge_delay_beacon"] = 120
	file["a_key_of_a_newer_release"] = "kept"
	edited, _ := json.MarshalIndent(file, "", "  ")
	if err := os.WriteFile(p.ConfigFile(), edited, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Patch(patch("server_ui_footer_text", `"hello"`)); err != nil {
		t.Fatal(err)
	}
	reloaded, extra, _, err := Load(p, testBrand)
	if err != nil {
		t.Fatal(err)
	}
	if reloaded.UIFooterText != "hello" || reloaded.MobileAPIKey != "rotated-by-the-command" || reloaded.BridgeDelayBeacon != 120 || extra["a_key_of_a_newer_release"] != "kept" {
		t.Fatalf("after the save: footer %q, mobile key %q, bridge delay %d, extra %v",
			reloaded.UIFooterText, reloaded.MobileAPIKey, reloaded.BridgeDelayBeacon, extra)
	}
	if fi, _ := os.Stat(p.ConfigFile()); fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode after the save = %v", fi.Mode().Perm())
	}

	broken := []byte(`{"server_ui_footer_text": "half an edit",`)
	if err := os.WriteFile(p.ConfigFile(), broken, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Patch(patch("server_ui_footer_text", `"again"`)); err == nil {
		t.Fatal("a save over a file that is not JSON now: accepted")
	}
	if after, _ := os.ReadFile(p.ConfigFile()); string(after) != string(broken) {
		t.Fatalf("the file under edit was rewritten: %s", after)
	}
	if l.Get().UIFooterText != "hello" {
		t.Fatalf("a refused save applied: %q", l.Get().UIFooterText)
	}
}

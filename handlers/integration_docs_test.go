package handlers

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

var docsRef = regexp.MustCompile(`(?:src|href|data-spec-url)="([^"]*)"`)

// The docs page and every asset it references are served from the
// appliance itself: references are relative, resolve to this origin, and
// answer 200; the CSP forbids anything else.
func TestIntegrationDocsServedLocally(t *testing.T) {
	h := newHarness(t)
	page := h.get("/integration/docs", "").expect(t, http.StatusOK)
	if !strings.HasPrefix(page.Header.Get("Content-Type"), "text/html") {
		t.Errorf("page type %q", page.Header.Get("Content-Type"))
	}
	csp := page.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %s", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-eval") || strings.Contains(csp, "script-src 'self' 'unsafe-inline'") {
		t.Errorf("CSP allows inline or eval'd script: %q", csp)
	}
	if strings.Contains(page.Body, "<script>") {
		t.Error("page has an inline script the CSP would block")
	}
	base, _ := url.Parse("http://appliance.local/integration/docs")
	refs := docsRef.FindAllStringSubmatch(page.Body, -1)
	if len(refs) < 3 {
		t.Fatalf("page references %v", refs)
	}
	scripts := 0
	for _, m := range refs {
		if m[1] == "data:," { // the empty favicon: no request at all
			continue
		}
		ref, err := url.Parse(m[1])
		if err != nil || ref.IsAbs() || ref.Host != "" || strings.HasPrefix(m[1], "/") {
			t.Errorf("reference %q is not a relative local URL", m[1])
			continue
		}
		abs := base.ResolveReference(ref)
		r := h.get(abs.Path, "")
		if r.Code != http.StatusOK || len(r.Body) == 0 {
			t.Errorf("%s -> %s: %d", m[1], abs.Path, r.Code)
		}
		if strings.HasSuffix(abs.Path, ".js") {
			scripts++
			if ct := r.Header.Get("Content-Type"); !strings.Contains(ct, "javascript") {
				t.Errorf("%s served as %q", abs.Path, ct)
			}
		}
	}
	if scripts != 2 {
		t.Errorf("page loads %d scripts, want the Redoc bundle and init.js", scripts)
	}
	for _, bad := range []string{"/integration/docs/vendor.sh", "/integration/docs/embed.go", "/integration/docs/..%2fembed.go",
		"/integration/docs/.hidden", "/integration/docs/index.html"} {
		if r := h.get(bad, ""); r.Code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", bad, r.Code)
		}
	}
}

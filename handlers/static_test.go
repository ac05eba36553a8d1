package handlers

import (
	"net/http"
	"strings"
	"testing"
)

// The frontend's files carry an ETag and no-cache: a browser revalidates
// (304 when unchanged) and takes an upgrade's script and style at once.
// They were kept an hour under fixed names, and index.html had nothing to
// revalidate with (a black-box check).
func TestFrontendFilesRevalidate(t *testing.T) {
	h := newHarness(t)
	for _, p := range []string{"/", "/index.html", "/css/app.css", "/js/app.js"} {
		r := h.do(req{method: "GET", path: p})
		tag := r.Header.Get("ETag")
		if r.Code != http.StatusOK || tag == "" || r.Header.Get("Cache-Control") != "no-cache" {
			t.Errorf("GET %s: %d ETag %q Cache-Control %q", p, r.Code, tag, r.Header.Get("Cache-Control"))
			continue
		}
		// A policy and no framing: the frontend keeps its JWT in
		// localStorage (a black-box check found the shell with neither).
		if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") ||
			!strings.Contains(csp, "default-src 'self'") || r.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET %s: CSP %q, X-Frame-Options %q", p, csp, r.Header.Get("X-Frame-Options"))
		}
		again := h.do(req{method: "GET", path: p, header: map[string]string{"If-None-Match": tag}})
		if again.Code != http.StatusNotModified || again.Body != "" || again.Header.Get("ETag") != tag {
			t.Errorf("GET %s with its ETag: %d, body %d bytes, ETag %q", p, again.Code, len(again.Body), again.Header.Get("ETag"))
		}
	}
}

// The page at / links what it refers a browser user to, and declares its
// icon: it named docs/api.md, a file of the source tree the appliance does
// not serve, and every first load logged a 404 for /favicon.ico (a
// black-box check in Chromium).
func TestFrontPageLinksWhatItServes(t *testing.T) {
	h := newHarness(t)
	page := h.do(req{method: "GET", path: "/"})
	if !strings.Contains(page.Body, `href="/integration/docs"`) || !strings.Contains(page.Body, `rel="icon"`) {
		t.Fatalf("front page: %s", page.Body)
	}
	if r := h.do(req{method: "GET", path: "/integration/docs"}); r.Code != http.StatusOK {
		t.Errorf("the linked reference: %d", r.Code)
	}
}

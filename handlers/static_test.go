package handlers

import (
	"net/http"
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
		again := h.do(req{method: "GET", path: p, header: map[string]string{"If-None-Match": tag}})
		if again.Code != http.StatusNotModified || again.Body != "" || again.Header.Get("ETag") != tag {
			t.Errorf("GET %s with its ETag: %d, body %d bytes, ETag %q", p, again.Code, len(again.Body), again.Header.Get("ETag"))
		}
	}
}

package handlers

import (
	"bytes"
	"net/http"
	"testing"

	"beaconhub/store"
)

func TestFloorImage(t *testing.T) {
	h, admin := newNavHarness(t)
	var f store.Floor
	h.send("POST", "/api/v1/floors", admin, map[string]any{"name": "G"}).expect(t, http.StatusCreated).decodePayload(t, &f)
	up := "/api/v1/floor/" + itoa(f.ID) + "/map"
	get := "/api/v1/navigation/floor/" + itoa(f.ID) + "/map"
	h.get(get, admin).expect(t, http.StatusNotFound)

	png := pngOf(t, 8, 4)
	h.do(req{method: "POST", path: up, token: admin, body: png}).expect(t, http.StatusOK)
	r := h.get(get, admin).expect(t, http.StatusOK)
	if r.Header.Get("Content-Type") != "image/png" || !bytes.Equal([]byte(r.Body), png) {
		t.Fatalf("served %q, %d bytes", r.Header.Get("Content-Type"), len(r.Body))
	}
	// An ETag the app revalidates with: 304 while the plan is the same,
	// a new tag once it is replaced (there was none: a black-box check).
	tag := r.Header.Get("ETag")
	if tag == "" || r.Header.Get("Cache-Control") != "private, no-cache" {
		t.Fatalf("floor plan ETag %q Cache-Control %q", tag, r.Header.Get("Cache-Control"))
	}
	h.do(req{method: "GET", path: get, token: admin, header: map[string]string{"If-None-Match": tag}}).expect(t, http.StatusNotModified)
	other := pngOf(t, 8, 5)
	h.do(req{method: "POST", path: up, token: admin, body: other}).expect(t, http.StatusOK)
	if r := h.do(req{method: "GET", path: get, token: admin, header: map[string]string{"If-None-Match": tag}}); r.Code != http.StatusOK || r.Header.Get("ETag") == tag {
		t.Fatalf("a replaced plan: %d with ETag %q (was %q)", r.Code, r.Header.Get("ETag"), tag)
	}

	svg := []byte(`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"></svg>`)
	h.do(req{method: "POST", path: up, token: admin, body: svg}).expect(t, http.StatusOK)
	r = h.get(get, admin).expect(t, http.StatusOK)
	if r.Header.Get("Content-Type") != "image/svg+xml" || r.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("svg headers %v", r.Header)
	}

	h.do(req{method: "POST", path: up, token: admin, body: []byte("<html><script>x</script>")}).expect(t, http.StatusBadRequest)
	// Magic bytes alone are not an image; nor is an SVG cut short.
	h.do(req{method: "POST", path: up, token: admin, body: append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 64)...)}).expect(t, http.StatusBadRequest)
	h.do(req{method: "POST", path: up, token: admin, body: []byte(`<svg xmlns="http://www.w3.org/2000/svg"><g>`)}).expect(t, http.StatusBadRequest)
	h.do(req{method: "POST", path: up, token: admin, body: make([]byte, maxFloorImage+1)}).expect(t, http.StatusRequestEntityTooLarge)
	h.do(req{method: "POST", path: "/api/v1/floor/999/map", token: admin, body: png}).expect(t, http.StatusNotFound)

	h.send("DELETE", "/api/v1/floor/"+itoa(f.ID), admin, nil).expect(t, http.StatusOK)
	h.get(get, admin).expect(t, http.StatusNotFound)
}

package handlers

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"net/http"
	"strings"
	"testing"

	"beaconhub/appliance/config"
)

func testImage(t *testing.T, format string) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 8, 6))
	img.Set(1, 1, color.RGBA{R: 200, A: 255})
	var buf bytes.Buffer
	var err error
	if format == "png" {
		err = png.Encode(&buf, img)
	} else {
		err = jpeg.Encode(&buf, img, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type bugOut struct {
	ID             uint64 `json:"id"`
	Text           string `json:"text"`
	Page           string `json:"page"`
	Status         string `json:"status"`
	UserEmail      string `json:"user_email"`
	ScreenshotType string `json:"screenshot_type"`
	ScreenshotSize int    `json:"screenshot_size"`
	ClosedBy       string `json:"closed_by"`
}

func withBugTracker() harnessOption {
	return withConfig(func(c *config.Config) { c.BugTrackerEnabled = true })
}

func TestBugTrackerFlow(t *testing.T) {
	h := newHarness(t, withBugTracker())
	user, admin := h.token("user"), h.token("admin")
	shot := testImage(t, "png")
	var b bugOut
	h.send("POST", "/api/v1/bugs", user, map[string]any{"text": "Map does not load", "page": "/#/map",
		"screenshot": base64.StdEncoding.EncodeToString(shot)}).expect(t, http.StatusCreated).decodePayload(t, &b)
	if b.ID == 0 || b.Status != "open" || b.UserEmail != "user@example.com" || b.ScreenshotType != "image/png" || b.ScreenshotSize != len(shot) {
		t.Fatalf("filed %+v", b)
	}
	var j bugOut
	h.send("POST", "/api/v1/bugs", h.token("maintenance"), map[string]any{"text": "typo", "page": "/#/ops",
		"screenshot": base64.StdEncoding.EncodeToString(testImage(t, "jpeg"))}).expect(t, http.StatusCreated).decodePayload(t, &j)
	if j.ScreenshotType != "image/jpeg" {
		t.Errorf("jpeg report %+v", j)
	}
	h.send("POST", "/api/v1/bugs", user, map[string]any{"text": "no picture"}).expect(t, http.StatusCreated)

	var list struct{ Reports []bugOut }
	h.get("/api/v1/bugs", admin).expect(t, http.StatusOK).decodePayload(t, &list)
	if len(list.Reports) != 3 || list.Reports[0].Text != "no picture" {
		t.Fatalf("list %+v (newest first)", list.Reports)
	}
	r := h.get(fmt.Sprintf("/api/v1/bugs/%d/screenshot", b.ID), admin).expect(t, http.StatusOK)
	if r.Body != string(shot) || r.Header.Get("Content-Type") != "image/png" || !strings.Contains(r.Header.Get("Content-Security-Policy"), "sandbox") {
		t.Errorf("screenshot: %d bytes, type %q, csp %q", len(r.Body), r.Header.Get("Content-Type"), r.Header.Get("Content-Security-Policy"))
	}
	h.get(fmt.Sprintf("/api/v1/bugs/%d/screenshot", list.Reports[0].ID), admin).expect(t, http.StatusNotFound)

	h.send("POST", fmt.Sprintf("/api/v1/bugs/%d/close", b.ID), admin, nil).expect(t, http.StatusOK).decodePayload(t, &b)
	if b.Status != "closed" || b.ClosedBy != "admin@example.com" {
		t.Errorf("closed %+v", b)
	}
	h.get("/api/v1/bugs?status=open", admin).expect(t, http.StatusOK).decodePayload(t, &list)
	if len(list.Reports) != 2 {
		t.Errorf("open after close: %d", len(list.Reports))
	}
	h.get("/api/v1/bugs?status=closed", admin).expect(t, http.StatusOK).decodePayload(t, &list)
	if len(list.Reports) != 1 || list.Reports[0].ID != b.ID {
		t.Errorf("closed list %+v", list.Reports)
	}
	var one bugOut
	h.get(fmt.Sprintf("/api/v1/bugs/%d", b.ID), admin).expect(t, http.StatusOK).decodePayload(t, &one)
	if one.Status != "closed" || one.Page != "/#/map" {
		t.Errorf("get %+v", one)
	}
	h.get("/api/v1/bugs/999", admin).expect(t, http.StatusNotFound)
	h.get("/api/v1/bugs?status=all", admin).expect(t, http.StatusBadRequest)
	h.get("/api/v1/bugs", user).expect(t, http.StatusForbidden)
	h.send("POST", "/api/v1/bugs", h.token("api"), map[string]any{"text": "x"}).expect(t, http.StatusForbidden)
}

func TestBugTrackerLimits(t *testing.T) {
	h := newHarness(t, withBugTracker())
	user := h.token("user")
	png := testImage(t, "png")
	gif := []byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")
	html := []byte("<html><script>alert(1)</script></html>")
	// PNG magic followed by garbage: the sniffer says PNG, the decoder no.
	fake := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0}, 64)...)
	big := append(append([]byte{}, png...), bytes.Repeat([]byte{0}, maxBugScreenshot)...)
	for _, c := range []struct {
		name   string
		body   any
		status int
		field  string
	}{
		{"no text", map[string]any{"page": "/"}, 400, "text"},
		{"blank text", map[string]any{"text": "   "}, 400, "text"},
		{"long text", map[string]any{"text": strings.Repeat("é", maxBugText+1)}, 400, "text"},
		{"long page", map[string]any{"text": "x", "page": strings.Repeat("p", maxBugPage+1)}, 400, "page"},
		{"gif", map[string]any{"text": "x", "screenshot": base64.StdEncoding.EncodeToString(gif)}, 400, "screenshot"},
		{"html", map[string]any{"text": "x", "screenshot": base64.StdEncoding.EncodeToString(html)}, 400, "screenshot"},
		{"fake png", map[string]any{"text": "x", "screenshot": base64.StdEncoding.EncodeToString(fake)}, 400, "screenshot"},
		{"not base64", map[string]any{"text": "x", "screenshot": "%%%"}, 400, "screenshot"},
		{"too large", map[string]any{"text": "x", "screenshot": base64.StdEncoding.EncodeToString(big)}, 413, ""},
		{"unknown field", map[string]any{"text": "x", "severity": "high"}, 400, ""},
		{"just fits", map[string]any{"text": strings.Repeat("é", maxBugText), "page": strings.Repeat("p", maxBugPage),
			"screenshot": base64.StdEncoding.EncodeToString(append(append([]byte{}, png...), bytes.Repeat([]byte{0}, maxBugScreenshot-len(png))...))}, 201, ""},
	} {
		r := h.send("POST", "/api/v1/bugs", user, c.body)
		if r.Code != c.status || (c.field != "" && !strings.Contains(r.Body, `"field":"`+c.field+`"`)) {
			t.Errorf("%s: %d %.200s, want %d field %q", c.name, r.Code, r.Body, c.status, c.field)
		}
	}
	// The open-report cap bounds what one client can store.
	n, _ := h.db.CountBugReports("open")
	for ; n < maxOpenBugs; n++ {
		h.send("POST", "/api/v1/bugs", user, map[string]any{"text": "flood"}).expect(t, http.StatusCreated)
	}
	h.send("POST", "/api/v1/bugs", user, map[string]any{"text": "one too many"}).expect(t, http.StatusConflict)
}

// While server_bug_tracker_enabled is false every tracker route is 404,
// and enabling it applies at once.
func TestBugTrackerDisabled(t *testing.T) {
	h := newHarness(t)
	admin := h.token("admin")
	for _, c := range []struct{ method, path, token string }{
		{"POST", "/api/v1/bugs", h.token("user")},
		{"GET", "/api/v1/bugs", admin},
		{"GET", "/api/v1/bugs/1", admin},
		{"GET", "/api/v1/bugs/1/screenshot", admin},
		{"POST", "/api/v1/bugs/1/close", admin},
	} {
		r := h.send(c.method, c.path, c.token, map[string]any{"text": "x"})
		if r.Code != http.StatusNotFound || r.Message != "bug tracker is disabled" {
			t.Errorf("%s %s disabled: %d %q", c.method, c.path, r.Code, r.Message)
		}
	}
	h.send("PATCH", "/api/v1/settings", admin, map[string]any{"server_bug_tracker_enabled": true}).expect(t, http.StatusOK)
	h.send("POST", "/api/v1/bugs", h.token("user"), map[string]any{"text": "x"}).expect(t, http.StatusCreated)
}

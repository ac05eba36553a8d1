package handlers

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"beaconhub/store"
)

func TestAcceptsGzip(t *testing.T) {
	for in, want := range map[string]bool{
		"": false, "gzip": true, "br, gzip;q=0.8": true, "GZIP": true, "gzip;q=0": false, "gzip; q=0.0": false, "deflate": false, "x-gzip": false,
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Accept-Encoding", in)
		if got := acceptsGzip(r); got != want {
			t.Errorf("%q: %v, want %v", in, got, want)
		}
	}
}

// TestProjectGzip: the compressed answer decompresses to exactly the plain
// one, which is the usual envelope; a new version is compressed afresh.
func TestProjectGzip(t *testing.T) {
	h, admin := newNavHarness(t)
	h.locationsUpTo(2)
	var f store.Floor
	h.send("POST", "/api/v1/floors", admin, map[string]any{"name": "G", "location_id": 2}).expect(t, http.StatusCreated).decodePayload(t, &f)
	h.send("POST", "/api/v1/floor/"+itoa(f.ID)+"/nodes", admin, map[string]any{"x": 1, "y": 2}).expect(t, http.StatusCreated)
	get := func(enc string) *response {
		return h.do(req{method: "GET", path: "/api/v1/navigation/project/2", token: admin, header: map[string]string{"Accept-Encoding": enc}}).expect(t, http.StatusOK)
	}
	unzip := func(r *response) string {
		t.Helper()
		if r.Header.Get("Content-Encoding") != "gzip" || r.Header.Get("Vary") != "Accept-Encoding" {
			t.Fatalf("headers %v", r.Header)
		}
		zr, err := gzip.NewReader(bytes.NewReader([]byte(r.Body)))
		if err != nil {
			t.Fatal(err)
		}
		out, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	plain := get("")
	if plain.Header.Get("Content-Encoding") != "" || plain.Type != "success" {
		t.Fatalf("plain answer %v %s", plain.Header, plain.Body)
	}
	var env struct {
		Payload struct {
			SHA     string          `json:"sha"`
			Project json.RawMessage `json:"project"`
		} `json:"payload"`
	}
	if err := json.Unmarshal([]byte(plain.Body), &env); err != nil || env.Payload.SHA == "" || len(env.Payload.Project) == 0 {
		t.Fatalf("envelope %s: %v", plain.Body, err)
	}
	if got := unzip(get("gzip, br")); got != plain.Body {
		t.Fatalf("gzip body differs:\n%s\n%s", got, plain.Body)
	}
	if again := unzip(get("gzip")); again != plain.Body {
		t.Fatal("cached gzip body differs")
	}
	h.send("POST", "/api/v1/floor/"+itoa(f.ID)+"/nodes", admin, map[string]any{"x": 5, "y": 2}).expect(t, http.StatusCreated)
	if changed := unzip(get("gzip")); changed == plain.Body || changed != get("").Body {
		t.Fatal("gzip answer not refreshed after a change")
	}
}

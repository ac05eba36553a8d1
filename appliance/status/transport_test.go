package status

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// transports returns the Go transport and, when curl is installed, curl.
func transports(t *testing.T, lim Limits) []*Transport {
	t.Helper()
	out := []*Transport{NewTransport(lim, true)}
	if _, err := exec.LookPath("curl"); err == nil {
		out = append(out, NewTransport(lim, false))
	} else {
		t.Log("curl not installed: only the Go transport is tested")
	}
	return out
}

func code(err error) string {
	var te *TransportError
	if errors.As(err, &te) {
		return te.Code
	}
	return ""
}

func TestTransportRequestAndLimits(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/echo":
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("X-Method", r.Method)
			w.Header().Set("X-Auth", r.Header.Get("Authorization"))
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(body)
		case "/big":
			_, _ = w.Write([]byte(strings.Repeat("x", 4096)))
		case "/slow":
			<-r.Context().Done()
		case "/limited":
			w.Header().Set("Retry-After", "17")
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	defer srv.Close()
	for _, tr := range transports(t, Limits{Total: 500 * time.Millisecond, MaxBody: 1024}) {
		t.Run(tr.Name(), func(t *testing.T) {
			ctx := context.Background()
			body := `{"topic":"TST000-test","message":"a \"quoted\" line\nand a \\ backslash, ünïcode"}`
			resp, err := tr.Do(ctx, Request{Method: "POST", URL: srv.URL + "/echo", Body: []byte(body),
				Header: map[string]string{"Authorization": "Bearer s3cret", "Content-Type": "application/json"}})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Status != 201 || string(resp.Body) != body || resp.Header.Get("X-Method") != "POST" ||
				resp.Header.Get("X-Auth") != "Bearer s3cret" || resp.Transport != tr.Name() {
				t.Errorf("echo: %d %q %v", resp.Status, resp.Body, resp.Header)
			}
			resp, err = tr.Do(ctx, Request{URL: srv.URL + "/limited"})
			if err != nil || resp.Status != 429 || resp.Header.Get("Retry-After") != "17" {
				t.Errorf("429: %+v %v", resp, err)
			}
			if _, err := tr.Do(ctx, Request{URL: srv.URL + "/big"}); code(err) != "too_large" {
				t.Errorf("big body: %v", err)
			}
			start := time.Now()
			if _, err := tr.Do(ctx, Request{URL: srv.URL + "/slow"}); code(err) != "timeout" {
				t.Errorf("slow: %v", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("timeout took %s", d)
			}
			if _, err := tr.Do(ctx, Request{URL: "http://127.0.0.1:1/"}); code(err) != "connection_refused" {
				t.Errorf("refused: %v", err)
			}
		})
	}
}

func TestParseCurlOutputSkipsInterimBlocks(t *testing.T) {
	out := "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"ok\":true}"
	st, hdr, body, ok := parseCurlOutput([]byte(out))
	if !ok || st != 200 || hdr.Get("Content-Type") != "application/json" || string(body) != `{"ok":true}` {
		t.Errorf("parsed %d %v %q %v", st, hdr, body, ok)
	}
	if _, _, _, ok := parseCurlOutput([]byte("garbage")); ok {
		t.Error("garbage parsed")
	}
}

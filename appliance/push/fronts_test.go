package push

// Handlers in front of the fake ntfy: a rig's staff posts go through
// one (frontedRig), which forwards them to the fake or does what a real
// server or network in between would.

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"beaconhub/appliance/clock"
	"beaconhub/appliance/config"
)

// frontedRig is a rig whose staff posts go to front, a handler in front
// of the fake ntfy, whose address it returns for front to forward to.
func frontedRig(t *testing.T, front http.Handler) (*rig, *url.URL) {
	t.Helper()
	fs := httptest.NewServer(front)
	t.Cleanup(fs.Close)
	r := newRigWith(t, false, func(c *config.Config) { c.PushServerURL = fs.URL })
	u, err := url.Parse(r.ntfy.URL)
	if err != nil {
		t.Fatal(err)
	}
	return r, u
}

// tokenBucket is ntfy's default visitor request limit in front of the fake:
// a burst of 60 publishes, one more every 5 s (on the fake clock).
type tokenBucket struct {
	mu     sync.Mutex
	target *url.URL
	clk    clock.Clock
	armed  bool
	tokens float64
	at     time.Time
}

func (b *tokenBucket) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	b.mu.Lock()
	if b.armed && r.Method == http.MethodPost && r.URL.Path == "/" {
		now := b.clk.Now()
		b.tokens = min(60, b.tokens+now.Sub(b.at).Seconds()/5)
		b.at = now
		if b.tokens < 1 {
			b.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"code":42901,"http":429,"error":"limit reached: too many requests"}`))
			return
		}
		b.tokens--
	}
	tgt := b.target
	b.mu.Unlock()
	httputil.NewSingleHostReverseProxy(tgt).ServeHTTP(w, r)
}

// rateLimitedRig is a rig whose staff posts go through a tokenBucket,
// not yet armed (every post passes until arm).
func rateLimitedRig(t *testing.T) (*rig, *tokenBucket) {
	t.Helper()
	b := &tokenBucket{tokens: 60}
	r, target := frontedRig(t, b)
	b.target, b.clk = target, r.clk
	return r, b
}

// arm starts the limit at at, with a full burst.
func (b *tokenBucket) arm(at time.Time) {
	b.mu.Lock()
	b.armed, b.at, b.tokens = true, at, 60
	b.mu.Unlock()
}

// holdFront forwards to the fake ntfy on 127.0.0.1 and, once armed,
// holds the publish number holdAt (counted from arming) until release.
type holdFront struct {
	mu      sync.Mutex
	target  *url.URL
	armed   bool
	n       int
	holdAt  int
	reached chan struct{}
	release chan struct{}
}

func (h *holdFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	h.mu.Lock()
	hold := false
	if h.armed && r.Method == http.MethodPost && r.URL.Path == "/" {
		h.n++
		hold = h.n == h.holdAt
	}
	tgt := h.target
	h.mu.Unlock()
	if hold {
		close(h.reached)
		<-h.release
	}
	httputil.NewSingleHostReverseProxy(tgt).ServeHTTP(w, r)
}

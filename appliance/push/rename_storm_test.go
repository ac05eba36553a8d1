// Regression tests from a review of the last words push owes subjects
// across uid changes and mode switches: each comment tells what went
// wrong before the fix (past behaviour in the present tense).

package push

import (
	"bytes"
	"fmt"
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

// A remint apply of 200 legacy fridges that are out of range (each
// announced): Rename posts two separate messages per asset (400 posts at
// once). Behind ntfy's default rate limit most get 429 and wait in the
// staff retry queue; a new fridge going out of range a minute later
// waits behind all of them.
func TestARemintOfManyAssetsDoesNotDelayAFreshAlert(t *testing.T) {
	b := &tokenBucket{tokens: 60}
	fs := httptest.NewServer(b)
	defer fs.Close()
	r := newRigWith(t, false, func(c *config.Config) { c.PushServerURL = fs.URL })
	u, _ := url.Parse(r.ntfy.URL)
	b.target, b.clk = u, r.clk
	const n = 200
	for i := 0; i < n; i++ {
		r.sensor(sensorRec("range", fmt.Sprintf("F%03d", i), "active", "temperature 12.00 °C outside 2..8", r.clk.Now()))
	}
	r.svc.Idle()
	r.advance(10 * time.Minute)
	b.mu.Lock()
	b.armed, b.at = true, r.clk.Now()
	b.mu.Unlock()
	before := len(r.msgs("TST000-sensors"))
	for i := 0; i < n; i++ {
		old, nu := fmt.Sprintf("F%03d", i), fmt.Sprintf("SEN-%03d", i)
		mergeInStore(t, r, old, nu)
		r.svc.Rename(old, nu)
	}
	r.svc.RenamesDone()
	r.svc.Idle()
	r.advance(time.Minute)
	r.sensor(sensorRec("range", "G1", "active", "temperature 14.00 °C outside 2..8", r.clk.Now()))
	r.svc.Idle()
	out := r.clk.Now()
	var delivered time.Duration = -1
	for i := 0; i < 60*6 && delivered < 0; i++ { // 10 s steps, up to 1 h
		r.advance(10 * time.Second)
		if _, _, ok := lastFor(t, r.msgs("TST000-sensors"), "range:G1"); ok {
			delivered = r.clk.Now().Sub(out)
		}
	}
	t.Logf("remint of %d announced fridges: %d messages delivered so far for it, %d waiting for retry; fresh alert for G1 delivered after %v",
		n, len(r.msgs("TST000-sensors"))-before, r.svc.RetryQueued(), delivered)
	if delivered < 0 || delivered > 2*time.Minute {
		t.Fatalf("a fridge out of range 1 min after a remint of %d assets was delivered after %v (-1: not within 1 h)", n, delivered)
	}
}

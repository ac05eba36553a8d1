package push

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"
)

// lateAnswer forwards a publish to the fake ntfy at once (the server has
// it) and, for the first one, holds the answer until release.
type lateAnswer struct {
	target  *url.URL
	once    sync.Once
	reached chan struct{}
	release chan struct{}
}

func (l *lateAnswer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	httputil.NewSingleHostReverseProxy(l.target).ServeHTTP(rec, r)
	held := false
	l.once.Do(func() { held = true })
	if held && r.Method == http.MethodPost {
		close(l.reached)
		<-l.release
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// A post the server has taken but not yet answered when push stops is
// let finish (PostGrace): cancelled, it went to the retry queue and was
// sent again at the next start, and staff got the alert twice (a
// black-box check saw it 3 ms before a SIGTERM).
func TestAPostUnderWayAtStopIsNotSentAgain(t *testing.T) {
	front := &lateAnswer{reached: make(chan struct{}), release: make(chan struct{})}
	r, target := frontedRig(t, front)
	front.target = target
	r.sensor(sensorRec("range", "F1", "active", "temperature 12.00 °C outside 2..8", r.clk.Now()))
	select {
	case <-front.reached:
	case <-time.After(10 * time.Second): // a deadline, not a wait for time to pass
		t.Fatal("the publish never came")
	}
	r.stop()
	close(front.release)
	<-r.svc.Done()
	r.close()
	r.open()
	r.svc.Idle()
	if n := len(activeOf(r.msgs("TST000-sensors"), "range:F1")); n != 1 {
		t.Fatalf("range:F1 announced %d times, want once", n)
	}
}

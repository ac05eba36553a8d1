package push

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"beaconhub/appliance/clock"
	"beaconhub/store"
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

// The grace is one timer, armed at the stop for the posts in flight: it
// cancels them PostGrace later, a post begun after the stop gets the
// ended context at once, and when the last post in flight ends the
// timer goes (a review saw a timer per post left armed when the stop met
// a post's end, which tests waiting on the fake clock's Pending count).
func TestPostGraceIsOneTimerThatEndsWithTheLastPost(t *testing.T) {
	fc := clock.NewFake(t0)
	ctx, stop := context.WithCancel(context.Background())
	s := &Service{ctx: ctx, clk: fc}
	a, doneA := s.postCtx()
	b, doneB := s.postCtx()
	stop()
	s.endPosts()
	if late, _ := s.postCtx(); late.Err() == nil {
		t.Fatal("a post begun after the stop did not fail at once")
	}
	if n := fc.Pending(); n != 1 {
		t.Fatalf("%d timers armed at the stop, want one for both posts", n)
	}
	doneA()
	if a.Err() == nil || b.Err() != nil {
		t.Fatalf("after the first post ended: its context %v, the other's %v", a.Err(), b.Err())
	}
	fc.Advance(PostGrace)
	if b.Err() == nil {
		t.Fatal("the post still in flight was not cancelled PostGrace after the stop")
	}
	doneB()
	if n := fc.Pending(); n != 0 {
		t.Fatalf("%d timers left after every post ended", n)
	}

	// A stop meeting a post's end leaves no timer behind.
	ctx2, stop2 := context.WithCancel(context.Background())
	s2 := &Service{ctx: ctx2, clk: fc}
	_, done := s2.postCtx()
	stop2()
	s2.endPosts()
	done()
	if n := fc.Pending(); n != 0 {
		t.Fatalf("%d timers left after the stop met the post's end", n)
	}
}

// lockedLog is a log sink the service's goroutines may write while the
// test reads it.
type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestATestSendNotDeliveredIsLogged: a drill is never queued (late is
// worse than none), so one that met the server's 429 pause vanished
// without a word and could not be told from a lost alert (a black-box
// check); it is logged.
func TestATestSendNotDeliveredIsLogged(t *testing.T) {
	r := newRig(t, true)
	var logs lockedLog
	r.svc.log = slog.New(slog.NewTextHandler(&logs, nil))
	r.pub.mu.Lock()
	r.pub.backoffUntil = map[string]time.Time{backoffKey(r.live.Get().PushServerURL): r.clk.Now().Add(time.Minute)}
	r.pub.mu.Unlock()
	r.svc.OnEvent(store.Event{ID: 4, Status: "alert", Test: true, BeaconType: "watch"})
	r.svc.Idle()
	if r.svc.RetryQueued() != 0 || len(r.msgs("TST000-test")) != 0 {
		t.Fatalf("a drill in the pause: queued %d, sent %v", r.svc.RetryQueued(), r.msgs("TST000-test"))
	}
	if !strings.Contains(logs.String(), "test send not delivered") {
		t.Fatalf("not logged: %q", logs.String())
	}
}

package push

import (
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"beaconhub/appliance/config"
	"beaconhub/appliance/push/ntfytest"
	"beaconhub/store"
)

func alarm(r *rig, id uint64) {
	r.svc.OnEvent(store.Event{ID: id, Status: "alert", BeaconType: "panic", CreatedAt: r.clk.Now().UnixMilli()})
	r.svc.Idle()
}

func TestRateLimitWithoutRetryAfterBacksOff30s(t *testing.T) {
	r := newRig(t, false)
	r.ntfy.Set(func(s *ntfytest.Server) { s.RateLimited = 1 })
	alarm(r, 1)
	alarm(r, 2) // during the backoff: queued, not even attempted
	if a := r.ntfy.Attempts(); a != 1 {
		t.Fatalf("attempts during backoff: %d", a)
	}
	if got := r.pub.BackoffUntil(r.ntfy.URL).Sub(r.clk.Now()); got != DefaultBackoff {
		t.Fatalf("backoff %v", got)
	}
	r.advance(29 * time.Second)
	if len(r.msgs("")) != 0 {
		t.Fatal("sent before the backoff ended")
	}
	r.advance(time.Second)
	if m := r.msgs("TST000-sos"); len(m) != 2 {
		t.Fatalf("after backoff want both alerts, got %d", len(m))
	}
}

func TestRateLimitWithRetryAfter(t *testing.T) {
	r := newRig(t, false)
	r.ntfy.Set(func(s *ntfytest.Server) { s.RateLimited, s.RetryAfter = 1, 7 })
	alarm(r, 1)
	if got := r.pub.BackoffUntil(r.ntfy.URL).Sub(r.clk.Now()); got != 7*time.Second {
		t.Fatalf("backoff %v", got)
	}
	r.advance(7 * time.Second)
	if m := r.msgs("TST000-sos"); len(m) != 1 {
		t.Fatalf("got %d", len(m))
	}
}

// TestRetryAfterIsCapped: nothing is posted to a server in its 429
// pause, so a Retry-After of an hour (seconds or a date) held every SOS
// for that hour; the pause is MaxBackoff at most, and a date already
// past or a zero is MinBackoff.
func TestRetryAfterIsCapped(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(s *ntfytest.Server, now time.Time)
		want time.Duration
	}{
		{"an hour in seconds", func(s *ntfytest.Server, _ time.Time) { s.RetryAfter = 3600 }, MaxBackoff},
		{"beyond int64", func(s *ntfytest.Server, _ time.Time) { s.RetryAfterText = "99999999999999999999" }, DefaultBackoff},
		{"a date an hour ahead", func(s *ntfytest.Server, now time.Time) {
			s.RetryAfterText = now.Add(time.Hour).Format(http.TimeFormat)
		}, MaxBackoff},
		{"a date 10 s ahead", func(s *ntfytest.Server, now time.Time) {
			s.RetryAfterText = now.Add(10 * time.Second).Format(http.TimeFormat)
		}, 10 * time.Second},
		{"a date past", func(s *ntfytest.Server, now time.Time) {
			s.RetryAfterText = now.Add(-time.Hour).Format(http.TimeFormat)
		}, MinBackoff},
		{"zero", func(s *ntfytest.Server, _ time.Time) { s.RetryAfterText = "0" }, MinBackoff},
		{"garbage", func(s *ntfytest.Server, _ time.Time) { s.RetryAfterText = "soon" }, DefaultBackoff},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, false)
			r.ntfy.Set(func(s *ntfytest.Server) { s.RateLimited = 1; tc.set(s, r.clk.Now()) })
			alarm(r, 1)
			if got := max(r.pub.BackoffUntil(r.ntfy.URL).Sub(r.clk.Now()), 0); got != tc.want {
				t.Fatalf("backoff %v, want %v", got, tc.want)
			}
			// The retry comes when the pause ends.
			r.advance(tc.want)
			if m := r.msgs("TST000-sos"); len(m) != 1 {
				t.Fatalf("SOS delivered %d times after %v", len(m), tc.want)
			}
		})
	}
}

// TestRepeated429sHoldAPressNoLongerThanThePause: the retry waited the
// later of the pause and the doubling delay, which repeated 429s grew to
// 2 min: a press held twice the pause the server asked for (a review).
func TestRepeated429sHoldAPressNoLongerThanThePause(t *testing.T) {
	// A pause of an hour (capped), and pauses of nothing: "0" and a date
	// passed, which left the retry to the doubling delay, 2 minutes
	// apart by the eighth 429 (a review).
	for name, set := range map[string]func(*ntfytest.Server, time.Time){
		"3600": func(s *ntfytest.Server, _ time.Time) { s.RetryAfter = 3600 },
		"0":    func(s *ntfytest.Server, _ time.Time) { s.RetryAfterText = "0" },
		"date past": func(s *ntfytest.Server, now time.Time) {
			s.RetryAfterText = now.Add(-time.Hour).Format(http.TimeFormat)
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t, false)
			r.ntfy.Set(func(s *ntfytest.Server) { s.RateLimited = 8; set(s, r.clk.Now()) })
			alarm(r, 1)
			for r.ntfy.Attempts() < 8 {
				r.advance(time.Second)
			}
			last := r.clk.Now()
			for len(r.msgs("TST000-sos")) == 0 {
				r.advance(time.Second)
			}
			if d := r.clk.Now().Sub(last); d > MaxBackoff {
				t.Fatalf("delivered %v after the last 429", d)
			}
		})
	}
}

func TestServerErrorsTimeoutsAndRefusedAreRetried(t *testing.T) {
	r := newRig(t, true)
	r.ntfy.Set(func(s *ntfytest.Server) { s.FailStatus, s.FailN = 503, 2 })
	alarm(r, 1)
	r.advance(2 * time.Second) // second failure
	r.advance(4 * time.Second) // delivered
	if m := r.msgs("TST000-sos"); len(m) != 1 {
		t.Fatalf("5xx: got %d", len(m))
	}

	// Timeout: the server stalls past the transport's total limit.
	r.ntfy.Set(func(s *ntfytest.Server) { s.Delay = 1500 * time.Millisecond })
	alarm(r, 2)
	if r.svc.RetryQueued() != 1 {
		t.Fatalf("timeout not queued: %d", r.svc.RetryQueued())
	}
	r.ntfy.Set(func(s *ntfytest.Server) { s.Delay = 0 })
	r.advance(time.Minute)
	if m := r.msgs("TST000-sos"); len(m) != 2 || r.svc.RetryQueued() != 0 {
		t.Fatalf("timeout: got %d queued %d", len(m), r.svc.RetryQueued())
	}

	// Connection refused: the server is gone (its port closed).
	r.ntfy.Close()
	alarm(r, 3)
	if r.svc.RetryQueued() != 1 {
		t.Fatal("refused not queued")
	}
	// Test sends are never queued.
	r.svc.OnEvent(store.Event{ID: 4, Status: "alert", Test: true, BeaconType: "watch"})
	r.svc.Idle()
	if r.svc.RetryQueued() != 1 {
		t.Fatal("test send was queued")
	}
}

// TestRestartWithFullOutbox: digests are in the durable outbox while the
// server is down; after a restart every one is delivered exactly once.
func TestRestartWithFullOutbox(t *testing.T) {
	r := newRig(t, false)
	for i := 0; i < 30; i++ {
		r.svc.OnSensor(sensorRec("calibration", "D"+string(rune('A'+i%26))+string(rune('0'+i/26)), "active", "expired", r.clk.Now()))
		r.svc.OnSensor(sensorRec("battery", "B"+string(rune('A'+i%26))+string(rune('0'+i/26)), "active", "battery 2500 mV", r.clk.Now()))
	}
	r.svc.Idle()
	r.ntfy.Set(func(s *ntfytest.Server) { s.FailStatus, s.FailN = 503, 1<<30 })
	r.advance(21 * time.Hour) // the next 09:00 Prague: digests queued, server failing
	if r.svc.OutboxLen() == 0 {
		t.Fatal("outbox empty")
	}
	queued := r.svc.OutboxLen()
	r.restart()
	r.restart() // twice: still nothing lost or doubled
	r.ntfy.Set(func(s *ntfytest.Server) { s.FailN = 0 })
	r.restart()
	if n := r.svc.OutboxLen(); n != 0 {
		t.Fatalf("outbox after recovery: %d", n)
	}
	got := len(r.msgs("TST000-batteries")) + len(r.msgs("TST000-calibration"))
	if got != queued {
		t.Fatalf("delivered %d, queued %d", got, queued)
	}
	seen := map[string]bool{}
	for _, m := range r.msgs("") {
		if seen[m.Message] {
			t.Fatalf("duplicate: %s", m.Title)
		}
		seen[m.Message] = true
	}
	// The bucket is marked delivered: no second digest for it.
	r.restart()
	if n := len(r.msgs("")); n != got {
		t.Fatalf("re-sent after restart: %d", n)
	}
}

// TestRestartKeepsQueuedImmediateAlerts: alerts waiting for a failing
// server survive a restart and are delivered exactly once, in order.
func TestRestartKeepsQueuedImmediateAlerts(t *testing.T) {
	r := newRig(t, false)
	r.ntfy.Set(func(s *ntfytest.Server) { s.FailStatus, s.FailN = 503, 1<<30 })
	for id := uint64(1); id <= 5; id++ {
		alarm(r, id)
	}
	if r.svc.RetryQueued() != 5 {
		t.Fatalf("queued %d", r.svc.RetryQueued())
	}
	r.restart()
	r.ntfy.Set(func(s *ntfytest.Server) { s.FailN = 0 })
	r.restart()
	got := r.msgs("TST000-sos")
	if len(got) != 5 || r.svc.RetryQueued() != 0 {
		t.Fatalf("delivered %d, queued %d", len(got), r.svc.RetryQueued())
	}
	for i, m := range got {
		rec, _ := ParseRecord(m.Message)
		if want := fmt.Sprintf("event:%d", i+1); rec.Subject != want {
			t.Fatalf("order: %d is %s", i, rec.Subject)
		}
	}
	r.restart()
	if n := len(r.msgs("")); n != 5 {
		t.Fatalf("re-sent after restart: %d", n)
	}
}

// TestOpsServerFailuresDoNotHoldStaffAlerts: the vendor's ops copies and
// the site's staff alerts go to different servers. An unreachable ops
// server (a site without internet) or one rate-limiting must neither
// queue a later SOS behind the ops copy waiting for it nor pause posts to
// the staff server.
func TestOpsServerFailuresDoNotHoldStaffAlerts(t *testing.T) {
	fleet := func(r *rig, key string) {
		r.svc.OnHealth(store.HealthRecord{Key: key, Phase: "active", At: r.clk.Now().UnixMilli(), Since: r.clk.Now().UnixMilli(), Message: "gateway offline"})
		r.svc.Idle()
	}
	t.Run("unreachable", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		refused := "http://" + ln.Addr().String()
		_ = ln.Close()
		r := newRigWith(t, true, func(c *config.Config) { c.PushOpsServerURL = refused })
		fleet(r, "fleet:gw-1")
		fleet(r, "fleet:gw-2")
		if r.svc.RetryQueued() != 2 {
			t.Fatalf("ops copies queued: %d, want 2", r.svc.RetryQueued())
		}
		alarm(r, 1)
		if m := r.msgs("TST000-sos"); len(m) != 1 {
			t.Fatalf("the SOS waited behind the ops copies: %d delivered", len(m))
		}
	})
	t.Run("hanging", func(t *testing.T) {
		// A server that takes its time (a firewall dropping packets
		// holds each attempt until the transport's timeout): the ops
		// copy is posted on a worker of its own.
		ops := ntfytest.New()
		t.Cleanup(ops.Close)
		ops.Set(func(s *ntfytest.Server) {
			s.Delay = 500 * time.Millisecond
			s.Tokens = map[string]bool{"tk_publish": true}
		})
		r := newRigWith(t, true, func(c *config.Config) { c.PushOpsServerURL = ops.URL })
		r.health(store.HealthRecord{Key: "fleet:gw-1", Phase: "active", At: r.clk.Now().UnixMilli(), Since: r.clk.Now().UnixMilli(), Message: "gateway offline"})
		r.svc.staff.idle()
		r.svc.OnEvent(store.Event{ID: 1, Status: "alert", BeaconType: "panic", CreatedAt: r.clk.Now().UnixMilli()})
		r.svc.staff.idle()
		if m := r.msgs("TST000-sos"); len(m) != 1 {
			t.Fatalf("SOS delivered: %d", len(m))
		}
		if n := len(ops.Messages()); n != 0 {
			t.Fatal("the SOS waited for the ops post to finish")
		}
		r.svc.Idle()
		if n := len(ops.Messages()); n != 1 {
			t.Fatalf("ops copies: %d, want 1", n)
		}
	})
	t.Run("rate limited", func(t *testing.T) {
		ops := ntfytest.New()
		t.Cleanup(ops.Close)
		ops.Set(func(s *ntfytest.Server) {
			s.RateLimited, s.RetryAfter = 1, 50
			s.Tokens = map[string]bool{"tk_publish": true}
		})
		r := newRigWith(t, true, func(c *config.Config) { c.PushOpsServerURL = ops.URL })
		fleet(r, "fleet:gw-1")
		if got := r.pub.BackoffUntil(ops.URL).Sub(r.clk.Now()); got != 50*time.Second {
			t.Fatalf("ops backoff %v", got)
		}
		alarm(r, 1)
		if m := r.msgs("TST000-sos"); len(m) != 1 {
			t.Fatalf("the ops server's 429 paused staff alerts: %d delivered", len(m))
		}
		// The ops copy goes once its server's pause is over.
		r.advance(50 * time.Second)
		if n := len(ops.Messages()); n != 1 {
			t.Fatalf("ops copies after the backoff: %d, want 1", n)
		}
	})
}

// TestStopKeepsAlertsStillQueuedForTheWorker: at shutdown, presses that
// committed while ingest drained reach push after the posts in flight.
// Stopping must not drop them with the worker's queue: they go to the
// persisted retry queue and are sent at the next start.
func TestStopKeepsAlertsStillQueuedForTheWorker(t *testing.T) {
	r := newRig(t, false)
	r.ntfy.Set(func(s *ntfytest.Server) { s.Delay = time.Minute }) // the first post hangs
	for id := uint64(1); id <= 2; id++ {
		r.svc.OnEvent(store.Event{ID: id, Status: "alert", BeaconType: "panic", CreatedAt: r.clk.Now().UnixMilli()})
	}
	r.close()
	r.ntfy.Set(func(s *ntfytest.Server) { s.Delay = 0 })
	r.open()
	got := r.msgs("TST000-sos")
	if len(got) != 2 {
		t.Fatalf("delivered after the restart: %d SOS, want 2", len(got))
	}
}

// TestPressesNeverHandedToPushAreAnnouncedAtStart: a crash while an SOS
// waited for the push worker left it committed but never posted nor
// queued. The next start announces it, once; an event handled before the
// crash is not announced again; and the first start that keeps this
// record (an upgrade) announces nothing old.
func TestPressesNeverHandedToPushAreAnnouncedAtStart(t *testing.T) {
	r := newRig(t, false)
	insert := func(id uint64) store.Event {
		t.Helper()
		e := store.Event{ID: id, Status: store.EventAlert, Type: "single", AssetUID: "P1", BeaconType: "panic",
			BeaconName: "Panic 1", CreatedAt: r.clk.Now().UnixMilli(), ReportedAt: r.clk.Now().UnixMilli()}
		if err := r.db.Update(store.InsertEvent(e, 0, nil, nil)); err != nil {
			t.Fatal(err)
		}
		return e
	}
	sos := func() int { return len(r.msgs("TST000-sos")) }

	r.svc.OnEvent(insert(1)) // handled as usual
	r.svc.Idle()
	insert(2) // committed, then the crash: push never saw it
	r.restart()
	if n := sos(); n != 2 {
		t.Fatalf("SOS after the restart: %d, want 2 (event 1 once, event 2 replayed)", n)
	}
	r.restart()
	if n := sos(); n != 2 {
		t.Fatalf("SOS after a second restart: %d, want still 2", n)
	}

	// offline runs fn on the store while the service is down.
	offline := func(fn func()) {
		t.Helper()
		r.close()
		db, err := store.Open(filepath.Join(r.dir, "service.db"), store.OpenOptions{LockTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		r.db = db
		fn()
		_ = db.Close()
		r.db = nil
	}
	// An upgrade: the state has no record of handled events yet.
	offline(func() {
		insert(3)
		if err := r.db.PutPushState(stateName, &state{}); err != nil {
			t.Fatal(err)
		}
	})
	r.open()
	if n := sos(); n != 2 {
		t.Fatalf("SOS after the upgrade: %d, want still 2", n)
	}
	// A press older than the replay window is not announced that late.
	offline(func() { insert(4) })
	r.clk.Advance(EventReplayWindow + time.Minute)
	r.open()
	if n := sos(); n != 2 {
		t.Fatalf("SOS after the window: %d, want still 2", n)
	}
}

// TestFullRetryQueueKeepsButtonPresses: after a long outage the staff
// queue is full; a new message makes room by dropping the oldest message
// that is not a button press, not the SOS waiting at the head.
func TestFullRetryQueueKeepsButtonPresses(t *testing.T) {
	r := newRig(t, false)
	q := func(topic string) queued { return queued{Base: r.ntfy.URL, R: Rendered{Topic: topic}, Staff: true} }
	r.svc.mu.Lock()
	l := &r.svc.retry[laneStaff]
	l.items = append(l.items, q("TST000-sos"), q("TST000-watches"))
	for len(l.items) < maxRetry {
		l.items = append(l.items, q("TST000-sensors"))
	}
	r.svc.stopped = true // no retry timer: this test looks at the queue only
	r.svc.mu.Unlock()

	r.svc.enqueueRetry(q("TST000-health"))
	r.svc.mu.Lock()
	defer r.svc.mu.Unlock()
	if n := len(l.items); n != maxRetry {
		t.Fatalf("queue holds %d, want %d", n, maxRetry)
	}
	if l.items[0].R.Topic != "TST000-sos" || l.items[1].R.Topic != "TST000-watches" || l.items[maxRetry-1].R.Topic != "TST000-health" {
		t.Fatalf("head %s %s, tail %s", l.items[0].R.Topic, l.items[1].R.Topic, l.items[maxRetry-1].R.Topic)
	}
}

// TestLateDeliveryIsMarked: an alert held by an outage is still delivered,
// in order and across a restart, but one delivered LateAfter or more after
// its moment says when it happened (in the site's zone), on health
// messages and their ops copies too; one held briefly is not marked, and the record keeps its time.
func TestLateDeliveryIsMarked(t *testing.T) {
	r := newRig(t, false)
	r.ntfy.Set(func(s *ntfytest.Server) { s.FailStatus, s.FailN = 503, 1 })
	alarm(r, 1)
	r.advance(2 * time.Second)
	brief := r.msgs("TST000-sos")
	if len(brief) != 1 || strings.Contains(brief[0].Message, "Delivered late") {
		t.Fatalf("a press retried after 2 s: %+v", brief)
	}
	// A reading stamped by a gateway whose clock is 4 minutes behind is
	// not late: push did not hold it.
	r.sensor(sensorRec("range", "F1", "active", "temperature 9.1 °C", r.clk.Now().Add(-4*time.Minute)))
	r.svc.Idle()
	if m := r.msgs("TST000-sensors"); len(m) != 1 || strings.Contains(m[0].Message, "Delivered late") {
		t.Fatalf("a fresh reading from a skewed gateway: %+v", m)
	}

	pressed := r.clk.Now()
	r.ntfy.Set(func(s *ntfytest.Server) { s.FailN = 1 << 30 })
	alarm(r, 2)
	r.health(store.HealthRecord{Key: "mqtt_down", Phase: "active", At: pressed.UnixMilli(), Since: pressed.UnixMilli(), Message: "MQTT down"})
	r.svc.Idle()
	r.advance(time.Hour)
	r.restart() // the queue, with each alert's time, is persisted
	r.advance(time.Hour)
	r.ntfy.Set(func(s *ntfytest.Server) { s.FailN = 0 })
	r.advance(2 * time.Minute)
	// Each lane retries on its own timer, so each message went out at
	// some moment of the last two minutes: its delay reads "2 h" or
	// "2 h 1 min" or "2 h 2 min".
	start := "Delivered late: this happened at " + pressed.In(mustZone(t, r.live.Get().PushDigestTimezone)).Format("2006-01-02 15:04:05 MST") + ", "
	var delays []string
	for d := 2 * time.Hour; d <= 2*time.Hour+2*time.Minute; d += time.Minute {
		delays = append(delays, start+ago(d)+" before delivery.\n")
	}
	for _, topic := range []string{"TST000-sos", "TST000-health", "beaconhub-ops"} {
		got := r.msgs(topic)
		if len(got) == 0 {
			t.Fatalf("%s: nothing delivered", topic)
		}
		m := got[len(got)-1]
		if !slices.ContainsFunc(delays, func(w string) bool { return strings.HasPrefix(m.Message, w) }) {
			t.Fatalf("%s: body %q, want it to start with one of %q", topic, m.Message, delays)
		}
		rec, err := ParseRecord(m.Message)
		if err != nil || rec.At != pressed.UnixMilli() || topic == "TST000-sos" && rec.Subject != "event:2" {
			// the record keeps the moment's own time
			t.Fatalf("%s: record %+v %v", topic, rec, err)
		}
		if strings.Contains(m.Title, "late") {
			t.Fatalf("%s: title changed: %q", topic, m.Title)
		}
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestAgoSaysDelaysForPeople(t *testing.T) {
	for d, want := range map[time.Duration]string{
		30 * time.Second:                "1 min",
		59*time.Minute + 59*time.Second: "59 min",
		time.Hour:                       "1 h",
		2*time.Hour + 5*time.Minute:     "2 h 5 min",
		47*time.Hour + 59*time.Minute:   "47 h 59 min",
		72 * time.Hour:                  "3 days",
	} {
		if got := ago(d); got != want {
			t.Errorf("ago(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestLateCountsFromHandOver: a condition handed to push while its worker
// is held by a slow post waits behind it; its delay counts from the hand
// over, not from when the worker got to it.
func TestLateCountsFromHandOver(t *testing.T) {
	r := newRig(t, false)
	r.ntfy.Set(func(s *ntfytest.Server) { s.Delay = 300 * time.Millisecond })
	handed := r.clk.Now()
	r.svc.OnEvent(store.Event{ID: 1, Status: "alert", BeaconType: "panic", CreatedAt: handed.UnixMilli()})
	r.svc.OnHealth(store.HealthRecord{Key: "mqtt_down", Phase: "active", At: handed.UnixMilli(), Since: handed.UnixMilli(), Message: "MQTT down"})
	r.clk.Advance(10 * time.Minute) // while the press's post is still on the wire
	r.svc.Idle()
	got := r.msgs("TST000-health")
	if len(got) != 1 || !strings.HasPrefix(got[0].Message, "Delivered late: ") || !strings.Contains(got[0].Message, ", 10 min before delivery.\n") {
		t.Fatalf("health message after waiting 10 min in push: %+v", got)
	}
}

// TestLateDigestAndOldQueueAreMarked: a digest that waited in the
// durable outbox through an outage says when it was made, and so does a
// press queued by a version that did not store the time with it (the
// record still knows the moment).
func TestLateDigestAndOldQueueAreMarked(t *testing.T) {
	r := newRig(t, false)
	r.svc.OnSensor(sensorRec("calibration", "D1", "active", "expired", r.clk.Now()))
	r.svc.Idle()
	r.ntfy.Set(func(s *ntfytest.Server) { s.FailStatus, s.FailN = 503, 1<<30 })
	r.advance(21 * time.Hour) // the next 09:00 Prague: the digest is queued, the server fails
	if r.svc.OutboxLen() == 0 {
		t.Fatal("no digest queued")
	}
	made := r.clk.Now()
	pressed := made.Add(-3 * time.Hour)
	rec := Record{Category: CatSOS, Kind: KindMoment, Phase: PhaseMoment, Intent: IntentAlert, Subject: "event:9", At: pressed.UnixMilli()}
	old := []queued{{Base: r.ntfy.URL, Staff: true, R: Message{Category: CatSOS, Title: "Panic button pushed", Body: "Panic 1", Record: rec}.Render("TST000-sos")}}
	if err := r.db.PutPushState(retryName, old); err != nil {
		t.Fatal(err)
	}
	r.restart()
	r.advance(2 * time.Hour)
	r.ntfy.Set(func(s *ntfytest.Server) { s.FailN = 0 })
	r.advance(6 * time.Minute)
	digests := r.msgs("TST000-calibration")
	if len(digests) == 0 || !strings.HasPrefix(digests[len(digests)-1].Message, "Delivered late: ") {
		t.Fatalf("digest delivered 2 h after it was made: %+v", digests)
	}
	sos := r.msgs("TST000-sos")
	if len(sos) != 1 || !strings.HasPrefix(sos[0].Message, "Delivered late: ") || !strings.Contains(sos[0].Message, ", 5 h ") {
		t.Fatalf("press queued without its time: %+v", sos)
	}
}

// TestQueuesFollowTheSettingsInForce: alerts and digests queued while
// the push server failed are held while push is turned off, and go to
// the server configured when they are finally sent. Both queues are
// persisted, and a restart kept posting them, every few seconds, to the
// server they were queued under, with push turned off (a review).
func TestQueuesFollowTheSettingsInForce(t *testing.T) {
	r := newRig(t, false)
	r.svc.OnSensor(sensorRec("battery", "BA", "active", "battery 2500 mV", r.clk.Now()))
	r.svc.Idle()
	r.ntfy.Set(func(s *ntfytest.Server) { s.FailStatus, s.FailN = 503, 1<<30 })
	alarm(r, 1)
	r.advance(21 * time.Hour) // the next 09:00 Prague: a digest queued too
	if r.svc.RetryQueued() != 1 || r.svc.OutboxLen() == 0 {
		t.Fatalf("queued %d alerts, %d digests", r.svc.RetryQueued(), r.svc.OutboxLen())
	}
	digests := r.svc.OutboxLen()
	r.patch(map[string]any{"server_push_enabled": false})
	r.ntfy.Set(func(s *ntfytest.Server) { s.FailN = 0 })
	r.advance(10 * time.Minute)
	r.restart()
	r.advance(10 * time.Minute)
	if n := len(r.msgs("")); n != 0 || r.svc.RetryQueued() != 1 || r.svc.OutboxLen() != digests {
		t.Fatalf("push off: %d delivered, %d alerts and %d digests queued; want 0, 1 and %d held", n, r.svc.RetryQueued(), r.svc.OutboxLen(), digests)
	}
	moved := ntfytest.New()
	t.Cleanup(moved.Close)
	moved.Set(func(s *ntfytest.Server) { s.Tokens = map[string]bool{"tk_publish": true} })
	c := *r.live.Get()
	c.PushServerURL, c.PushEnabled = moved.URL, true
	r.live = config.NewLive(&c, nil, "")
	r.restart()
	r.advance(3 * time.Minute)
	if n, m := len(r.msgs("")), len(moved.Messages()); n != 0 || m != 1+digests || r.svc.RetryQueued()+r.svc.OutboxLen() != 0 {
		t.Fatalf("push on, moved: %d to the old server, %d to the new, %d queued; want 0, %d, 0", n, m, r.svc.RetryQueued()+r.svc.OutboxLen(), 1+digests)
	}
}

// TestQueuedOpsCopiesTakeTheTopicInForce: server_push_ops_topic takes a
// restart; ops copies queued before it went to the old topic, which the
// vendor may no longer read.
func TestQueuedOpsCopiesTakeTheTopicInForce(t *testing.T) {
	ops := ntfytest.New()
	t.Cleanup(ops.Close)
	ops.Set(func(s *ntfytest.Server) {
		s.Tokens = map[string]bool{"tk_publish": true}
		s.FailStatus, s.FailN = 503, 1<<30
	})
	r := newRigWith(t, true, func(c *config.Config) { c.PushOpsServerURL = ops.URL })
	r.health(store.HealthRecord{Key: "fleet:gw-1", Phase: "active", At: r.clk.Now().UnixMilli(), Since: r.clk.Now().UnixMilli(), Message: "gateway offline"})
	r.svc.Idle()
	if r.svc.RetryQueued() != 1 {
		t.Fatalf("ops copies queued: %d, want 1", r.svc.RetryQueued())
	}
	c := *r.live.Get()
	c.PushOpsTopic = "vendor-ops-2"
	r.live = config.NewLive(&c, nil, "")
	r.restart()
	ops.Set(func(s *ntfytest.Server) { s.FailN = 0 })
	r.advance(3 * time.Minute)
	var topics []string
	for _, m := range ops.Messages() {
		topics = append(topics, m.Topic)
	}
	if len(topics) != 1 || topics[0] != "vendor-ops-2" || r.svc.RetryQueued() != 0 {
		t.Fatalf("ops copies delivered to %v, %d queued; want one to vendor-ops-2", topics, r.svc.RetryQueued())
	}
}

// TestRecoveredServerGetsTheQueueAtOnce: once the push server answers its
// health check again, the queue goes out at once, from the SOS at its
// head, instead of when the doubling delay next comes round (up to
// 2 min later; a review saw ops copies go out 22 s before the SOS that
// had waited longest).
func TestRecoveredServerGetsTheQueueAtOnce(t *testing.T) {
	r := newRig(t, false)
	r.ntfy.Set(func(s *ntfytest.Server) { s.FailStatus, s.FailN = 500, 1<<30 })
	alarm(r, 1)
	for _, d := range []time.Duration{2, 4, 8, 16, 32} { // attempts at +2 .. +62 s, the next due at +126 s
		r.advance(d * time.Second)
	}
	r.ntfy.Set(func(s *ntfytest.Server) { s.FailN = 0 })
	r.advance(10 * time.Second)
	if n := len(r.msgs("TST000-sos")); n != 0 {
		t.Fatalf("setup: %d delivered before the next retry", n)
	}
	now := r.clk.Now().UnixMilli()
	r.svc.OnHealth(store.HealthRecord{Key: "push_down", Phase: store.HealthResolved, At: now, Since: now - 60000, Message: "ok"})
	r.svc.Idle()
	if got := r.msgs(""); len(got) == 0 || got[0].Topic != "TST000-sos" {
		t.Fatalf("after the push server recovered: %+v, want the SOS at once", got)
	}
}

// TestPressesGoAheadInTheRetryQueue: a press queued during an outage goes
// ahead of the sensor and health messages waiting, behind earlier presses
// and never before the head (which a retry may be posting); the others
// keep their order.
func TestPressesGoAheadInTheRetryQueue(t *testing.T) {
	q := func(topic string) queued { return queued{R: Rendered{Topic: topic}, Staff: true} }
	topics := func(items []queued) (out []string) {
		for _, x := range items {
			out = append(out, strings.TrimPrefix(x.R.Topic, "TST000-"))
		}
		return out
	}
	var items []queued
	for _, topic := range []string{"sensors", "sos", "health", "sensors", "watches", "batteries"} {
		x := q("TST000-" + topic)
		items = slices.Insert(items, pressSlot(items, x), x)
	}
	if got, want := topics(items), []string{"sensors", "sos", "watches", "health", "sensors", "batteries"}; !slices.Equal(got, want) {
		t.Fatalf("queue %v, want %v", got, want)
	}
}

// TestRetryNowKeepsOneChain: after the recovery's flush, a server failing
// again is retried on one doubling chain. The resolve message queued
// behind the flush armed a second timer, and retries came at 2, 4, 10,
// 20, 42 s (a review).
func TestRetryNowKeepsOneChain(t *testing.T) {
	r := newRigWith(t, false, func(c *config.Config) { c.PushOpsEnabled = false })
	r.ntfy.Set(func(s *ntfytest.Server) { s.FailStatus, s.FailN = 500, 1<<30 })
	alarm(r, 1)
	t1 := r.clk.Now().UnixMilli()
	r.svc.OnHealth(store.HealthRecord{Key: "push_down", Phase: store.HealthActive, At: t1, Since: t1, Message: "down"})
	r.svc.Idle()
	for _, d := range []time.Duration{2, 4, 8, 16, 32} {
		r.advance(d * time.Second)
	}
	now := r.clk.Now().UnixMilli()
	r.svc.OnHealth(store.HealthRecord{Key: "push_down", Phase: store.HealthResolved, At: now, Since: now - 60000, Message: "ok"})
	r.svc.Idle()
	var at []int
	prev := r.ntfy.Attempts()
	for sec := 1; sec <= 62; sec++ {
		r.advance(time.Second)
		if n := r.ntfy.Attempts(); n != prev {
			for range n - prev {
				at = append(at, sec)
			}
			prev = n
		}
	}
	if want := []int{2, 6, 14, 30, 62}; !slices.Equal(at, want) {
		t.Fatalf("retries at %v s after the recovery's flush, want one doubling chain %v", at, want)
	}
}

// TestPressGoesAheadInTheRealQueue: through the service, a press queued
// during an outage behind health messages is delivered right after the
// head, before the others (pressSlot in enqueueRetry).
func TestPressGoesAheadInTheRealQueue(t *testing.T) {
	r := newRigWith(t, false, func(c *config.Config) { c.PushOpsEnabled = false })
	r.ntfy.Set(func(s *ntfytest.Server) { s.FailStatus, s.FailN = 500, 1<<30 })
	for i, k := range []string{"a", "b", "c"} {
		r.svc.OnHealth(store.HealthRecord{Key: "k" + k, Phase: store.HealthActive, At: r.clk.Now().UnixMilli() + int64(i), Since: r.clk.Now().UnixMilli(), Message: "m" + k})
		r.svc.Idle()
	}
	alarm(r, 1)
	r.ntfy.Set(func(s *ntfytest.Server) { s.FailN = 0 })
	r.advance(5 * time.Minute)
	var got []string
	for _, m := range r.msgs("") {
		got = append(got, strings.TrimPrefix(m.Topic, "TST000-")+":"+m.Title)
	}
	if want := []string{"health:ma", "sos:Panic button pushed", "health:mb", "health:mc"}; !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
}

// TestRecoveryFlushesOpsOnTheSameServer: the ops queue is flushed with the
// staff queue when it posts to the same server, however the URL is
// spelled (a trailing slash, an upper-case scheme), and not when it
// posts elsewhere: the health check probes the staff server only.
func TestRecoveryFlushesOpsOnTheSameServer(t *testing.T) {
	same := func(u string) string { return u }
	for _, tc := range []struct {
		name  string
		spell func(string) string
		other bool
	}{
		{"same", same, false},
		{"trailing slash", func(u string) string { return u + "/" }, false},
		{"scheme case", func(u string) string { return "HTTP" + strings.TrimPrefix(u, "http") }, false},
		{"another server", same, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			other := ntfytest.New()
			t.Cleanup(other.Close)
			r := newRigWith(t, false, func(c *config.Config) {
				c.PushOpsServerURL = tc.spell(c.PushServerURL)
				if tc.other {
					c.PushOpsServerURL = other.URL
				}
			})
			other.Set(func(s *ntfytest.Server) { s.FailStatus, s.FailN = 500, 1<<30 })
			r.ntfy.Set(func(s *ntfytest.Server) { s.FailStatus, s.FailN = 500, 1<<30 })
			now := r.clk.Now().UnixMilli()
			r.svc.OnHealth(store.HealthRecord{Key: "push_down", Phase: store.HealthActive, At: now, Since: now, Message: "down"})
			r.svc.Idle()
			for _, d := range []time.Duration{2, 4, 8, 16, 32} {
				r.advance(d * time.Second)
			}
			r.ntfy.Set(func(s *ntfytest.Server) { s.FailN = 0 })
			other.Set(func(s *ntfytest.Server) { s.FailN = 0 })
			r.advance(10 * time.Second)
			attempts := other.Attempts()
			now = r.clk.Now().UnixMilli()
			r.svc.OnHealth(store.HealthRecord{Key: "push_down", Phase: store.HealthResolved, At: now, Since: now - 60000, Message: "ok"})
			r.svc.Idle()
			switch {
			case !tc.other && len(r.msgs("beaconhub-ops")) == 0:
				t.Fatalf("the ops copy on the staff server waited for its timer (%d queued)", r.svc.RetryQueued())
			case tc.other && other.Attempts() != attempts:
				t.Fatal("the ops queue on another server was flushed by the staff server's health")
			}
		})
	}
}

// TestBackoffKeyNamesTheServer: one server is one key however it is
// spelled (RFC 3986's case and default-port equivalences), and a path or
// another port is another server.
func TestBackoffKeyNamesTheServer(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"https://push.example.org", "https://push.example.org/", true},
		{"https://push.example.org", "HTTPS://Push.Example.ORG", true},
		{"https://push.example.org", "https://push.example.org:443/", true},
		{"http://push.example.org", "http://push.example.org:80", true},
		{"http://[::1]:8080/", "http://[::1]:8080", true},
		{"http://[::1]", "http://[::1]:80", true},
		{"https://push.example.org/ntfy", "https://push.example.org/ntfy/", true},
		{"https://push.example.org", "http://push.example.org", false},
		{"https://push.example.org", "https://push.example.org:8443", false},
		{"https://push.example.org/a", "https://push.example.org/b", false},
		{"https://push.example.org/Ntfy", "https://push.example.org/ntfy", false},
		{"https://staff@push.example.org", "https://ops@push.example.org", false},
		{"https://staff@push.example.org", "https://staff@PUSH.example.org/", true},
		{"http://[fe80::1%25eth0]:8080", "http://[FE80::1%25eth0]:8080/", true},
		{"http://[fe80::1%25eth0]:8080", "http://[fe80::1%25ETH0]:8080", false},
	} {
		if got := backoffKey(tc.a) == backoffKey(tc.b); got != tc.same {
			t.Errorf("%q and %q: same server %v (keys %q, %q), want %v", tc.a, tc.b, got, backoffKey(tc.a), backoffKey(tc.b), tc.same)
		}
	}
}

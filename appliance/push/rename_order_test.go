// Regression tests from a second review of the last words push owes
// across uid changes: each comment tells what went wrong before the fix
// (past behaviour in the present tense); Test...Check ones checked
// behaviour that was right and must stay so.

package push

import (
	"testing"
	"time"

	"beaconhub/appliance/push/ntfytest"
	"beaconhub/store"
)

// remintWhileFailing: F2 is out of range (announced); 10 min later the
// push server starts failing (503) its next failN posts and F2 is
// reminted to N2.
func remintWhileFailing(r *rig, failN int) {
	r.t.Helper()
	r.outOfRange("F2", "12.00")
	r.advance(10 * time.Minute)
	r.ntfy.Set(func(s *ntfytest.Server) { s.FailStatus, s.FailN = 503, failN })
	r.rename("F2", "N2", true)
}

// F2 is out of range (announced). A remint F2 -> N2: RenamesDone's last
// words ("F2 resolved", "N2 active") go to the outbox; their one post
// meets a single 503. The fridge is back in range a moment later: the
// recovery for N2 is an immediate message, posted at once (Told is empty
// now, the staff retry lane empty). The outbox's timer posts the last
// words 5 s later: staff's last word for range:N2 is "active" while the
// fridge is back in range (and push reminds nobody: Open is gone).
func TestLastWordsGoBeforeANewerRecoveryWhenTheirPostFailed(t *testing.T) {
	r := newRig(t, false)
	remintWhileFailing(r, 1)
	r.backInRange("N2")
	r.minutes(10)
	if w, _ := said(t, r.msgs("TST000-sensors"), "range:N2"); w != PhaseResolved {
		t.Fatalf("N2 back in range; staff's last word for range:N2 is %q", w)
	}
}

// The same with the push server down for a few minutes: the last words
// wait in the outbox (5 s .. 5 min), the recovery under the new uid in
// the staff retry queue (2 s .. 2 min). When the server is back, the
// health check's push_down recovery sends the retry queue at once, the
// outbox only at its timer: the recovery goes first, the stale
// "N2 active" after it.
func TestLastWordsAreNotOvertakenAfterAnOutage(t *testing.T) {
	r := newRig(t, false)
	remintWhileFailing(r, 1<<20)
	r.advance(time.Minute)
	r.backInRange("N2")
	r.health(store.HealthRecord{Key: "push_down", Phase: store.HealthActive, At: r.clk.Now().UnixMilli(), Since: r.clk.Now().UnixMilli(), Message: "push server unreachable"})
	r.svc.Idle()
	r.minutes(8)
	r.ntfy.Set(func(s *ntfytest.Server) { s.FailN = 0 })
	r.health(store.HealthRecord{Key: "push_down", Phase: store.HealthResolved, At: r.clk.Now().UnixMilli()})
	r.svc.Idle()
	r.minutes(10)
	if w, _ := said(t, r.msgs("TST000-sensors"), "range:N2"); w != PhaseResolved {
		t.Fatalf("N2 back in range during an outage; after it staff's last word for range:N2 is %q", w)
	}
}

// An SOS pressed while a remint batch's last words are owed (between the
// PrepareRename jobs and RenamesDone: the reload, the writer flush and
// the uid sweep run in between) is posted only after immediate() has
// flushed the whole outbox: every part of the last words (and any other
// row waiting there) goes before the press.
func TestAnSOSDoesNotWaitBehindLastWords(t *testing.T) {
	r := newRig(t, false)
	const n = 150
	old, nu := r.fleetOutOfRange(n)
	release := blockWorker(r)
	for i := range old {
		mergeInStore(t, r, old[i], nu[i])
		r.svc.PrepareRename(old[i], nu[i])
	}
	r.svc.OnEvent(store.Event{ID: 1, Status: "alert", BeaconType: "panic", AssetUID: "P1", CreatedAt: r.clk.Now().UnixMilli()})
	for i := range old {
		r.svc.Rename(old[i], nu[i])
	}
	r.svc.RenamesDone()
	release()
	r.svc.Idle()
	ahead := 0
	for _, m := range r.msgs("") {
		if m.Topic == "TST000-sos" {
			break
		}
		if rec, err := ParseRecord(m.Message); err == nil && rec.At >= t0.Add(10*time.Minute).UnixMilli() {
			ahead++
		}
	}
	t.Logf("posts ahead of the SOS: %d", ahead)
	if ahead > 0 {
		t.Fatalf("an SOS pressed during a remint of %d fridges was posted after %d last-words messages", n, ahead)
	}
}

// A remint apply of 800 announced fridges behind ntfy's default rate
// limit (burst 60, one more every 5 s): the batch's last words are one
// message per category but ~80 parts, posted back to back by the
// outbox flush, which drains ntfy's burst and starts its 429 pause. An
// SOS pressed 10 s later waits for the pause and then shares each new
// token with the rest of the outbox.
func TestAnSOSAfterALargeRemintIsNotHeldByItsLastWords(t *testing.T) {
	r, b := rateLimitedRig(t)
	const n = 800
	old, nu := fleetNames(n)
	for _, f := range old { // heard only, not committed to the store
		r.svc.OnSensor(sensorRec("range", f, "active", "temperature 12.00 °C outside 2..8", r.clk.Now()))
	}
	r.svc.Idle()
	r.advance(30 * time.Minute)
	b.arm(r.clk.Now())
	for i := range old {
		r.svc.PrepareRename(old[i], nu[i])
	}
	r.svc.RenamesDone()
	r.svc.Idle()
	r.advance(10 * time.Second)
	r.svc.OnEvent(store.Event{ID: 1, Status: "alert", BeaconType: "panic", AssetUID: "P1", CreatedAt: r.clk.Now().UnixMilli()})
	r.svc.Idle()
	out := r.clk.Now()
	var delivered time.Duration = -1
	for i := 0; i < 60*6 && delivered < 0; i++ {
		if len(r.msgs("TST000-sos")) > 0 {
			delivered = r.clk.Now().Sub(out)
			break
		}
		r.advance(time.Second)
	}
	t.Logf("outbox rows left %d; SOS delivered after %v", r.svc.OutboxLen(), delivered)
	// The server's own pause, after the last words took its burst, is the
	// floor (20 s here); behind the whole outbox it was 1 min 20 s.
	if delivered < 0 || delivered > 30*time.Second {
		t.Fatalf("an SOS 10 s after a remint of %d fridges was delivered after %v (-1: not within 6 min)", n, delivered)
	}
}

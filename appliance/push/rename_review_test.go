// Regression tests from a review of the last words push owes subjects
// across uid changes and mode switches: each comment tells what went
// wrong before the fix (past behaviour in the present tense).

package push

import (
	"fmt"
	"testing"
	"time"

	"beaconhub/appliance/push/ntfytest"
)

// blockWorker holds the staff worker busy (as a slow post does) until
// release is called.
func blockWorker(r *rig) (release func()) {
	ch, started := make(chan struct{}), make(chan struct{})
	r.svc.do(func() { close(started); <-ch })
	<-started
	return func() { close(ch) }
}

// lastWordOf is staff's app's last word per subject: a message's record
// subject, or a digest's items (in order), snapshots ignored.
func lastWordOf(msgs []ntfytest.Message, subject string) (string, []string) {
	last := ""
	var log []string
	for _, m := range msgs {
		rec, err := ParseRecord(m.Message)
		if err != nil || rec.Intent == IntentSnapshot {
			continue
		}
		if rec.Subject == subject {
			last = rec.Phase
			log = append(log, fmt.Sprintf("%s %s %q", time.UnixMilli(rec.At).Sub(t0), rec.Phase, m.Title))
		}
		for _, it := range rec.Items {
			if it.Subject == subject {
				last = it.Phase
				log = append(log, fmt.Sprintf("digest@%s item %s", time.UnixMilli(rec.At).Sub(t0), it.Phase))
			}
		}
	}
	return last, log
}

// remintWhileBusy: F2 is out of range (announced); 10 min later the
// store remints it to N2 while the staff worker is busy posting, until
// release. Push has not been told of the remint yet.
func remintWhileBusy(r *rig) (release func()) {
	r.t.Helper()
	r.outOfRange("F2", "12.00")
	r.advance(10 * time.Minute)
	mergeInStore(r.t, r, "F2", "N2")
	return blockWorker(r)
}

// A remint F2 -> N2 while the worker is busy posting: the sensor
// monitor (renamed before push, it is an earlier follower) resolves
// range:N2 and hands it to push before push.Rename runs. Rename moves
// the state at once, and queues a "Still active" for N2 computed now;
// the worker then sends "Back in range" for N2 (correct) and after it
// the stale "Still active": staff's last word for N2 is active while
// the fridge is back.
func TestARenamesLastWordsGoBeforeANewerRecovery(t *testing.T) {
	r := newRig(t, false)
	release := remintWhileBusy(r)
	r.svc.PrepareRename("F2", "N2") // before the reload: before any N2 transition
	r.sensor(sensorRec("range", "N2", "resolved", "back in range", r.clk.Now()))
	r.svc.Rename("F2", "N2")
	r.svc.RenamesDone()
	release()
	r.svc.Idle()
	r.advance(2 * time.Minute)
	if w, _ := said(t, r.msgs("TST000-sensors"), "range:N2"); w != PhaseResolved {
		t.Fatalf("range:N2 is back in range; staff's last word for it is %q", w)
	}
}

// The old key's recovery is queued on the busy worker when Rename runs:
// Rename moves Open/Active to N2 and queues "Still active" for N2; the
// recovery then finds range:F2 neither open nor active and is dropped.
// Staff are told N2 is "still active" and reminded every cooldown of a
// fridge that is back in range (the store holds nothing for it).
func TestARecoveryQueuedBeforeARenameIsNotLost(t *testing.T) {
	r := newRig(t, false)
	r.outOfRange("F2", "12.00")
	r.advance(10 * time.Minute)
	release := blockWorker(r)
	r.sensor(sensorRec("range", "F2", "resolved", "back in range", r.clk.Now()))
	mergeInStore(t, r, "F2", "N2")
	r.svc.Rename("F2", "N2")
	r.svc.RenamesDone()
	release()
	r.svc.Idle()
	r.minutes(7 * 60)
	said(t, r.msgs("TST000-sensors"), "range:F2")
	if w, log := said(t, r.msgs("TST000-sensors"), "range:N2"); w == PhaseActive {
		t.Fatalf("fridge back in range before the remint; staff's last word for range:N2 is active (%d messages)", len(log))
	}
}

// F2 flapped (alert, recovery, alert within the cooldown) and is back:
// its recovery is held (Open stays true). Reminted F2 -> N2: staff get
// "F2 continues as N2" (resolved) and nothing for N2 (not active), but
// Open moved to range:N2. N2 goes out of range again 5 min later: announce
// finds Open[range:N2] within the cooldown and suppresses it. Staff have
// no active word about the fridge under any subject.
func TestRenameOfAHeldFlapThenActiveUnderNewUIDIsAnnounced(t *testing.T) {
	r := newRig(t, false)
	flapHeld(r, "range", "F2") // t0+30m, recovery held to t0+6h
	r.rename("F2", "N2", false)
	r.advance(5 * time.Minute)
	r.outOfRange("N2", "13.00")
	r.advance(2 * time.Minute)
	said(t, r.msgs("TST000-sensors"), "range:F2")
	if w, _ := said(t, r.msgs("TST000-sensors"), "range:N2"); w != PhaseActive {
		t.Fatalf("fridge N2 out of range at t0+35m; staff's last word for range:N2 is %q", w)
	}
}

// Bulk batteries: a digest listed battery:F2 low (Open). F2 is reminted
// to N2: the "continues as" resolved for battery:F2 is only a pending
// digest change. The operator switches batteries to individual before
// the next digest: toIndividual drops the pending changes, and N2
// (Open, moved) is not announced (only its reminder an interval after
// the digest). battery:F2 reads low for good.
func TestBulkRenameThenSwitchToIndividualKeepsTheLastWords(t *testing.T) {
	r := newRigWith(t, false, batteries("bulk", 3600))
	r.batteryLow("F2", 2400)
	r.minutes(65)
	r.rename("F2", "N2", false)
	r.advance(5 * time.Minute)
	r.patch(map[string]any{"server_push_batteries_mode": "individual"})
	r.svc.Idle()
	r.minutes(3 * 60)
	wF, _ := said(t, r.msgs("TST000-batteries"), "battery:F2")
	wN, _ := said(t, r.msgs("TST000-batteries"), "battery:N2")
	if wF == PhaseActive || wN != PhaseActive {
		t.Fatalf("battery low under N2 since the remint: staff's last word for battery:F2 %q, for battery:N2 %q", wF, wN)
	}
}

// Bulk batteries: F2 goes low (a pending change, no digest yet), then is
// reminted to N2. The next digest lists "• battery:N2 active" and
// "Δ battery:F2 active": the pending change keeps the old subject and
// Rename adds no resolved for a subject not Open. battery:F2 reads low
// for good in the app.
func TestBulkRenameOfAnUndigestedChangeClosesTheOldSubject(t *testing.T) {
	r := newRigWith(t, false, batteries("bulk", 3600))
	r.batteryLow("F2", 2400)
	r.advance(10 * time.Minute)
	r.rename("F2", "N2", false)
	r.minutes(3 * 60)
	wF, _ := said(t, r.msgs("TST000-batteries"), "battery:F2")
	wN, _ := said(t, r.msgs("TST000-batteries"), "battery:N2")
	if wF == PhaseActive {
		t.Fatalf("F2 reminted to N2 before any digest: staff's last word for battery:F2 is active for good (N2: %q)", wN)
	}
}

// The process dies after Rename saved the moved state and before the
// worker posted the queued "continues as"/"still active" messages (they
// are in no outbox nor retry queue). The next start finds Open[range:N2],
// Active N2 and the store agreeing: nothing is sent. Staff's last word
// for range:F2 stays active for good, range:N2 has none.
func TestACrashAfterARenameLosesNoLastWord(t *testing.T) {
	r := newRig(t, false)
	release := remintWhileBusy(r)
	r.svc.Rename("F2", "N2")
	r.svc.RenamesDone()
	// The crash: what is committed now is what the next start finds
	// (with its own ntfy: what reaches r's after this is not heard).
	r2 := crashCopy(t, r, r.live.Get())
	before := r.msgs("")
	release()
	r.close()
	r2.open()
	r2.svc.Idle()
	r2.minutes(10)
	all := append(before, r2.msgs("")...)
	wF, _ := said(t, all, "range:F2")
	wN, _ := said(t, all, "range:N2")
	if wF == PhaseActive {
		t.Fatalf("crash after the rename's state save: staff's last word for range:F2 is active for good, range:N2 %q", wN)
	}
}

package push

import (
	"fmt"
	"testing"
	"time"
)

func sensorLog(r *rig, subject string) []string {
	var got []string
	for _, m := range r.msgs("TST000-sensors") {
		rec, err := ParseRecord(m.Message)
		if err != nil || rec.Intent == IntentSnapshot || rec.Subject != "range:"+subject {
			continue
		}
		got = append(got, fmt.Sprintf("%s %s", time.UnixMilli(rec.At).Sub(t0), rec.Phase))
	}
	return got
}

// A fridge flaps under a 10 min cooldown, then stays out of range for an
// hour (its flap window long over, reminders every 10 min). The operator
// raises the cooldown to 6 h; the fridge comes back: its recovery goes
// at once. Measured by the new cooldown alone, the stale flap held it
// to t0+6 h (a review).
func TestRaisedCooldownReopensAFlapHoldThatHadEnded(t *testing.T) {
	r := newRig(t, false)
	r.patch(map[string]any{"server_push_sensors_cooldown_seconds": 600})
	fridgeFlaps(r, "F1", 2*time.Minute)
	r.minutes(60)
	r.patch(map[string]any{"server_push_sensors_cooldown_seconds": 21600})
	r.advance(time.Minute)
	r.backInRange("F1")
	r.minutes(30)
	if owed, _, _, due := recoveryOwed(t, r, "F1"); owed {
		t.Fatalf("flap window (10 min) ended ~1 h ago; cooldown then raised; fridge back 30 min, staff still told it is out: %q; recovery held until %v after t0",
			sensorLog(r, "F1"), due.Sub(t0))
	}
}

// Merge: F1 (merged away) flapped and its recovery is held; F2 (the
// survivor) is out of range and open. The moved recovery is dropped:
// kept, it was sent at its due time, closed the survivor's open alert,
// stopped its reminders and its real recovery never went (a review).
func TestMergeMovesAHeldRecoveryOntoAnActiveSurvivor(t *testing.T) {
	r := newRig(t, false)
	fridgeFlaps(r, "F1", 10*time.Minute)
	r.advance(10 * time.Minute)
	r.backInRange("F1") // held
	r.advance(time.Minute)
	r.outOfRange("F2", "11.00")
	r.svc.Rename("F1", "F2")
	r.svc.RenamesDone()
	r.minutes(6 * 60)
	r.svc.mu.Lock()
	open := r.svc.st.Open["range:F2"]
	r.svc.mu.Unlock()
	r.backInRange("F2") // the survivor comes back
	r.advance(time.Minute)
	var seq []string
	for _, m := range r.msgs("TST000-sensors") {
		rec, _ := ParseRecord(m.Message)
		seq = append(seq, fmt.Sprintf("%s %s %s", time.UnixMilli(rec.At).Sub(t0), rec.Subject, rec.Phase))
	}
	rec, _, ok := lastFor(t, r.msgs("TST000-sensors"), "range:F2")
	if !open || !ok || rec.Phase != PhaseResolved {
		t.Fatalf("survivor F2 active 6 h then back: after the merge Open[range:F2]=%v at 6 h; its recovery was never sent; sensors topic %q", open, seq)
	}
}

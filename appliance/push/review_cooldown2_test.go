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

// The commit's own case, one step later: the recovery was already held
// (Due = window start + 6 h) when the operator lowers the sensors
// cooldown to 10 min (or 0): the hold ends by the shorter cooldown. It
// stayed at the old end, staff told the fridge was out of range for
// ~5.5 h after it came back (a review).
func TestLoweredCooldownReleasesAnAlreadyHeldRecovery(t *testing.T) {
	for _, cd := range []int{600, 0} {
		t.Run(fmt.Sprint(cd), func(t *testing.T) {
			r := newRig(t, false)
			r.sensor(sensorRec("range", "F1", "active", "temperature 9.00 °C outside 2..8", r.clk.Now()))
			r.svc.Idle()
			r.advance(10 * time.Minute)
			r.sensor(sensorRec("range", "F1", "resolved", "back in range", r.clk.Now()))
			r.svc.Idle()
			r.advance(10 * time.Minute)
			r.sensor(sensorRec("range", "F1", "active", "temperature 12.00 °C outside 2..8", r.clk.Now()))
			r.svc.Idle()
			r.advance(10 * time.Minute)
			r.sensor(sensorRec("range", "F1", "resolved", "back in range", r.clk.Now())) // held: 6 h default
			r.svc.Idle()
			r.advance(time.Minute)
			r.patch(map[string]any{"server_push_sensors_cooldown_seconds": cd})
			for i := 0; i < 60; i++ {
				r.advance(time.Minute)
			}
			rec, _, ok := lastFor(t, r.msgs("TST000-sensors"), "range:F1")
			if !ok || rec.Phase != PhaseResolved {
				r.svc.mu.Lock()
				h := r.svc.st.Held["range:F1"]
				r.svc.mu.Unlock()
				t.Fatalf("cooldown lowered to %d s while the recovery was held; fridge back for 61 min, staff still told it is out (%q); recovery due %v after t0",
					cd, sensorLog(r, "F1"), time.UnixMilli(h.Due).Sub(t0))
			}
		})
	}
}

// A fridge flaps under a 10 min cooldown, then stays out of range for an
// hour (its flap window long over, reminders every 10 min). The operator
// raises the cooldown to 6 h; the fridge comes back: its recovery goes
// at once. Measured by the new cooldown alone, the stale flap held it
// to t0+6 h (a review).
func TestRaisedCooldownReopensAFlapHoldThatHadEnded(t *testing.T) {
	r := newRigWith(t, false, nil)
	r.patch(map[string]any{"server_push_sensors_cooldown_seconds": 600})
	r.sensor(sensorRec("range", "F1", "active", "temperature 9.00 °C outside 2..8", r.clk.Now()))
	r.svc.Idle()
	r.advance(2 * time.Minute)
	r.sensor(sensorRec("range", "F1", "resolved", "back in range", r.clk.Now()))
	r.svc.Idle()
	r.advance(2 * time.Minute)
	r.sensor(sensorRec("range", "F1", "active", "temperature 12.00 °C outside 2..8", r.clk.Now())) // flap
	r.svc.Idle()
	for i := 0; i < 60; i++ {
		r.advance(time.Minute)
	}
	r.patch(map[string]any{"server_push_sensors_cooldown_seconds": 21600})
	r.advance(time.Minute)
	r.sensor(sensorRec("range", "F1", "resolved", "back in range", r.clk.Now()))
	r.svc.Idle()
	for i := 0; i < 30; i++ {
		r.advance(time.Minute)
	}
	rec, _, ok := lastFor(t, r.msgs("TST000-sensors"), "range:F1")
	if !ok || rec.Phase != PhaseResolved {
		r.svc.mu.Lock()
		h := r.svc.st.Held["range:F1"]
		r.svc.mu.Unlock()
		t.Fatalf("flap window (10 min) ended ~1 h ago; cooldown then raised; fridge back 30 min, staff still told it is out: %q; recovery held until %v after t0",
			sensorLog(r, "F1"), time.UnixMilli(h.Due).Sub(t0))
	}
}

// Merge: F1 (merged away) flapped and its recovery is held; F2 (the
// survivor) is out of range and open. The moved recovery is dropped:
// kept, it was sent at its due time, closed the survivor's open alert,
// stopped its reminders and its real recovery never went (a review).
func TestMergeMovesAHeldRecoveryOntoAnActiveSurvivor(t *testing.T) {
	r := newRig(t, false)
	r.sensor(sensorRec("range", "F1", "active", "temperature 9.00 °C outside 2..8", r.clk.Now()))
	r.svc.Idle()
	r.advance(10 * time.Minute)
	r.sensor(sensorRec("range", "F1", "resolved", "back in range", r.clk.Now()))
	r.svc.Idle()
	r.advance(10 * time.Minute)
	r.sensor(sensorRec("range", "F1", "active", "temperature 12.00 °C outside 2..8", r.clk.Now()))
	r.svc.Idle()
	r.advance(10 * time.Minute)
	r.sensor(sensorRec("range", "F1", "resolved", "back in range", r.clk.Now())) // held
	r.svc.Idle()
	r.advance(time.Minute)
	r.sensor(sensorRec("range", "F2", "active", "temperature 11.00 °C outside 2..8", r.clk.Now()))
	r.svc.Idle()
	r.svc.Rename("F1", "F2")
	r.svc.RenamesDone()
	for i := 0; i < 6*60; i++ {
		r.advance(time.Minute)
	}
	r.svc.mu.Lock()
	open := r.svc.st.Open["range:F2"]
	r.svc.mu.Unlock()
	r.sensor(sensorRec("range", "F2", "resolved", "back in range", r.clk.Now())) // the survivor comes back
	r.svc.Idle()
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

package push

import (
	"testing"
	"time"
)

// A fridge goes out of range and stays out past the 6 h sensors
// cooldown: the reminder at ~6 h says "still active" (it moves Alerted).
// 10 min after that reminder it comes back (announced), 10 min later it
// is out again (announced: staff last heard "back"), and 10 min after
// that it is back in range for good. Its first activation was 6.5 h ago,
// so the cooldown counted from it ended long ago; docs/push.md: the
// recovery "waits for the end of the cooldown counted from its first
// activation (not from a reminder, which moved it)". Anchored at the
// reminder, the recovery was held until ~12 h, staff told the fridge was
// out for ~5.5 h more (a review).
func TestReminderBeforeAFlapDoesNotHoldTheRecoveryAnotherCooldown(t *testing.T) {
	r := newRig(t, false)
	r.sensor(sensorRec("range", "F1", "active", "temperature 9.00 °C outside 2..8", r.clk.Now()))
	r.svc.Idle()
	for i := 0; i < 6*60+5; i++ { // the 6 h reminder
		r.advance(time.Minute)
	}
	r.sensor(sensorRec("range", "F1", "resolved", "back in range", r.clk.Now()))
	r.svc.Idle()
	r.advance(10 * time.Minute)
	r.sensor(sensorRec("range", "F1", "active", "temperature 12.00 °C outside 2..8", r.clk.Now()))
	r.svc.Idle()
	r.advance(10 * time.Minute)
	r.sensor(sensorRec("range", "F1", "resolved", "back in range", r.clk.Now()))
	r.svc.Idle()
	back := r.clk.Now()
	for i := 0; i < 5; i++ {
		r.advance(time.Minute)
	}
	rec, m, ok := lastFor(t, r.msgs("TST000-sensors"), "range:F1")
	if !ok || rec.Phase != PhaseResolved {
		r.svc.mu.Lock()
		h := r.svc.st.Held["range:F1"]
		r.svc.mu.Unlock()
		t.Fatalf("fridge back in range for 5 min, %v after its first alert (cooldown 6 h): last message %q phase %s; its recovery is held until %v (%v after it came back)",
			back.Sub(t0), m.Title, rec.Phase, time.UnixMilli(h.Due).UTC(), time.UnixMilli(h.Due).Sub(back))
	}
}

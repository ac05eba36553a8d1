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
	r.outOfRange("F1", "9.00")
	r.minutes(6*60 + 5) // the 6 h reminder
	r.backInRange("F1")
	r.advance(10 * time.Minute)
	r.outOfRange("F1", "12.00")
	r.advance(10 * time.Minute)
	r.backInRange("F1")
	back := r.clk.Now()
	r.minutes(5)
	if owed, m, phase, due := recoveryOwed(t, r, "F1"); owed {
		t.Fatalf("fridge back in range for 5 min, %v after its first alert (cooldown 6 h): last message %q phase %s; its recovery is held until %v (%v after it came back)",
			back.Sub(t0), m.Title, phase, due.UTC(), due.Sub(back))
	}
}

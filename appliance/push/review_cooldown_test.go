package push

import (
	"testing"
	"time"
)

// A fridge flaps under the 6 h default; the operator then lowers the
// sensors cooldown (to 10 min, or 0). Its recovery, coming 30 min after
// the first activation, is past the cooldown counted from that
// activation under the setting in force, so it goes: it was held until
// the old 6 h end, staff told the fridge was out of range for ~5.5 h
// after it came back (a review).
func TestALoweredCooldownEndsAFlapsHoldEarlier(t *testing.T) {
	for _, cd := range []int{600, 0} {
		t.Run(time.Duration(cd*int(time.Second)).String(), func(t *testing.T) {
			r := newRig(t, false)
			r.sensor(sensorRec("range", "F1", "active", "temperature 9.00 °C outside 2..8", r.clk.Now()))
			r.svc.Idle()
			r.advance(10 * time.Minute)
			r.sensor(sensorRec("range", "F1", "resolved", "back in range", r.clk.Now()))
			r.svc.Idle()
			r.advance(10 * time.Minute)
			r.sensor(sensorRec("range", "F1", "active", "temperature 12.00 °C outside 2..8", r.clk.Now()))
			r.svc.Idle()
			r.patch(map[string]any{"server_push_sensors_cooldown_seconds": cd})
			r.advance(10 * time.Minute)
			r.sensor(sensorRec("range", "F1", "resolved", "back in range", r.clk.Now()))
			r.svc.Idle()
			back := r.clk.Now()
			for i := 0; i < 30; i++ {
				r.advance(time.Minute)
			}
			rec, m, ok := lastFor(t, r.msgs("TST000-sensors"), "range:F1")
			if !ok || rec.Phase != PhaseResolved {
				r.svc.mu.Lock()
				h := r.svc.st.Held["range:F1"]
				r.svc.mu.Unlock()
				t.Fatalf("cooldown now %d s; fridge back for 30 min: last message %q (%s); recovery held until %v after it came back",
					cd, m.Title, rec.Phase, time.UnixMilli(h.Due).Sub(back))
			}
		})
	}
}

package push

import (
	"beaconhub/appliance/push/ntfytest"
	"fmt"
	"strings"
	"testing"
	"time"
)

func phaseLog(msgs []ntfytest.Message, subject string) []string {
	var got []string
	for _, m := range msgs {
		for _, rec := range words(m) {
			if rec.Subject == subject {
				got = append(got, fmt.Sprintf("%s %s", time.UnixMilli(rec.At).Sub(t0), rec.Phase))
			}
		}
	}
	return got
}

// phasesOf is the phases of a phaseLog, in order, space-separated.
func phasesOf(log []string) string {
	var out []string
	for _, e := range log {
		f := strings.Fields(e)
		out = append(out, f[len(f)-1])
	}
	return strings.Join(out, " ")
}

// flapHeld: subject flaps under the 6 h default and its recovery is
// held (due t0+6h). Returns at t0+30m.
func flapHeld(r *rig, kind, subject string) {
	r.sensor(sensorRec(kind, subject, "active", "out", r.clk.Now()))
	r.svc.Idle()
	r.advance(10 * time.Minute)
	r.sensor(sensorRec(kind, subject, "resolved", "back", r.clk.Now()))
	r.svc.Idle()
	r.advance(10 * time.Minute)
	r.sensor(sensorRec(kind, subject, "active", "out again", r.clk.Now())) // flap
	r.svc.Idle()
	r.advance(10 * time.Minute)
	r.sensor(sensorRec(kind, subject, "resolved", "back", r.clk.Now())) // held
	r.svc.Idle()
}

// Merge, the other direction of the commit's case: the SURVIVOR F2
// flapped and its recovery is held; the merged-away F1 is out of range
// (open). After Rename(F1, F2) the key range:F2 carries F1's active
// condition, so the survivor's held recovery is dropped: checked before
// the active sets moved, it was kept and "Back in range" went for
// range:F2 while it was active (a review).
func TestAMergeDropsTheSurvivorsHeldRecoveryOntoAMovedActiveCondition(t *testing.T) {
	r := newRig(t, false)
	flapHeld(r, "range", "F2")
	r.advance(time.Minute)
	r.sensor(sensorRec("range", "F1", "active", "temperature 11.00 °C outside 2..8", r.clk.Now()))
	r.svc.Idle()
	r.svc.Rename("F1", "F2")
	r.svc.RenamesDone()
	r.svc.mu.Lock()
	_, active := r.svc.st.Active[CatSensors]["range:F2"]
	_, held := r.svc.st.Held["range:F2"]
	r.svc.mu.Unlock()
	t.Logf("after merge: range:F2 active=%v held=%v", active, held)
	sentAt := time.Duration(-1)
	before := len(phaseLog(r.msgs("TST000-sensors"), "range:F2"))
	for i := 0; i < 6*60; i++ {
		r.advance(time.Minute)
		if sentAt < 0 && len(phaseLog(r.msgs("TST000-sensors"), "range:F2")) > before {
			sentAt = r.clk.Now().Sub(t0)
		}
	}
	t.Logf("held recovery of range:F2 sent at t0+%v", sentAt)
	r.svc.mu.Lock()
	_, active = r.svc.st.Active[CatSensors]["range:F2"]
	open := r.svc.st.Open["range:F2"]
	r.svc.mu.Unlock()
	rec, _, ok := lastFor(t, r.msgs("TST000-sensors"), "range:F2")
	if active && (!ok || rec.Phase == PhaseResolved || !open) {
		t.Fatalf("range:F2 active (F1's condition merged onto it) but the last staff message is %v (open=%v): %q",
			rec.Phase, open, phaseLog(r.msgs("TST000-sensors"), "range:F2"))
	}
}

// A panic button's not-seen condition flaps: its recovery goes at once,
// as every critical recovery (spec), though the sensor not-seen
// category is in individual mode with another interval; nothing is held.
func TestAPanicNotSeenRecoveryIsNeverHeld(t *testing.T) {
	r := newRig(t, false)
	r.patch(map[string]any{"server_push_sensor_notseen_mode": "individual", "server_push_sensor_notseen_interval_seconds": 600})
	flapHeld(r, "notseen", "P1")
	r.svc.mu.Lock()
	_, held := r.svc.st.Held["notseen:P1"]
	r.svc.mu.Unlock()
	if got := phasesOf(phaseLog(r.msgs(""), "notseen:P1")); held || got != "active resolved active resolved" {
		t.Fatalf("held %v, told %v", held, got)
	}
}

// Merge, the commit's direction, with the survivor flapping itself: F2
// flapped (announced active again within its window, Flap set, still
// active); F1 (merged away) has a held recovery. Dropping that recovery
// keeps the survivor's own flap window: it was deleted too, and F2's next
// recovery, inside its window, went at once (a review).
func TestAMergeKeepsTheSurvivorsFlapWindow(t *testing.T) {
	r := newRig(t, false)
	flapHeld(r, "range", "F1") // F1 held, t0+30m
	r.sensor(sensorRec("range", "F2", "active", "out", r.clk.Now()))
	r.svc.Idle()
	r.advance(5 * time.Minute)
	r.sensor(sensorRec("range", "F2", "resolved", "back", r.clk.Now()))
	r.svc.Idle()
	r.advance(5 * time.Minute)
	r.sensor(sensorRec("range", "F2", "active", "out again", r.clk.Now())) // F2 flaps: Flap set
	r.svc.Idle()
	r.svc.mu.Lock()
	_, flapBefore := r.svc.st.Flap["range:F2"]
	r.svc.mu.Unlock()
	r.svc.Rename("F1", "F2")
	r.svc.RenamesDone()
	r.svc.mu.Lock()
	_, flapAfter := r.svc.st.Flap["range:F2"]
	r.svc.mu.Unlock()
	r.advance(5 * time.Minute)
	r.sensor(sensorRec("range", "F2", "resolved", "back", r.clk.Now())) // inside F2's window (t0+30m..t0+6h30m)
	r.svc.Idle()
	rec, _, _ := lastFor(t, r.msgs("TST000-sensors"), "range:F2")
	if rec.Phase == PhaseResolved {
		t.Fatalf("F2 flapped (Flap before merge %v, after %v); its recovery 15 min into its window went at once instead of being held: %q",
			flapBefore, flapAfter, phaseLog(r.msgs("TST000-sensors"), "range:F2"))
	}
}

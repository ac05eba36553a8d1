package push

import (
	"testing"
	"time"
)

// F2, announced out of range, is merged into F1 (in range). Before the
// sensor monitor follows the merge, F1's own reading starts F1's own
// condition, and then the monitor's late recovery of F2's arrives under
// F2. That recovery ends F2's condition, not F1's own, which began
// after the move: "Back in range" for F1 told staff a fridge still out
// of range was fine (a review).
func TestSourcesLateRecoveryDoesNotEndTheSurvivorsOwnNewCondition(t *testing.T) {
	r := newRig(t, false)
	r.sensor(sensorRec("range", "F2", "active", "temperature 12.00 °C outside 2..8", r.clk.Now()))
	r.svc.Idle()
	r.advance(10 * time.Minute)
	mergeInStore(t, r, "F2", "F1")
	r.svc.PrepareRename("F2", "F1")
	r.svc.Rename("F2", "F1")
	r.svc.RenamesDone()
	r.svc.Idle()
	r.advance(time.Minute)
	r.sensor(sensorRec("range", "F1", "active", "temperature 13.00 °C outside 2..8", r.clk.Now()))
	r.svc.Idle()
	r.advance(time.Minute)
	late := sensorRec("range", "F2", "resolved", "temperature 5.00 °C within 2..8", r.clk.Now())
	late.Since = t0.UnixMilli()
	r.sensor(late)
	r.svc.Idle()

	conds, err := r.db.ActiveSensorConditions()
	if err != nil {
		t.Fatal(err)
	}
	inStore := false
	for _, c := range conds {
		inStore = inStore || c.Key == "range:F1"
	}
	rec, _, ok := lastFor(t, r.msgs("TST000-sensors"), "range:F1")
	t.Logf("range:F1 in store %v; messages %q", inStore, phaseLog(r.msgs("TST000-sensors"), "range:F1"))
	if !inStore {
		t.Errorf("the store ended F1's own condition with F2's late recovery")
	}
	if !ok || rec.Phase != PhaseActive {
		t.Errorf("staff's last word for range:F1 is %q, want active: F1 is still out of range", rec.Phase)
	}
}

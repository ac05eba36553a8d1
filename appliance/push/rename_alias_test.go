// Regression tests from a second review of the last words push owes
// across uid changes: each comment tells what went wrong before the fix
// (past behaviour in the present tense); Test...Check ones checked
// behaviour that was right and must stay so.

package push

import (
	"testing"
	"time"

	"beaconhub/appliance/config"
	"beaconhub/store"
)

// F1 and F2 are both out of range (both announced). F2 is merged into
// F1: the sensor monitor keeps the survivor's condition (Conditions.Rename:
// "keeping newUID's own"), the store holds range:F1 active. A reading of
// F2's device judged before the monitor's Rename (resolved against the
// cache before the reload) resolves range:F2 and reaches push after its
// PrepareRename job: current() finds range:F2 unknown and redirects it
// to range:F1, and staff get "Back in range" for F1, which is still out
// of range (and push stops reminding of it: a lost alarm).
func TestALateRecoveryOfAMergedSourceDoesNotResolveTheSurvivor(t *testing.T) {
	r := newRig(t, false)
	r.sensor(sensorRec("range", "F1", "active", "temperature 11.00 °C outside 2..8", r.clk.Now()))
	r.sensor(sensorRec("range", "F2", "active", "temperature 12.00 °C outside 2..8", r.clk.Now()))
	r.svc.Idle()
	r.advance(10 * time.Minute)
	mergeInStore(t, r, "F2", "F1")
	r.svc.PrepareRename("F2", "F1")
	r.sensor(sensorRec("range", "F2", "resolved", "back in range", r.clk.Now())) // decided under the old uid
	r.svc.Rename("F2", "F1")
	r.svc.RenamesDone()
	r.svc.Idle()
	for i := 0; i < 10; i++ {
		r.advance(time.Minute)
	}
	stored, _ := r.db.ActiveSensorConditions()
	var keys []string
	for _, c := range stored {
		keys = append(keys, c.Key)
	}
	w, log := lastWordOf(r.msgs("TST000-sensors"), "range:F1")
	t.Logf("store active: %v\nrange:F1: %q", keys, log)
	if w != PhaseActive {
		t.Fatalf("F1 still out of range (store: %v); staff's last word for range:F1 is %q", keys, w)
	}
}

// Fleet health in individual mode: fleet:stale:G1 announced. G1 is
// reminted to G2 (PrepareRename moves the state to fleet:stale:G2). The
// fleet check, run before the status monitor's Rename, finds G1's device
// heard again and resolves fleet:stale:G1 under the old uid. health()
// has no redirect (current() is sensor-only): the recovery finds
// nothing open under G1 and is dropped; fleet:stale:G2 stays active and
// open in push and is reminded of every interval, for good (the status
// monitor never raises nor resolves G2; docs/push.md: "a transition that
// still comes under a former uid goes to the new key"). The store is
// left holding fleet:stale:G2 too (the remint moved it; the monitor
// resolved G1), so only a restart's fleet check ends it.
func TestALateFleetRecoveryUnderAFormerUIDIsNotLost(t *testing.T) {
	r := newRigWith(t, false, func(c *config.Config) {
		c.PushFleetHealthMode, c.PushFleetHealthIntervalSeconds = "individual", 3600
	})
	now := r.clk.Now().UnixMilli()
	r.health(store.HealthRecord{Key: "fleet:stale:G1", Phase: store.HealthActive, At: now, Since: now, Message: "gateway G1 not heard for 10 min"})
	r.svc.Idle()
	r.advance(10 * time.Minute)
	mergeInStore(t, r, "G1", "G2")
	r.svc.PrepareRename("G1", "G2")
	r.health(store.HealthRecord{Key: "fleet:stale:G1", Phase: store.HealthResolved, At: r.clk.Now().UnixMilli(), Message: "seen again or no longer monitored"})
	r.svc.Rename("G1", "G2")
	r.svc.RenamesDone()
	r.svc.Idle()
	for i := 0; i < 3*60; i++ {
		r.advance(time.Minute)
	}
	stored, _ := r.db.ActiveHealth()
	w, log := lastWordOf(r.msgs("TST000-health"), "fleet:stale:G2")
	t.Logf("store active health: %+v\nfleet:stale:G2: %q", stored, log)
	if w == PhaseActive {
		t.Fatalf("gateway heard again (the fleet check resolved it under its former uid); staff's last word for fleet:stale:G2 is active, reminded %d times", len(log)-1)
	}
}

// Remint F2 -> N2 while F2 is out of range: the asset transaction moves
// the store's range:F2 to range:N2. The fridge's recovery, judged under
// the old uid before the sensor monitor's Rename, is written as
// "range:F2 resolved": it deletes nothing (the key moved) and the store
// keeps range:N2 active. Push redirects the recovery (staff: N2 back in
// range, right), but at the next restart reconcile finds range:N2
// active in the store and unknown to push: a fresh "out of range" alert
// for a fridge that has been in range all along.
func TestALateRecoveryUnderAFormerUIDDoesNotRealertAtRestart(t *testing.T) {
	r := newRig(t, false)
	since := r.clk.Now()
	r.sensor(sensorRec("range", "F2", "active", "temperature 12.00 °C outside 2..8", since))
	r.svc.Idle()
	r.advance(10 * time.Minute)
	mergeInStore(t, r, "F2", "N2")
	r.svc.PrepareRename("F2", "N2")
	back := sensorRec("range", "F2", "resolved", "back in range", r.clk.Now()) // decided under the old uid
	back.Since = since.UnixMilli()                                             // as the monitor says it: the condition's start
	r.sensor(back)
	r.svc.Rename("F2", "N2")
	r.svc.RenamesDone()
	r.svc.Idle()
	r.advance(time.Hour)
	w, log := lastWordOf(r.msgs("TST000-sensors"), "range:N2")
	t.Logf("before restart range:N2 %s %q", w, log)
	r.restart()
	r.advance(time.Minute)
	stored, _ := r.db.ActiveSensorConditions()
	w, log = lastWordOf(r.msgs("TST000-sensors"), "range:N2")
	t.Logf("store active: %+v\nrange:N2: %q", stored, log)
	if w == PhaseActive {
		t.Fatalf("fridge in range since before the remint; after a restart staff's last word for range:N2 is active")
	}
}

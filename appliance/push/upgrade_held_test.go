package push

import (
	"testing"
	"time"

	"beaconhub/store"
)

// A state saved by the previous release holds alertsys_down's recovery
// (the flap hold, due at the cooldown's end). After the upgrade to this
// release, whose critical recoveries are never held, staff read
// "alertsys unreachable" until the old due time, up to 6 h (a review);
// it now goes at the next minute's check.
func TestACriticalRecoveryHeldBeforeTheUpgradeGoesAtOnce(t *testing.T) {
	r := newRig(t, false)
	h := func(ph string) {
		r.health(store.HealthRecord{Key: "alertsys_down", Phase: ph, At: r.clk.Now().UnixMilli(), Since: r.clk.Now().UnixMilli(), Message: "alertsys unreachable"})
		r.svc.Idle()
		r.advance(time.Minute)
	}
	h("active")
	h("resolved")
	h("active")
	// As the previous release left it at the second recovery: held.
	rec := store.HealthRecord{Key: "alertsys_down", Phase: "resolved", At: r.clk.Now().UnixMilli()}
	if _, err := r.db.ApplyHealth([]store.HealthRecord{rec}); err != nil {
		t.Fatal(err)
	}
	r.svc.mu.Lock()
	delete(r.svc.st.Active[CatHealth], "alertsys_down")
	f := r.svc.st.Flap["alertsys_down"]
	r.svc.st.Held["alertsys_down"] = heldRecovery{Due: f.end(6 * time.Hour), Msg: HealthAlert(rec), Ops: true, Window: f}
	r.svc.mu.Unlock()
	r.svc.save()
	r.restart() // the upgrade
	r.advance(10 * time.Minute)
	if got := phases(t, r.msgs("TST000-health")); got != "active resolved active resolved" {
		t.Fatalf("10 min after the upgrade, alertsys back for 11 min: staff read %q", got)
	}
}

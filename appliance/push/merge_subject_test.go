package push

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"beaconhub/store"
)

// mergeInStore moves old's records onto nu in the store as a merge does.
func mergeInStore(t *testing.T, r *rig, old, nu string) {
	t.Helper()
	if err := r.db.UpdateAssets(r.clk.Now(), func(tx *store.AssetTx) error {
		if err := tx.SetAlias(old, nu); err != nil {
			return err
		}
		_, err := tx.RenameUID(old, nu)
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// F1 was out of range and is back ("Back in range" sent for range:F1).
// F2 is out of range ("out of range" sent for range:F2). F2 is merged
// into F1: the store now holds range:F1 ACTIVE (F2's condition moved),
// push's Open[range:F1] is true, but the last message staff ever got
// about range:F1 says resolved, and nothing is sent until the reminder a
// whole cooldown later.
func TestMergeSurvivorLastHeardResolvedHearsItActive(t *testing.T) {
	r := newRig(t, false)
	r.outOfRange("F1", "11.00")
	r.advance(10 * time.Minute)
	r.sensor(sensorRec("range", "F1", "resolved", "back", r.clk.Now()))
	r.svc.Idle()
	r.advance(10 * time.Minute)
	r.outOfRange("F2", "12.00")
	r.rename("F2", "F1", false)
	conds, _ := r.db.ActiveSensorConditions()
	inStore := false
	for _, c := range conds {
		inStore = inStore || c.Key == "range:F1"
	}
	var firstActive time.Duration = -1
	for i := 0; i < 7*60; i++ {
		r.advance(time.Minute)
		if rec, _, ok := lastFor(t, r.msgs("TST000-sensors"), "range:F1"); ok && rec.Phase == PhaseActive && firstActive < 0 {
			firstActive = r.clk.Now().Sub(t0)
		}
	}
	t.Logf("range:F1 active in store after merge: %v; range:F1 messages %q; first 'active' for range:F1 at t0+%v",
		inStore, phaseLog(r.msgs("TST000-sensors"), "range:F1"), firstActive)
	if inStore && (firstActive < 0 || firstActive > 21*time.Minute) {
		t.Fatalf("range:F1 is active from t0+20m (merge) but staff's last word about range:F1 stayed 'resolved' until t0+%v", firstActive)
	}
}

// The other side of a merge: F2 is announced out of range and merged
// into F1 (not active). range:F1 then recovers: "Back in range" goes
// under range:F1 only, so the last message staff ever get about
// range:F2, the subject they were alerted on, says active forever.
func TestMergedAwaySubjectGetsALastWord(t *testing.T) {
	r := newRig(t, false)
	r.outOfRange("F2", "12.00")
	r.advance(10 * time.Minute)
	r.rename("F2", "F1", false)
	r.advance(10 * time.Minute)
	r.sensor(sensorRec("range", "F1", "resolved", "back", r.clk.Now()))
	r.svc.Idle()
	r.minutes(13 * 60)
	t.Logf("range:F2 %q; range:F1 %q", phaseLog(r.msgs("TST000-sensors"), "range:F2"), phaseLog(r.msgs("TST000-sensors"), "range:F1"))
	if rec, _, ok := lastFor(t, r.msgs("TST000-sensors"), "range:F2"); ok && rec.Phase == PhaseActive {
		t.Fatalf("condition resolved at t0+20m; 13 h later the last message about range:F2 still says active")
	}
}

// A crash right after a merge, before the worker posted the last words:
// the move of the cadence state was saved, so the next start had nothing
// to announce and range:F2 read "active" for good. The messages are in
// the outbox with that state, in one transaction.
func TestMergeLastWordsSurviveACrash(t *testing.T) {
	r := newRig(t, false)
	r.outOfRange("F2", "12.00")
	block := make(chan struct{})
	r.svc.do(func() { <-block }) // the worker is busy: nothing it is handed runs
	mergeInStore(t, r, "F2", "F1")
	r.svc.Rename("F2", "F1")
	r.svc.RenamesDone()
	db := filepath.Join(r.dir, "service.db")
	snap, err := os.ReadFile(db) // the disk as the crash leaves it
	if err != nil {
		t.Fatal(err)
	}
	r.stop() // posts from now on fail: nothing more reaches the server
	close(block)
	r.close()
	if err := os.WriteFile(db, snap, 0o600); err != nil {
		t.Fatal(err)
	}
	r.open()
	r.svc.Idle()
	msgs := r.msgs("TST000-sensors")
	if rec, _, ok := lastFor(t, msgs, "range:F2"); !ok || rec.Phase != PhaseResolved {
		t.Fatalf("merged away before a crash: range:F2 %q", phaseLog(msgs, "range:F2"))
	}
	if rec, _, ok := lastFor(t, msgs, "range:F1"); !ok || rec.Phase != PhaseActive {
		t.Fatalf("merged into F1 before a crash, still out: range:F1 %q", phaseLog(msgs, "range:F1"))
	}
}

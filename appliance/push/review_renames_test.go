package push

import (
	"fmt"
	"testing"
	"time"

	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

func writeTxID(t *testing.T, db *store.DB) int {
	t.Helper()
	var id int
	if err := db.Bolt().View(func(tx *bolt.Tx) error { id = tx.ID(); return nil }); err != nil {
		t.Fatal(err)
	}
	return id
}

// A remint apply of many legacy sensors with active conditions commits
// and the process dies before push's Rename ran (the case followRenames
// is for). At the next start reconcile follows each rename in one save:
// a full-state write per renamed uid made the start quadratic (600 uids,
// 602 write transactions; a review).
func TestReconcileFollowingRenamesSavesOnce(t *testing.T) {
	const n = 600
	r := newRig(t, false)
	for i := 0; i < n; i++ {
		uid := fmt.Sprintf("LEGACY-C30000%06X", i)
		r.svc.OnSensor(sensorRec("calibration", uid, "active", "Calibration expired", r.clk.Now()))
		if err := r.db.Update(func(tx *bolt.Tx) error {
			return store.ApplySensorConditions(tx, []store.SensorConditionRecord{sensorRec("calibration", uid, "active", "Calibration expired", r.clk.Now())})
		}); err != nil {
			t.Fatal(err)
		}
	}
	r.svc.Idle()
	r.close()
	db := reopenForCrash(t, r)
	if err := db.UpdateAssets(r.clk.Now(), func(tx *store.AssetTx) error {
		for i := 0; i < n; i++ {
			old, nu := fmt.Sprintf("LEGACY-C30000%06X", i), fmt.Sprintf("SEN-H1-%d", i+1)
			if err := tx.SetAlias(old, nu); err != nil {
				return err
			}
			if _, err := tx.RenameUID(old, nu); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	before := writeTxID(t, db)
	_ = db.Close()
	start := time.Now()
	r.open()
	r.svc.Idle()
	took := time.Since(start)
	writes := writeTxID(t, r.db) - before
	r.svc.mu.Lock()
	moved := len(r.svc.st.Active[CatCalibration])
	_, stillOld := r.svc.st.Active[CatCalibration]["calibration:LEGACY-C30000000000"]
	r.svc.mu.Unlock()
	t.Logf("start after the crash: %d write transactions, %v, %d calibration keys active (old key left: %v)", writes, took, moved, stillOld)
	if writes > 10 {
		t.Errorf("reconcile wrote the store %d times for %d renamed uids (each a full push-state save); the commit saves once", writes, n)
	}
}

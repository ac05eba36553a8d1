package push

import (
	"testing"
	"time"

	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// Five fridges went out of range and the process died before push heard
// them. At the start reconcile announces them one by one; the process
// dies again while the third is being posted (a boot loop, a watchdog,
// power). What was posted is saved as it goes, so the next start repeats
// only the one in flight; saved only at reconcile's end, it repeated
// everything it had sent (a review).
func TestACrashDuringReconcileDoesNotRepeatWhatItSent(t *testing.T) {
	front := &holdFront{holdAt: 3, reached: make(chan struct{}), release: make(chan struct{})}
	r, target := frontedRig(t, front)
	front.target = target
	r.close()
	db := reopenForCrash(t, r)
	at := r.clk.Now()
	var recs []store.SensorConditionRecord
	for _, f := range []string{"F1", "F2", "F3", "F4", "F5"} {
		recs = append(recs, sensorRec("range", f, "active", "temperature 12.00 °C outside 2..8", at))
	}
	if err := db.Update(func(tx *bolt.Tx) error { return store.ApplySensorConditions(tx, recs) }); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	front.mu.Lock()
	front.armed = true
	front.mu.Unlock()
	opened := make(chan struct{})
	go func() { r.open(); close(opened) }()
	select {
	case <-front.reached:
	case <-time.After(10 * time.Second):
		t.Fatal("the third publish never came")
	}
	// The crash: what is committed now is what the next start finds.
	dir2 := crashSnapshot(t, r)
	before := subjectsPhases(t, r.msgs("TST000-sensors"))
	close(front.release)
	<-opened
	r.close()
	r2 := &rig{t: t, dir: dir2, clk: r.clk, ntfy: r.ntfy, live: r.live, tr: r.tr}
	r2.open()
	r2.svc.Idle()
	all := r.msgs("TST000-sensors")
	t.Logf("sent before the crash: %s; everything: %s", before, subjectsPhases(t, all))
	for _, s := range []string{"range:F1", "range:F2"} {
		if n := len(activeOf(all, s)); n != 1 {
			t.Errorf("%s announced %d times: posted before the crash, announced again after it", s, n)
		}
	}
}

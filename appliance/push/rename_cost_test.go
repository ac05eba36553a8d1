// Regression tests from a second review of the last words push owes
// across uid changes: each comment tells what went wrong before the fix
// (past behaviour in the present tense); Test...Check ones checked
// behaviour that was right and must stay so.

package push

import (
	"fmt"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// txid is the id of the last committed write transaction of r's store.
func txid(r *rig) int {
	var id int
	_ = r.db.Bolt().View(func(tx *bolt.Tx) error { id = tx.ID(); return nil })
	return id
}

// A remint apply of n legacy assets on a site with many conditions:
// each uid change is now two jobs on the staff worker (PrepareRename,
// then Rename, "a no-op then"), and each writes the whole cadence state
// (rename's deferred save), the second with nothing moved. Before the
// fix the move ran on the asset goroutine; now 2n full-state commits
// run on the worker an SOS waits on.
func TestARenameBatchDoesNotWriteTheWholeStatePerUIDTwice(t *testing.T) {
	r := newRig(t, false)
	const conds, n = 2000, 200
	for i := 0; i < conds; i++ {
		r.svc.OnSensor(sensorRec("range", fmt.Sprintf("F%04d", i), "active", "temperature 12.00 °C outside 2..8", r.clk.Now()))
	}
	r.svc.Idle()
	r.advance(10 * time.Minute)
	for i := 0; i < n; i++ {
		mergeInStore(t, r, fmt.Sprintf("F%04d", i), fmt.Sprintf("SEN-%04d", i))
	}
	before := txid(r)
	start := time.Now()
	for i := 0; i < n; i++ {
		r.svc.PrepareRename(fmt.Sprintf("F%04d", i), fmt.Sprintf("SEN-%04d", i))
	}
	for i := 0; i < n; i++ {
		r.svc.Rename(fmt.Sprintf("F%04d", i), fmt.Sprintf("SEN-%04d", i))
	}
	r.svc.RenamesDone()
	r.svc.Idle()
	took := time.Since(start)
	writes := txid(r) - before
	t.Logf("%d renames over %d conditions: %d store commits on the push worker, %v of worker time", n, conds, writes, took)
	if writes > n+10 {
		t.Fatalf("a batch of %d uid changes cost %d full-state commits on the staff worker (%v), an SOS waits behind them", n, writes, took)
	}
}

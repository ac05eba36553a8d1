// Regression tests from a review of the moved-condition marks: each
// comment tells what went wrong before the fix.

package store

import (
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

type revRig struct {
	t  *testing.T
	db *DB
}

func newRevRig(t *testing.T) *revRig { return &revRig{t, openTestDB(t)} }

func (r *revRig) apply(recs ...SensorConditionRecord) {
	r.t.Helper()
	if err := r.db.Update(func(tx *bolt.Tx) error { return ApplySensorConditions(tx, recs) }); err != nil {
		r.t.Fatal(err)
	}
}

func (r *revRig) rename(old, nu string) {
	r.t.Helper()
	if err := r.db.UpdateAssets(time.UnixMilli(5000), func(tx *AssetTx) error {
		if err := tx.SetAlias(old, nu); err != nil {
			return err
		}
		_, err := tx.RenameUID(old, nu)
		return err
	}); err != nil {
		r.t.Fatal(err)
	}
}

func (r *revRig) active() map[string]int64 {
	r.t.Helper()
	cs, err := r.db.ActiveSensorConditions()
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[string]int64{}
	for _, c := range cs {
		out[c.Key] = c.Since
	}
	return out
}

func (r *revRig) marks() map[string]string {
	out := map[string]string{}
	_ = r.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bSensorCondMoved)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error { out[string(k)] = string(v); return nil })
	})
	return out
}

var revSeq uint64

func revRec(subject, phase string, at, since int64) SensorConditionRecord {
	revSeq++
	return SensorConditionRecord{Seq: revSeq, Key: "range:" + subject, Kind: "range", Subject: subject, Phase: phase, At: at, Since: since}
}

// Finding 1: an activation under a former uid is redirected to the current
// key (73baf32) but not marked; the monitor's recovery under the same
// former uid (still before it follows the rename) then ends nothing.
func TestMoveMarksRedirectedActivationThenLateRecoveryUnderFormerUID(t *testing.T) {
	r := newRevRig(t)
	r.rename("F2", "N2") // remint, no condition yet
	r.apply(revRec("F2", HealthActive, 1000, 1000))
	if a := r.active(); a["range:N2"] != 1000 {
		t.Fatalf("activation not redirected: %v", a)
	}
	r.apply(revRec("F2", HealthResolved, 2000, 1000))
	if a := r.active(); len(a) != 0 {
		t.Errorf("recovery under the former uid left the redirected activation active: %v", a)
	}
}

// Same, both records in one batch (one group commit).
func TestMoveMarksRedirectedActivationAndRecoveryInOneBatch(t *testing.T) {
	r := newRevRig(t)
	r.rename("F2", "N2")
	r.apply(revRec("F2", HealthActive, 1000, 1000), revRec("F2", HealthResolved, 2000, 1000))
	if a := r.active(); len(a) != 0 {
		t.Errorf("batch [active F2, resolved F2] after F2->N2 left %v active", a)
	}
}

// Finding 2: chain A->B->C (remint then merge) before the monitor follows:
// a late recovery under A no longer ends the moved condition (the mark at
// range:C names range:B); before 3d42215 the start matched.
func TestMoveMarksChainLateRecoveryUnderFirstUID(t *testing.T) {
	r := newRevRig(t)
	r.apply(revRec("A", HealthActive, 1000, 1000))
	r.rename("A", "B")
	r.rename("B", "C")
	r.apply(revRec("A", HealthResolved, 2000, 1000))
	if a := r.active(); len(a) != 0 {
		t.Errorf("late recovery under A after A->B->C left %v active", a)
	}
}

// Finding 3: marks left behind forever: a chain leaves range:B's mark; a
// merge whose survivor had its own drops the source's condition but not
// its mark. Neither key can be written again (B and M are former uids).
func TestMoveMarksMarksLeftBehind(t *testing.T) {
	r := newRevRig(t)
	r.apply(revRec("A", HealthActive, 1000, 1000))
	r.rename("A", "B")
	r.rename("B", "C")
	r.apply(revRec("C", HealthResolved, 2000, 1000)) // monitor followed; ends it
	r.apply(revRec("S", HealthActive, 1000, 1000), revRec("X", HealthActive, 1000, 1000))
	r.rename("X", "M") // M's condition is a moved one (mark M->X)
	r.rename("M", "S") // merge: S's own wins, M's dropped
	r.apply(revRec("S", HealthResolved, 3000, 1000))
	if a := r.active(); len(a) != 0 {
		t.Fatalf("setup: %v", a)
	}
	if m := r.marks(); len(m) != 0 {
		t.Errorf("no condition active, marks left: %v", m)
	}
}

// Low: an update of the moved condition decided under the former uid is
// dropped (the key holds the moved condition itself, not a survivor's).
func TestMoveMarksUpdateUnderFormerUIDOfMovedCondition(t *testing.T) {
	r := newRevRig(t)
	r.apply(revRec("F", HealthActive, 1000, 1000))
	r.rename("F", "N")
	up := revRec("F", HealthActive, 9000, 1000)
	up.Message = "temperature 14"
	r.apply(up)
	var at int64
	cs, _ := r.db.ActiveSensorConditions()
	for _, c := range cs {
		if c.Key == "range:N" {
			at = c.At
		}
	}
	if at != 9000 {
		t.Errorf("update under the former uid of the moved condition dropped: At=%d", at)
	}
}

// A merge M->S where only the source had the condition: moved to range:S
// and marked. Before the sensor monitor follows the merge, S's own
// reading starts S's own condition, over the moved one; the monitor's
// late recovery under M then ended S's own condition (the mark was kept:
// a review), and the fridge out of range had none until a restart.
func TestSurvivorsOwnStartOverAMovedConditionIsNotEndedByTheSourcesRecovery(t *testing.T) {
	r := newRevRig(t)
	r.apply(revRec("M", HealthActive, 1000, 1000))
	r.rename("M", "S")
	r.apply(revRec("S", HealthActive, 6000, 6000))
	r.apply(revRec("M", HealthResolved, 7000, 1000))
	if a := r.active(); a["range:S"] != 6000 {
		t.Fatalf("a late recovery of the source's condition ended the survivor's own (since 6000): active %v, marks %v", a, r.marks())
	}
	if m := r.marks(); len(m) != 0 {
		t.Errorf("marks left: %v", m)
	}

	// An update of the moved condition keeps its start, and its mark.
	r.apply(revRec("A", HealthActive, 1000, 1000))
	r.rename("A", "B")
	r.apply(revRec("B", HealthActive, 2000, 1000))
	r.apply(revRec("A", HealthResolved, 3000, 1000))
	if a := r.active(); a["range:B"] != 0 {
		t.Errorf("the moved condition, updated under its new key, was not ended by its recovery under the former uid: active %v", a)
	}
}

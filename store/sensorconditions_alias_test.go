package store

import (
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A recovery decided under a former uid ends the condition the rename
// moved (same start), not a merge survivor's own (another start).
func TestAResolvedRecordUnderAFormerUIDEndsTheMovedCondition(t *testing.T) {
	db := openTestDB(t)
	apply := func(recs ...SensorConditionRecord) {
		t.Helper()
		if err := db.Update(func(tx *bolt.Tx) error { return ApplySensorConditions(tx, recs) }); err != nil {
			t.Fatal(err)
		}
	}
	merge := func(old, nu string) {
		t.Helper()
		if err := db.UpdateAssets(time.UnixMilli(5000), func(tx *AssetTx) error {
			if err := tx.SetAlias(old, nu); err != nil {
				return err
			}
			_, err := tx.RenameUID(old, nu)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	active := func() map[string]int64 {
		t.Helper()
		cs, err := db.ActiveSensorConditions()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, c := range cs {
			out[c.Key] = c.Since
		}
		return out
	}
	rec := func(subject, phase string, since int64) SensorConditionRecord {
		return SensorConditionRecord{Key: "range:" + subject, Kind: "range", Subject: subject, Phase: phase, At: since, Since: since}
	}

	// A remint: the moved condition ends.
	apply(rec("F2", HealthActive, 1000))
	merge("F2", "N2")
	apply(rec("F2", HealthResolved, 1000))
	if a := active(); len(a) != 0 {
		t.Fatalf("a recovery under the former uid left %v active", a)
	}

	// A merge whose survivor had its own, begun in the same millisecond:
	// the survivor's stays.
	apply(rec("S2", HealthActive, 4000), rec("M2", HealthActive, 4000))
	merge("M2", "S2")
	apply(rec("M2", HealthResolved, 4000))
	if a := active(); a["range:S2"] != 4000 {
		t.Fatalf("a merge source's recovery ended the survivor's own condition of the same start: %v", a)
	}

	// A merge whose survivor had its own: the survivor's stays.
	apply(rec("S1", HealthActive, 2000), rec("M1", HealthActive, 3000))
	merge("M1", "S1")
	apply(rec("M1", HealthResolved, 3000))
	if a := active(); a["range:S1"] != 2000 {
		t.Fatalf("a merge source's recovery ended the survivor's own condition: %v", a)
	}
}

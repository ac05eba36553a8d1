package store

import (
	"testing"

	bolt "go.etcd.io/bbolt"
)

// Ingest ops may be re-run with their batch: applying the same
// transitions twice must leave one copy of each.
func TestSensorConditionsIdempotent(t *testing.T) {
	db := openTestDB(t)
	if cs, err := db.ActiveSensorConditions(); err != nil || len(cs) != 0 {
		t.Fatalf("fresh store: %v %v", cs, err)
	}
	recs := []SensorConditionRecord{
		{Seq: 1, Key: "range:S-1", Kind: "range", Subject: "S-1", Phase: HealthActive, At: 100, Since: 100},
		{Seq: 2, Key: "range:S-1", Kind: "range", Subject: "S-1", Phase: HealthResolved, At: 100, Since: 100},
		{Seq: 3, Key: "battery:S-1", Kind: "battery", Subject: "S-1", Phase: HealthActive, At: 100, Since: 100},
	}
	for range 2 {
		if err := db.Update(func(tx *bolt.Tx) error { return ApplySensorConditions(tx, recs) }); err != nil {
			t.Fatal(err)
		}
	}
	all, err := db.SensorConditionRecords("", 10)
	if err != nil || len(all) != 3 {
		t.Fatalf("records %+v %v", all, err)
	}
	rest, _ := db.SensorConditionRecords(all[0].Cursor, 10)
	if len(rest) != 2 || rest[0].Seq != 2 {
		t.Fatalf("after cursor %+v", rest)
	}
	active, _ := db.ActiveSensorConditions()
	if len(active) != 1 || active[0].Key != "battery:S-1" {
		t.Fatalf("active %+v", active)
	}
	if seq, _ := db.LastSensorConditionSeq(); seq != 3 {
		t.Fatalf("seq %d", seq)
	}
	recs2 := []SensorConditionRecord{{Seq: 4, Key: "range:S-2", Kind: "range", Subject: "S-2", Phase: HealthActive, At: 200, Since: 200}}
	err = db.Update(func(tx *bolt.Tx) error {
		if err := ApplySensorConditions(tx, recs2); err != nil {
			return err
		}
		n, err := DeleteSensorConditionRecordsBefore(tx, 150)
		if n != 3 {
			t.Errorf("deleted %d records, want 3", n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := db.SensorConditionRecords("", 10); len(left) != 1 || left[0].Seq != 4 {
		t.Fatalf("left %+v", left)
	}
	if active, _ := db.ActiveSensorConditions(); len(active) != 2 {
		t.Fatalf("active set changed by the trim: %+v", active)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return PutSensorInterval(tx, "S-1", 600) }); err != nil {
		t.Fatal(err)
	}
	if iv, _ := db.SensorIntervals(); iv["S-1"] != 600 {
		t.Fatalf("intervals %v", iv)
	}
}

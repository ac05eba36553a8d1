package store

import (
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestRenameMovesConditionState: active sensor and fleet conditions and
// the sensor interval follow a rename; on a merge the survivor's own
// records win; MAC-keyed conditions of unassigned devices are left alone
// by the uid walk (they must not be adopted into legacy beacons).
func TestRenameMovesConditionState(t *testing.T) {
	db := openTestDB(t)
	err := db.Update(func(tx *bolt.Tx) error {
		if err := ApplySensorConditions(tx, []SensorConditionRecord{
			{Seq: 1, Key: "range:OLD-1", Kind: "range", Subject: "OLD-1", Phase: HealthActive, At: 10, Since: 10, Message: "old range"},
			{Seq: 6, Key: "calibration:OLD-1", Kind: "calibration", Subject: "OLD-1", Phase: HealthActive, At: 10, Since: 10, Message: "Calibration expired: OLD-1 (MAC C30000000A05, type sensor)"},
			{Seq: 2, Key: "battery:OLD-1", Kind: "battery", Subject: "OLD-1", Phase: HealthActive, At: 11, Since: 11, Message: "old battery"},
			{Seq: 3, Key: "battery:NEW-1", Kind: "battery", Subject: "NEW-1", Phase: HealthActive, At: 12, Since: 12, Message: "survivor battery"},
			{Seq: 4, Key: "range:C30000000A01", Kind: "range", Subject: "C30000000A01", Phase: HealthActive, At: 13, Since: 13},
			{Seq: 5, Key: "range:XOLD-1", Kind: "range", Subject: "XOLD-1", Phase: HealthActive, At: 14, Since: 14},
		}); err != nil {
			return err
		}
		if err := PutSensorInterval(tx, "OLD-1", 60); err != nil {
			return err
		}
		return PutSensorInterval(tx, "NEW-2", 30)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ApplyHealth([]HealthRecord{{Key: "fleet:stale:OLD-1", Phase: HealthActive, At: 20, Since: 20, Message: "stale"},
		{Key: "mqtt_down", Phase: HealthActive, At: 21, Since: 21}}); err != nil {
		t.Fatal(err)
	}

	var moved map[string]int
	var uids []string
	err = db.UpdateAssets(time.Now(), func(x *AssetTx) error {
		var err error
		if moved, err = x.RenameUID("OLD-1", "NEW-1"); err != nil {
			return err
		}
		return x.EachKeyedUID(func(bucket, uid string) error {
			if bucket == RewriterSensorConditions || bucket == RewriterHealthConditions || bucket == RewriterSensorIntervals {
				uids = append(uids, bucket+"/"+uid)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if moved[RewriterSensorConditions] != 3 || moved[RewriterHealthConditions] != 1 || moved[RewriterSensorIntervals] != 1 {
		t.Fatalf("moved %v", moved)
	}
	active, _ := db.ActiveSensorConditions()
	got := map[string]SensorCondition{}
	for _, c := range active {
		got[c.Key] = c
	}
	// A text naming the asset names it as it is now (calibration's went
	// out with the former uid in every digest: a review).
	if got["calibration:NEW-1"].Message != "Calibration expired: NEW-1 (MAC C30000000A05, type sensor)" {
		t.Fatalf("calibration text after rename: %q", got["calibration:NEW-1"].Message)
	}
	if len(got) != 5 || got["range:NEW-1"].Subject != "NEW-1" || got["range:NEW-1"].Message != "old range" ||
		got["battery:NEW-1"].Message != "survivor battery" || got["range:XOLD-1"].Subject != "XOLD-1" {
		t.Fatalf("sensor conditions after rename: %+v", active)
	}
	hs, _ := db.ActiveHealth()
	keys := map[string]bool{}
	for _, h := range hs {
		keys[h.Key] = true
	}
	if !keys["fleet:stale:NEW-1"] || keys["fleet:stale:OLD-1"] || !keys["mqtt_down"] {
		t.Fatalf("health after rename: %+v", hs)
	}
	iv, _ := db.SensorIntervals()
	if iv["NEW-1"] != 60 || iv["OLD-1"] != 0 || iv["NEW-2"] != 30 {
		t.Fatalf("intervals %v", iv)
	}
	for _, u := range uids {
		if u == RewriterSensorConditions+"/C30000000A01" {
			t.Fatalf("MAC-keyed condition offered for adoption: %v", uids)
		}
	}
}

package store

import (
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestUpgradeRewritesMACKeys builds a pre-8.0 database (schema 3: beacon
// rows without index, history and last-seen keyed by MACs), reopens it and
// checks the 8.0 step: every row indexed, every MAC key moved to a uid,
// unowned MACs adopted by LEGACY- beacons, and the audit clean.
func TestUpgradeRewritesMACKeys(t *testing.T) {
	db, path := regOpen(t)
	err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range []Beacon{
			{ID: 1, AssetUID: "SEN-A1-1", MAC: "C30000000A01", Type: "sensor", Active: true},
			{ID: 2, AssetUID: "c3:00:00:00:0a:02", MAC: "c3:00:00:00:0a:02", Type: "sensor", Active: true}, // keyed by its MAC
			{ID: 3, MAC: "C30000000A03", Type: "watch", Active: false},
		} {
			if err := putJSON(tx.Bucket(bBeacons), itob(b.ID), &b); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bBeacons).SetSequence(3); err != nil {
			return err
		}
		g := Gateway{ID: 1, MAC: "AC233FA0B1C2", Name: "gw"}
		if err := putJSON(tx.Bucket(bGateways), itob(1), &g); err != nil {
			return err
		}
		_, err := PutReadings(tx, []Reading{
			{UID: "C30000000A01", Metric: MetricTemperature, TS: 10, Value: 1},      // owned by SEN-A1-1
			{UID: "c3:00:00:00:0a:02", Metric: MetricTemperature, TS: 11, Value: 2}, // the MAC-named row
			{UID: "C30000000A09", Metric: MetricHumidity, TS: 12, Value: 3},         // nobody's
			{UID: "SEN-A1-1", Metric: MetricTemperature, TS: 20, Value: 4},
		})
		if err != nil {
			return err
		}
		return PutLastSeen(map[string]int64{"C30000000A09": 12, "gw:AC233FA0B1C2": 5})(tx)
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	writeSchemaVersion(t, path, 3)
	db, err = Open(path, OpenOptions{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	if f, err := db.AuditMACKeys(); err != nil || len(f) != 0 {
		t.Fatalf("audit after upgrade = %+v %v", f, err)
	}
	count := func(uid string) int {
		n := 0
		_ = db.ViewAssets(func(x *AssetTx) error { n, _ = x.HistoryCount(uid, 0, 1<<62); return nil })
		return n
	}
	if count("SEN-A1-1") != 2 || count("LEGACY-C30000000A02") != 1 || count("LEGACY-C30000000A09") != 1 {
		t.Errorf("history counts: %d %d %d", count("SEN-A1-1"), count("LEGACY-C30000000A02"), count("LEGACY-C30000000A09"))
	}
	bs, _ := db.ListBeacons()
	if len(bs) != 4 {
		t.Fatalf("beacons = %+v", bs)
	}
	if bs[1].AssetUID != "LEGACY-C30000000A02" || bs[1].MAC != "C30000000A02" {
		t.Errorf("MAC-named row = %+v", bs[1])
	}
	if bs[2].AssetUID != "LEGACY-C30000000A03" || bs[2].MAC != "" {
		t.Errorf("inactive row = %+v", bs[2])
	}
	if bs[3].AssetUID != "LEGACY-C30000000A09" || bs[3].Type != "unknown" || bs[3].MAC != "C30000000A09" {
		t.Errorf("adopted row = %+v", bs[3])
	}
	seen, _ := db.LoadLastSeen()
	if seen["LEGACY-C30000000A09"] != 12 || seen["gw:AC233FA0B1C2"] != 5 {
		t.Errorf("last seen = %v", seen)
	}
	_ = db.ViewAssets(func(x *AssetTx) error {
		for _, mac := range []string{"C30000000A01", "C30000000A02", "C30000000A09"} {
			if ref, held, _ := x.DeviceHolder(mac); !held || ref.Kind != KindBeacon {
				t.Errorf("%s held = %v %+v", mac, held, ref)
			}
		}
		if ref, ok := x.UIDOwner("GW-AC233FA0B1C2"); ok {
			t.Errorf("unexpected uid %+v", ref)
		}
		if ref, ok := x.UIDOwner("LEGACY-AC233FA0B1C2"); !ok || ref.Kind != KindGateway {
			t.Errorf("gateway uid = %+v %v", ref, ok)
		}
		return nil
	})
}

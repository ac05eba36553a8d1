package store

import (
	"errors"
	"math"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func regOpen(t *testing.T) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "service.db")
	db, err := Open(path, OpenOptions{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db, path
}

var regNow = time.Date(2026, 4, 5, 6, 7, 8, 0, time.UTC)

func regUpdate(t *testing.T, db *DB, fn func(t *AssetTx) error) {
	t.Helper()
	if err := db.UpdateAssets(regNow, fn); err != nil {
		t.Fatal(err)
	}
}

func regPut(t *testing.T, db *DB, uid string, metric uint8, ts ...int64) {
	t.Helper()
	var rs []Reading
	for _, x := range ts {
		rs = append(rs, Reading{UID: uid, Metric: metric, TS: x, Value: float64(x) / 10})
	}
	if err := db.Update(func(tx *bolt.Tx) error { _, err := PutReadings(tx, rs); return err }); err != nil {
		t.Fatal(err)
	}
}

func TestAttachDetachKeepOneOpenAssignment(t *testing.T) {
	db, _ := regOpen(t)
	regUpdate(t, db, func(x *AssetTx) error {
		b := &Beacon{Name: "a", Type: "sensor", MAC: "C30000000A01", Active: true}
		if err := x.insertBeacon(b, "created"); err != nil {
			return err
		}
		if b.AssetUID != "LEGACY-C30000000A01" {
			t.Errorf("uid = %s", b.AssetUID)
		}
		return nil
	})
	// A refused attach fails the whole transaction: no orphan record.
	err := db.UpdateAssets(regNow, func(x *AssetTx) error {
		return x.insertBeacon(&Beacon{Name: "b", Type: "sensor", MAC: "C30000000A01", Active: true}, "created")
	})
	if !errors.Is(err, ErrDeviceBusy) {
		t.Errorf("second attach of a busy device: %v", err)
	}
	if bs, _ := db.ListBeacons(); len(bs) != 1 {
		t.Errorf("beacons = %+v", bs)
	}
	regUpdate(t, db, func(x *AssetTx) error {
		if _, err := x.Attach("C30000000A01", KindGateway, AssetRef{KindGateway, 1}, x.Now, "created"); !errors.Is(err, ErrDeviceKind) {
			t.Errorf("kind mismatch: %v", err)
		}
		if err := x.Detach("C30000000A01", x.Now, "replaced", DeviceInCalibration); err != nil {
			return err
		}
		d, err := x.Device("C30000000A01")
		if err != nil {
			return err
		}
		if d.Status != DeviceInCalibration || d.AssignmentID != 0 {
			t.Errorf("device after detach = %+v", d)
		}
		if _, err := x.Attach("C30000000A01", KindBeacon, AssetRef{KindBeacon, 1}, x.Now, "replaced"); !errors.Is(err, ErrDeviceInCalibration) {
			t.Errorf("attach in calibration: %v", err)
		}
		as, err := x.AssignmentsOf(AssetRef{KindBeacon, 1})
		if err != nil {
			return err
		}
		if len(as) != 1 || as[0].Open() || as[0].EndReason != "replaced" || as[0].AssetID != 1 {
			t.Errorf("assignments = %+v", as)
		}
		return nil
	})
}

func TestUIDIndexSeqAndAliases(t *testing.T) {
	db, _ := regOpen(t)
	regUpdate(t, db, func(x *AssetTx) error {
		if err := x.ClaimUID("LEGACY-AABBCCDDEEFF", AssetRef{KindBeacon, 1}); err != nil {
			return err
		}
		if err := x.ClaimUID("LEGACY-AABBCCDDEEFF", AssetRef{KindBeacon, 2}); !errors.Is(err, ErrDuplicate) {
			t.Errorf("claim taken uid: %v", err)
		}
		if got := x.UniqueLegacyUID("AABBCCDDEEFF"); got != "LEGACY-AABBCCDDEEFF-2" {
			t.Errorf("unique legacy = %s", got)
		}
		for want := uint64(1); want <= 3; want++ {
			if n, _ := x.NextUIDSeq("SEN|A1"); n != want {
				t.Errorf("seq = %d, want %d", n, want)
			}
		}
		if x.PeekUIDSeq("SEN|A1") != 3 || x.PeekUIDSeq("SEN|A2") != 0 {
			t.Error("peek")
		}
		_ = x.SetAlias("LEGACY-1", "SEN-A1-1")
		_ = x.SetAlias("SEN-A1-1", "SEN-A1-2")
		if got := x.Alias("LEGACY-1"); got != "SEN-A1-2" {
			t.Errorf("alias chain = %s", got)
		}
		return nil
	})
}

func TestLocationPath(t *testing.T) {
	db, _ := regOpen(t)
	regUpdate(t, db, func(x *AssetTx) error {
		root := &Location{Name: "Hospital", Code: "H1"}
		_ = x.PutLocation(root)
		wing := &Location{Name: "Wing", Code: "W2", ParentID: root.ID}
		_ = x.PutLocation(wing)
		p, err := x.LocationPath(wing.ID)
		if err != nil || len(p) != 2 || p[0].Code != "H1" || p[1].Code != "W2" {
			t.Errorf("path = %+v %v", p, err)
		}
		// A corrupt loop is bounded, not endless.
		root.ParentID = wing.ID
		_ = x.PutLocation(root)
		if _, err := x.LocationPath(wing.ID); err == nil {
			t.Error("loop not detected")
		}
		return nil
	})
}

func TestRenameUIDEverywhereAndHistoryViews(t *testing.T) {
	db, _ := regOpen(t)
	regPut(t, db, "LEGACY-C30000000A01", MetricTemperature, 100, 200, 300)
	regPut(t, db, "LEGACY-C30000000A01", MetricBattery, 150, 400)
	regPut(t, db, "SEN-A1-1", MetricTemperature, 50)
	if err := db.Update(PutLastSeen(map[string]int64{"LEGACY-C30000000A01": 400, "SEN-A1-1": 50})); err != nil {
		t.Fatal(err)
	}
	regUpdate(t, db, func(x *AssetTx) error {
		if last, ok, err := x.HistoryLast("LEGACY-C30000000A01"); err != nil || !ok || last != 400 {
			t.Errorf("last = %d %v %v", last, ok, err)
		}
		if n, _ := x.HistoryCount("LEGACY-C30000000A01", 0, 201); n != 3 {
			t.Errorf("count ≤ 200 = %d", n)
		}
		c, err := x.CountUID("LEGACY-C30000000A01")
		if err != nil || c[RewriterHistory] != 5 || c[RewriterLastSeen] != 1 {
			t.Errorf("counts = %v %v", c, err)
		}
		moved, err := x.RenameUID("LEGACY-C30000000A01", "SEN-A1-1")
		if err != nil || moved[RewriterHistory] != 5 || moved[RewriterLastSeen] != 1 {
			t.Errorf("moved = %v %v", moved, err)
		}
		if n, _ := x.HistoryCount("SEN-A1-1", 0, math.MaxInt64); n != 6 {
			t.Errorf("merged count = %d", n)
		}
		if n, _ := x.DeleteHistoryThrough("SEN-A1-1", 150); n != 3 {
			t.Errorf("deleted = %d", n)
		}
		return nil
	})
	seen, _ := db.LoadLastSeen()
	if _, ok := seen["LEGACY-C30000000A01"]; ok || seen["SEN-A1-1"] != 400 {
		t.Errorf("last seen = %v", seen)
	}
}

func TestNormalizeMAC(t *testing.T) {
	for in, want := range map[string]string{"aabbccddeeff": "AABBCCDDEEFF", "AA:BB:CC:DD:EE:FF": "AABBCCDDEEFF", "aa-bb-cc-dd-ee-ff": "AABBCCDDEEFF"} {
		if got, ok := NormalizeMAC(in); !ok || got != want {
			t.Errorf("%s -> %s %v", in, got, ok)
		}
	}
	for _, bad := range []string{"", "AABBCCDDEEF", "AABBCCDDEEFG", "AA:BB-CC:DD:EE:FF", "LEGACY-AABBCCDDEEFF", "AABBCCDDEEFF0"} {
		if _, ok := NormalizeMAC(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
}

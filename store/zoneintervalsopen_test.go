package store

import (
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// After a merge renumbers two beacons' open intervals by entry time, the
// engine's close (by enter time) must still hit the loser's interval and
// leave the winner's open; the start-up sweep closes what is left.
func TestCloseZoneIntervalEnteredAfterMerge(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "z.db"), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		if err := AppendZoneInterval(tx, "WCH-OLD", &ZoneInterval{ZoneID: 1, Enter: 100}); err != nil {
			return err
		}
		if err := AppendZoneInterval(tx, "WCH-NEW", &ZoneInterval{ZoneID: 2, Enter: 50, Leave: 80}); err != nil {
			return err
		}
		if err := AppendZoneInterval(tx, "WCH-NEW", &ZoneInterval{ZoneID: 3, Enter: 200}); err != nil {
			return err
		}
		if _, err := renameZoneIntervals(tx, "WCH-OLD", "WCH-NEW"); err != nil {
			return err
		}
		for range 2 { // idempotent
			if err := CloseZoneIntervalEntered(tx, "WCH-NEW", 100, 300); err != nil {
				return err
			}
		}
		return CloseZoneIntervalEntered(tx, "WCH-NEW", 999, 300) // none: no-op
	}); err != nil {
		t.Fatal(err)
	}
	ivs, _, err := db.ZoneIntervals("WCH-NEW", ZoneCursor{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(ivs) != 3 || ivs[0].Enter != 200 || ivs[0].Leave != 0 || ivs[1].Enter != 100 || ivs[1].Leave != 300 || ivs[2].Leave != 80 {
		t.Fatalf("intervals %+v", ivs)
	}
	var n int
	if err := db.Update(func(tx *bolt.Tx) error {
		n, err = CloseOpenZoneIntervals(tx, 150) // before its enter: clamped
		return err
	}); err != nil {
		t.Fatal(err)
	}
	ivs, _, _ = db.ZoneIntervals("WCH-NEW", ZoneCursor{}, 10)
	if n != 1 || ivs[0].Leave != 200 || ivs[1].Leave != 300 {
		t.Fatalf("closed %d: %+v", n, ivs)
	}
}

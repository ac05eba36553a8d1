package store

import (
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func appendIntervals(t *testing.T, db *DB, uid string, from, n int) {
	t.Helper()
	if err := db.Update(func(tx *bolt.Tx) error {
		for i := from; i < from+n; i++ {
			iv := &ZoneInterval{ZoneID: uint64(i%5 + 1), Zone: "Z", Enter: int64(i) * 1000, Leave: int64(i)*1000 + 500}
			if err := AppendZoneInterval(tx, uid, iv); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// Paging must neither repeat nor skip an interval when new ones arrive
// between pages.
func TestZoneIntervalPagingIsStableUnderInserts(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "z.db"), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	appendIntervals(t, db, "WCH-A1-1", 1, 75)
	seen := map[uint64]int{}
	var cur ZoneCursor
	pages := 0
	for {
		items, next, err := db.ZoneIntervals("WCH-A1-1", cur, 30)
		if err != nil {
			t.Fatal(err)
		}
		for i, iv := range items {
			seen[iv.Ordinal]++
			if i > 0 && iv.Ordinal >= items[i-1].Ordinal {
				t.Fatalf("not newest first: %v", items)
			}
		}
		pages++
		if pages == 1 {
			appendIntervals(t, db, "WCH-A1-1", 76, 5) // arrive between pages
		}
		if next == nil {
			break
		}
		parsed, err := ParseZoneCursor(next.String())
		if err != nil || parsed != *next {
			t.Fatalf("cursor %q does not round-trip: %v", next.String(), err)
		}
		cur = parsed
	}
	if pages != 3 || len(seen) != 75 {
		t.Fatalf("pages %d, distinct %d, want 3 and 75", pages, len(seen))
	}
	for ord := uint64(1); ord <= 75; ord++ {
		if seen[ord] != 1 {
			t.Fatalf("ordinal %d seen %d times", ord, seen[ord])
		}
	}
	// A bare offset is an offset into the list as it is now (80 intervals).
	items, next, err := db.ZoneIntervals("WCH-A1-1", ZoneCursor{Offset: 30}, 10)
	if err != nil || len(items) != 10 || items[0].Ordinal != 50 || next == nil || next.Offset != 40 || next.Anchor != 80 {
		t.Fatalf("bare offset: %v %+v %v", items, next, err)
	}
	// Past the end: empty and exhausted.
	items, next, _ = db.ZoneIntervals("WCH-A1-1", ZoneCursor{Offset: 500}, 10)
	if len(items) != 0 || next != nil {
		t.Fatalf("past the end: %v %v", items, next)
	}
	for _, bad := range []string{"-1", "x", "3_0", "3_x"} {
		if _, err := ParseZoneCursor(bad); err == nil {
			t.Fatalf("cursor %q accepted", bad)
		}
	}
}

func TestZoneIntervalsFollowARename(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "z.db"), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	appendIntervals(t, db, "LEGACY-C30000000A01", 10, 3) // enters 10..12 s
	appendIntervals(t, db, "WCH-A1-1", 1, 2)             // enters 1..2 s
	if err := db.Update(func(tx *bolt.Tx) error {
		n, err := renameZoneIntervals(tx, "LEGACY-C30000000A01", "WCH-A1-1")
		if n != 3 {
			t.Fatalf("moved %d", n)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	items, _, _ := db.ZoneIntervals("WCH-A1-1", ZoneCursor{}, 10)
	if len(items) != 5 || items[0].Enter != 12000 || items[4].Enter != 1000 || items[0].Ordinal != 5 {
		t.Fatalf("merged intervals: %+v", items)
	}
	if left, _, _ := db.ZoneIntervals("LEGACY-C30000000A01", ZoneCursor{}, 10); len(left) != 0 {
		t.Fatalf("old uid still has %d", len(left))
	}
	// The next append continues after the merged set.
	appendIntervals(t, db, "WCH-A1-1", 20, 1)
	items, _, _ = db.ZoneIntervals("WCH-A1-1", ZoneCursor{}, 1)
	if items[0].Ordinal != 6 {
		t.Fatalf("ordinal after merge = %d", items[0].Ordinal)
	}
}

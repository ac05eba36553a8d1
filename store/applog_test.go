package store

import (
	"fmt"
	"testing"
	"time"
)

func TestListLogsNewestFirstWithPaging(t *testing.T) {
	db := openTemp(t)
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := 1; i <= 7; i++ {
		r := &LogRecord{Time: base.Add(time.Duration(i) * time.Second), Action: "a", Message: fmt.Sprint(i)}
		if err := db.AppendLog(r); err != nil {
			t.Fatal(err)
		}
		if r.ID != uint64(i) {
			t.Fatalf("record %d got id %d", i, r.ID)
		}
	}
	var seen []uint64
	var cursor uint64
	pages := 0
	for {
		recs, next, err := db.ListLogs(cursor, 3)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, r := range recs {
			seen = append(seen, r.ID)
		}
		if next == 0 {
			break
		}
		if next != recs[len(recs)-1].ID {
			t.Errorf("next cursor %d is not the last id of the page %d", next, recs[len(recs)-1].ID)
		}
		cursor = next
		if pages > 10 {
			t.Fatal("paging does not terminate")
		}
	}
	want := []uint64{7, 6, 5, 4, 3, 2, 1}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("ids over all pages = %v, want %v", seen, want)
	}
	if pages != 3 {
		t.Errorf("pages = %d, want 3", pages)
	}

	// An exact fit leaves no next cursor.
	recs, next, err := db.ListLogs(4, 3)
	if err != nil || len(recs) != 3 || next != 0 {
		t.Errorf("ListLogs(4, 3) = %d records, next %d, %v; want 3 records and no next", len(recs), next, err)
	}
	// A cursor past the newest id starts from the newest.
	recs, _, _ = db.ListLogs(100, 2)
	if len(recs) != 2 || recs[0].ID != 7 {
		t.Errorf("ListLogs(100, 2) = %+v", recs)
	}
	// The oldest id as cursor: nothing older.
	recs, next, _ = db.ListLogs(1, 5)
	if len(recs) != 0 || next != 0 {
		t.Errorf("ListLogs(1, 5) = %+v, next %d; want empty", recs, next)
	}
	// Fields survive the round trip.
	recs, _, _ = db.ListLogs(0, 1)
	if recs[0].Message != "7" || !recs[0].Time.Equal(base.Add(7*time.Second)) {
		t.Errorf("newest record = %+v", recs[0])
	}
}

func TestListLogsNonPositiveLimit(t *testing.T) {
	db := openTemp(t)
	if err := db.AppendLog(&LogRecord{Action: "a", Message: "m"}); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{0, -1} {
		recs, next, err := db.ListLogs(0, limit)
		if err != nil || len(recs) != 0 || next != 0 {
			t.Errorf("ListLogs(0, %d) = %v, %d, %v; want nothing", limit, recs, next, err)
		}
	}
}

func TestListLogsEmpty(t *testing.T) {
	db := openTemp(t)
	recs, next, err := db.ListLogs(0, 10)
	if err != nil || len(recs) != 0 || next != 0 {
		t.Errorf("ListLogs on empty log = %v, %d, %v", recs, next, err)
	}
}

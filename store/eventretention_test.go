package store

import (
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestDeleteEventsBefore: warnings go after their shorter window, every
// event after the long one, with indexes and audit records; entries from
// before the time index was marked are judged by their record; the limit
// splits the work into transactions.
func TestDeleteEventsBefore(t *testing.T) {
	db := openTestDB(t)
	insertEvents(t, db,
		mkEvent(1, "W-1", EventWarning, 100),
		mkEvent(2, "P-1", EventAlert, 110),
		mkEvent(3, "W-1", EventWarning, 120),
		mkEvent(4, "P-1", EventAlert, 300),
		mkEvent(5, "W-1", EventWarning, 400),
	)
	press := &PressReport{Gateway: "AC233FA0B1C2", Press: "single", ReportedAt: 90, ReceivedAt: 90}
	if err := db.Update(InsertEvent(mkEvent(6, "P-2", EventAlert, 90), 0, press, nil)); err != nil {
		t.Fatal(err)
	}
	// Event 3 as an older release wrote it: no mark in the time index.
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bEventsByTime).Put(timeKey(nil, 120, 3), nil) }); err != nil {
		t.Fatal(err)
	}

	// Warnings before 350 go (1, 3); everything before 95 goes (6).
	total := 0
	for {
		var n int
		var more bool
		err := db.Update(func(tx *bolt.Tx) error {
			var err error
			n, more, err = DeleteEventsBefore(tx, 350, 95, 1)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		total += n
		if !more {
			break
		}
	}
	if total != 3 {
		t.Fatalf("deleted %d, want 3", total)
	}
	for id, want := range map[uint64]bool{1: false, 2: true, 3: false, 4: true, 5: true, 6: false} {
		_, err := db.GetEvent(id)
		if (err == nil) != want {
			t.Errorf("event %d present=%v, want %v", id, err == nil, want)
		}
	}
	err := db.View(func(tx *bolt.Tx) error {
		if n := tx.Bucket(bEventsByTime).Stats().KeyN; n != 3 {
			t.Errorf("time index holds %d entries, want 3", n)
		}
		if n := countPrefix(tx.Bucket(bEventsByUID), uidPrefix("W-1")); n != 1 {
			t.Errorf("W-1 index holds %d entries, want 1", n)
		}
		if tx.Bucket(bButtonAudit).Get(auditKey("P-2", 6)) != nil {
			t.Error("audit record of a deleted event left")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Nothing left to delete: a second pass is a no-op.
	err = db.Update(func(tx *bolt.Tx) error {
		n, more, err := DeleteEventsBefore(tx, 350, 95, 100)
		if n != 0 || more {
			t.Errorf("second pass deleted %d (more %v)", n, more)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

package store

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func TestSurveySamplesPerFloor(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "s.db"), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	f1, _ := db.PutFloor(Floor{Name: "a"})
	f2, _ := db.PutFloor(Floor{Name: "b"})
	at := time.UnixMilli(1700000000000).UTC()
	mk := func(n int) []SurveySample {
		out := make([]SurveySample, n)
		for i := range out {
			out[i] = SurveySample{X: float64(i), Y: 1, BLE: []SurveyObs{{MAC: "AABBCCDDEEFF", RSSI: -60}}}
		}
		return out
	}
	if _, err := db.AddSurveySamples(999, mk(1), 10, at); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown floor: %v", err)
	}
	if total, err := db.AddSurveySamples(f1.ID, mk(3), 5, at); err != nil || total != 3 {
		t.Fatalf("add: %d %v", total, err)
	}
	if _, err := db.AddSurveySamples(f2.ID, mk(2), 5, at); err != nil {
		t.Fatal(err)
	}
	// The per-floor limit counts this floor only and refuses the whole batch.
	if _, err := db.AddSurveySamples(f1.ID, mk(3), 5, at); !errors.Is(err, ErrLimit) {
		t.Fatalf("over the limit: %v", err)
	}
	got, rev, err := db.SurveySamples(f1.ID)
	if err != nil || len(got) != 3 || !rev.Equal(at) || got[0].FloorID != f1.ID || got[2].X != 2 {
		t.Fatalf("list: %+v %v %v", got, rev, err)
	}
	later := at.Add(time.Minute)
	if floor, err := db.DeleteSurveySample(got[1].ID, later); err != nil || floor != f1.ID {
		t.Fatalf("delete one: %d %v", floor, err)
	}
	if _, err := db.DeleteSurveySample(got[1].ID, later); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete again: %v", err)
	}
	if left, rev, _ := db.SurveySamples(f1.ID); len(left) != 2 || !rev.Equal(later) {
		t.Fatalf("after delete: %d %v", len(left), rev)
	}
	if n, err := db.DeleteSurvey(f1.ID, later); err != nil || n != 2 {
		t.Fatalf("delete floor survey: %d %v", n, err)
	}
	if _, err := db.DeleteFloor(f2.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if left, rev, _ := db.SurveySamples(f2.ID); len(left) != 0 || !rev.IsZero() {
		t.Fatalf("survey of a deleted floor: %d %v", len(left), rev)
	}
}

// TestFloorStoredBeforeTheLocationCheckSavesBackAsRead: the location must
// exist when it is set or changed, not on every save; a floor stored with
// a missing location before the check could not be renamed (a review).
func TestFloorStoredBeforeTheLocationCheckSavesBackAsRead(t *testing.T) {
	db := openTestDB(t)
	if err := db.Update(func(tx *bolt.Tx) error {
		fb, _, _, err := navBuckets(tx)
		if err != nil {
			return err
		}
		id, err := fb.NextSequence()
		if err != nil {
			return err
		}
		return putJSON(fb, itob(id), Floor{ID: id, Name: "Ground", LocationID: 77})
	}); err != nil {
		t.Fatal(err)
	}
	f, err := db.GetFloor(1)
	if err != nil {
		t.Fatal(err)
	}
	f.Name = "Ground floor"
	if _, err := db.PutFloor(f); err != nil {
		t.Fatalf("saving the floor back as read, renamed: %v", err)
	}
	f.LocationID = 78
	if _, err := db.PutFloor(f); err == nil {
		t.Fatal("moved to another missing location: accepted")
	}
	if _, err := db.PutFloor(Floor{Name: "New", LocationID: 77}); err == nil {
		t.Fatal("a new floor in a missing location: accepted")
	}
}

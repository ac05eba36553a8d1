package store

import (
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestZoneSurveyWindowsRecovered: what the sweep saved of a survey is
// stored at the next start under the uid its header names, once, with a
// deleted zone's windows dropped; a stop forgets what it stored, in the
// same transaction, so the next start stores nothing again.
func TestZoneSurveyWindowsRecovered(t *testing.T) {
	db := openRTLSDB(t)
	m := mustMap(t, db, "ground")
	hall, ward := mustZone(t, db, m.ID, "hall"), mustZone(t, db, m.ID, "ward")
	win := func(zone uint64, rssi float64) ZoneSample {
		return ZoneSample{Zone: zone, AssetUID: "WAT-1", RSSI: map[string]float64{"AC233FA00001": rssi}, Readings: map[string]int{"AC233FA00001": 2}}
	}
	now := time.UnixMilli(1_700_000_000_000)
	ops := []func(*bolt.Tx) error{
		PutZoneSurveyWindows(1, "WAT-1", 0, []ZoneSample{win(hall.ID, -60), win(hall.ID, -61)}, 0),
		PutZoneSurveyWindows(1, "WAT-1", 1, []ZoneSample{win(hall.ID, -61), win(ward.ID, -70)}, 0), // a second sweep over window 1
		PutZoneSurveyWindows(1, "WAT-9", 3, nil, 4),                                                // a remint; 4 windows past the bound
		PutZoneSurveyWindows(2, "WAT-2", 0, []ZoneSample{win(99, -50)}, 0),                         // its zone deleted
		PutZoneSurveyWindows(3, "WAT-3", 0, []ZoneSample{win(hall.ID, -65)}, 0),
		DropZoneSurveyWindows(3),                    // stopped
		PutZoneSurveyWindows(5, "WAT-5", 0, nil, 0), // started, no window finished
	}
	for _, op := range ops {
		if err := db.Update(op); err != nil {
			t.Fatal(err)
		}
	}
	var got []ZoneSurveyStored
	if err := db.Update(func(tx *bolt.Tx) (err error) { got, err = RecoverZoneSurveys(tx, now); return err }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].AssetUID != "WAT-9" || len(got[0].Samples) != 3 || got[0].Over != 4 ||
		got[1].AssetUID != "WAT-2" || got[1].Dropped != 1 || got[2].AssetUID != "WAT-5" || got[2].Samples == nil || len(got[2].Samples) != 0 {
		t.Fatalf("recovered %+v", got)
	}
	if msg := got[0].Summary(); msg != "3 samples stored, 4 windows past the survey's bound not kept" {
		t.Errorf("summary %q", msg)
	}
	for i, want := range []struct {
		zone uint64
		rssi float64
	}{{hall.ID, -60}, {hall.ID, -61}, {ward.ID, -70}} {
		s := got[0].Samples[i]
		if s.Zone != want.zone || s.RSSI["AC233FA00001"] != want.rssi || s.AssetUID != "WAT-9" || s.CreatedAt != now.UnixMilli() || s.Readings["AC233FA00001"] != 2 {
			t.Errorf("window %d: %+v, want zone %d at %g under WAT-9", i, s, want.zone, want.rssi)
		}
	}
	if msg := got[1].Summary(); msg != "0 samples stored, 1 dropped: their zone was deleted while recording" {
		t.Errorf("summary %q", msg)
	}
	if err := db.Update(func(tx *bolt.Tx) (err error) { got, err = RecoverZoneSurveys(tx, now); return err }); err != nil || got != nil {
		t.Fatalf("a second start recovered %+v, %v", got, err)
	}
	if all, err := db.ListZoneSamples(0); err != nil || len(all) != 3 {
		t.Fatalf("samples %d, %v; want the 3 recovered", len(all), err)
	}

	// A stop stores and forgets in one transaction.
	if err := db.Update(PutZoneSurveyWindows(4, "WAT-1", 0, []ZoneSample{win(hall.ID, -60)}, 0)); err != nil {
		t.Fatal(err)
	}
	st := ZoneSurveyStored{AssetUID: "WAT-1"}
	if err := db.Update(StoreZoneSurvey([]ZoneSample{win(hall.ID, -60), win(ward.ID, -66)}, now, []uint64{4}, &st)); err != nil || len(st.Samples) != 2 {
		t.Fatalf("stop stored %+v, %v", st, err)
	}
	if err := db.Update(func(tx *bolt.Tx) (err error) { got, err = RecoverZoneSurveys(tx, now); return err }); err != nil || got != nil {
		t.Fatalf("after a stop a start recovered %+v, %v", got, err)
	}
	if all, _ := db.ListZoneSamples(0); len(all) != 5 {
		t.Fatalf("samples %d, want 5", len(all))
	}
}

// TestZoneSurveysInOneTransactionKeepTheBound: a start recovering two
// surveys, and two stops the writer commits together, store several
// surveys in one transaction; the site's bound counts the samples each
// stored before the next. It counted committed samples only, and 20,060
// were kept (a review).
func TestZoneSurveysInOneTransactionKeepTheBound(t *testing.T) {
	db := openRTLSDB(t)
	m := mustMap(t, db, "ground")
	hall := mustZone(t, db, m.ID, "hall")
	now := time.UnixMilli(1_700_000_000_000)
	win := func(n int) []ZoneSample {
		ss := make([]ZoneSample, n)
		for i := range ss {
			ss[i] = ZoneSample{Zone: hall.ID, AssetUID: "WAT-1", RSSI: map[string]float64{"AC233FA00001": -60}}
		}
		return ss
	}
	if _, _, _, err := db.AddZoneSamples(win(MaxZoneSamples-100), now); err != nil {
		t.Fatal(err)
	}
	for rec := uint64(1); rec <= 2; rec++ {
		if err := db.Update(PutZoneSurveyWindows(rec, "WAT-1", 0, win(80), 0)); err != nil {
			t.Fatal(err)
		}
	}
	var got []ZoneSurveyStored
	if err := db.Update(func(tx *bolt.Tx) (err error) { got, err = RecoverZoneSurveys(tx, now); return err }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[0].Samples) != 80 || len(got[1].Samples) != 20 || got[1].Full != 60 {
		for _, st := range got {
			t.Errorf("recovered %d, %d not stored", len(st.Samples), st.Full)
		}
		t.FailNow()
	}
	if n, _ := db.ZoneSampleCount(); n != MaxZoneSamples {
		t.Fatalf("%d samples, want %d", n, MaxZoneSamples)
	}
	if _, err := db.DeleteZoneSamples(hall.ID, ""); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := db.AddZoneSamples(win(MaxZoneSamples-100), now); err != nil {
		t.Fatal(err)
	}
	var a, b ZoneSurveyStored
	stopA, stopB := StoreZoneSurvey(win(80), now, nil, &a), StoreZoneSurvey(win(80), now, nil, &b)
	if err := db.Update(func(tx *bolt.Tx) error {
		if err := stopA(tx); err != nil {
			return err
		}
		return stopB(tx)
	}); err != nil {
		t.Fatal(err)
	}
	if len(a.Samples) != 80 || len(b.Samples) != 20 || b.Full != 60 {
		t.Fatalf("two stops in one transaction: %d and %d stored, %d not", len(a.Samples), len(b.Samples), b.Full)
	}
}

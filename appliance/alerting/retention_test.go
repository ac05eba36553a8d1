package alerting_test

import (
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"beaconhub/appliance/alerting"
	"beaconhub/appliance/clock"
	"beaconhub/store"
)

// TestEventRetention: in virtual time, the first run comes after the boot
// delay and deletes warnings past their window and everything past the
// long one; a changed setting applies at the next daily run.
func TestEventRetention(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "r.db"), store.OpenOptions{LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	clk := clock.NewFake(now)
	day := int64(86400e3)
	ev := func(id uint64, status string, ageDays int64) {
		e := store.Event{ID: id, Status: status, Type: "motion", AssetUID: "W-1", MAC: "C3000000B001", Gateway: "AC233FA0B1C2",
			Gateways: []string{"AC233FA0B1C2"}, Reports: 1, CreatedAt: now.UnixMilli() - ageDays*day}
		if err := db.Update(store.InsertEvent(e, 0, nil, nil)); err != nil {
			t.Fatal(err)
		}
	}
	ev(1, store.EventAlert, 500)
	ev(2, store.EventWarning, 40)
	ev(3, store.EventAlert, 40)
	ev(4, store.EventWarning, 10)
	ev(5, store.EventAlert, 10)
	all, warn := 400, 30
	r := alerting.NewRetention(db, clk, slog.New(slog.DiscardHandler), func() (int, int) { return all, warn })
	r.Start()
	defer r.Stop()
	present := func() (ids []uint64) {
		for id := uint64(1); id <= 5; id++ {
			if _, err := db.GetEvent(id); err == nil {
				ids = append(ids, id)
			}
		}
		return ids
	}
	clk.Advance(alerting.RetentionBootDelay - time.Second)
	if got := present(); len(got) != 5 {
		t.Fatalf("deleted before the boot delay: %v", got)
	}
	clk.Advance(time.Second)
	if got := present(); len(got) != 3 || got[0] != 3 || got[1] != 4 || got[2] != 5 {
		t.Fatalf("after the first run: %v, want [3 4 5]", got)
	}
	warn = 5
	clk.Advance(alerting.RetentionEvery)
	if got := present(); len(got) != 2 || got[0] != 3 || got[1] != 5 {
		t.Fatalf("after the daily run with a 5-day warning window: %v, want [3 5]", got)
	}
}

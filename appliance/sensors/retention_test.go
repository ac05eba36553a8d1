package sensors

import (
	"log/slog"
	"testing"
	"time"

	"beaconhub/appliance/clock"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

func TestRetentionCompaction(t *testing.T) {
	db := openDB(t)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start.Add(10 * 24 * time.Hour))
	seed(t, db, []string{"S-1", "S-2"}, []uint8{Temperature, Battery}, start.UnixMilli(), 10*86400e3, 600e3)
	days := 7
	r := NewRetention(db, clk, slog.New(slog.DiscardHandler), func() int { return days })
	r.Start()
	defer r.Stop()
	count := func() (n int) {
		_ = db.View(func(tx *bolt.Tx) error {
			for _, u := range []string{"S-1", "S-2"} {
				for _, m := range []uint8{Temperature, Battery} {
					c, _ := store.CountHistory(tx, u, m, 0, 1<<62)
					n += c
				}
			}
			return nil
		})
		return n
	}
	all := count()
	clk.Advance(RetentionBootDelay - time.Second)
	if count() != all {
		t.Fatal("compacted before the boot delay")
	}
	clk.Advance(time.Second)
	cut := clk.Now().UnixMilli() - 7*86400e3
	left := count()
	if left >= all || left == 0 {
		t.Fatalf("%d of %d readings left", left, all)
	}
	if err := db.QueryHistory("S-1", Temperature, 0, cut, func(int64, float64) bool { t.Fatal("reading older than retention"); return false }); err != nil {
		t.Fatal(err)
	}
	// The daily run follows the setting as it is then.
	days = 2
	clk.Advance(RetentionEvery)
	if n := count(); n >= left {
		t.Fatalf("daily run kept %d readings", n)
	}
}

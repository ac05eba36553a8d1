package store

import (
	"bytes"
	"encoding/binary"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// queryBenchDB loads 3 days of a 100-sensor site into both layouts, in
// commits of 5 minutes of traffic.
func queryBenchDB(b *testing.B) (*DB, string) {
	b.Helper()
	db := openTestDB(b)
	db.Bolt().NoSync = true // setup only; queries do not fsync
	var uid string
	simLoad(100, 3*24*60, 5*60_000, 3, func(window []Reading) {
		if uid == "" {
			uid = window[0].UID
		}
		if err := db.Update(func(tx *bolt.Tx) error {
			if _, err := PutReadings(tx, window); err != nil {
				return err
			}
			_, err := naivePut(tx, window, nil)
			return err
		}); err != nil {
			b.Fatal(err)
		}
	})
	db.Bolt().NoSync = false
	return db, uid
}

// BenchmarkQuery24h reads one sensor's temperature for one day (~1,440
// readings) out of a 3-day, 300-series history.
func BenchmarkQuery24h(b *testing.B) {
	db, uid := queryBenchDB(b)
	const day = 24 * 3600_000
	from := newSiteSim(1, 0).t0 + day
	to := from + day
	want := 0
	if err := db.QueryHistory(uid, MetricTemperature, from, to, func(int64, float64) bool { want++; return true }); err != nil {
		b.Fatal(err)
	}
	if want < 1400 {
		b.Fatalf("only %d readings in the window", want)
	}
	b.Run("blocks", func(b *testing.B) {
		var sum float64
		for b.Loop() {
			n := 0
			if err := db.QueryHistory(uid, MetricTemperature, from, to, func(_ int64, v float64) bool {
				sum += v
				n++
				return true
			}); err != nil || n != want {
				b.Fatalf("n=%d err=%v", n, err)
			}
		}
		b.ReportMetric(float64(want), "readings/op")
	})
	b.Run("blocks-reverse", func(b *testing.B) {
		for b.Loop() {
			n := 0
			if err := db.QueryHistoryReverse(uid, MetricTemperature, from, to, func(int64, float64) bool { n++; return true }); err != nil || n != want {
				b.Fatalf("n=%d err=%v", n, err)
			}
		}
	})
	b.Run("naive", func(b *testing.B) {
		prefix := append([]byte(uid), 0, MetricTemperature)
		lo := binary.BigEndian.AppendUint64(bytes.Clone(prefix), uint64(from))
		hi := binary.BigEndian.AppendUint64(bytes.Clone(prefix), uint64(to))
		var sum float64
		for b.Loop() {
			n := 0
			if err := db.View(func(tx *bolt.Tx) error {
				c := tx.Bucket(bNaive).Cursor()
				for k, v := c.Seek(lo); k != nil && bytes.Compare(k, hi) < 0; k, v = c.Next() {
					sum += fromFixed(int64(binary.BigEndian.Uint64(v)))
					n++
				}
				return nil
			}); err != nil || n != want {
				b.Fatalf("n=%d err=%v", n, err)
			}
		}
	})
	b.Run("latest-readings", func(b *testing.B) {
		for b.Loop() {
			rs, err := db.LatestReadings()
			if err != nil || len(rs) != 300 {
				b.Fatalf("%d %v", len(rs), err)
			}
		}
		b.ReportMetric(300, "series/op")
	})
}

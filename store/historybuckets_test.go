package store

import (
	"math/rand/v2"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// LatestPerBucket agrees with a full scan for closed blocks, the head,
// late readings merged into old blocks, partial buckets at both ends and
// empty buckets.
func TestLatestPerBucketMatchesScan(t *testing.T) {
	db := openTestDB(t)
	rng := rand.New(rand.NewPCG(1, 2))
	var rs []Reading
	ts := int64(1_000_000)
	for range 5000 {
		ts += 1 + rng.Int64N(120_000)
		if rng.IntN(50) == 0 {
			ts += 3_600_000 // gaps leave empty buckets
		}
		rs = append(rs, Reading{UID: "S-1", Metric: 2, TS: ts, Value: float64(rng.IntN(10000)) / 100})
	}
	// Batches in shuffled order: later batches land before stored ones.
	starts := rng.Perm((len(rs) + 699) / 700)
	for _, b := range starts {
		i := b * 700
		if err := db.Update(func(tx *bolt.Tx) error { _, err := PutReadings(tx, rs[i:min(i+700, len(rs))]); return err }); err != nil {
			t.Fatal(err)
		}
	}
	for range 200 {
		from := rs[0].TS - 5000 + rng.Int64N(ts-rs[0].TS)
		to := from + 1 + rng.Int64N(ts-from+10000)
		bucket := 1 + rng.Int64N(7_200_000)
		type pt struct {
			ts int64
			v  float64
		}
		var want []pt
		_ = db.QueryHistory("S-1", 2, from, to, func(ts int64, v float64) bool {
			if n := len(want); n > 0 && want[n-1].ts/bucket == ts/bucket {
				want[n-1] = pt{ts, v}
			} else {
				want = append(want, pt{ts, v})
			}
			return true
		})
		var got []pt
		if err := db.LatestPerBucket("S-1", 2, from, to, bucket, func(ts int64, v float64) { got = append(got, pt{ts, v}) }); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("[%d,%d) bucket %d: %d points, want %d", from, to, bucket, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("[%d,%d) bucket %d point %d: %v, want %v", from, to, bucket, i, got[i], want[i])
			}
		}
	}
}

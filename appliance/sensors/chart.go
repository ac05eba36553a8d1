package sensors

import (
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// Points returns one series of [from, to) for a chart: raw readings when
// they number at most maxPoints, else the latest reading per bucket of at
// least minBucket ms, sized so that at most maxPoints come back. Unlike
// History, the bucket is not taken from the ladder: the dashboard tool
// already picks a round interval (its intervalMs) for the panel width.
func Points(db *store.DB, k Key, from, to int64, maxPoints int, minBucket int64) ([]Row, error) {
	maxPoints = max(maxPoints, 1)
	var n int
	err := db.View(func(tx *bolt.Tx) error {
		var err error
		n, err = store.CountHistory(tx, k.UID, k.Metric, from, to)
		return err
	})
	if err != nil || n == 0 {
		return nil, err
	}
	if n <= maxPoints {
		out := make([]Row, 0, n)
		err := db.QueryHistory(k.UID, k.Metric, from, to, func(ts int64, v float64) bool {
			out = append(out, Row{k.UID, k.Metric, ts, v})
			return true
		})
		return out, err
	}
	// Downsample gives at most span/bucket + 2 rows (partial buckets at
	// both ends), so the bucket is sized for maxPoints - 2 and the two
	// extra trimmed; under 3 points the bucket is the whole span and the
	// trim keeps the latest (maxDataPoints 1 answered 2 points: a
	// black-box check).
	span := to - from
	buckets := int64(max(maxPoints, 3) - 2)
	bucket := max(minBucket, (span+buckets-1)/buckets, 1)
	out, err := Downsample(db, k, from, to, bucket, n)
	if len(out) > maxPoints {
		out = out[len(out)-maxPoints:]
	}
	return out, err
}

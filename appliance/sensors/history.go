package sensors

import (
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// RowCap bounds a history answer. 10,000 rows is ~400 KiB of JSON: one
// browser chart redraws it without stalling, while a day of one sensor at
// one reading a minute (1,440 rows per metric) still comes back raw.
const RowCap = 10000

// bucketLadder lists the downsampling bucket sizes (ms). Fixed, round
// sizes align buckets to wall-clock boundaries, so the same span gives the
// same points on every reload instead of points that wander with `since`.
var bucketLadder = []int64{
	60e3, 5 * 60e3, 15 * 60e3, 30 * 60e3, 3600e3, 3 * 3600e3, 6 * 3600e3,
	12 * 3600e3, 86400e3, 7 * 86400e3, 30 * 86400e3, 365 * 86400e3,
}

// Key names one history series.
type Key struct {
	UID    string
	Metric uint8
}

// Row is one reading of a history answer.
type Row struct {
	UID    string  `json:"asset_uid"`
	Metric uint8   `json:"metric"`
	TS     int64   `json:"ts"`
	Value  float64 `json:"value"`
}

// HistoryResult is the answer of History. BucketMS is 0 for raw rows.
type HistoryResult struct {
	Since       int64 `json:"since"`
	Until       int64 `json:"until"`
	RowCap      int   `json:"row_cap"`
	Downsampled bool  `json:"downsampled"`
	BucketMS    int64 `json:"bucket_ms"`
	Rows        []Row `json:"rows"`
}

// Keys returns the series to query, filtered by uid (empty = all stored
// series) and metric (0 = all). Without a uid filter it reads one block
// header per stored series; with one it names the series directly, since
// scanning a thousand sensors' headers to answer for one costs more than
// the query (a series without readings then simply returns nothing). A
// former uid (a remint's or a merge's) names the series of the uid it
// continues as, where its readings went: a panel or integration filtered
// on the old uid went blank after a remint (a black-box check).
func Keys(db *store.DB, uids []string, metric uint8) ([]Key, error) {
	var out []Key
	if len(uids) > 0 {
		cur := make([]string, 0, len(uids))
		if err := db.ViewAssets(func(t *store.AssetTx) error {
			for _, u := range uids {
				if u == "" || len(u) > store.MaxUIDLen || strings.IndexByte(u, 0) >= 0 {
					continue
				}
				if a := t.Alias(u); a != "" {
					u = a
				}
				cur = append(cur, u)
			}
			return nil
		}); err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		for _, u := range cur {
			if seen[u] {
				continue
			}
			seen[u] = true
			for m := Humidity; m <= Battery; m++ {
				if metric == 0 || m == metric {
					out = append(out, Key{u, m})
				}
			}
		}
		return out, nil
	}
	rs, err := db.LatestReadings()
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		if metric == 0 || r.Metric == metric {
			out = append(out, Key{r.UID, r.Metric})
		}
	}
	return out, nil
}

// ChooseBucket returns the smallest ladder bucket with which n series over
// [since, until) yield at most limit rows. Each series gives at most one
// row per bucket it touches: span/bucket + 1 (the partial bucket at each
// end).
func ChooseBucket(since, until int64, n, limit int) int64 {
	if n <= 0 {
		return bucketLadder[0]
	}
	for _, b := range bucketLadder {
		if int64(n)*((until-since)/b+2) <= int64(limit) {
			return b
		}
	}
	return bucketLadder[len(bucketLadder)-1]
}

// History answers a history query over [since, until): raw rows when they
// number at most limit, otherwise the latest reading per bucket per series
// with the bucket from ChooseBucket. limit <= 0 means RowCap.
func History(db *store.DB, keys []Key, since, until int64, limit int) (HistoryResult, error) {
	if limit <= 0 {
		limit = RowCap
	}
	res := HistoryResult{Since: since, Until: until, RowCap: limit, Rows: []Row{}}
	counts := make([]int, len(keys))
	total := 0
	// Counting decodes only the blocks straddling the bounds, so deciding
	// raw vs downsampled costs far less than reading the rows.
	err := db.View(func(tx *bolt.Tx) error {
		for i, k := range keys {
			n, err := store.CountHistory(tx, k.UID, k.Metric, since, until)
			if err != nil {
				return err
			}
			counts[i] = n
			total += n
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	if total <= limit {
		res.Rows = make([]Row, 0, total)
		for _, k := range keys {
			err := db.QueryHistory(k.UID, k.Metric, since, until, func(ts int64, v float64) bool {
				res.Rows = append(res.Rows, Row{k.UID, k.Metric, ts, v})
				return true
			})
			if err != nil {
				return res, err
			}
		}
		return res, nil
	}
	live := 0
	for _, n := range counts {
		if n > 0 {
			live++
		}
	}
	res.Downsampled = true
	res.BucketMS = ChooseBucket(since, until, live, limit)
	// Series are independent reads of a read-only snapshot each; on a
	// multi-core box reading them in parallel divides the latency of the
	// long-span queries (the expensive ones) by the core count.
	parts := make([][]Row, len(keys))
	errs := make([]error, len(keys))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(keys)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(keys); i = int(next.Add(1) - 1) {
				if counts[i] > 0 {
					parts[i], errs[i] = Downsample(db, keys[i], since, until, res.BucketMS, counts[i])
				}
			}
		}()
	}
	wg.Wait()
	for i := range keys {
		if errs[i] != nil {
			return res, errs[i]
		}
		res.Rows = append(res.Rows, parts[i]...)
	}
	// The ladder's last rung can still exceed the cap for absurd series
	// counts; the cap is a promise, so keep the newest rows.
	if len(res.Rows) > limit {
		sort.SliceStable(res.Rows, func(i, j int) bool { return res.Rows[i].TS > res.Rows[j].TS })
		res.Rows = res.Rows[:limit]
	}
	return res, nil
}

// Downsample returns the latest reading of each bucket (aligned to
// multiples of bucket since the epoch) of one series in [since, until),
// oldest first. count is the number of readings in the span: with many
// readings per bucket, one seek per bucket (store.LatestPerBucket) reads
// at most one block per bucket instead of decoding every reading.
func Downsample(db *store.DB, k Key, since, until, bucket int64, count int) ([]Row, error) {
	var out []Row
	first := since - mod(since, bucket)
	buckets := (until-first)/bucket + 1
	if int64(count) > 256*buckets {
		err := db.LatestPerBucket(k.UID, k.Metric, since, until, bucket, func(ts int64, v float64) {
			out = append(out, Row{k.UID, k.Metric, ts, v})
		})
		return out, err
	}
	cur := int64(-1)
	err := db.QueryHistory(k.UID, k.Metric, since, until, func(ts int64, v float64) bool {
		b := ts - mod(ts, bucket)
		if b == cur {
			out[len(out)-1] = Row{k.UID, k.Metric, ts, v}
			return true
		}
		cur = b
		out = append(out, Row{k.UID, k.Metric, ts, v})
		return true
	})
	return out, err
}

func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

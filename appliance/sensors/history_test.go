package sensors

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

func openDB(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "h.db"), store.OpenOptions{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func put(t testing.TB, db *store.DB, rs []store.Reading) {
	t.Helper()
	if err := db.Update(func(tx *bolt.Tx) error { _, err := store.PutReadings(tx, rs); return err }); err != nil {
		t.Fatal(err)
	}
}

// seed stores one reading per step for each uid and metric over
// [start, start+span), with jittered timestamps and a value that encodes
// the timestamp so a test can tell which reading came back.
func seed(t testing.TB, db *store.DB, uids []string, metrics []uint8, start, span, step int64) {
	t.Helper()
	var rs []store.Reading
	for _, u := range uids {
		for _, m := range metrics {
			for ts := start; ts < start+span; ts += step {
				x := ts + (ts/step)%7*100
				rs = append(rs, store.Reading{UID: u, Metric: m, TS: x, Value: float64(x%100000) / 100})
			}
		}
		put(t, db, rs)
		rs = rs[:0]
	}
}

// bruteLatest is the reference: the latest reading per aligned bucket.
func bruteLatest(t *testing.T, db *store.DB, k Key, since, until, bucket int64) []Row {
	var out []Row
	_ = db.QueryHistory(k.UID, k.Metric, since, until, func(ts int64, v float64) bool {
		b := ts - mod(ts, bucket)
		if len(out) > 0 && out[len(out)-1].TS-mod(out[len(out)-1].TS, bucket) == b {
			out[len(out)-1] = Row{k.UID, k.Metric, ts, v}
		} else {
			out = append(out, Row{k.UID, k.Metric, ts, v})
		}
		return true
	})
	return out
}

var t0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

func TestHistoryRawForShortSpans(t *testing.T) {
	db := openDB(t)
	seed(t, db, []string{"S-1", "S-2"}, []uint8{Humidity, Temperature}, t0, 86400e3, 60e3)
	keys, err := Keys(db, []string{"S-1"}, 0)
	if err != nil || len(keys) != 3 { // battery has no readings: no rows
		t.Fatalf("keys %v %v", keys, err)
	}
	res, err := History(db, keys, t0, t0+86400e3, RowCap)
	if err != nil {
		t.Fatal(err)
	}
	if res.Downsampled || res.BucketMS != 0 || len(res.Rows) != 2*1440 {
		t.Fatalf("downsampled=%v bucket=%d rows=%d, want raw 2880", res.Downsampled, res.BucketMS, len(res.Rows))
	}
	for i := 1; i < 1440; i++ {
		if res.Rows[i].TS <= res.Rows[i-1].TS {
			t.Fatal("raw rows are not ascending")
		}
	}
}

func TestHistoryDownsamplesToLatestPerBucket(t *testing.T) {
	db := openDB(t)
	uids := []string{"S-1", "S-2", "S-3"}
	seed(t, db, uids, []uint8{Humidity, Temperature, Battery}, t0, 10*86400e3, 60e3)
	keys, _ := Keys(db, nil, 0)
	for _, limit := range []int{RowCap, 500, 37} {
		since, until := t0+12345, t0+10*86400e3-777
		res, err := History(db, keys, since, until, limit)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Downsampled || res.BucketMS == 0 {
			t.Fatalf("limit %d: not downsampled", limit)
		}
		if len(res.Rows) > limit {
			t.Fatalf("limit %d: %d rows", limit, len(res.Rows))
		}
		got := map[Key][]Row{}
		for _, r := range res.Rows {
			got[Key{r.UID, r.Metric}] = append(got[Key{r.UID, r.Metric}], r)
		}
		for _, k := range keys {
			want := bruteLatest(t, db, k, since, until, res.BucketMS)
			if len(want) != len(got[k]) {
				t.Fatalf("limit %d %v: %d rows, want %d", limit, k, len(got[k]), len(want))
			}
			for i := range want {
				if want[i] != got[k][i] {
					t.Fatalf("limit %d %v row %d: %+v, want %+v", limit, k, i, got[k][i], want[i])
				}
			}
		}
	}
}

// Both Downsample strategies (a reverse seek per bucket for dense series,
// one scan for sparse ones) return the same rows.
func TestDownsampleStrategiesAgree(t *testing.T) {
	db := openDB(t)
	seed(t, db, []string{"S-1"}, []uint8{Temperature}, t0, 3*86400e3, 30e3)
	k := Key{"S-1", Temperature}
	for _, bucket := range []int64{60e3, 3600e3, 86400e3} {
		want := bruteLatest(t, db, k, t0+1, t0+3*86400e3, bucket)
		seek, err := Downsample(db, k, t0+1, t0+3*86400e3, bucket, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		scan, err := Downsample(db, k, t0+1, t0+3*86400e3, bucket, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(seek) != len(want) || len(scan) != len(want) {
			t.Fatalf("bucket %d: seek %d scan %d want %d", bucket, len(seek), len(scan), len(want))
		}
		for i := range want {
			if seek[i] != want[i] || scan[i] != want[i] {
				t.Fatalf("bucket %d row %d: seek %+v scan %+v want %+v", bucket, i, seek[i], scan[i], want[i])
			}
		}
	}
}

func TestChooseBucketStaysUnderCap(t *testing.T) {
	for _, n := range []int{1, 3, 300, 3000} {
		for _, span := range []int64{3600e3, 86400e3, 30 * 86400e3, 400 * 86400e3} {
			b := ChooseBucket(0, span, n, RowCap)
			if rows := int64(n) * (span/b + 2); rows > RowCap && b != bucketLadder[len(bucketLadder)-1] {
				t.Errorf("n=%d span=%d: bucket %d gives %d rows", n, span, b, rows)
			}
		}
	}
}

func TestPointsHonoursMaxDataPoints(t *testing.T) {
	db := openDB(t)
	seed(t, db, []string{"S-1"}, []uint8{Humidity}, t0, 7*86400e3, 60e3)
	k := Key{"S-1", Humidity}
	rows, err := Points(db, k, t0, t0+7*86400e3, 500, 60e3)
	if err != nil || len(rows) == 0 || len(rows) > 500 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	rows, _ = Points(db, k, t0, t0+3600e3, 500, 60e3)
	if len(rows) != 60 {
		t.Fatalf("short span: %d rows, want 60 raw", len(rows))
	}
	rows, _ = Points(db, k, t0-86400e3, t0, 500, 60e3)
	if len(rows) != 0 {
		t.Fatalf("empty range: %d rows", len(rows))
	}
	// Down to one point, and that one the latest reading, over a range
	// whose buckets cannot align with it.
	from, to := t0+90e3+7, t0+3000e3
	raw, _ := Points(db, k, from, to, 500, 0)
	for _, n := range []int{1, 2, 3, 7} {
		rows, _ = Points(db, k, from, to, n, 0)
		if len(rows) == 0 || len(rows) > n || rows[len(rows)-1] != raw[len(raw)-1] {
			t.Fatalf("maxPoints %d: %d rows %v", n, len(rows), rows)
		}
	}
}

// A former uid names the series of the uid it continues as (its readings
// moved there): a chart or integration filtered on it went blank after a
// remint (a black-box check). Chains follow; a uid named twice, through
// its alias, gives its series once.
func TestKeysFollowAFormerUID(t *testing.T) {
	db := openDB(t)
	if err := db.UpdateAssets(time.Now(), func(tx *store.AssetTx) error {
		if err := tx.SetAlias("LEGACY-C3000000000A", "SEN-H1-3"); err != nil {
			return err
		}
		return tx.SetAlias("SEN-H1-3", "SEN-H2-1")
	}); err != nil {
		t.Fatal(err)
	}
	keys, err := Keys(db, []string{"LEGACY-C3000000000A", "SEN-H2-1", "SEN-H1-9"}, Temperature)
	if err != nil {
		t.Fatal(err)
	}
	want := []Key{{"SEN-H2-1", Temperature}, {"SEN-H1-9", Temperature}}
	if !slices.Equal(keys, want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
}

// Readings are kept to 0.01 rounding half away from zero on the reading's
// own decimals (what the gateway sent), as the displays round: 1.005 was
// kept as 1.00 and 2.675 as 2.67, their float32s lying just below.
func TestRound2IsHalfAwayFromZeroOnTheReadingsDecimals(t *testing.T) {
	for in, want := range map[float32]float64{
		1.005: 1.01, 2.675: 2.68, -1.005: -1.01, -0.449: -0.45, 4.649: 4.65, 4.644: 4.64,
		0.125: 0.13, 36.6: 36.6, -18.4: -18.4, 0: 0, 99.995: 100, 1.0049: 1.0, 12.345: 12.35,
	} {
		if got := round2(in); got != want {
			t.Errorf("round2(%v) = %v, want %v", in, got, want)
		}
	}
}

// The tie path is on every reading's way in: it must not allocate.
func TestRound2TieDoesNotAllocate(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = round2(1.005) }); n != 0 {
		t.Errorf("round2 on a tie allocates %v times", n)
	}
}

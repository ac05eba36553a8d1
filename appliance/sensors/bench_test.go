package sensors

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// TestQueryBenchmark is the issue-6 query benchmark (docs/performance.md).
// It seeds a scaled site at run time, so it only runs when asked:
//
//	BEACONHUB_SENSOR_BENCH=1 go test -run TestQueryBenchmark -v -timeout 30m ./appliance/sensors/
//
// BEACONHUB_SENSOR_BENCH_SENSORS (default 100) and _DAYS (default 90)
// scale the site: sensors x 3 metrics x one reading a minute.
func TestQueryBenchmark(t *testing.T) {
	if os.Getenv("BEACONHUB_SENSOR_BENCH") == "" {
		t.Skip("set BEACONHUB_SENSOR_BENCH=1 to run")
	}
	sensorsN := envInt("BEACONHUB_SENSOR_BENCH_SENSORS", 100)
	days := envInt("BEACONHUB_SENSOR_BENCH_DAYS", 90)
	path := filepath.Join(t.TempDir(), "bench.db")
	db, err := store.Open(path, store.OpenOptions{LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	end := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	start := end - int64(days)*86400e3
	began := time.Now()
	total := seedSite(t, db, sensorsN, start, end)
	seedDur := time.Since(began)
	st, _ := os.Stat(path)
	t.Logf("seeded %d sensors x 3 metrics x %d days = %d readings in %v; file %d bytes = %.2f bytes/reading",
		sensorsN, days, total, seedDur.Round(time.Second), st.Size(), float64(st.Size())/float64(total))

	uid := func(i int) string { return fmt.Sprintf("SEN-B-%d", i) }
	run := func(name string, n int, f func(i int) int) {
		var lat []time.Duration
		rows := 0
		// One warm-up pass over other parameters, and a collection first,
		// so the figures are not the seeding's garbage or cold page cache.
		for i := range n / 5 {
			f(n + i)
		}
		runtime.GC()
		for i := range n {
			t0 := time.Now()
			rows = f(i)
			lat = append(lat, time.Since(t0))
		}
		slices.Sort(lat)
		t.Logf("%-48s p50 %8v  p99 %8v  rows %d", name, lat[len(lat)/2].Round(10*time.Microsecond),
			lat[len(lat)*99/100].Round(10*time.Microsecond), rows)
	}
	// 24 h of one sensor (3 metrics, raw: 4,320 rows), varying sensor
	// and end time so the page cache is not one hot path.
	run("history 24 h, 1 sensor (raw)", 200, func(i int) int {
		keys, _ := Keys(db, []string{uid(i % sensorsN)}, 0)
		until := end - int64(i%30)*3600e3
		res, err := History(db, keys, until-86400e3, until, RowCap)
		if err != nil || res.Downsampled {
			t.Fatal(err, res.Downsampled)
		}
		_, _ = json.Marshal(res)
		return len(res.Rows)
	})
	hundred := make([]string, min(100, sensorsN))
	for i := range hundred {
		hundred[i] = uid(i)
	}
	run("history 30 d, 100 sensors (downsampled)", 200, func(i int) int {
		keys, _ := Keys(db, hundred, 0)
		until := end - int64(i%500)*3600e3
		res, err := History(db, keys, until-30*86400e3, until, RowCap)
		if err != nil || !res.Downsampled || len(res.Rows) > RowCap {
			t.Fatal(err, res.Downsampled, len(res.Rows))
		}
		_, _ = json.Marshal(res)
		return len(res.Rows)
	})
	run("chartsource 20 series x 7 d (maxDataPoints 1000)", 200, func(i int) int {
		n := 0
		var out [][][2]float64
		for s := range 20 {
			k := Key{uid((i + s) % sensorsN), Temperature}
			until := end - int64(i%500)*600e3
			rows, err := Points(db, k, until-7*86400e3, until, 1000, 600e3)
			if err != nil {
				t.Fatal(err)
			}
			dp := make([][2]float64, len(rows))
			for j, r := range rows {
				dp[j] = [2]float64{r.Value, float64(r.TS)}
			}
			out = append(out, dp)
			n += len(rows)
		}
		_, _ = json.Marshal(out)
		return n
	})
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// seedSite writes each sensor's three series in one transaction, with the
// cadence jitter and slow drift of real sensors.
func seedSite(t *testing.T, db *store.DB, n int, start, end int64) int {
	total := 0
	rs := make([]store.Reading, 0, 3*int((end-start)/60e3)+3)
	for i := range n {
		rs = rs[:0]
		uid := fmt.Sprintf("SEN-B-%d", i)
		for m, base := range []float64{45, 4, 3000} {
			v := base
			for ts := start; ts < end; ts += 60e3 {
				jit := (ts/60e3*7919 + int64(i)) % 4000
				v += float64((ts/60e3*31+int64(i))%7-3) * 0.01
				if m == 2 {
					v = base - float64(ts-start)/float64(end-start)*200 + float64(jit%3)
				}
				rs = append(rs, store.Reading{UID: uid, Metric: uint8(m + 1), TS: ts + jit, Value: v})
			}
		}
		if err := db.Update(func(tx *bolt.Tx) error { _, err := store.PutReadings(tx, rs); return err }); err != nil {
			t.Fatal(err)
		}
		total += len(rs)
	}
	return total
}

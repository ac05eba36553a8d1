package store

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// benchSensors is the site size used by the write benchmarks: a 1,000
// sensor site, 3 metrics each.
const benchSensors = 1000

// siteReadings pre-generates n realistic readings (siteSim, in time order)
// so that generation does not count against the writer.
func siteReadings(n int) []Reading {
	sim := newSiteSim(benchSensors, 42)
	out := make([]Reading, 0, n+3*benchSensors)
	for m := 0; len(out) < n; m++ {
		out = sim.minute(m, out)
	}
	return out[:n]
}

// runAppendBench pushes b.N calls of 8 readings through w from
// 8×GOMAXPROCS goroutines, like gateway connections feeding the ingest
// pipeline, and reports throughput, batch size and on-disk size.
func runAppendBench(b *testing.B, db *DB, w *Writer, qos1 bool) {
	rs := siteReadings(b.N * 8)
	var next atomic.Int64
	var latMu sync.Mutex
	var lats []time.Duration
	b.SetParallelism(8)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		var local []time.Duration
		var wg sync.WaitGroup
		for pb.Next() {
			k := int(next.Add(1) - 1)
			call := rs[k*8 : k*8+8]
			if !qos1 {
				w.AppendReadings(call, nil)
				continue
			}
			// A QoS 1 publisher waits for its PUBACK (the done callback)
			// before it sends the next message on that connection.
			t0 := time.Now()
			wg.Add(1)
			w.AppendReadings(call, func(error) { wg.Done() })
			wg.Wait()
			local = append(local, time.Since(t0))
		}
		latMu.Lock()
		lats = append(lats, local...)
		latMu.Unlock()
	})
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	st := w.Stats()
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	n := float64(b.N * 8)
	b.ReportMetric(n/elapsed.Seconds(), "readings/s")
	b.ReportMetric(st.AvgBatchReadings, "readings/commit")
	if st.Commits > 0 {
		b.ReportMetric(float64(elapsed.Microseconds())/float64(st.Commits), "µs/commit")
	}
	size, err := db.Size()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(size)/n, "file-B/reading")
	b.ReportMetric(float64(st.WrittenBytes)/n, "written-B/reading")
	b.ReportMetric(float64(pagesInUse(b, db))/n, "used-B/reading")
	if len(lats) > 0 {
		slices.Sort(lats)
		b.ReportMetric(float64(lats[len(lats)/2].Microseconds())/1000, "ack-p50-ms")
		b.ReportMetric(float64(lats[len(lats)*99/100].Microseconds())/1000, "ack-p99-ms")
	}
}

// BenchmarkWriterAppend measures readings/s through the Writer with fsync
// on. "nowait" is fire-and-forget (QoS 0); "qos1" has every publisher wait
// for its done callback, so it also reports the PUBACK latency.
func BenchmarkWriterAppend(b *testing.B) {
	for _, mode := range []string{"nowait", "qos1"} {
		b.Run(mode, func(b *testing.B) {
			db := openTestDB(b)
			runAppendBench(b, db, NewWriter(db, WriterOptions{}), mode == "qos1")
		})
	}
}

var bNaive = []byte("naive_history")

// naivePut is the baseline layout: one key uid|0|metric|ts per reading
// holding the float64, in a bucket at bbolt's default fill.
func naivePut(tx *bolt.Tx, rs []Reading, _ *seriesIndex) (int, error) {
	b, err := tx.CreateBucketIfNotExists(bNaive)
	if err != nil {
		return 0, err
	}
	for _, r := range rs {
		k := make([]byte, 0, len(r.UID)+10)
		k = append(append(k, r.UID...), 0, r.Metric)
		k = appendUint64BE(k, uint64(r.TS))
		v := appendUint64BE(make([]byte, 0, 8), uint64(toFixed(r.Value)))
		if err := b.Put(k, v); err != nil {
			return 0, err
		}
	}
	return len(rs), nil
}

func appendUint64BE(b []byte, v uint64) []byte {
	return append(b, byte(v>>56), byte(v>>48), byte(v>>40), byte(v>>32), byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

// BenchmarkNaiveOneKeyPerReading is BenchmarkWriterAppend/nowait with the
// one-key-per-reading layout, same writer, same data, same natural
// batching, for quoting ratios.
func BenchmarkNaiveOneKeyPerReading(b *testing.B) {
	db := openTestDB(b)
	w := NewWriter(db, WriterOptions{})
	w.put = naivePut
	runAppendBench(b, db, w, false)
}

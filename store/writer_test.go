package store

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// gate parks the writer goroutine inside a transaction until release is
// called, so that a test can queue work that must land in one batch.
func gate(t *testing.T, w *Writer) (release func()) {
	t.Helper()
	entered := make(chan struct{})
	rel := make(chan struct{})
	var once sync.Once
	w.Do(func(*bolt.Tx) error {
		once.Do(func() { close(entered) })
		<-rel
		return nil
	}, nil)
	<-entered
	var relOnce sync.Once
	return func() { relOnce.Do(func() { close(rel) }) }
}

func sensorReadings(uid string, from, n int) []Reading {
	rs := make([]Reading, 0, n)
	for i := from; i < from+n; i++ {
		rs = append(rs, Reading{UID: uid, Metric: MetricTemperature, TS: int64(i) * 1000, Value: float64(i%100) / 4})
	}
	return rs
}

func countAll(t *testing.T, db *DB) int {
	t.Helper()
	series, err := db.HistorySeries()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range series {
		n += s.Count
	}
	return n
}

func TestWriterConcurrentAppend(t *testing.T) {
	db := openTestDB(t)
	w := NewWriter(db, WriterOptions{MaxPendingReadings: 2000})
	const goroutines, calls = 16, 150
	var dones [goroutines][calls]atomic.Int32
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			uid := fmt.Sprintf("SEN-%02d", g)
			for c := range calls {
				rs := sensorReadings(uid, c*8, 8)
				w.AppendReadings(rs, func(err error) {
					if err != nil {
						t.Errorf("done(%v)", err)
					}
					dones[g][c].Add(1)
				})
				for i := range rs { // the caller may reuse rs at once
					rs[i] = Reading{}
				}
			}
		}()
	}
	wg.Wait()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	for g := range goroutines {
		for c := range calls {
			if n := dones[g][c].Load(); n != 1 {
				t.Fatalf("done for goroutine %d call %d ran %d times", g, c, n)
			}
		}
	}
	if n := countAll(t, db); n != goroutines*calls*8 {
		t.Fatalf("stored %d readings, want %d", n, goroutines*calls*8)
	}
	st := w.Stats()
	if st.Readings != goroutines*calls*8 || st.Commits == 0 || st.Errors != 0 || st.FailedCommits != 0 || st.LastCommitBytes == 0 || st.LastCommit == 0 {
		t.Fatalf("stats %+v", st)
	}
	t.Logf("%d commits, avg %.0f readings", st.Commits, st.AvgBatchReadings)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for g := range goroutines {
		for c := range calls {
			if n := dones[g][c].Load(); n != 1 {
				t.Fatalf("after Close, done for goroutine %d call %d ran %d times", g, c, n)
			}
		}
	}
}

func TestWriterFlushWaitsForEverythingBefore(t *testing.T) {
	db := openTestDB(t)
	w := NewWriter(db, WriterOptions{})
	defer w.Close()
	release := gate(t, w)
	var done atomic.Int32
	for i := range 50 {
		w.AppendReadings(sensorReadings("SEN-F", i*8, 8), func(err error) {
			if err != nil {
				t.Error(err)
			}
			done.Add(1)
		})
	}
	flushed := make(chan error)
	go func() { flushed <- w.Flush() }()
	select {
	case err := <-flushed:
		t.Fatalf("Flush returned (%v) while the writer was parked", err)
	default:
	}
	release()
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if n := done.Load(); n != 50 {
		t.Fatalf("Flush returned with %d of 50 done callbacks run", n)
	}
	if n := countAll(t, db); n != 400 {
		t.Fatalf("after Flush %d readings visible, want 400", n)
	}
	// Flush on an idle writer returns at once.
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

func TestWriterFailingOpDoesNotSinkBatch(t *testing.T) {
	db := openTestDB(t)
	w := NewWriter(db, WriterOptions{})
	defer w.Close()
	release := gate(t, w)

	results := map[string]error{}
	var mu sync.Mutex
	record := func(name string) func(error) {
		return func(err error) {
			mu.Lock()
			defer mu.Unlock()
			if _, dup := results[name]; dup {
				t.Errorf("done for %s called twice", name)
			}
			results[name] = err
		}
	}
	errBoom := errors.New("boom")
	var goodRuns atomic.Int32
	w.AppendReadings(sensorReadings("SEN-A", 0, 8), record("readingsA"))
	w.Do(func(tx *bolt.Tx) error { return errBoom }, record("failing"))
	w.Do(func(tx *bolt.Tx) error {
		goodRuns.Add(1)
		return tx.Bucket(bKV).Put([]byte("writer-test"), []byte("ok"))
	}, record("good"))
	w.AppendReadings(sensorReadings("SEN-B", 0, 8), record("readingsB"))
	w.Do(func(tx *bolt.Tx) error { panic("op bug") }, record("panicking"))
	w.AppendReadings([]Reading{{UID: "SEN-C", Metric: 1, TS: 1}, {UID: "bad\x00uid", Metric: 1, TS: 1}}, record("invalid"))
	w.AppendReadings(sensorReadings("SEN-D", 0, 8), nil)
	commitsBefore := w.Stats().Commits
	release()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	defer mu.Unlock()
	for name, want := range map[string]error{"readingsA": nil, "good": nil, "readingsB": nil, "failing": errBoom} {
		if got, ok := results[name]; !ok || !errors.Is(got, want) {
			t.Errorf("%s: done(%v), want %v", name, got, want)
		}
	}
	if err := results["panicking"]; err == nil || !strings.Contains(err.Error(), "op bug") {
		t.Errorf("panicking op: done(%v)", err)
	}
	if err := results["invalid"]; !errors.Is(err, ErrInvalidReading) {
		t.Errorf("invalid readings: done(%v)", err)
	}
	for uid, want := range map[string]int{"SEN-A": 8, "SEN-B": 8, "SEN-C": 0, "SEN-D": 8} {
		if got := len(queryAll(t, db, uid, MetricTemperature, 0, math.MaxInt64)) + len(queryAll(t, db, uid, 1, 0, math.MaxInt64)); got != want {
			t.Errorf("%s: %d readings stored, want %d", uid, got, want)
		}
	}
	if err := db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bKV).Get([]byte("writer-test")); string(v) != "ok" {
			return fmt.Errorf("good op's write missing: %q", v)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The gate's transaction plus exactly one for the whole batch, which had
	// to be re-run after each failing op.
	st := w.Stats()
	if st.Commits != commitsBefore+2 || goodRuns.Load() < 2 {
		t.Errorf("commits %d (before %d), good op ran %d times", st.Commits, commitsBefore, goodRuns.Load())
	}
	if st.Errors != 3 || st.LastBatchOps != 1 || st.LastBatchReadings != 24 {
		t.Errorf("stats %+v", st)
	}
}

// TestWriterCorruptSeriesIsolated: a corrupt block fails only the calls
// carrying readings of its series; the rest of the batch commits.
func TestWriterCorruptSeriesIsolated(t *testing.T) {
	db := openTestDB(t)
	mustPut(t, db, sensorReadings("SEN-BAD", 0, 8))
	if err := db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bHistory).Put(headKey("SEN-BAD", MetricTemperature), []byte{histFormat, 0xff})
	}); err != nil {
		t.Fatal(err)
	}
	w := NewWriter(db, WriterOptions{})
	defer w.Close()
	release := gate(t, w)
	errs := make([]error, 4)
	for i, uid := range []string{"SEN-OK1", "SEN-BAD", "SEN-OK2", "SEN-OK3"} {
		rs := sensorReadings(uid, 100, 8)
		if i == 3 { // a call mixing a good and the bad series fails whole
			rs = append(rs, sensorReadings("SEN-BAD", 200, 1)...)
		}
		w.AppendReadings(rs, func(err error) { errs[i] = err })
	}
	release()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, true, false, true} {
		var se *SeriesError
		if got := errors.As(errs[i], &se) && errors.Is(errs[i], ErrCorruptHistory) && se.UID == "SEN-BAD"; got != want {
			t.Errorf("call %d: done(%v), want corrupt-series error %v", i, errs[i], want)
		}
	}
	for uid, want := range map[string]int{"SEN-OK1": 8, "SEN-OK2": 8, "SEN-OK3": 0} {
		if got := len(queryAll(t, db, uid, MetricTemperature, 0, math.MaxInt64)); got != want {
			t.Errorf("%s: %d readings, want %d", uid, got, want)
		}
	}
}

func TestWriterPreservesQueueOrder(t *testing.T) {
	db := openTestDB(t)
	w := NewWriter(db, WriterOptions{})
	defer w.Close()
	release := gate(t, w)
	w.AppendReadings(sensorReadings("SEN-O", 0, 8), nil)
	var seen int
	w.Do(func(tx *bolt.Tx) error {
		var err error
		seen, err = CountHistory(tx, "SEN-O", MetricTemperature, 0, math.MaxInt64)
		return err
	}, nil)
	w.Do(func(tx *bolt.Tx) error {
		_, err := RenameHistoryUID(tx, "SEN-O", "SEN-P")
		return err
	}, nil)
	w.AppendReadings(sensorReadings("SEN-O", 8, 8), nil)
	release()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if seen != 8 {
		t.Fatalf("op queued after 8 readings saw %d", seen)
	}
	if o, p := len(queryAll(t, db, "SEN-O", MetricTemperature, 0, math.MaxInt64)), len(queryAll(t, db, "SEN-P", MetricTemperature, 0, math.MaxInt64)); o != 8 || p != 8 {
		t.Fatalf("after rename in the middle of the batch: SEN-O %d, SEN-P %d; want 8 and 8", o, p)
	}
}

func TestWriterCloseDrainsAndRejectsLater(t *testing.T) {
	db := openTestDB(t)
	w := NewWriter(db, WriterOptions{})
	release := gate(t, w)
	var ok atomic.Int32
	for i := range 500 {
		w.AppendReadings(sensorReadings("SEN-CL", i*8, 8), func(err error) {
			if err == nil {
				ok.Add(1)
			}
		})
	}
	closed := make(chan error)
	go func() { closed <- w.Close() }()
	release()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if ok.Load() != 500 || countAll(t, db) != 4000 {
		t.Fatalf("Close drained %d calls / %d readings, want 500 / 4000", ok.Load(), countAll(t, db))
	}
	var got error
	w.AppendReadings(sensorReadings("SEN-CL", 99999, 1), func(err error) { got = err })
	if !errors.Is(got, ErrWriterClosed) {
		t.Fatalf("AppendReadings after Close: done(%v)", got)
	}
	got = nil
	w.Do(func(*bolt.Tx) error { return nil }, func(err error) { got = err })
	if !errors.Is(got, ErrWriterClosed) {
		t.Fatalf("Do after Close: done(%v)", got)
	}
	if err := w.Flush(); !errors.Is(err, ErrWriterClosed) {
		t.Fatalf("Flush after Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestWriterBackpressure(t *testing.T) {
	db := openTestDB(t)
	w := NewWriter(db, WriterOptions{MaxPendingReadings: 64, MaxPendingOps: 2})
	defer w.Close()
	release := gate(t, w)
	for i := range 8 {
		w.AppendReadings(sensorReadings("SEN-BP", i*8, 8), nil) // exactly at the bound
	}
	appended := make(chan struct{})
	go func() {
		w.AppendReadings(sensorReadings("SEN-BP", 64, 8), nil)
		close(appended)
	}()
	waitBlocked(t, w, 1)
	select {
	case <-appended:
		t.Fatal("AppendReadings over the bound did not block")
	default:
	}
	release()
	<-appended
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := countAll(t, db); n != 72 {
		t.Fatalf("%d readings stored, want 72 (none dropped)", n)
	}

	// Ops have their own bound.
	release = gate(t, w)
	w.Do(func(*bolt.Tx) error { return nil }, nil)
	w.Do(func(*bolt.Tx) error { return nil }, nil)
	queued := make(chan struct{})
	go func() {
		w.Do(func(*bolt.Tx) error { return nil }, nil)
		close(queued)
	}()
	waitBlocked(t, w, 1)
	release()
	<-queued
}

// waitBlocked waits until n producers are parked on backpressure.
func waitBlocked(t *testing.T, w *Writer, n int) {
	t.Helper()
	if !writerReaches(w, func(w *Writer) bool { return w.blocked == n }) {
		w.mu.Lock()
		defer w.mu.Unlock()
		t.Fatalf("%d producers blocked, want %d", w.blocked, n)
	}
}

// writerReaches waits up to 10 s until cond holds on w's state (checked
// under w.mu) and reports whether it did.
func writerReaches(w *Writer, cond func(*Writer) bool) bool {
	deadline := time.Now().Add(10 * time.Second)
	for {
		w.mu.Lock()
		ok := cond(w)
		w.mu.Unlock()
		if ok {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		runtime.Gosched()
	}
}

func TestWriterBatchCaps(t *testing.T) {
	db := openTestDB(t)
	w := NewWriter(db, WriterOptions{MaxBatchReadings: 50, MaxBatchOps: 3, MaxPendingReadings: 1000})
	defer w.Close()
	release := gate(t, w)
	for i := range 20 {
		w.AppendReadings(sensorReadings("SEN-CAP", i*8, 8), func(error) {})
	}
	for range 7 {
		w.Do(func(*bolt.Tx) error { return nil }, nil)
	}
	// A single call larger than the cap is committed whole.
	w.AppendReadings(sensorReadings("SEN-BIG", 0, 120), func(error) {})
	release()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	st := w.Stats()
	// The gate; 20 calls of 8 in chunks of ≤ 6 calls (48 readings), the 4th
	// also taking 3 ops; the other 4 ops in chunks of ≤ 3; the big call alone.
	if st.Commits != 1+4+2+1 {
		t.Fatalf("commits = %d, want 8", st.Commits)
	}
	if st.LastBatchReadings != 120 {
		t.Fatalf("last batch %d readings, want the whole 120-reading call", st.LastBatchReadings)
	}
	if n := countAll(t, db); n != 280 {
		t.Fatalf("%d readings stored, want 280", n)
	}
}

func TestWriterCommitFailure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ro.db")
	rw, err := Open(path, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	w := NewWriter(&DB{bolt: ro, path: path}, WriterOptions{})
	var got error
	w.AppendReadings(sensorReadings("SEN-RO", 0, 8), func(err error) { got = err })
	// Flush reports failures of commits after its call; the writer may
	// have failed this one before Flush registered, so nil is fine too.
	if err := w.Flush(); err != nil && !errors.Is(err, berrors.ErrDatabaseReadOnly) {
		t.Fatalf("Flush = %v, want nil or the commit error", err)
	}
	if !errors.Is(got, berrors.ErrDatabaseReadOnly) {
		t.Fatalf("done(%v), want the commit error", got)
	}
	// FailingSince feeds the dashboard's store_failing issue.
	if st := w.Stats(); st.FailedCommits != 1 || st.Commits != 0 || st.Errors != 1 || st.FailingSince.IsZero() || st.LastError == "" {
		t.Fatalf("stats %+v", st)
	}
	// A later successful-or-not Flush reports only failures after its call.
	if err := w.Flush(); err != nil {
		t.Fatalf("idle Flush after a failure = %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
}

func TestAppendReadingsDoesNotAllocate(t *testing.T) {
	db := openTestDB(t)
	w := NewWriter(db, WriterOptions{MaxPendingReadings: 1 << 20})
	defer w.Close()
	rs := sensorReadings("SEN-ALLOC", 0, 8)
	done := func(error) {}
	// Grow both queue buffers once.
	for range 2 {
		release := gate(t, w)
		for range 2000 {
			w.AppendReadings(rs, done)
		}
		release()
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	release := gate(t, w)
	defer release()
	for _, d := range []func(error){nil, done} {
		if n := testing.AllocsPerRun(1000, func() { w.AppendReadings(rs, d) }); n != 0 {
			t.Errorf("AppendReadings allocates %v times per call (done nil: %v)", n, d == nil)
		}
	}
}

// TestWriterCrashSafety kills a process that is writing through the Writer
// and checks that every reading whose done(nil) it had reported is in the
// database afterwards.
func TestWriterCrashSafety(t *testing.T) {
	if os.Getenv("BEACONHUB_CRASH_DB") != "" {
		t.Skip("running as the crash child")
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestWriterCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "BEACONHUB_CRASH_DB="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[seriesID][]int64{}
	acks := 0
	sc := bufio.NewScanner(out)
	killed := false
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 || f[0] != "ack" {
			continue
		}
		m, _ := strconv.Atoi(f[2])
		ts, _ := strconv.ParseInt(f[3], 10, 64)
		id := seriesID{f[1], uint8(m)}
		acked[id] = append(acked[id], ts)
		acks++
		if acks >= 4000 && !killed {
			killed = true
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
		}
	}
	_ = cmd.Wait()
	if !killed {
		t.Fatalf("child exited after %d acks without being killed", acks)
	}
	db, err := Open(path, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	}); err != nil {
		t.Fatalf("database inconsistent after kill: %v", err)
	}
	checkHistoryInvariants(t, db)
	for id, tss := range acked {
		have := map[int64]bool{}
		for _, r := range queryAll(t, db, id.uid, id.metric, 0, math.MaxInt64) {
			have[r.ts] = true
		}
		for _, ts := range tss {
			if !have[ts] {
				t.Fatalf("%v ts %d was acknowledged but is missing after the crash", id, ts)
			}
		}
	}
	t.Logf("%d acknowledged readings survived; %d readings in the file", acks, countAll(t, db))
}

// TestWriterCrashChild is the process TestWriterCrashSafety kills.
func TestWriterCrashChild(t *testing.T) {
	path := os.Getenv("BEACONHUB_CRASH_DB")
	if path == "" {
		t.Skip("helper process for TestWriterCrashSafety")
	}
	db, err := Open(path, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(db, WriterOptions{})
	var outMu sync.Mutex
	stdout := bufio.NewWriter(os.Stdout)
	for g := range 4 {
		go func() {
			uid := fmt.Sprintf("SEN-CRASH-%d", g)
			for i := 0; ; i++ {
				rs := make([]Reading, 0, 6)
				for m := uint8(1); m <= 3; m++ {
					rs = append(rs, Reading{UID: uid, Metric: m, TS: int64(i) * 1000, Value: float64(i%1000) / 10})
					rs = append(rs, Reading{UID: uid + "b", Metric: m, TS: int64(i) * 1000, Value: -float64(i%1000) / 10})
				}
				w.AppendReadings(rs, func(err error) {
					if err != nil {
						return
					}
					outMu.Lock()
					for _, r := range rs {
						fmt.Fprintf(stdout, "ack %s %d %d\n", r.UID, r.Metric, r.TS)
					}
					_ = stdout.Flush() // reported only once durable
					outMu.Unlock()
				})
			}
		}()
	}
	time.Sleep(2 * time.Minute) // the parent kills us long before
	t.Fatal("not killed")
}

// lazyWriter returns a writer whose lazy delay never ends by itself, after
// one commit (so the delay counts from a real end), and a function that
// waits until the writer goroutine holds queued lazy work back.
func lazyWriter(t *testing.T, db *DB) (*Writer, func()) {
	t.Helper()
	w := NewWriter(db, WriterOptions{LazyDelay: time.Hour})
	t.Cleanup(func() { _ = w.Close() })
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	w.Do(func(*bolt.Tx) error { return nil }, func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitHolding := func() {
		t.Helper()
		if !writerReaches(w, func(w *Writer) bool { return w.holding }) {
			t.Fatal("the writer never held lazy work back")
		}
	}
	return w, waitHolding
}

// TestWriterLazyWorkWaitsForCompany: readings nobody waits for, lazy ops
// and observing callbacks stay queued; the next waited-for entry commits
// them with it, in one transaction and in order.
func TestWriterLazyWorkWaitsForCompany(t *testing.T) {
	db := openTestDB(t)
	w, waitHolding := lazyWriter(t, db)
	w.AppendReadings(sensorReadings("u1", 0, 10), nil)
	var lazyOpRan atomic.Bool
	w.DoLazily(func(*bolt.Tx) error { lazyOpRan.Store(true); return nil }, nil)
	observed := make(chan error, 1)
	w.AppendReadingsLazily(sensorReadings("u2", 0, 5), func(err error) { observed <- err })
	waitHolding()
	if c := w.Stats().Commits; c != 1 {
		t.Fatalf("%d commits while only lazy work was queued, want the first one only", c)
	}
	if lazyOpRan.Load() {
		t.Fatal("a lazy op ran before anything needed a commit")
	}
	var order []string
	done := make(chan error, 1)
	w.Do(func(*bolt.Tx) error {
		order = append(order[:0], fmt.Sprint(lazyOpRan.Load()))
		return nil
	}, func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-observed; err != nil {
		t.Fatal(err)
	}
	// done runs before the writer books the commit; Flush waits for that.
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	st := w.Stats()
	if st.Commits != 2 || st.LazyWaits == 0 {
		t.Fatalf("commits %d, lazy waits %d: want the held work and the urgent op in one more commit", st.Commits, st.LazyWaits)
	}
	if len(order) != 1 || order[0] != "true" {
		t.Fatalf("the urgent op ran before the lazy op queued ahead of it: %v", order)
	}
	if n := countAll(t, db); n != 15 {
		t.Fatalf("%d readings stored, want 15", n)
	}
}

// TestWriterLazyFlushAndClose: Flush and Close do not wait out the delay.
func TestWriterLazyFlushAndClose(t *testing.T) {
	db := openTestDB(t)
	w, waitHolding := lazyWriter(t, db)
	w.AppendReadings(sensorReadings("u1", 0, 10), nil)
	waitHolding()
	promptly(t, "Flush", w.Flush)
	if n := countAll(t, db); n != 10 {
		t.Fatalf("%d readings after Flush, want 10", n)
	}
	w.AppendReadings(sensorReadings("u1", 10, 10), nil)
	waitHolding()
	promptly(t, "Close", w.Close)
	if n := countAll(t, db); n != 20 {
		t.Fatalf("%d readings after Close, want 20", n)
	}
}

// promptly runs fn and fails the test if it has not returned long before
// the lazy delay (an hour) would end.
func promptly(t *testing.T, what string, fn func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s waited for the lazy delay", what)
	}
}

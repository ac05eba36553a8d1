package store

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ErrWriterClosed is passed to done for work submitted after Close.
var ErrWriterClosed = errors.New("store: writer closed")

// WriterOptions tune a Writer; the zero value is production-safe.
type WriterOptions struct {
	// MaxBatchReadings and MaxBatchOps cap one transaction so that a backlog
	// does not turn into one huge, slow commit (default 20,000 / 1,000). A
	// single AppendReadings call is never split across transactions.
	MaxBatchReadings int
	MaxBatchOps      int
	// MaxPendingReadings and MaxPendingOps bound the queue that fills while
	// a commit runs; callers block (backpressure) beyond them rather than
	// lose data (default 2×MaxBatchReadings / 4×MaxBatchOps).
	MaxPendingReadings int
	MaxPendingOps      int
	// LazyDelay lets work that nobody waits for (AppendReadings without
	// done, the *Lazily calls) wait for company: while only such work is
	// queued, the next commit starts at most LazyDelay after the previous
	// one ended instead of at once. Fewer, larger commits cost less CPU and
	// far fewer flash writes (each commit rewrites every page it touches
	// plus the meta page, and fsyncs twice). Anything with a waiter (a QoS 1
	// PUBACK, an alert event, Flush, Close) still commits at once, taking
	// the waiting work with it. 0 commits everything at once.
	LazyDelay time.Duration
	Logger    *slog.Logger
}

// WriterStats is a snapshot of the writer's counters.
type WriterStats struct {
	Commits           uint64        // successful transactions
	FailedCommits     uint64        // transactions whose commit itself failed
	Readings          uint64        // readings in committed transactions (duplicates included)
	Ops               uint64        // Do fns committed
	Errors            uint64        // done callbacks that received an error
	LastBatchReadings int           // readings in the last committed transaction
	LastBatchOps      int           // ops in the last committed transaction
	AvgBatchReadings  float64       // Readings / Commits
	LastCommit        time.Duration // wall time of the last transaction incl. fsync
	MaxCommit         time.Duration // longest such time since the writer started
	LazyWaits         uint64        // commits held back by LazyDelay
	LastCommitBytes   int64         // bytes of pages the last commit wrote
	WrittenBytes      uint64        // bytes of pages all commits wrote (flash wear)
	PendingReadings   int           // queued, not yet picked up by the writer goroutine
	// FailingSince is when commits began failing (a full disk, a
	// read-only file system), zero once one commits again; LastError is
	// the latest failure's text.
	FailingSince time.Time `json:"-"`
	LastError    string    `json:"-"`
}

type entryKind uint8

const (
	kindReadings entryKind = iota
	kindOp
	kindFailed // rejected on submission; done gets err from the writer goroutine
)

type wentry struct {
	kind entryKind
	n    int // readings (kindReadings)
	fn   func(*bolt.Tx) error
	done func(error)
	err  error
	seq  uint64
}

// wqueue is a batch: entries in submission order; the readings of
// kindReadings entries are stored back to back in readings.
type wqueue struct {
	entries  []wentry
	readings []Reading
	ops      int
	urgent   bool // something in it is waited for: no lazy delay
}

func (q *wqueue) reset() {
	clear(q.entries) // drop references to callbacks and uid strings
	clear(q.readings)
	q.entries, q.readings, q.ops, q.urgent = q.entries[:0], q.readings[:0], 0, false
}

// Writer funnels hot-path writes into group commits: one goroutine owns a
// bbolt write transaction at a time; everything submitted while a commit is
// in flight goes into the next one ("natural batching": latency is one
// commit when idle and throughput grows with load). Only work nobody waits
// for may be held back, by WriterOptions.LazyDelay.
type Writer struct {
	db   *DB
	log  *slog.Logger
	maxR int
	maxO int
	pndR int
	pndO int
	lazy time.Duration

	// put stores readings; tests swap it for a baseline layout.
	put func(tx *bolt.Tx, rs []Reading, idx *seriesIndex) (int, error)
	idx *seriesIndex

	mu        sync.Mutex
	work      sync.Cond // writer goroutine: queue non-empty or closing
	space     sync.Cond // producers: queue below its bound
	progress  sync.Cond // Flush: processed advanced
	q         wqueue    // pending; swapped with batch by the writer goroutine
	batch     wqueue
	seq       uint64 // last sequence number handed out
	processed uint64 // all entries with seq ≤ processed have had done called
	closing   bool
	stopped   bool // goroutine gone: reject new work
	blocked   int  // producers waiting for space (tests)
	holding   bool // the writer goroutine is in a lazy delay (tests)
	failures  uint64
	lastErr   error
	stats     WriterStats
	exited    chan struct{}
	lastEnd   time.Time   // when the last transaction ended (writer goroutine)
	lazyTimer *time.Timer // wakes the writer at the end of a lazy delay

	errs []error // per-entry result of the transaction being built
}

// NewWriter starts the writer goroutine. Close it before closing db.
func NewWriter(db *DB, opts WriterOptions) *Writer {
	if opts.MaxBatchReadings <= 0 {
		opts.MaxBatchReadings = 20000
	}
	if opts.MaxBatchOps <= 0 {
		opts.MaxBatchOps = 1000
	}
	if opts.MaxPendingReadings <= 0 {
		opts.MaxPendingReadings = 2 * opts.MaxBatchReadings
	}
	if opts.MaxPendingOps <= 0 {
		opts.MaxPendingOps = 4 * opts.MaxBatchOps
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	w := &Writer{
		db: db, log: opts.Logger,
		maxR: opts.MaxBatchReadings, maxO: opts.MaxBatchOps,
		pndR: opts.MaxPendingReadings, pndO: opts.MaxPendingOps, lazy: opts.LazyDelay,
		put: putReadings, idx: newSeriesIndex(),
		exited: make(chan struct{}),
	}
	w.work.L, w.space.L, w.progress.L = &w.mu, &w.mu, &w.mu
	go w.run()
	return w
}

// AppendReadings queues readings for the history. done (may be nil) is
// called exactly once from the writer goroutine: with nil after the
// transaction holding all of rs committed and fsync'd, or with the error
// that prevented it (ErrInvalidReading if any reading is invalid: then none
// of rs is stored). rs is copied; UID strings are retained until the commit,
// so they must be ordinary immutable strings. AppendReadings blocks only
// while the queue is over its bound. After Close, done is called with
// ErrWriterClosed before AppendReadings returns.
//
// done runs on the commit path: it must be quick and must not call Flush or
// Close, nor submit work that may block on backpressure.
func (w *Writer) AppendReadings(rs []Reading, done func(error)) {
	w.appendReadings(rs, done, done != nil)
}

// AppendReadingsLazily is AppendReadings for a done that only observes
// (a latency sample): it does not hurry the commit past LazyDelay.
func (w *Writer) AppendReadingsLazily(rs []Reading, done func(error)) {
	w.appendReadings(rs, done, false)
}

func (w *Writer) appendReadings(rs []Reading, done func(error), urgent bool) {
	verr := ValidateReadings(rs)
	w.mu.Lock()
	for !w.stopped && len(w.q.readings) > 0 && len(w.q.readings)+len(rs) > w.pndR {
		w.wait(&w.space)
	}
	if w.stopped {
		w.mu.Unlock()
		if done != nil {
			done(ErrWriterClosed)
		}
		return
	}
	w.seq++
	switch {
	case verr != nil:
		w.q.entries = append(w.q.entries, wentry{kind: kindFailed, err: verr, done: done, seq: w.seq})
	case done == nil && w.mergeable(len(rs)):
		// Fire-and-forget readings need no entry of their own.
		e := &w.q.entries[len(w.q.entries)-1]
		e.n += len(rs)
		e.seq = w.seq
		w.q.readings = append(w.q.readings, rs...)
	default:
		w.q.entries = append(w.q.entries, wentry{kind: kindReadings, n: len(rs), done: done, seq: w.seq})
		w.q.readings = append(w.q.readings, rs...)
	}
	w.q.urgent = w.q.urgent || urgent || verr != nil
	w.work.Signal()
	w.mu.Unlock()
}

func (w *Writer) mergeable(n int) bool {
	if len(w.q.entries) == 0 {
		return false
	}
	e := &w.q.entries[len(w.q.entries)-1]
	return e.kind == kindReadings && e.done == nil && e.n+n <= w.maxR
}

// Do queues fn to run inside the next group transaction; done as for
// AppendReadings. fn must be idempotent and free of side effects outside tx:
// if another fn in the batch fails, the transaction is rolled back and fn
// runs again. If fn returns an error (or panics) only its own done receives
// the error; the rest of the batch is re-run without it and commits.
func (w *Writer) Do(fn func(tx *bolt.Tx) error, done func(error)) { w.do(fn, done, true) }

// DoLazily is Do for work nobody waits for (a motion warning, a periodic
// last-seen flush): it may wait up to LazyDelay for a commit, and it still
// commits in queue order with everything around it.
func (w *Writer) DoLazily(fn func(tx *bolt.Tx) error, done func(error)) { w.do(fn, done, false) }

func (w *Writer) do(fn func(tx *bolt.Tx) error, done func(error), urgent bool) {
	w.mu.Lock()
	for !w.stopped && w.q.ops > 0 && w.q.ops >= w.pndO {
		w.wait(&w.space)
	}
	if w.stopped {
		w.mu.Unlock()
		if done != nil {
			done(ErrWriterClosed)
		}
		return
	}
	w.seq++
	w.q.entries = append(w.q.entries, wentry{kind: kindOp, fn: fn, done: done, seq: w.seq})
	w.q.ops++
	w.q.urgent = w.q.urgent || urgent
	w.work.Signal()
	w.mu.Unlock()
}

func (w *Writer) wait(c *sync.Cond) {
	w.blocked++
	c.Wait()
	w.blocked--
}

// Flush returns once everything submitted before the call has been
// committed (or has failed and been reported to its done). It returns the
// commit error if a transaction failed meanwhile, ErrWriterClosed after
// Close. Per-item failures (invalid readings, failing fns) go to their done
// callbacks only.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return ErrWriterClosed
	}
	target, failures := w.seq, w.failures
	if w.processed < target {
		w.q.urgent = true // what is queued is waited for now
		w.work.Signal()
	}
	for w.processed < target && !w.stopped {
		w.progress.Wait()
	}
	if w.failures != failures {
		return w.lastErr
	}
	return nil
}

// Close commits everything queued, stops the goroutine and returns the last
// commit error seen while draining. Later submissions get ErrWriterClosed.
func (w *Writer) Close() error {
	w.mu.Lock()
	failures := w.failures
	w.closing = true
	w.work.Signal()
	w.mu.Unlock()
	<-w.exited
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failures != failures {
		return w.lastErr
	}
	return nil
}

// Stats returns a snapshot of the writer's counters.
func (w *Writer) Stats() WriterStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.stats
	if s.Commits > 0 {
		s.AvgBatchReadings = float64(s.Readings) / float64(s.Commits)
	}
	s.PendingReadings = len(w.q.readings)
	return s
}

func (w *Writer) run() {
	defer close(w.exited)
	for {
		w.mu.Lock()
		for len(w.q.entries) == 0 && !w.closing {
			w.work.Wait()
		}
		if len(w.q.entries) == 0 {
			w.stopped = true
			w.space.Broadcast()
			w.progress.Broadcast()
			w.mu.Unlock()
			if w.lazyTimer != nil {
				w.lazyTimer.Stop()
			}
			return
		}
		w.holdLazy()
		w.q, w.batch = w.batch, w.q
		w.space.Broadcast()
		w.mu.Unlock()

		w.process(&w.batch)
		w.batch.reset()
		w.lastEnd = time.Now()
	}
}

// holdLazy waits, with w.mu held, while the queue holds only work nobody
// waits for, up to LazyDelay after the last commit ended, or until the
// queue reaches one transaction's worth of readings.
func (w *Writer) holdLazy() {
	if w.lazy <= 0 {
		return
	}
	end := w.lastEnd.Add(w.lazy)
	held := false
	for !w.closing && !w.q.urgent && len(w.q.readings) < w.maxR && w.q.ops < w.maxO {
		d := time.Until(end)
		if d <= 0 {
			break
		}
		if w.lazyTimer == nil {
			w.lazyTimer = time.AfterFunc(d, func() {
				w.mu.Lock()
				w.work.Signal()
				w.mu.Unlock()
			})
		} else {
			w.lazyTimer.Reset(d)
		}
		held = true
		w.holding = true
		w.work.Wait()
		w.holding = false
	}
	if held {
		w.stats.LazyWaits++
	}
}

// process commits a batch in transactions of at most maxR readings / maxO
// ops, never splitting an entry.
func (w *Writer) process(q *wqueue) {
	ents, rds := q.entries, q.readings
	for len(ents) > 0 {
		i, nr, no := 0, 0, 0
		for ; i < len(ents); i++ {
			e := &ents[i]
			op := 0
			if e.kind == kindOp {
				op = 1
			}
			if i > 0 && (nr+e.n > w.maxR || no+op > w.maxO) {
				break
			}
			nr += e.n
			no += op
		}
		w.commit(ents[:i], rds[:nr])
		ents, rds = ents[i:], rds[nr:]
	}
}

// commit runs one group transaction. An entry that fails is excluded and
// the transaction re-run, so one bad op cannot take the others down.
func (w *Writer) commit(ents []wentry, rds []Reading) {
	errs := w.errs[:0]
	for i := range ents {
		errs = append(errs, ents[i].err)
		if ents[i].kind == kindFailed && ents[i].done == nil {
			w.log.Warn("store writer: dropped invalid readings", "err", ents[i].err)
		}
	}
	w.errs = errs

	var (
		commitErr  error
		elapsed    time.Duration
		pageBytes  int64
		nReadings  int
		nOps       int
		committed  bool
		failed     []int // entries to exclude before the next attempt
		failErr    error
		runStart   int
		runOff     int
		off        int
		activeLeft int
	)
	for {
		activeLeft = 0
		for i := range ents {
			if errs[i] == nil {
				activeLeft++
			}
		}
		if activeLeft == 0 {
			break
		}
		failed, failErr = failed[:0], nil
		nReadings, nOps = 0, 0
		start := time.Now()
		var txRef *bolt.Tx
		err := w.db.bolt.Update(func(tx *bolt.Tx) error {
			txRef = tx
			runStart, runOff, off = -1, 0, 0
			endRun := func(end int) error {
				if runStart < 0 {
					return nil
				}
				s := runStart
				runStart = -1
				if err := w.callPut(tx, rds[runOff:off]); err != nil {
					failed, failErr = w.culprits(failed, ents[s:end], s, rds[runOff:off], err), err
					return err
				}
				nReadings += off - runOff
				return nil
			}
			for i := range ents {
				e := &ents[i]
				if errs[i] != nil {
					if err := endRun(i); err != nil {
						return err
					}
					off += e.n
					continue
				}
				switch e.kind {
				case kindReadings:
					if runStart < 0 {
						runStart, runOff = i, off
					}
					off += e.n
				case kindOp:
					if err := endRun(i); err != nil {
						return err
					}
					if err := callOp(e.fn, tx); err != nil {
						failed, failErr = append(failed, i), err
						return err
					}
					nOps++
				}
			}
			return endRun(len(ents))
		})
		elapsed = time.Since(start)
		w.idx.release()
		if err == nil {
			committed = true
			if txRef != nil {
				st := txRef.Stats()
				pageBytes = st.GetPageAlloc()
			}
			break
		}
		if len(failed) > 0 {
			for _, j := range failed {
				errs[j] = failErr
			}
			w.log.Warn("store writer: dropping failed entries from batch", "entries", len(failed), "err", failErr)
			continue
		}
		commitErr = err
		for j := range errs {
			if errs[j] == nil {
				errs[j] = err
			}
		}
		w.log.Error("store writer: commit failed", "err", err, "entries", len(ents))
		break
	}

	nerr := 0
	for i := range ents {
		if errs[i] != nil {
			nerr++
		}
		if d := ents[i].done; d != nil {
			callDone(w.log, d, errs[i])
		}
	}
	clear(errs)

	w.mu.Lock()
	w.processed = ents[len(ents)-1].seq
	w.stats.Errors += uint64(nerr)
	if committed {
		w.stats.FailingSince = time.Time{}
		w.stats.Commits++
		w.stats.Readings += uint64(nReadings)
		w.stats.Ops += uint64(nOps)
		w.stats.LastBatchReadings = nReadings
		w.stats.LastBatchOps = nOps
		w.stats.LastCommit = elapsed
		w.stats.MaxCommit = max(w.stats.MaxCommit, elapsed)
		w.stats.LastCommitBytes = pageBytes
		w.stats.WrittenBytes += uint64(pageBytes)
	}
	if commitErr != nil {
		w.stats.FailedCommits++
		w.failures++
		w.lastErr = commitErr
		w.stats.LastError = commitErr.Error()
		if !committed && w.stats.FailingSince.IsZero() {
			w.stats.FailingSince = time.Now()
		}
	}
	w.progress.Broadcast()
	w.mu.Unlock()
}

// culprits returns the indices (offset by base) of the reading entries in
// run to exclude after err: only those touching the failed series when the
// error is confined to one (a corrupt block must not stop all ingest),
// otherwise the whole run.
func (w *Writer) culprits(dst []int, run []wentry, base int, rds []Reading, err error) []int {
	var se *SeriesError
	confined := errors.As(err, &se)
	off := 0
	n := len(dst)
	for i := range run {
		e := &run[i]
		if e.kind != kindReadings || e.err != nil {
			continue
		}
		rs := rds[off : off+e.n]
		off += e.n
		if !confined || slices.ContainsFunc(rs, func(r Reading) bool { return r.UID == se.UID && r.Metric == se.Metric }) {
			dst = append(dst, base+i)
		}
	}
	if len(dst) == n { // not found: exclude everything rather than loop
		for i := range run {
			if run[i].kind == kindReadings {
				dst = append(dst, base+i)
			}
		}
	}
	return dst
}

func (w *Writer) callPut(tx *bolt.Tx, rs []Reading) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("store: panic storing readings: %v", r)
		}
	}()
	_, err = w.put(tx, rs, w.idx)
	return err
}

func callOp(fn func(*bolt.Tx) error, tx *bolt.Tx) (err error) {
	if fn == nil {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("store: panic in writer op: %v", r)
		}
	}()
	return fn(tx)
}

func callDone(log *slog.Logger, done func(error), err error) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("store writer: done callback panicked", "panic", r)
		}
	}()
	done(err)
}

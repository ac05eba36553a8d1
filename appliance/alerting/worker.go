package alerting

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"beaconhub/appliance/clock"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// Writer is the group-commit writer (store.Writer).
type Writer interface {
	Do(fn func(tx *bolt.Tx) error, done func(error))
}

// Conveneer is what the worker calls: the Client, or a fake in tests.
type Conveneer interface {
	Configured() bool
	Convene(ctx context.Context, r ConveneRequest) (ConveneResponse, error)
}

// WorkerOptions configure a Worker.
type WorkerOptions struct {
	Client Conveneer
	Writer Writer
	Clock  clock.Clock
	Logger *slog.Logger
	// QueueSize bounds the events held in memory for alertsys (default
	// 64): memory must not grow with an outage. Past it a press waits in
	// the store, where it is already pending, and Pending reads it back
	// once the queue has room. Without Pending (tests of the worker
	// alone) the oldest event not in flight is dropped, counted and
	// logged: a 20 s outage under 100 presses lost the 36 oldest that way
	// (a review).
	QueueSize int
	// Pending reads every event still pending for alertsys, oldest first
	// (store.DB.PendingAlertsysEvents).
	Pending func() ([]store.Event, error)
	// Parallel is how many requests may be in flight at once (default 4):
	// one at a time, an alertsys answering in 9.5 s convened the last of
	// 100 presses after nearly six minutes (a review).
	Parallel int
	// GiveUpAfter bounds the retries of an event whose failures are
	// retryable, counted from the press (its CreatedAt): an emergency
	// convened a minute late still helps, and alertsys restarting for 30 s
	// must not cost the presses made meanwhile; one convened much later
	// would mislead. Default RecoverWindow, the same bound as the re-send
	// of pending presses at start.
	GiveUpAfter time.Duration
	// Attempts, when > 0, also caps the attempts per event. Backoff is the
	// waits between them (default 1 s, 3 s, 10 s, 30 s; the last repeats).
	Attempts int
	Backoff  []time.Duration
	// StopGrace is how long Stop lets the convenes in flight finish, in
	// real time (a shutdown bound, not a schedule); 0 cuts them at once.
	// A convene cut at a stop had reached alertsys, stayed pending and
	// was sent again at the next start: alertsys saw it twice, told apart
	// only by its Idempotency-Key (a black-box check). The appliance
	// gives DefaultStopGrace.
	StopGrace time.Duration
}

// DefaultStopGrace is the appliance's StopGrace: as push's PostGrace.
const DefaultStopGrace = 5 * time.Second

// Result is the final alertsys outcome of one event.
type Result struct {
	State    string `json:"state"` // store.AlertsysSent, Failed, Dropped or Disabled
	Message  string `json:"message,omitempty"`
	Attempts int    `json:"attempts"`
	Err      error  `json:"-"`
}

// WorkerStats are counters since start plus the queue level.
type WorkerStats struct {
	Queued   uint64 `json:"queued"`
	Sent     uint64 `json:"sent"`
	Failed   uint64 `json:"failed"`
	Dropped  uint64 `json:"dropped"`
	Retries  uint64 `json:"retries"`
	Disabled uint64 `json:"disabled"`
	// Spilled counts presses that found the queue full and waited in the
	// store for room instead.
	Spilled  uint64 `json:"spilled"`
	QueueLen int    `json:"queue_len"`
	QueueCap int    `json:"queue_cap"`
}

type job struct {
	ev        store.Event
	queued    time.Time // stands for the press time of an event without CreatedAt
	attempts  int
	notBefore time.Time
	inflight  bool
}

type finished struct {
	ev  store.Event
	res Result
}

// Worker delivers SOS and watch events to alertsys, up to Parallel
// requests at a time, oldest ready event first; an event waiting for its
// retry does not hold up newer ones.
type Worker struct {
	o     WorkerOptions
	log   *slog.Logger
	clock clock.Clock

	mu        sync.Mutex
	queue     []*job
	done      []finished // results to record, by the worker goroutine
	stats     WorkerStats
	timer     clock.Timer
	stopped   bool
	started   bool // Start ran: Stop waits for the goroutines
	listeners []func(store.Event, Result)
	// in names the events in the queue and settled those whose outcome
	// a refill's read may not have seen: not committed yet (false), or
	// committed while the read ran (true). A refill must not bring
	// either back, nor may a commit's Enqueue repeat a refill.
	in, settled map[uint64]bool
	reading     bool // a refill is reading the store
	// unsaved names settled events whose outcome failed to commit: still
	// pending in the store, never read back in this run.
	unsaved map[uint64]bool
	// spilled: presses wait in the store for room in the queue; until
	// refill has brought them all, new ones join them there, so the
	// queue stays in press order.
	spilled     bool
	refillAfter time.Time // after a failed read
	runners     sync.WaitGroup

	wake   chan struct{}
	stop   chan struct{}
	exited chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
}

// NewWorker builds a worker; Start runs it.
func NewWorker(o WorkerOptions) *Worker {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 64
	}
	if o.Parallel <= 0 {
		o.Parallel = 4
	}
	if o.GiveUpAfter <= 0 {
		o.GiveUpAfter = RecoverWindow
	}
	if len(o.Backoff) == 0 {
		o.Backoff = []time.Duration{time.Second, 3 * time.Second, 10 * time.Second, 30 * time.Second}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Worker{o: o, log: o.Logger, clock: o.Clock, stats: WorkerStats{QueueCap: o.QueueSize},
		in: map[uint64]bool{}, settled: map[uint64]bool{}, unsaved: map[uint64]bool{},
		wake: make(chan struct{}, 1), stop: make(chan struct{}), exited: make(chan struct{}), ctx: ctx, cancel: cancel}
}

// OnResult registers fn to receive each event's final outcome, on one of
// the worker's goroutines (several at once: fn must be safe for
// concurrent use). Register before Start.
func (w *Worker) OnResult(fn func(store.Event, Result)) { w.listeners = append(w.listeners, fn) }

// Configured reports whether alertsys has a base URL right now.
func (w *Worker) Configured() bool { return w.o.Client.Configured() }

// Start runs the worker goroutines.
func (w *Worker) Start() {
	w.mu.Lock()
	w.started = true
	w.mu.Unlock()
	w.runners.Add(w.o.Parallel)
	for range w.o.Parallel {
		go w.run()
	}
	go func() {
		w.runners.Wait()
		close(w.exited)
	}()
}

// Stop aborts the request in flight and waits for the goroutine. Events
// still queued stay "pending" in the store; Service.RecoverAlertsys re-queues
// them at the next start.
func (w *Worker) Stop() {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
	}
	started := w.started
	w.mu.Unlock()
	// Runners take no new attempt once stop is closed; the ones under
	// way get StopGrace to be answered.
	close(w.stop)
	if started && w.o.StopGrace > 0 {
		t := time.NewTimer(w.o.StopGrace)
		select {
		case <-w.exited:
		case <-t.C:
		}
		t.Stop()
	}
	w.cancel()
	if started { // a worker built but never started has no goroutine to wait for
		<-w.exited
	}
}

// Stats returns the counters.
func (w *Worker) Stats() WorkerStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.stats
	s.QueueLen = len(w.queue)
	return s
}

// Enqueue hands an event over. It never blocks and never writes: it runs
// on the store writer's commit path.
func (w *Worker) Enqueue(e store.Event) {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	if w.known(e.ID) {
		w.mu.Unlock() // a refill read it first
		return
	}
	if w.o.Pending != nil && (w.spilled || len(w.queue) >= w.o.QueueSize) {
		if !w.spilled {
			w.log.Warn("alertsys queue full: presses wait in the store", "queue_cap", w.o.QueueSize)
		}
		w.spilled = true
		w.stats.Spilled++
		w.mu.Unlock()
		w.signal()
		return
	}
	if len(w.queue) >= w.o.QueueSize {
		for i, j := range w.queue {
			if j.inflight {
				continue
			}
			w.queue = append(w.queue[:i], w.queue[i+1:]...)
			w.settleLocked(j.ev.ID)
			w.stats.Dropped++
			w.done = append(w.done, finished{j.ev, Result{State: store.AlertsysDropped, Attempts: j.attempts,
				Err: errors.New("alertsys queue full")}})
			break
		}
	}
	w.queue = append(w.queue, &job{ev: e, queued: w.clock.Now()})
	w.in[e.ID] = true
	w.stats.Queued++
	w.mu.Unlock()
	w.signal()
}

// refill brings presses waiting in the store back into the queue, oldest
// first, once it is at most half full. It runs on a worker goroutine.
func (w *Worker) refill(now time.Time) {
	w.mu.Lock()
	due := w.spilled && !w.reading && len(w.queue) <= w.o.QueueSize/2 && !now.Before(w.refillAfter)
	w.reading = w.reading || due
	w.mu.Unlock()
	if !due {
		return
	}
	evs, err := w.o.Pending()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reading = false
	defer func() {
		// Outcomes committed by now are in what any later read sees.
		for id, committed := range w.settled {
			if committed {
				delete(w.settled, id)
			}
		}
	}()
	if err != nil {
		w.log.Error("read presses waiting for alertsys", "err", err)
		w.refillAfter = now.Add(time.Second)
		// A wake to try again: with the queue empty nothing else comes,
		// and the presses in the store waited for the next press (a
		// review).
		w.clock.AfterFunc(time.Second, w.signal)
		return
	}
	w.spilled = false
	for _, e := range evs {
		if w.known(e.ID) {
			continue
		}
		if len(w.queue) >= w.o.QueueSize {
			w.spilled = true
			break
		}
		w.queue = append(w.queue, &job{ev: e, queued: now})
		w.in[e.ID] = true
		w.stats.Queued++
	}
}

func (w *Worker) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *Worker) run() {
	defer w.runners.Done()
	for {
		now := w.clock.Now()
		if w.o.Pending != nil {
			w.refill(now)
		}
		w.mu.Lock()
		done := w.done
		w.done = nil
		j, wait := w.pick(now)
		if j != nil {
			j.inflight = true
			// Another runner may be idle with more ready: one wake per
			// pick lets it look (a spare wake finds nothing and sleeps).
			w.signal()
		} else if wait > 0 {
			if w.timer != nil {
				w.timer.Stop()
			}
			w.timer = w.clock.AfterFunc(wait, w.signal)
		}
		w.mu.Unlock()
		for _, f := range done {
			w.record(f.ev, f.res)
		}
		if j == nil {
			select {
			case <-w.wake:
				continue
			case <-w.stop:
				return
			}
		}
		select {
		case <-w.stop:
			return
		default:
		}
		w.attempt(j)
	}
}

// pick returns the oldest job that may run now, or how long until one may.
func (w *Worker) pick(now time.Time) (*job, time.Duration) {
	var wait time.Duration
	for _, j := range w.queue {
		if j.inflight {
			continue
		}
		if !j.notBefore.After(now) {
			return j, 0
		}
		if d := j.notBefore.Sub(now); wait == 0 || d < wait {
			wait = d
		}
	}
	return nil, wait
}

func (w *Worker) attempt(j *job) {
	if !w.o.Client.Configured() {
		w.finish(j, Result{State: store.AlertsysDisabled, Attempts: j.attempts})
		return
	}
	if !w.inTime(j, w.clock.Now()) {
		// Held in the queue (a slow alertsys, presses waiting in the
		// store) past the bound its retries keep: an emergency convened
		// this late would mislead.
		w.finish(j, Result{State: store.AlertsysFailed, Attempts: j.attempts,
			Err: errors.New("not convened within " + w.o.GiveUpAfter.String() + " of the press")})
		return
	}
	j.attempts++
	resp, err := w.o.Client.Convene(w.ctx, conveneRequest(j.ev))
	if err == nil {
		w.finish(j, Result{State: store.AlertsysSent, Message: resp.Message, Attempts: j.attempts})
		return
	}
	if w.ctx.Err() != nil {
		return // shutting down: the event stays pending in the store
	}
	var ae *Error
	retryable := !errors.As(err, &ae) || ae.Retryable
	b := w.o.Backoff[min(j.attempts-1, len(w.o.Backoff)-1)]
	if ae != nil && ae.RetryAfter > b && w.inTime(j, w.clock.Now().Add(ae.RetryAfter)) {
		b = ae.RetryAfter // as alertsys asked, where the press's bound allows
	}
	if retryable && (w.o.Attempts <= 0 || j.attempts < w.o.Attempts) && w.inTime(j, w.clock.Now().Add(b)) {
		w.mu.Lock()
		j.inflight = false
		j.notBefore = w.clock.Now().Add(b)
		w.stats.Retries++
		w.mu.Unlock()
		return
	}
	w.finish(j, Result{State: store.AlertsysFailed, Attempts: j.attempts, Err: err})
}

// inTime reports whether an attempt at t is still within GiveUpAfter of
// the press: the press's age when queued (wall clock: it may come from
// before a restart) plus the time since (the monotonic clock, where the
// clock has one: a wall clock stepped forward by NTP between the commit
// and the first attempt failed a press never attempted, a review).
func (w *Worker) inTime(j *job, t time.Time) bool {
	age := t.Sub(j.queued)
	if j.ev.CreatedAt != 0 {
		age += max(j.queued.Sub(time.UnixMilli(j.ev.CreatedAt)), 0)
	}
	return age <= w.o.GiveUpAfter
}

func (w *Worker) finish(j *job, r Result) {
	w.mu.Lock()
	for i, q := range w.queue {
		if q == j {
			w.queue = append(w.queue[:i], w.queue[i+1:]...)
			break
		}
	}
	w.settleLocked(j.ev.ID)
	switch r.State {
	case store.AlertsysSent:
		w.stats.Sent++
		// alertsys answers again: the presses waiting for their retry
		// go now, oldest first, not when each one's backoff (up to 30 s)
		// comes round; the oldest went last after an outage (a review).
		for _, q := range w.queue {
			q.notBefore = time.Time{}
		}
		w.signal()
	case store.AlertsysFailed:
		w.stats.Failed++
	case store.AlertsysDisabled:
		w.stats.Disabled++
	}
	w.mu.Unlock()
	w.record(j.ev, r)
}

// known reports whether id is queued or settled (w.mu held).
func (w *Worker) known(id uint64) bool {
	_, settled := w.settled[id]
	return w.in[id] || settled || w.unsaved[id]
}

// settleLocked moves an event out of the queue's names into settled,
// in one step: a refill reading between the two found it in neither
// and queued it again (the test saw presses convened twice).
func (w *Worker) settleLocked(id uint64) {
	delete(w.in, id)
	if w.o.Pending != nil && w.o.Writer != nil {
		w.settled[id] = false // until its outcome commits (record)
	}
}

// record stores the outcome on the event and tells the listeners.
func (w *Worker) record(e store.Event, r Result) {
	lg := w.log.With("asset_uid", e.AssetUID, "event_id", e.ID, "attempts", r.Attempts)
	switch r.State {
	case store.AlertsysSent:
		lg.Info("alertsys convened")
	case store.AlertsysDisabled:
		lg.Warn("alertsys not configured: press not forwarded")
	default:
		lg.Error("alertsys did not receive a press", "state", r.State, "err", r.Err)
	}
	if w.o.Writer != nil {
		var done func(error)
		if w.o.Pending != nil {
			done = func(err error) {
				w.mu.Lock()
				if err != nil {
					// Still pending in the store: a refill would convene
					// it again, and again at each (a review: a failing
					// disk convened 20 presses 22-74 times). Settled for
					// this run; the next start's recovery sends it.
					w.unsaved[e.ID] = true
					delete(w.settled, e.ID)
				} else if w.reading {
					w.settled[e.ID] = true // the read may predate the commit
				} else {
					delete(w.settled, e.ID)
				}
				w.mu.Unlock()
			}
		}
		w.o.Writer.Do(store.SetEventAlertsys(e.ID, r.State, r.Message, w.clock.Now().UnixMilli()), done)
	}
	for _, fn := range w.listeners {
		fn(e, r)
	}
}

// conveneRequest maps an event to the documented convene body.
func conveneRequest(e store.Event) ConveneRequest {
	rule := "sos"
	if e.BeaconType == "watch" {
		rule = "watch"
	}
	return ConveneRequest{Rule: rule, EventID: e.ID, Press: e.Type, OccurredAt: e.CreatedAt,
		Asset:    ConveneAsset{AssetUID: e.AssetUID, Name: e.BeaconName, Type: e.BeaconType, MAC: e.MAC},
		Location: PlaceOf(e.LocationID, e.Location),
		HeardBy:  ConveneHeard{Gateway: e.Gateway, AssetUID: e.GatewayUID, Name: e.GatewayName, Location: e.GatewayLocation}}
}

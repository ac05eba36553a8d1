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
	// QueueSize bounds the events waiting for alertsys (default 64). When it
	// is full the oldest event not in flight is dropped, counted and logged:
	// while alertsys is down the newest press matters most, and memory must
	// not grow with the outage.
	QueueSize int
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
}

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

// Worker delivers SOS and watch events to alertsys, one request at a time,
// oldest ready event first; an event waiting for its retry does not hold
// up newer ones.
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
	started   bool // Start ran: Stop waits for the goroutine
	listeners []func(store.Event, Result)

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
	if o.GiveUpAfter <= 0 {
		o.GiveUpAfter = RecoverWindow
	}
	if len(o.Backoff) == 0 {
		o.Backoff = []time.Duration{time.Second, 3 * time.Second, 10 * time.Second, 30 * time.Second}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Worker{o: o, log: o.Logger, clock: o.Clock, stats: WorkerStats{QueueCap: o.QueueSize},
		wake: make(chan struct{}, 1), stop: make(chan struct{}), exited: make(chan struct{}), ctx: ctx, cancel: cancel}
}

// OnResult registers fn to receive each event's final outcome, on the
// worker goroutine. Register before Start.
func (w *Worker) OnResult(fn func(store.Event, Result)) { w.listeners = append(w.listeners, fn) }

// Configured reports whether alertsys has a base URL right now.
func (w *Worker) Configured() bool { return w.o.Client.Configured() }

// Start runs the worker goroutine.
func (w *Worker) Start() {
	w.mu.Lock()
	w.started = true
	w.mu.Unlock()
	go w.run()
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
	w.cancel()
	close(w.stop)
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
	if len(w.queue) >= w.o.QueueSize {
		for i, j := range w.queue {
			if j.inflight {
				continue
			}
			w.queue = append(w.queue[:i], w.queue[i+1:]...)
			w.stats.Dropped++
			w.done = append(w.done, finished{j.ev, Result{State: store.AlertsysDropped, Attempts: j.attempts,
				Err: errors.New("alertsys queue full")}})
			break
		}
	}
	w.queue = append(w.queue, &job{ev: e, queued: w.clock.Now()})
	w.stats.Queued++
	w.mu.Unlock()
	w.signal()
}

func (w *Worker) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *Worker) run() {
	defer close(w.exited)
	for {
		now := w.clock.Now()
		w.mu.Lock()
		done := w.done
		w.done = nil
		j, wait := w.pick(now)
		if j != nil {
			j.inflight = true
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
// the press.
func (w *Worker) inTime(j *job, t time.Time) bool {
	pressed := j.queued
	if j.ev.CreatedAt != 0 {
		pressed = time.UnixMilli(j.ev.CreatedAt)
	}
	return t.Sub(pressed) <= w.o.GiveUpAfter
}

func (w *Worker) finish(j *job, r Result) {
	w.mu.Lock()
	for i, q := range w.queue {
		if q == j {
			w.queue = append(w.queue[:i], w.queue[i+1:]...)
			break
		}
	}
	switch r.State {
	case store.AlertsysSent:
		w.stats.Sent++
	case store.AlertsysFailed:
		w.stats.Failed++
	case store.AlertsysDisabled:
		w.stats.Disabled++
	}
	w.mu.Unlock()
	w.record(j.ev, r)
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
		w.o.Writer.Do(store.SetEventAlertsys(e.ID, r.State, r.Message, w.clock.Now().UnixMilli()), nil)
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
		Location: ConvenePlace{ID: e.LocationID, Name: e.Location},
		HeardBy:  ConveneHeard{Gateway: e.Gateway, AssetUID: e.GatewayUID, Name: e.GatewayName, Location: e.GatewayLocation}}
}

package ingest

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/clock"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// Writer is the group-commit writer (store.Writer); an interface so tests
// can count what reaches it.
type Writer interface {
	AppendReadings(rs []store.Reading, done func(error))
	AppendReadingsLazily(rs []store.Reading, done func(error))
	Do(fn func(tx *bolt.Tx) error, done func(error))
	DoLazily(fn func(tx *bolt.Tx) error, done func(error))
}

// Registry resolves MACs to assets and holds their last-heard cells
// (assets.Registry).
type Registry interface {
	Beacon(mac [6]byte) (*assets.Asset, bool)
	Gateway(mac [6]byte) (*assets.Asset, bool)
	SeenCells
}

// Observation is one good report of a registered beacon.
type Observation struct {
	Report
	Asset *assets.Asset
}

// Batch is one decoded publish after MAC resolution, handed to every
// subscriber. It is reused: subscribers must copy what they keep.
type Batch struct {
	Gateway      MAC
	GatewayAsset *assets.Asset // nil when the gateway is not registered
	Kind         Kind
	IsTest       bool
	Received     int64 // server receive time, Unix ms
	Obs          []Observation
}

// Writes collects what a subscriber needs made durable for a batch and
// hands it to the group-commit writer. A subscriber decides under its own
// lock (or the shard lock of the state it changed) and calls Hand before
// releasing that lock, so the writer's queue holds its writes in the order
// it decided them in: an event's insert before the merge that follows it,
// a zone interval's open before its close. That per-state order is all the
// QoS 1 barrier needs: the pipeline queues a publish's barrier only after
// every subscriber has handed its writes, so whatever the publish's
// decisions relied on (the stored copy of the same advertisement that
// another gateway reported a moment earlier, the open event a press
// merges into) was queued before the barrier and commits no later.
//
// A Writes without a writer (a subscriber's unit test) only collects:
// Hand keeps Readings and Ops for the test to read.
type Writes struct {
	Readings []store.Reading
	Ops      []func(tx *bolt.Tx) error
	// lazy[i] marks Ops[i] as work nobody waits for (AddOp); an op
	// appended to Ops directly is committed at once.
	lazy []bool
	// dones[i], when set, learns how Ops[i] ended (AddOpDone).
	dones []func(error)

	to Writer
	// failed (QoS 1) learns whether anything of the publish, readings or
	// ops, was refused: then it gets no PUBACK and the gateway resends.
	failed func(error)
	handed bool // something of this batch reached the writer
}

// AddOp queues an op; a lazy one (a motion warning, not an alert) may wait
// for the writer's lazy delay. It still commits in order with the batch's
// other ops, and at once when anything queued after it is waited for (a
// QoS 1 PUBACK).
func (w *Writes) AddOp(op func(tx *bolt.Tx) error, lazy bool) {
	w.Ops = append(w.Ops, op)
	if !lazy {
		return
	}
	for len(w.lazy) < len(w.Ops)-1 {
		w.lazy = append(w.lazy, false)
	}
	w.lazy = append(w.lazy, true)
}

// AddOpDone is AddOp with done, called once with how the op ended (nil
// once committed). done runs on the writer's goroutine (or the caller's,
// once the writer has stopped), possibly while the subscriber holds the
// lock it handed the op under: it must not take that lock, nor block.
func (w *Writes) AddOpDone(op func(tx *bolt.Tx) error, lazy bool, done func(error)) {
	w.AddOp(op, lazy)
	for len(w.dones) < len(w.Ops)-1 {
		w.dones = append(w.dones, nil)
	}
	w.dones = append(w.dones, done)
}

func (w *Writes) isLazy(i int) bool { return i < len(w.lazy) && w.lazy[i] }

// doneOf is what learns how Ops[i] ends: its own done and, for a QoS 1
// publish, the barrier's record of refusals.
func (w *Writes) doneOf(i int) func(error) {
	var own func(error)
	if i < len(w.dones) {
		own = w.dones[i]
	}
	switch f := w.failed; {
	case own == nil:
		return f
	case f == nil:
		return own
	default:
		return func(err error) { own(err); f(err) }
	}
}

// Hand gives what was added since the last Hand to the writer, ops first,
// in the order they were added. Call it before releasing the lock under
// which they were decided. A QoS 0 publish's readings go lazily; a QoS 1
// publish's go at once, with a callback through which its barrier learns
// whether they were refused.
func (w *Writes) Hand() {
	if w.to == nil || (len(w.Readings) == 0 && len(w.Ops) == 0) {
		return
	}
	for i, op := range w.Ops {
		if w.isLazy(i) {
			w.to.DoLazily(op, w.doneOf(i))
		} else {
			w.to.Do(op, w.doneOf(i))
		}
	}
	if len(w.Readings) > 0 {
		if w.failed != nil {
			w.to.AppendReadings(w.Readings, w.failed)
		} else {
			w.to.AppendReadingsLazily(w.Readings, nil)
		}
	}
	w.empty()
	w.handed = true
}

// empty forgets what was added; the pooled Writes keeps its capacity but no
// references to ops the writer now holds.
func (w *Writes) empty() {
	clear(w.Ops)
	clear(w.dones)
	w.Readings, w.Ops, w.lazy, w.dones = w.Readings[:0], w.Ops[:0], w.lazy[:0], w.dones[:0]
}

func (w *Writes) reset(to Writer, failed func(error)) {
	w.empty()
	w.to, w.failed, w.handed = to, failed, false
}

// Subscriber consumes resolved batches. Observe runs in the publishing
// gateway's read loop, concurrently with other gateways' batches: it
// guards its own state (a lock, or shard locks) and calls w.Hand before
// releasing the lock its writes were decided under. It must not block on
// I/O: durable work goes into w, everything else stays in memory or is
// handed to the subscriber's own workers. Whatever a subscriber leaves
// unhanded is handed when Observe returns, which is enough only for writes
// whose order across batches does not matter.
type Subscriber interface {
	Observe(b *Batch, w *Writes)
}

// Options configure a Pipeline.
type Options struct {
	Registry Registry
	Writer   Writer
	Clock    clock.Clock
	Logger   *slog.Logger
	// AckWait is how long a QoS 1 publish may wait for durability before
	// it is refused (no PUBACK; the gateway resends). Default 30 s.
	AckWait time.Duration
	// FlushEvery is how often last-seen times and the discovery list are
	// written (default 30 s).
	FlushEvery time.Duration
}

// Pipeline turns gateway publishes into observations for the subscribers.
//
// Each publish is processed in the publishing client's own read loop: an
// earlier design handed messages to one pipeline goroutine over a bounded
// channel, and with 200 gateways that goroutine got a 1/200 share of the
// CPU, capping ingest at 0.6x and queueing 200 ms (see
// docs/performance.md). Processing in place gives every gateway a fair
// share, turns overload into TCP backpressure instead of drops, and still
// does no disk or network I/O in the read loop: durable work is only
// enqueued on the group-commit writer. Subscribers run concurrently, each
// guarding its own state: one lock around all of them (the design until
// 2026-11-24) kept 7 of 10 read loops waiting and the CPU a third idle at
// 1.5 M reports/s. How order is kept without it is told at Writes.
type Pipeline struct {
	opts  Options
	reg   Registry
	w     Writer
	clock clock.Clock
	log   *slog.Logger
	subs  []Subscriber

	closing chan struct{}
	closeMu sync.RWMutex // held for reading while a publish is processed
	closed  bool

	msgPool  sync.Pool
	donePool sync.Pool
	scratch  sync.Pool

	Stats    *Stats
	seen     *LastSeen
	discover *Discovery

	latency *latencyRing
}

type scratch struct {
	batch  Batch
	writes Writes
}

// Errors returned to the broker for QoS 1 publishes that must not be acked.
var (
	ErrClosed     = errors.New("ingest pipeline closed")
	ErrAckTimeout = errors.New("durable write did not complete in time")
)

// New builds a pipeline; AddSubscriber then Start.
func New(opts Options) *Pipeline {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.AckWait <= 0 {
		opts.AckWait = 30 * time.Second
	}
	if opts.FlushEvery <= 0 {
		opts.FlushEvery = 30 * time.Second
	}
	p := &Pipeline{
		opts: opts, reg: opts.Registry, w: opts.Writer, clock: opts.Clock, log: opts.Logger,
		closing: make(chan struct{}),
		Stats:   newStats(opts.Clock), seen: newLastSeen(opts.Registry), discover: newDiscovery(10000),
		latency: newLatencyRing(4096),
	}
	p.msgPool.New = func() any { return &Message{Reports: make([]Report, 0, 16)} }
	p.donePool.New = func() any { return make(chan error, 1) }
	p.scratch.New = func() any { return &scratch{} }
	return p
}

// AddSubscriber registers s; call before Start.
func (p *Pipeline) AddSubscriber(s Subscriber) { p.subs = append(p.subs, s) }

// LastSeen exposes last-seen times.
func (p *Pipeline) LastSeen() *LastSeen { return p.seen }

// Discovery exposes the list of unregistered MACs heard.
func (p *Pipeline) Discovery() *Discovery { return p.discover }

// Restore loads persisted last-seen times, the discovery list and the
// gateways whose connection to the broker lasted (Stats.RestoreLinks).
func (p *Pipeline) Restore(db *store.DB) error {
	ls, err := db.LoadLastSeen()
	if err != nil {
		return err
	}
	p.seen.restore(ls)
	ds, err := db.LoadDiscovered()
	if err != nil {
		return err
	}
	p.discover.restore(ds)
	links, err := db.LoadLastingLinks()
	if err != nil {
		return err
	}
	p.Stats.RestoreLinks(links, p.clock.Now())
	return nil
}

// Start begins the periodic flush of last-seen times and discovery.
func (p *Pipeline) Start() { p.scheduleFlush() }

func (p *Pipeline) scheduleFlush() {
	p.clock.AfterFunc(p.opts.FlushEvery, func() {
		select {
		case <-p.closing:
			return
		default:
		}
		p.flush(nil)
		p.scheduleFlush()
	})
}

// flush queues the dirty last-seen times and the discovery list.
func (p *Pipeline) flush(done func(error)) {
	if seen := p.seen.takeDirty(); len(seen) > 0 {
		p.w.DoLazily(store.PutLastSeen(seen), nil)
	}
	if list, dirty := p.discover.snapshotIfDirty(); dirty {
		p.w.DoLazily(store.PutDiscovered(list), nil)
	}
	if macs, changed := p.Stats.lastingIfChanged(); changed {
		p.w.DoLazily(store.PutLastingLinks(macs), nil)
	}
	if done != nil {
		p.w.Do(func(*bolt.Tx) error { return nil }, done)
	}
}

// HandlePublish is the broker's Sink. It decodes and processes in the
// caller's read loop; for QoS 1 it returns once the publish's writes (and
// everything queued before them) are durable, or an error meaning "do not
// acknowledge".
func (p *Pipeline) HandlePublish(clientID, topic string, payload []byte, qos byte) error {
	m, now, ok := p.decode(topic, payload)
	defer p.msgPool.Put(m)
	if !ok {
		// A malformed message is acknowledged: resending it cannot help.
		return nil
	}
	var done chan error
	var ack func(error)
	if qos > 0 {
		done = p.donePool.Get().(chan error)
		ack = func(err error) { done <- err }
	}
	p.closeMu.RLock()
	if p.closed {
		p.closeMu.RUnlock()
		return ErrClosed
	}
	p.process(m, now, ack)
	p.closeMu.RUnlock()
	if done == nil {
		return nil
	}
	t := time.NewTimer(p.opts.AckWait)
	defer t.Stop()
	select {
	case err := <-done:
		p.donePool.Put(done)
		return err
	case <-t.C:
		// The late result still lands in the buffered channel, which is
		// simply not recycled.
		p.Stats.ackTimeout(m.Gateway)
		return ErrAckTimeout
	}
}

// HandlePublishAsync is the broker's AsyncSink for QoS 1: it processes the
// publish in the caller's read loop like HandlePublish, but returns at once
// and calls ack from the writer's goroutine when the publish's writes (and
// everything queued before them) are durable, so the broker can keep
// reading while earlier publishes commit. A malformed message is acked at
// once: resending it cannot help.
func (p *Pipeline) HandlePublishAsync(clientID, topic string, payload []byte, ack func(error)) {
	m, now, ok := p.decode(topic, payload)
	defer p.msgPool.Put(m)
	if !ok {
		ack(nil)
		return
	}
	p.closeMu.RLock()
	defer p.closeMu.RUnlock()
	if p.closed {
		ack(ErrClosed)
		return
	}
	p.process(m, now, ack)
}

// decode takes a pooled message (the caller puts it back), decodes the
// publish into it at the current time and counts the outcome.
func (p *Pipeline) decode(topic string, payload []byte) (*Message, int64, bool) {
	now := p.clock.Now().UnixMilli()
	m := p.msgPool.Get().(*Message)
	ok := Decode(topic, payload, now, m)
	p.Stats.message(m, now)
	return m, now, ok
}

func (p *Pipeline) process(m *Message, recv int64, ack func(error)) {
	gwAsset, _ := p.reg.Gateway(m.Gateway)
	if gwAsset == nil {
		p.discover.gateway(m.Gateway, m.Kind, recv)
	}
	p.seen.gateway(m.Gateway, recv, gwAsset != nil)
	if m.Kind == KindStatus {
		p.Stats.status(m.Gateway, m.Status)
	}
	sc := p.scratch.Get().(*scratch)
	defer p.scratch.Put(sc)
	b := &sc.batch
	*b = Batch{Gateway: m.Gateway, GatewayAsset: gwAsset, Kind: m.Kind, IsTest: m.IsTest, Received: recv, Obs: b.Obs[:0]}
	for i := range m.Reports {
		r := &m.Reports[i]
		a, ok := p.reg.Beacon(r.MAC)
		if !ok {
			p.discover.beacon(r, m.Gateway, m.Kind, recv)
			continue
		}
		b.Obs = append(b.Obs, Observation{Report: *r, Asset: a})
	}
	// A second pass, so that no lookup waits for the asset before it: on
	// 10,000 beacons each lookup and each asset is a cache miss, and
	// independent misses overlap.
	for i := range b.Obs {
		p.seen.asset(b.Obs[i].Asset, b.Obs[i].TS)
	}
	p.Stats.countProcessed(len(b.Obs))

	// A QoS 1 publish is acknowledged by a barrier queued after every
	// subscriber has handed its writes (see Writes): it commits once
	// everything queued before it has, and refuses the PUBACK if the
	// publish's own readings were refused.
	var pa *pubAck
	if ack != nil {
		pa = &pubAck{ack: ack}
	}
	w := &sc.writes
	if pa != nil {
		w.reset(p.w, pa.refused)
	} else {
		w.reset(p.w, nil)
	}
	if len(b.Obs) > 0 {
		for _, s := range p.subs {
			s.Observe(b, w)
			w.Hand()
		}
	}
	switch {
	case pa != nil:
		p.w.AppendReadings(nil, pa.barrier)
	case w.handed && p.latency.sample():
		p.w.AppendReadingsLazily(nil, func(error) { p.latency.add(p.clock.Now().UnixMilli() - recv) })
	}
}

// pubAck is a QoS 1 publish waiting for its barrier. refused learns how
// each of the publish's readings and ops ended, and barrier runs after
// them all (queued after every hand-off); they run on the writer's
// goroutine, or on the caller's once the writer has stopped.
type pubAck struct {
	ack func(error)
	mu  sync.Mutex
	err error
}

func (a *pubAck) refused(err error) {
	if err == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err == nil {
		a.err = err
	}
}

func (a *pubAck) barrier(err error) {
	if err == nil {
		a.mu.Lock()
		err = a.err
		a.mu.Unlock()
	}
	a.ack(err)
}

// Close stops accepting (waiting for publishes being processed), then
// flushes last-seen and discovery state and returns once that is durable.
func (p *Pipeline) Close() error {
	p.closeMu.Lock()
	if p.closed {
		p.closeMu.Unlock()
		return nil
	}
	p.closed = true
	close(p.closing)
	p.closeMu.Unlock()
	errc := make(chan error, 1)
	p.flush(func(err error) { errc <- err })
	return <-errc
}

// CommitLatency returns sampled receive-to-commit latencies (ms) of QoS 0
// publishes: p50 and p99 over the recent window.
func (p *Pipeline) CommitLatency() (p50, p99 int64, n int) { return p.latency.percentiles() }

// AckTimedOut counts a QoS 1 publish the broker refused because the
// connection's earlier publishes did not commit in time (asynchronous
// acknowledgement), under the gateway its topic names.
func (p *Pipeline) AckTimedOut(topic string) {
	if gw, _, r := parseTopic(topic); r == 0 {
		p.Stats.ackTimeout(gw)
		return
	}
	p.Stats.ackTimeouts.Add(1)
}

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
	Do(fn func(tx *bolt.Tx) error, done func(error))
}

// Registry resolves MACs to assets (assets.Registry).
type Registry interface {
	Beacon(mac [6]byte) (*assets.Asset, bool)
	Gateway(mac [6]byte) (*assets.Asset, bool)
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

// Writes collects what subscribers need made durable for a batch. For a
// QoS 1 publish, the PUBACK waits until all of it has committed.
type Writes struct {
	Readings []store.Reading
	Ops      []func(tx *bolt.Tx) error
}

// Subscriber consumes resolved batches on the pipeline goroutine. It must
// not block on I/O: durable work goes into w, everything else stays in
// memory or is handed to the subscriber's own workers.
type Subscriber interface {
	Observe(b *Batch, w *Writes)
}

// Options configure a Pipeline.
type Options struct {
	Registry  Registry
	Writer    Writer
	Clock     clock.Clock
	Logger    *slog.Logger
	QueueSize int           // bounded hand-off between broker read loops and the pipeline (default 8192)
	AckWait   time.Duration // how long a QoS 1 publish may wait for durability before it is refused (default 30 s)
	// FlushEvery is how often last-seen times and the discovery list are
	// written (default 30 s).
	FlushEvery time.Duration
}

// Pipeline turns gateway publishes into observations for the subscribers.
type Pipeline struct {
	opts  Options
	reg   Registry
	w     Writer
	clock clock.Clock
	log   *slog.Logger
	subs  []Subscriber

	in      chan *job
	closing chan struct{}
	stopped chan struct{}
	closeMu sync.RWMutex // held for reading while sending on in
	closed  bool

	msgPool sync.Pool
	jobPool sync.Pool

	batch  Batch
	writes Writes

	Stats    *Stats
	seen     *LastSeen
	discover *Discovery

	latency *latencyRing
}

type job struct {
	msg  *Message
	recv int64
	qos  byte
	done chan error
}

// Errors returned to the broker for QoS 1 publishes that must not be acked.
var (
	ErrOverloaded = errors.New("ingest pipeline overloaded")
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
	if opts.QueueSize <= 0 {
		opts.QueueSize = 8192
	}
	if opts.AckWait <= 0 {
		opts.AckWait = 30 * time.Second
	}
	if opts.FlushEvery <= 0 {
		opts.FlushEvery = 30 * time.Second
	}
	p := &Pipeline{
		opts: opts, reg: opts.Registry, w: opts.Writer, clock: opts.Clock, log: opts.Logger,
		in: make(chan *job, opts.QueueSize), closing: make(chan struct{}), stopped: make(chan struct{}),
		Stats: newStats(opts.Clock), seen: newLastSeen(), discover: newDiscovery(10000),
		latency: newLatencyRing(4096),
	}
	p.msgPool.New = func() any { return &Message{Reports: make([]Report, 0, 16)} }
	p.jobPool.New = func() any { return &job{done: make(chan error, 1)} }
	return p
}

// AddSubscriber registers s; call before Start.
func (p *Pipeline) AddSubscriber(s Subscriber) { p.subs = append(p.subs, s) }

// LastSeen exposes last-seen times.
func (p *Pipeline) LastSeen() *LastSeen { return p.seen }

// Discovery exposes the list of unregistered MACs heard.
func (p *Pipeline) Discovery() *Discovery { return p.discover }

// Restore loads persisted last-seen times and the discovery list.
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
	return nil
}

// Start runs the pipeline goroutine and the periodic flush.
func (p *Pipeline) Start() {
	go p.run()
	p.scheduleFlush()
}

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
		p.w.Do(store.PutLastSeen(seen), nil)
	}
	if list, dirty := p.discover.snapshotIfDirty(); dirty {
		p.w.Do(store.PutDiscovered(list), nil)
	}
	if done != nil {
		p.w.Do(func(*bolt.Tx) error { return nil }, done)
	}
}

// HandlePublish is the broker's Sink: it decodes in the caller's read loop
// and hands off. For QoS 1 it returns once the publish's readings are
// durable, or an error meaning "do not acknowledge".
func (p *Pipeline) HandlePublish(clientID, topic string, payload []byte, qos byte) error {
	now := p.clock.Now().UnixMilli()
	m := p.msgPool.Get().(*Message)
	ok := Decode(topic, payload, now, m)
	p.Stats.message(m, ok)
	if !ok {
		// A malformed message is acknowledged: resending it cannot help.
		p.msgPool.Put(m)
		return nil
	}
	j := p.jobPool.Get().(*job)
	j.msg, j.recv, j.qos = m, now, qos

	p.closeMu.RLock()
	if p.closed {
		p.closeMu.RUnlock()
		p.release(j)
		return ErrClosed
	}
	if qos == 0 {
		select {
		case p.in <- j:
		default:
			p.Stats.overload(m.Gateway)
			p.release(j)
		}
		p.closeMu.RUnlock()
		return nil
	}
	t := time.NewTimer(p.opts.AckWait)
	defer t.Stop()
	select {
	case p.in <- j:
	case <-t.C:
		p.closeMu.RUnlock()
		p.Stats.overload(m.Gateway)
		p.release(j)
		return ErrOverloaded
	}
	p.closeMu.RUnlock()
	select {
	case err := <-j.done:
		p.jobPool.Put(j)
		return err
	case <-t.C:
		// The job is still owned by the pipeline or writer; it is not
		// recycled, the done channel is buffered so the late send is safe.
		return ErrAckTimeout
	}
}

func (p *Pipeline) release(j *job) {
	p.msgPool.Put(j.msg)
	j.msg = nil
	p.jobPool.Put(j)
}

func (p *Pipeline) run() {
	defer close(p.stopped)
	for j := range p.in {
		p.process(j)
	}
}

func (p *Pipeline) process(j *job) {
	// Take everything out of j first: for QoS 1, once done fires the
	// publisher recycles j, so j must not be touched after the hand-off.
	m, recv, qos := j.msg, j.recv, j.qos
	j.msg = nil
	gwAsset, _ := p.reg.Gateway(m.Gateway)
	if gwAsset == nil {
		p.discover.gateway(m.Gateway, m.Kind, recv)
	}
	p.seen.gateway(m.Gateway, recv)
	if m.Kind == KindStatus {
		p.Stats.status(m.Gateway, m.Status)
	}
	b := &p.batch
	*b = Batch{Gateway: m.Gateway, GatewayAsset: gwAsset, Kind: m.Kind, IsTest: m.IsTest, Received: recv, Obs: b.Obs[:0]}
	for i := range m.Reports {
		r := &m.Reports[i]
		a, ok := p.reg.Beacon(r.MAC)
		if !ok {
			p.discover.beacon(r, m.Gateway, m.Kind, recv)
			continue
		}
		p.seen.asset(a.UID, r.TS)
		b.Obs = append(b.Obs, Observation{Report: *r, Asset: a})
	}
	w := &p.writes
	w.Readings, w.Ops = w.Readings[:0], w.Ops[:0]
	if len(b.Obs) > 0 {
		for _, s := range p.subs {
			s.Observe(b, w)
		}
	}
	p.Stats.countProcessed(len(b.Obs))

	var done func(error)
	switch {
	case qos > 0:
		ch := j.done
		done = func(err error) { ch <- err }
	case len(w.Readings) > 0 && p.latency.sample():
		done = func(error) { p.latency.add(p.clock.Now().UnixMilli() - recv) }
	}
	for _, op := range w.Ops {
		p.w.Do(op, nil)
	}
	// The writer commits in queue order, so the callback on the last item
	// also covers everything queued before it, including a reading an
	// earlier gateway's copy of the same advertisement queued.
	if len(w.Readings) > 0 {
		p.w.AppendReadings(w.Readings, done)
	} else if done != nil {
		p.w.Do(func(*bolt.Tx) error { return nil }, done)
	}
	p.msgPool.Put(m)
	if qos == 0 {
		p.jobPool.Put(j)
	}
}

// QueueLen is the number of publishes waiting for the pipeline.
func (p *Pipeline) QueueLen() int { return len(p.in) }

// Close stops accepting, drains the queue, and flushes last-seen and
// discovery state; it returns once the flush is durable.
func (p *Pipeline) Close() error {
	p.closeMu.Lock()
	if p.closed {
		p.closeMu.Unlock()
		return nil
	}
	p.closed = true
	close(p.closing)
	close(p.in)
	p.closeMu.Unlock()
	<-p.stopped
	errc := make(chan error, 1)
	p.flush(func(err error) { errc <- err })
	return <-errc
}

// CommitLatency returns sampled receive-to-commit latencies (ms) of QoS 0
// publishes that carried readings: p50 and p99 over the recent window.
func (p *Pipeline) CommitLatency() (p50, p99 int64, n int) { return p.latency.percentiles() }

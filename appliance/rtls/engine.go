package rtls

import (
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/ingest"

	bolt "go.etcd.io/bbolt"
)

// Writer queues durable work off the ingest path (store.Writer): interval
// closes for timeouts, Stop and restarts.
type Writer interface {
	Do(fn func(tx *bolt.Tx) error, done func(error))
}

// Options configure an Engine.
type Options struct {
	Clock  clock.Clock
	Logger *slog.Logger
	// Writer receives interval closes that happen outside a batch; nil
	// means they are not persisted (tests of pure prediction).
	Writer Writer
	// Timeout: a beacon not heard for this long becomes unknown and its
	// open zone interval is closed. Default 60 s.
	Timeout time.Duration
	// Params tune the algorithms; the zero value means DefaultParams.
	Params Params
	// GatewaySeen, if set, is the Unix ms of a gateway's last message
	// of any kind (a status heartbeat, reports of beacons the engine
	// does not track): a gateway still talking is never judged down
	// from silence (liveness.go).
	GatewaySeen func(mac [6]byte) int64
	// GatewayMessages, if set, is how many messages of any kind the
	// pipeline has received from a gateway since it started
	// (ingest.Stats.Messages): one judged down that sent any since its
	// judgement is back (reviveTalking), and one restored from before a
	// restart that sent any is not judged for not connecting
	// (judgeLinks). A count, not a time: the last word's time is from
	// before the restart, and in a clock that came up behind it (or
	// stepped back) newer messages do not move it (two reviews).
	GatewayMessages func(mac [6]byte) int64
	// GatewayLink, if set, is a gateway's connection to the embedded
	// MQTT broker (ingest.Stats.Link); ok false for a gateway that never
	// connected (or an external broker). A gateway whose connection has
	// closed is judged down (judgeLinks).
	GatewayLink func(mac [6]byte) (ingest.GatewayLink, bool)
	// Beacon, if set, is the registry's active beacon holding a uid:
	// RegistryReloaded ends the stay of a beacon it no longer tracks.
	Beacon func(uid string) (*assets.Asset, bool)
	// Heard, if set, gets a beacon's exact last sighting (Unix ms) when
	// the engine drops its state (Stop, Start, Close, forgetting a long
	// silence): the wiring raises the persisted last sighting to it.
	Heard func(uid string, t int64)
	// SurveyWindows bounds the windows one survey keeps (default
	// MaxSurveyWindows, a bound for the appliance's memory). rtls-eval
	// records a whole training file and sets no bound.
	SurveyWindows int
}

// trackableTypes are the beacon types the engine locates (spec
// "Integration API").
var trackableTypes = map[string]bool{"watch": true, "panic": true, "navigation": true, "sos": true}

// Trackable reports whether a beacon of type typ is located by the engine.
func Trackable(typ string) bool { return trackableTypes[typ] }

// TrackableTypes lists the types Trackable accepts, sorted.
func TrackableTypes() []string {
	return slices.Sorted(maps.Keys(trackableTypes))
}

// run is one Start..Stop period.
type run struct {
	name  string
	alg   algorithm
	since int64
}

// unready reports whether m lacks the input r's algorithm needs.
func (r *run) unready(m *model) bool { return m.unready != nil && m.unready[r.name] }

// Engine is the tracking engine; it is an ingest.Subscriber.
type Engine struct {
	opts  Options
	p     Params
	clock clock.Clock
	log   *slog.Logger

	cfgMu   sync.Mutex // serialises SetSite/SetSamples and Start(grid)'s fit (runMu, then cfgMu)
	site    Site
	samples []Sample
	nSample atomic.Int64
	gen     uint64
	model   atomic.Pointer[model]

	// runMu orders Start/Stop against the state reset they do; the
	// ingest path only loads run. judgeMu orders connection judgements
	// (judgeLinks) against that reset (stopRun); it is taken last (the
	// broker's link lookups, the log and the reset's beacon shards are
	// locked under it, never the other way).
	runMu   sync.Mutex
	judgeMu sync.Mutex
	run     atomic.Pointer[run]
	// linkWarned is, per gateway, the close of its connection to the
	// broker last warned of (linkJudged).
	linkMu     sync.Mutex
	linkWarned map[[6]byte]int64
	reports    atomic.Uint64
	// judgedDown counts the judgements "gateway down" since New
	// (JudgedDown): on a recording where none went down, false alarms.
	judgedDown atomic.Uint64
	// seqBase hands each new beacon state its own range of Location.Seq
	// (the high 32 bits), so a state made after a reset or a forget
	// numbers its events above every earlier one without the per-event
	// atomic add on one shared counter that the read loops of all cores
	// would contend for.
	seqBase atomic.Uint64
	// shards holds beacon state by uid, so gateways' read loops observe in
	// parallel, and HTTP reads and the timeout sweep hold up only a sliver
	// of the ingest path.
	shards assets.Shards[assets.UIDMap[*beacon]]

	lmu       sync.Mutex
	listeners atomic.Pointer[[]*listener]
	debugs    atomic.Int32 // listeners with a debug filter

	rec recorder

	sweepMu sync.Mutex
	sweep   clock.Timer
	// sweepGen counts the sweep's cadences (restartSweep): a callback
	// of a replaced one reschedules nothing.
	sweepGen uint64
	closed   bool
}

var _ ingest.Subscriber = (*Engine)(nil)

// New builds a stopped engine with an empty site.
func New(opts Options) *Engine {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	e := &Engine{opts: opts, p: opts.Params.withDefaults(), clock: opts.Clock, log: opts.Logger}
	e.rec.m = map[string]*recording{}
	e.rec.limit = opts.SurveyWindows
	if opts.Writer != nil {
		e.rec.save = func(op func(*bolt.Tx) error, failed *atomic.Bool) {
			opts.Writer.Do(op, func(err error) {
				if err != nil {
					e.log.Error("rtls: survey windows not saved", "err", err)
					if failed != nil {
						failed.Store(true)
					}
				}
			})
		}
	}
	if e.rec.limit <= 0 {
		e.rec.limit = MaxSurveyWindows
	}
	m0 := buildModel(0, e.p, Site{}, nil)
	m0.holdMs = opts.Timeout.Milliseconds()
	e.model.Store(m0)
	e.listeners.Store(&[]*listener{})
	e.restartSweep()
	return e
}

// Params returns the effective parameters.
func (e *Engine) Params() Params { return e.p }

// Timeout returns the effective not-heard timeout.
func (e *Engine) Timeout() time.Duration { return e.opts.Timeout }

// SetSite replaces the site; live predictions restart from the smoothed
// readings against the new zones.
func (e *Engine) SetSite(s Site) {
	e.cfgMu.Lock()
	defer e.cfgMu.Unlock()
	e.site = s
	e.rebuild()
}

// SetSamples replaces the survey samples (k-NN, filter emissions and the
// learned zones of unplaced gateways).
func (e *Engine) SetSamples(s []Sample) {
	e.cfgMu.Lock()
	defer e.cfgMu.Unlock()
	e.setSamples(s)
	e.rebuild()
}

// Configure replaces the site and the samples together, in one model
// build: a reload from the store publishes no model of the new site with
// the old samples, and builds (and, while grid runs, fits) once, not
// twice.
func (e *Engine) Configure(s Site, samples []Sample) {
	e.cfgMu.Lock()
	defer e.cfgMu.Unlock()
	e.site = s
	e.setSamples(samples)
	e.rebuild()
}

func (e *Engine) setSamples(s []Sample) {
	e.samples = append([]Sample(nil), s...)
	e.nSample.Store(int64(len(s)))
}

// rebuild publishes a model of the current site and samples. Only while
// grid (or fusion, which runs it) runs is its radio model fitted, before
// the swap, so grid never runs on an unfitted model; for the other
// algorithms the edit skips the fit (seconds on a large unplaced site)
// and Start(grid) makes it. Start stores a grid run under cfgMu, so this
// load sees it.
func (e *Engine) rebuild() {
	e.gen++
	m := buildModel(e.gen, e.p, e.site, e.samples)
	m.holdMs = e.opts.Timeout.Milliseconds()
	if r := e.run.Load(); r != nil && needsGrid(r.name) {
		m = m.withGrid(e.gen)
	}
	old := e.model.Swap(m)
	e.leaveVanishedZones(m)
	e.announceEditedZones(old, m)
	e.judgeLinks() // the new model's, now rather than at the next sweep
}

// announceEditedZones sends a track event for every beacon in a zone the
// edit renamed, moved or resized: the REST views name the zone anew at
// once, and a live map kept the old name and centre until the beacon
// next changed zone (a review).
func (e *Engine) announceEditedZones(old, m *model) {
	if old == nil || e.run.Load() == nil {
		return
	}
	var edited map[uint64]bool
	for _, z := range m.zones {
		i, ok := old.zoneIdx[z.ID]
		if !ok {
			continue
		}
		if o := &old.zones[i]; o.Name != z.Name || o.MapID != z.MapID || o.X1 != z.X1 || o.Y1 != z.Y1 || o.X2 != z.X2 || o.Y2 != z.Y2 {
			if edited == nil {
				edited = map[uint64]bool{}
			}
			edited[z.ID] = true
		}
	}
	if edited == nil {
		return
	}
	for i := range e.shards {
		sh := &e.shards[i]
		sh.Lock()
		sh.V.Range(func(_ string, bp **beacon) {
			if b := *bp; b.zone >= 0 && edited[b.zoneID] {
				e.emitTrack(m, b)
			}
		})
		sh.Unlock()
	}
}

var _ assets.ReloadFollower = (*Engine)(nil)

// RegistryReloaded (assets.ReloadFollower) makes every located beacon
// that the registry deleted, deactivated or gave an untracked type
// unknown now, its stay ended at its last sighting. Its reports are
// skipped from then on, so it stayed located, in the admin's tracking
// view and the live feed, until the timeout (a review: 73 s).
func (e *Engine) RegistryReloaded() {
	if e.run.Load() == nil || e.opts.Beacon == nil {
		return
	}
	e.leave(e.model.Load(), func(b *beacon) bool {
		if b.zone < 0 && !b.open {
			return false
		}
		if e.tracked(b.uid) {
			return false
		}
		b.rds = nil // as at a timeout: a return starts afresh
		b.untracked = true
		return true
	})
}

// tracked reports whether the registry holds uid as an active beacon of
// a type the engine locates (Options.Beacon set).
func (e *Engine) tracked(uid string) bool {
	a, ok := e.opts.Beacon(uid)
	return ok && trackableTypes[a.Type]
}

// leaveVanishedZones makes every beacon whose zone the new model m no
// longer has unknown now (leave), instead of waiting for its next
// sighting or, for a beacon gone quiet, for the timeout, while the
// location endpoints already call it unknown. On a model the running
// algorithm lacks the input of (knn's samples deleted to re-survey),
// every beacon: an algorithm without its input keeps a beacon's zone,
// and each stayed in its last one, with a fresh time and its stay
// recorded on, for as long as it was heard (a review). docs/api.md
// says such an algorithm locates nothing.
func (e *Engine) leaveVanishedZones(m *model) {
	r := e.run.Load()
	if r == nil {
		return
	}
	// A model the algorithm cannot run on makes every beacon unknown.
	all := r.unready(m)
	e.leave(m, func(b *beacon) bool {
		if all {
			return b.zone >= 0 || b.open
		}
		_, in := b.zoneIn(m)
		return b.zoneID != 0 && !in
	})
}

// Algorithms lists every algorithm with its parameters and readiness
// against the current site and samples.
func (e *Engine) Algorithms() []AlgorithmInfo {
	m := e.model.Load()
	out := make([]AlgorithmInfo, 0, len(algorithmNames))
	for _, n := range algorithmNames {
		out = append(out, newAlgorithm(n).info(m))
	}
	return out
}

// Start (re)starts tracking with the named algorithm. Live state is reset
// and open zone intervals are closed, so every interval belongs to one
// algorithm's run. Start(grid) on a model built while another algorithm
// ran first fits grid's radio model (seconds on a large unplaced site),
// while the previous run goes on.
func (e *Engine) Start(name string) error {
	alg := newAlgorithm(name)
	if alg == nil {
		return ErrUnknownAlgorithm
	}
	e.runMu.Lock()
	defer e.runMu.Unlock()
	if needsGrid(name) {
		// Under cfgMu until the run is stored: an edit waits, then sees
		// grid running and fits its model too; an edit that came first
		// is the model fitted here.
		e.cfgMu.Lock()
		defer e.cfgMu.Unlock()
		if m := e.model.Load(); !m.grid.fitted {
			e.gen++
			e.model.Store(m.withGrid(e.gen))
		}
	}
	now := e.clock.Now().UnixMilli()
	e.stopRun()
	e.reports.Store(0)
	e.restartSweep()
	e.run.Store(&run{name: name, alg: alg, since: now})
	e.judgeLinks() // afresh, as resetState forgot every judgement
	return nil
}

// needsGrid reports whether the algorithm runs grid's radio model.
func needsGrid(name string) bool { return name == AlgGrid || name == AlgFusion }

// Stop stops tracking; open zone intervals are closed.
func (e *Engine) Stop() {
	e.runMu.Lock()
	defer e.runMu.Unlock()
	e.stopRun()
}

// stopRun ends the run and forgets its state, under judgeMu: a
// connection judgement (judgeLinks, run by the sweep and by site edits
// without runMu) begun before it would land after the reset and leave
// a gateway judged down while tracking is stopped (a review).
func (e *Engine) stopRun() {
	e.judgeMu.Lock()
	defer e.judgeMu.Unlock()
	if resetHook != nil {
		resetHook(e)
	}
	e.run.Store(nil)
	e.resetState()
}

// resetHook, when set (by tests only), is called as a run's state is
// reset (Start, Stop), with judgeMu held.
var resetHook func(*Engine)

// Current is the running algorithm's name, "" when stopped.
func (e *Engine) Current() string {
	if r := e.run.Load(); r != nil {
		return r.name
	}
	return ""
}

// newBeacon is a fresh live state whose track events number above any
// earlier state's (Location.Seq).
func (e *Engine) newBeacon(uid string) *beacon {
	b := newBeacon(uid)
	b.seq = e.seqBase.Add(1) << 32
	return b
}

// afresh ends the stay of the state at *bp at its last sighting and puts
// a fresh state in its place (a device replace, the clock stepped back):
// the beacon is found again from the report at hand, as after a timeout.
func (e *Engine) afresh(m *model, bp **beacon, ops *[]func(*bolt.Tx) error) *beacon {
	b := *bp
	e.commit(m, b, -1, position{}, b.heard, ops)
	*bp = e.newBeacon(b.uid)
	return *bp
}

// detachedGrace is how long (ms) after a device replace the replaced
// tag's reports are skipped rather than taken for another replace: those
// resolved to the asset before the registry's reload, still in flight
// through other gateways' read loops.
const detachedGrace = 2_000

// clockStep is how far (ms) a report may be stamped before the beacon's
// latest sighting and still be taken as a race between gateways' read
// loops; further back, the wall clock was stepped back.
const clockStep = 10_000

// beforeStepBack reports whether time t (Unix ms) lies more than
// clockStep after now: it was taken before the wall clock stepped back,
// and measures nothing against now.
func beforeStepBack(t, now int64) bool { return t-now > clockStep }

// Observe is the ingest.Subscriber hook: it runs on the publishing
// client's read loop, never blocks and only queues durable work in w.
func (e *Engine) Observe(bt *ingest.Batch, w *ingest.Writes) {
	if e.rec.active.Load() > 0 {
		e.rec.observe(&e.p, bt)
	}
	r := e.run.Load()
	if r == nil {
		return
	}
	m := e.model.Load()
	if observeHook != nil {
		observeHook()
	}
	now := bt.Received
	if g, ok := m.gwIdx[bt.Gateway]; ok && m.live.heard(g, now) {
		e.log.Info("rtls: gateway reports again; its silence counts again", "gateway", assets.FormatMAC(bt.Gateway))
	}
	var downs [][6]byte
	n := 0
	for i := range bt.Obs {
		o := &bt.Obs[i]
		if o.Asset == nil || !trackableTypes[o.Asset.Type] {
			continue
		}
		n++
		sh := e.shards.Of(o.Asset)
		sh.Lock()
		if e.run.Load() != r {
			// Stopped or restarted since this batch began: resetState
			// has cleared (or will clear) this shard under its lock,
			// and state made now would outlive the run, with an open
			// interval nothing closes.
			sh.Unlock()
			n--
			break
		}
		// A site edit may have published a model since this batch
		// began: rebuild swaps it, then, under these locks, leaves the
		// zones it deleted and announces those it renamed or moved.
		// Decided on the old model after that, a report entered a
		// deleted zone or sent a renamed one's old name.
		m = e.model.Load()
		bp := sh.V.Of(o.Asset)
		if *bp == nil {
			*bp = e.newBeacon(o.Asset.UID)
		}
		b := *bp
		if b.untracked {
			// RegistryReloaded ended its stay; a report resolved
			// against the registry before that write (in flight
			// through the pipeline) must not bring it back until the
			// timeout. Asked once per such state, not per report.
			if !e.tracked(b.uid) {
				sh.Unlock()
				n--
				continue
			}
			b.untracked = false
		}
		if b.tag != o.MAC {
			if b.tag != (ingest.MAC{}) {
				if o.MAC == b.detached && now-b.detachedAt < detachedGrace {
					// The replaced tag's report, resolved before the
					// registry's reload: not the asset's any more.
					sh.Unlock()
					n--
					continue
				}
				// The asset's device was replaced: what the engine knows
				// is the detached tag's, whose readings outvoted the new
				// tag's for seconds and recorded the asset where the old
				// tag lay (a review). Its stay ends at its last sighting
				// and the asset is found afresh from this report, as
				// after a timeout.
				old := b.tag
				b = e.afresh(m, bp, &w.Ops)
				b.detached, b.detachedAt = old, now
			}
			b.tag = o.MAC
		}
		if beforeStepBack(b.heard, now) {
			// The wall clock stepped back (NTP, an operator): every
			// time the beacon holds is in the future, so its dwell,
			// staleness and timeout would stand still until the clock
			// caught up. Its stay ends at its last sighting and it is
			// found again from this report, as after a timeout.
			b = e.afresh(m, bp, &w.Ops)
		}
		if b.gen != m.gen {
			b.reset(m)
		}
		// A report stamped before the beacon's latest sighting (another
		// gateway's read loop took the lock first) counts as heard then:
		// a beacon's time never runs backwards, so no zone is entered
		// before the one it leaves.
		t := max(now, b.heard)
		// Judged before track, whose scan is this report's: the gap
		// this report may end. A zone held with no zone gateway's
		// sighting at all (zonedAt 0: a site edit placed a gateway whose
		// reading was live) is such a gap too (a review).
		quiet := b.zone >= 0 && b.placingQuiet(&e.p, t)
		// Before this sighting: the estimate moves only at a new
		// millisecond, so the reports of one scan are all read with the
		// same offset, in whatever order they come.
		b.track(t)
		b.learnOffsets(m, &e.p, t, r.name)
		rd := b.sight(m, &e.p, bt.Gateway, o.RSSI, t)
		if rd != nil && rd.g >= 0 && m.zoned(rd.g) {
			if b.heldFrom > 0 {
				// A zone's gateway hears it between two decisions of a
				// hold: the hold's evidence runs to here. Left to the
				// next decision, a silence first closed the stay up to
				// a hold early (a review).
				b.heldFrom = t
			}
			if quiet {
				b.resumed = t // strongest refixes (dueFixOrRefix)
			}
			b.zonedAt = t
		}
		e.emitDebug(b)
		z, pos := r.alg.update(m, &e.p, b, rd, t)
		if b.refusesUnplaced(&e.p, z, t) {
			z, pos = b.zone, b.pos
		}
		e.decide(m, b, z, pos, t, &w.Ops)
		for _, g := range m.silence(&e.p, b, t, e.opts.GatewaySeen, e.opts.GatewayMessages) {
			downs = append(downs, m.gwMAC[g])
		}
		w.Hand() // under the shard lock: a beacon's intervals open before they close
		sh.Unlock()
	}
	// One atomic add per batch: a shared counter bumped per report
	// bounces its cache line between the cores' read loops.
	e.reports.Add(uint64(n))
	if len(downs) > 0 {
		e.judgedDown.Add(uint64(len(downs)))
	}
	for _, g := range downs { // rare; logged outside the shard locks
		e.log.Warn("rtls: gateway judged down: silent where the survey says it hears; its silence no longer counts until it reports", "gateway", assets.FormatMAC(g))
	}
}

// observeHook, when set (by tests only, before the engine is used), runs
// in Observe once the batch has read the model, before any shard lock: a
// test holds a batch there while it edits the site.
var observeHook func()

// commit applies a decision: zone intervals on a zone change, track
// events on a zone or position change.
func (e *Engine) commit(m *model, b *beacon, z int, pos position, now int64, ops *[]func(*bolt.Tx) error) {
	// A beacon whose zone vanished with a site edit is unknown but may
	// still hold an open interval.
	changed := z != b.zone || (z < 0 && b.open)
	// Into another zone the stay ends where the next begins; into
	// unknown, where its evidence ended (stayEnd).
	end := now
	if z < 0 {
		end = b.stayEnd(now)
		b.heldFrom = 0
	}
	if changed {
		b.tentative = false
		b.prev = stay{zone: b.zone, zoneID: b.zoneID, since: b.since, open: b.open}
		if b.open {
			*ops = append(*ops, closeOp(b.uid, b.since, end))
			b.open = false
		}
		if b.zone < 0 {
			b.fixed = now
		}
		b.zone, b.since, b.zoneID = z, now, 0
		if z >= 0 {
			b.zoneID = m.zones[z].ID
			*ops = append(*ops, appendOp(b.uid, &m.zones[z], now))
			b.open = true
		}
	}
	moved := pos.ok != b.pos.ok || (pos.ok && (pos.x != b.pos.x || pos.y != b.pos.y))
	b.pos = pos
	if changed || moved {
		e.emitTrack(m, b)
	}
}

// decide applies a decision of Observe's. One that refines the decision
// its scan began with (the same millisecond, or within refineSpan of a
// scan's first report: beacon.due), when that decision or an earlier
// refinement of it changed the zone, rewrites the stay it opened instead
// of ending it: to another zone in place, or, back to where the beacon
// was (or unknown), by dropping it and reopening the stay it had ended. Closed and opened as decisions,
// every start, restart and first sighting recorded a stay of a few
// milliseconds in a zone the beacon was never in, wherever the scan's
// first report came from a far gateway (a review).
func (e *Engine) decide(m *model, b *beacon, z int, pos position, now int64, ops *[]func(*bolt.Tx) error) {
	// The refinement window: the decision's millisecond, and up to
	// refineUntil after a scan's first report.
	refining := now == b.decided || now < b.refineUntil
	if z == b.zone || !b.tentative || b.since < b.decided || !refining {
		before := b.zone
		e.commit(m, b, z, pos, now, ops)
		if b.zone != before && refining && (b.open || b.prev.open) {
			b.tentative = true
		}
		return
	}
	t0, p := b.since, b.prev
	if z >= 0 && z != p.zone && b.open {
		*ops = append(*ops, reviseOp(b.uid, t0, &m.zones[z]))
		b.zone, b.zoneID = z, m.zones[z].ID
		b.pos = pos
		e.emitTrack(m, b)
		return
	}
	if b.open {
		*ops = append(*ops, dropOp(b.uid, t0))
	}
	if p.open {
		*ops = append(*ops, reopenOp(b.uid, p.since))
	}
	b.zone, b.zoneID, b.since, b.open, b.tentative = p.zone, p.zoneID, p.since, p.open, false
	if z != p.zone {
		e.commit(m, b, z, pos, t0, ops) // from the stay restored, at the scan's start
		// Still inside the window: this change may be refined too.
		b.tentative = b.open || b.prev.open
		return
	}
	b.pos = pos
	e.emitTrack(m, b)
}

// Rename moves uid's live state to newUID (remint, merge). When newUID has
// live state too, the more recently heard one wins and the other's open
// interval is closed.
func (e *Engine) Rename(oldUID, newUID string) {
	if oldUID == newUID {
		return
	}
	e.rec.rename(oldUID, newUID)
	so, sn, unlock := e.shards.LockPair(oldUID, newUID)
	// The losing state's stay ends at its own last sighting, as at a
	// timeout: reports that resolve to the new uid (the registry reloads
	// before the rename reaches here) may already have opened the
	// winner's interval, and closing the loser at the rename's time
	// recorded the beacon in two intervals at once.
	var ops []func(*bolt.Tx) error
	if b, ok := so.V.Delete(assets.UIDHash(oldUID), oldUID); ok {
		nh := assets.UIDHash(newUID)
		if cur := sn.V.Get(nh, newUID); cur != nil && (*cur).heard >= b.heard {
			if b.open {
				ops = append(ops, closeOp(newUID, b.since, b.stayEnd(b.heard)))
			}
		} else {
			if cur != nil && (*cur).open {
				ops = append(ops, closeOp(newUID, (*cur).since, (*cur).stayEnd((*cur).heard)))
			}
			// The new uid's channel may have carried higher numbers
			// (cur's, or those of a state since forgotten): b goes on
			// in a range above every one handed out, and says where
			// it is at once, under its new uid.
			b.seq = e.seqBase.Add(1) << 32
			b.uid, b.shard = newUID, nh%assets.NShards
			*sn.V.Add(nh, newUID) = b
			e.emitTrack(e.model.Load(), b)
		}
	}
	unlock()
	e.queue(ops)
}

var _ assets.MergeRenamer = (*Engine)(nil)

// MergeRename (assets.MergeRenamer) follows a merge of oldUID into
// newUID: any survey recording moves, as for a rename, but both live
// stays end, each at its own last sighting, and the asset is found
// afresh from its next report. Which state to keep depends on the
// device the merge kept attached, which the engine does not know: the
// more recently heard one, as Rename keeps, is a coin toss between two
// tags heard every second, and the live zone followed the detached tag
// for seconds (a review). The store keeps the merged history's
// exclusive windows (store.DropZoneIntervalsBefore): a stay of the
// source it dropped is closed by entry time, which finds nothing once
// the survivor's own stay is closed. deviceMoved says the merge gave
// newUID oldUID's device: the survivor's state is then a detached tag's
// even when the source was never tracked.
func (e *Engine) MergeRename(oldUID, newUID string, deviceMoved bool) {
	if oldUID == newUID {
		return
	}
	e.rec.rename(oldUID, newUID)
	so, sn, unlock := e.shards.LockPair(oldUID, newUID)
	ops := e.mergeRenameLocked(so, sn, oldUID, newUID, deviceMoved)
	unlock()
	e.queue(ops)
}

// mergeRenameLocked is MergeRename under both shards' locks; it returns
// the writes to queue.
func (e *Engine) mergeRenameLocked(so, sn *assets.Shard[assets.UIDMap[*beacon]], oldUID, newUID string, deviceMoved bool) []func(*bolt.Tx) error {
	m := e.model.Load()
	var ops []func(*bolt.Tx) error
	b, tracked := so.V.Delete(assets.UIDHash(oldUID), oldUID)
	if !tracked && !deviceMoved {
		// The source was not being tracked (a legacy row, a spare tag
		// never heard) and the survivor keeps its device: nothing to
		// choose between, and the survivor's stay goes on (a review: it
		// went unknown at every merge).
		return nil
	}
	// The survivor's close first: a close finds a stay by its entry
	// time, and when both began in the same millisecond the source's,
	// which the merge's windows dropped, closed the survivor's at the
	// source's last sighting (a review).
	nh := assets.UIDHash(newUID)
	if cur := sn.V.Get(nh, newUID); cur != nil {
		e.commit(m, *cur, -1, position{}, (*cur).heard, &ops)
		e.forgets(*cur, newUID)
		sn.V.Delete(nh, newUID)
	}
	if !tracked {
		return ops
	}
	if b.open {
		// Its intervals are the new uid's now.
		ops = append(ops, closeOp(newUID, b.since, b.stayEnd(b.heard)))
		b.open = false
	}
	e.commit(m, b, -1, position{}, b.heard, &ops) // its channel says unknown
	e.forgets(b, newUID)
	return ops
}

// Close stops the engine and its timeout sweep.
func (e *Engine) Close() {
	e.Stop()
	e.sweepMu.Lock()
	e.closed = true
	if e.sweep != nil {
		e.sweep.Stop()
	}
	e.sweepMu.Unlock()
}

// Package alerting owns beacon events: it turns adv4 frames into event
// records (alert, warning, active), merges the reports of one press heard by
// several gateways into one event (the button dedup window), keeps the
// button-press audit, and hands SOS and watch presses to alertsys through a
// bounded queue and worker, out of line of ingest.
//
// Service is an ingest.Subscriber: it runs in the gateways' read loops,
// decides in memory under per-asset shard locks, and hands every durable
// change to the writer before releasing the lock it was decided under, so
// a QoS 1 PUBACK for a press implies its event is on disk. What
// happens after the commit (alertsys, and push in the next layer) is
// triggered from the commit itself (bbolt OnCommit), never from the hot path.
package alerting

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/config"
	"beaconhub/appliance/ingest"
	"beaconhub/store"
)

// MaxWindowMS is the largest dedup window the configuration allows
// (server_push_button_dedup_seconds ≤ 3600); restart recovery looks back
// this far.
const MaxWindowMS = 3600 * 1000

// ResendHoldMS is how long a window's event is remembered after the
// window closed, for recognising a resend. A gateway that got no PUBACK
// (a crash or power loss before it, an ack that timed out) resends the
// same message after it reconnects, possibly after the window: a report
// carrying the same gateway timestamp as one of the event's is that same
// press, not a new one. Past the skew limit the server no longer trusts
// the gateway's timestamp (ingest.MaxSkewMS), so nothing is recognised
// later.
const ResendHoldMS = ingest.MaxSkewMS

// Enqueuer takes committed SOS/watch events for alertsys (the Worker).
type Enqueuer interface {
	Configured() bool
	Enqueue(e store.Event)
}

// Options configure a Service.
type Options struct {
	DB       *store.DB
	Live     *config.Live
	Clock    clock.Clock
	Logger   *slog.Logger
	Alertsys Enqueuer // nil: alert events are stored with alertsys "disabled"
}

// Stats are counters since start.
type Stats struct {
	Events     uint64 `json:"events"`      // events created (test ones included)
	Alerts     uint64 `json:"alerts"`      // of which status alert, not test
	TestEvents uint64 `json:"test_events"` // from is_test sends
	Merged     uint64 `json:"merged"`      // reports folded into an open event
}

// class separates the dedup windows of one beacon: a press and a motion
// signal are different events even when they overlap.
type class uint8

// classMotion comes first: its window (motion, not a test) is the one
// nearly every classified report reads, right after the slots' header.
const (
	classMotion class = iota
	classPress
)

// slots are one asset's open windows, by class and test flag, with the
// events in them rather than behind pointers: a motion report reads its
// asset's slots and its event, and on 10,000 beacons every pointer
// between them was one more cache miss.
type slots struct {
	ev [2][2]openEvent
}

func (sl *slots) at(c class, test bool) *openEvent {
	t := 0
	if test {
		t = 1
	}
	return &sl.ev[c][t]
}

func (sl *slots) empty() bool {
	for c := range sl.ev {
		for t := range sl.ev[c] {
			if sl.ev[c][t].open() {
				return false
			}
		}
	}
	return true
}

// openEvent is the in-memory side of an event whose window is open (an
// event id is never 0: a zero openEvent is no event).
type openEvent struct {
	anchor  int64 // server receive time of the first report
	id      uint64
	reports int
	// sent holds the timestamps (the gateway's, when it sent one) of the
	// event's last few reports, in a ring at next: a resend carries its
	// timestamp again (ResendHoldMS). With more gateways than the ring
	// holds, the first gateways' timestamps left it and their resends
	// made a second event (a review), so a press keeps those too
	// (evicted); motion, which repeats for minutes and is no alert, only
	// the ring.
	sent  [4]int64
	next  uint8
	press bool
	// evicted holds a press's timestamps pushed out of sent: the newest
	// maxEvicted at least (the oldest half goes when it fills). Kept
	// first-come, a press held long enough lost its newest, which a
	// reconnecting gateway resends (a review).
	evicted []int64
	// The gateways that reported it, compared raw (motion repeats from
	// every gateway, rendering costs). A beacon is heard by a handful of
	// gateways, so they sit in the event itself, not behind a pointer:
	// every motion report checks them, on 10,000 beacons a cache miss each.
	near [inlineGateways]ingest.MAC
	n    int          // gateways in near
	far  []ingest.MAC // the rest, up to store.MaxEventGateways in all
}

const inlineGateways = 6

// maxEvicted: a press remembers at least this many of its newest
// timestamps beyond the ring, at most twice as many (32 KB).
const maxEvicted = 2048

func (oe *openEvent) open() bool { return oe.id != 0 }

// resent reports whether a report with timestamp ts, arriving after the
// event's window, is one of its reports sent again: it carries one of
// their timestamps exactly. (Within ResendHoldMS: the sweep forgets the
// event after that.) Only exactly: a gateway's clock stepped back (NTP)
// can give a new press a timestamp between two of the old one's, and a
// span of each gateway's timestamps merged that press away (a review).
func (oe *openEvent) resent(ts int64) bool {
	return ts != 0 && (slices.Contains(oe.sent[:], ts) || slices.Contains(oe.evicted, ts))
}

// note remembers a report's timestamp for resent.
func (oe *openEvent) note(ts int64) {
	if ts == 0 || oe.resent(ts) {
		return
	}
	i := oe.next % uint8(len(oe.sent))
	if old := oe.sent[i]; old != 0 && oe.press {
		if len(oe.evicted) >= 2*maxEvicted {
			oe.evicted = append(oe.evicted[:0], oe.evicted[maxEvicted:]...)
		}
		oe.evicted = append(oe.evicted, old)
	}
	oe.sent[i] = ts
	oe.next++
}

func (oe *openEvent) gateways() int { return oe.n + len(oe.far) }

func (oe *openEvent) heard(g ingest.MAC) bool {
	return slices.Contains(oe.near[:oe.n], g) || slices.Contains(oe.far, g)
}

// addGateway notes g unless the event holds it or is full; it reports
// whether g is new.
func (oe *openEvent) addGateway(g ingest.MAC) bool {
	if oe.gateways() >= store.MaxEventGateways || oe.heard(g) {
		return false
	}
	if oe.n < inlineGateways {
		oe.near[oe.n] = g
		oe.n++
	} else {
		oe.far = append(oe.far, g)
	}
	return true
}

// Service is the events subscriber of the ingest pipeline.
type Service struct {
	db       *store.DB
	live     *config.Live
	clock    clock.Clock
	log      *slog.Logger
	alertsys Enqueuer

	// The dedup windows are sharded by uid so that gateways' read loops,
	// nearly all of which carry motion heartbeats of different beacons,
	// do not queue on one lock (measured: one lock held 4 of 10 read
	// loops waiting at 2 M reports/s).
	shards assets.Shards[windows]

	// idMu orders new events: an id is taken and its insert handed to the
	// writer under it, so ids commit in order and a reader paging with
	// after_id never skips one that commits later (store/events.go).
	idMu   sync.Mutex
	nextID uint64

	// lost holds the ids of events whose insert did not commit (a disk
	// error). Their dedup windows are still open in memory, but a report
	// merging into one would be acknowledged and stored nowhere: it opens
	// a new event instead. The writer reports the failure, on a goroutine
	// that must not take a shard lock, so the ids wait here until the next
	// report of their window looks, or until the window and its resend
	// hold are over (wasLost). nLost keeps the lookup off the hot path
	// while there are none.
	lostMu sync.Mutex
	lost   map[uint64]int64 // event id -> when its insert failed (ms)
	nLost  atomic.Int32

	listeners []func(store.Event)
	// pending: alertsys still pending at the last stop. Restore fills it
	// and RecoverAlertsys takes it, one after the other at start, before
	// ingest runs; nothing else touches it.
	pending []store.Event

	events, alerts, tests atomic.Uint64
}

// windows are one shard's open dedup windows.
type windows struct {
	open      assets.UIDMap[slots]
	lastSweep int64
	// merged counts reports folded into an open event: one counter per
	// shard, under its lock, instead of one every read loop writes.
	merged uint64
}

// New builds a Service; call Restore before the pipeline starts.
func New(o Options) *Service {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &Service{db: o.DB, live: o.Live, clock: o.Clock, log: o.Logger, alertsys: o.Alertsys, nextID: 1}
	return s
}

// OnCommitted registers fn to receive every event once its insert has
// committed (the push subsystem publishes SOS, watch and test moments from
// here). fn runs on the store writer goroutine: it must only hand off.
// Register before the pipeline starts.
func (s *Service) OnCommitted(fn func(store.Event)) { s.listeners = append(s.listeners, fn) }

// Restore continues the id sequence and reopens the dedup windows of
// events created within the longest possible window, so a press reported
// again right after a restart still merges into its event.
func (s *Service) Restore() error {
	seq, err := s.db.EventSequence()
	if err != nil {
		return err
	}
	now := s.clock.Now().UnixMilli()
	recent, err := s.db.RecentEvents(now - MaxWindowMS)
	if err != nil {
		return err
	}
	s.idMu.Lock()
	s.nextID = seq + 1
	s.idMu.Unlock()
	for _, e := range recent { // oldest first: the newest event of a key wins
		c := classPress
		if e.Type == typeMotion {
			c = classMotion
		}
		oe := openEvent{id: e.ID, anchor: e.CreatedAt, reports: e.Reports, press: c == classPress}
		for _, g := range e.Gateways {
			if m, ok := ingest.ParseMAC(g); ok {
				oe.addGateway(m)
			}
		}
		oe.note(e.ReportedAt)
		if c == classPress && within(now, e.CreatedAt, ResendHoldMS) {
			// Any of its gateways may resend, not only the first: the
			// audit lists every press report with its timestamp.
			if a, err := s.db.GetButtonAudit(e.AssetUID, e.ID); err == nil {
				for _, r := range a.Reports {
					oe.note(r.ReportedAt)
				}
			}
		}
		sh := s.shards.OfUID(e.AssetUID)
		sh.Lock()
		*sh.V.open.Add(assets.UIDHash(e.AssetUID), e.AssetUID).at(c, e.Test) = oe
		sh.Unlock()
	}
	// Pending presses of any age, not only this last hour's: one left
	// pending by a longer outage would otherwise say "pending" forever.
	s.pending, err = s.db.PendingAlertsysEvents()
	return err
}

// RecoverWindow is how old a press still pending for alertsys at start
// may be and still be sent: a crash right after the PUBACK must not lose
// the convene, but a press from long ago would only confuse responders.
const RecoverWindow = 5 * time.Minute

// RecoverAlertsys re-queues the presses Restore found still pending for
// alertsys (the Idempotency-Key lets alertsys ignore one it had already
// received) and marks older ones failed. Call once the worker runs.
func (s *Service) RecoverAlertsys(q Enqueuer, w Writer) int {
	pending := s.pending
	s.pending = nil
	now := s.clock.Now()
	n := 0
	for _, e := range pending {
		if q != nil && now.Sub(time.UnixMilli(e.CreatedAt)) <= RecoverWindow {
			q.Enqueue(e)
			n++
			continue
		}
		s.log.Error("alertsys never received a press from before the restart", "asset_uid", e.AssetUID, "event_id", e.ID)
		w.Do(store.SetEventAlertsys(e.ID, store.AlertsysFailed, "interrupted by a restart", now.UnixMilli()), nil)
	}
	return n
}

// Stats returns the counters.
func (s *Service) Stats() Stats {
	st := Stats{Events: s.events.Load(), Alerts: s.alerts.Load(), TestEvents: s.tests.Load()}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.Lock()
		st.Merged += sh.V.merged
		sh.Unlock()
	}
	return st
}

const typeMotion = "motion"

// classify maps an adv4 report to an event; ok is false for a plain
// heartbeat, which makes no event.
func classify(o *ingest.Observation) (status, typ string, c class, ok bool) {
	switch {
	case o.Pushed && o.Press != ingest.PressNone:
		if o.Asset.Type == "panic" || o.Asset.Type == "watch" {
			return store.EventAlert, o.Press.String(), classPress, true
		}
		return store.EventActive, o.Press.String(), classPress, true
	case o.Motion:
		return store.EventWarning, typeMotion, classMotion, true
	}
	return "", "", 0, false
}

// Observe implements ingest.Subscriber.
func (s *Service) Observe(b *ingest.Batch, w *ingest.Writes) {
	if b.Kind != ingest.KindAdv4 {
		return
	}
	window := int64(s.live.Get().PushButtonDedupSeconds) * 1000
	if window <= 0 {
		window = 40 * 1000
	}
	now := b.Received
	// Most adv4 frames are plain heartbeats that make no event: the
	// gateway's name is rendered only once a frame needs it.
	var gwStr string
	gwMAC := func() string {
		if gwStr == "" {
			gwStr = b.Gateway.String()
		}
		return gwStr
	}
	var gwUID, gwName string
	var gwID uint64
	if g := b.GatewayAsset; g != nil {
		gwUID, gwName, gwID = g.UID, g.Name, g.ID
	}
	for i := range b.Obs {
		o := &b.Obs[i]
		status, typ, c, ok := classify(o)
		if !ok {
			continue
		}
		var press *store.PressReport
		if c == classPress {
			press = &store.PressReport{Gateway: gwMAC(), GatewayUID: gwUID, RSSI: int(o.RSSI), Press: typ, ReportedAt: o.TS, ReceivedAt: now}
		}
		sh := s.shards.Of(o.Asset)
		sh.Lock()
		sh.V.sweep(now, window)
		oe := sh.V.open.Of(o.Asset).at(c, b.IsTest)
		if oe.open() && (within(now, oe.anchor, window) || oe.resent(o.TS)) && !s.wasLost(oe.id, now) {
			oe.reports++
			oe.note(o.TS)
			sh.V.merged++
			newGW := oe.addGateway(b.Gateway)
			// Motion repeats every second or so from every gateway: only a
			// new gateway is worth a write. Every press report is audited.
			if newGW || press != nil {
				// Motion (no press): nobody is waiting for it. Handed under
				// the shard lock, so it is queued after the event's insert.
				w.AddOp(store.MergeEvent(oe.id, store.EventMerge{Gateway: gwMAC(), RSSI: int(o.RSSI), At: now, Reports: oe.reports, Press: press}), press == nil)
				w.Hand()
			}
			sh.Unlock()
			continue
		}
		gw := gwMAC()
		e := store.Event{Status: status, Type: typ, Test: b.IsTest, AssetUID: o.Asset.UID, AssetID: o.Asset.ID,
			MAC: o.MAC.String(), BeaconName: o.Asset.Name, BeaconType: o.Asset.Type,
			Gateway: gw, GatewayUID: gwUID, GatewayName: gwName, Gateways: []string{gw}, Reports: 1, RSSI: int(o.RSSI),
			ReportedAt: o.TS, CreatedAt: now, UpdatedAt: now}
		if status == store.EventAlert && !b.IsTest {
			e.Alertsys = store.AlertsysDisabled
			if s.alertsys != nil && s.alertsys.Configured() {
				e.Alertsys = store.AlertsysPending
			}
			s.alerts.Add(1)
		}
		if b.IsTest {
			s.tests.Add(1)
		}
		s.events.Add(1)
		s.idMu.Lock()
		e.ID = s.nextID
		s.nextID++
		// A warning is not pushed: its commit may wait.
		id := e.ID
		warning := status == store.EventWarning
		w.AddOpDone(store.InsertEvent(e, gwID, press, s.committed), warning, func(err error) {
			if err != nil {
				s.insertFailed(id, now, warning, err)
			}
		})
		w.Hand()
		s.idMu.Unlock()
		*oe = openEvent{id: e.ID, anchor: now, reports: 1, press: c == classPress}
		oe.note(o.TS)
		oe.addGateway(b.Gateway)
		sh.Unlock()
	}
}

// within: the window is anchored at the first report of the press and does
// not slide, so a button held or re-pressed for minutes still yields one
// event per window rather than one endless event. Reports are slightly
// reordered between gateways' connections, hence the absolute difference.
func within(now, anchor, window int64) bool {
	d := now - anchor
	if d < 0 {
		d = -d
	}
	return d < window
}

// sweep forgets closed windows so the shard holds only beacons that
// pressed or moved recently.
func (sh *windows) sweep(now, window int64) {
	// Receive times are taken before the lock, so batches arrive a few ms
	// out of order: a slightly older now is not a reason to sweep (it made
	// every batch walk the whole map under the lock). Only a real jump
	// back (clock set back) restarts the schedule.
	if d := now - sh.lastSweep; d < 10_000 && d > -60_000 {
		return
	}
	sh.lastSweep = now
	hold := max(window, ResendHoldMS)
	sh.open.DeleteFunc(func(_ string, sl *slots) bool {
		for c := range sl.ev {
			for t := range sl.ev[c] {
				if oe := &sl.ev[c][t]; oe.open() && !within(now, oe.anchor, hold) {
					*oe = openEvent{}
				}
			}
		}
		return !sl.empty()
	})
}

// insertFailed notes an event whose insert did not commit. It runs on the
// writer's goroutine: it takes only lostMu, never a shard lock.
func (s *Service) insertFailed(id uint64, at int64, warning bool, err error) {
	// A failed commit fails every motion warning in it too: those are
	// logged quietly, the alarms loudly.
	lvl := slog.LevelError
	if warning {
		lvl = slog.LevelDebug
	}
	s.log.Log(context.Background(), lvl, "alerting: event not stored; the next report of its window opens a new one", "event_id", id, "err", err)
	s.lostMu.Lock()
	defer s.lostMu.Unlock()
	if s.lost == nil {
		s.lost = map[uint64]int64{}
	}
	if _, ok := s.lost[id]; !ok {
		s.lost[id] = at
		s.nLost.Add(1)
	}
}

// wasLost reports whether event id's insert failed, forgetting it: the
// caller (under the shard lock of its window) replaces the window. Ids
// whose window is over by now are forgotten too (no report will ask for
// them), so that the lookup, under one lock for every read loop, leaves
// the hot path again soon after a failure.
func (s *Service) wasLost(id uint64, now int64) bool {
	if s.nLost.Load() == 0 {
		return false
	}
	s.lostMu.Lock()
	defer s.lostMu.Unlock()
	_, lost := s.lost[id]
	hold := max(int64(s.live.Get().PushButtonDedupSeconds)*1000, ResendHoldMS)
	for x, at := range s.lost {
		if x == id || !within(now, at, hold) {
			delete(s.lost, x)
			s.nLost.Add(-1)
		}
	}
	return lost
}

// committed runs on the writer goroutine after an insert committed.
func (s *Service) committed(e store.Event) {
	if e.Alertsys == store.AlertsysPending && s.alertsys != nil {
		s.alertsys.Enqueue(e)
	}
	for _, fn := range s.listeners {
		fn(e)
	}
}

// PrepareRename (assets.PreRenamer) copies oldUID's windows to newUID
// before the registry resolves MACs to newUID: a report of the same press
// arriving before Rename merges into the same event under either uid.
func (s *Service) PrepareRename(oldUID, newUID string) {
	if oldUID == newUID {
		return
	}
	f, t, unlock := s.shards.LockPair(oldUID, newUID)
	defer unlock()
	src := f.V.open.Get(assets.UIDHash(oldUID), oldUID)
	if src == nil {
		return
	}
	nh := assets.UIDHash(newUID)
	dst := t.V.open.Add(nh, newUID)
	mergeWindows(dst, src)
	if dst.empty() {
		t.V.open.Delete(nh, newUID)
	}
}

// mergeWindows takes src's windows into dst where dst has none or an
// older one: the other may be closed and only kept for resends
// (ResendHoldMS).
func mergeWindows(dst, src *slots) {
	for c := range src.ev {
		for t, oe := range src.ev[c] {
			d := &dst.ev[c][t]
			switch {
			case oe.open() && d.open() && oe.id == d.id:
				// One event under both uids (copied by PrepareRename,
				// then merged into under the old): the timestamps either
				// noted are its own (a review: a report merged under the
				// old uid lost its timestamp, and its resend made a
				// second event).
				for _, ts := range oe.evicted {
					d.note(ts)
				}
				for _, ts := range oe.sent {
					d.note(ts)
				}
				d.reports = max(d.reports, oe.reports)
				for _, g := range append(oe.near[:oe.n:oe.n], oe.far...) {
					d.addGateway(g)
				}
			case oe.open() && (!d.open() || oe.anchor > d.anchor):
				// Own slices: both uids' windows live until Rename, and
				// an append to one must not write into the other's.
				*d = oe
				d.far, d.evicted = slices.Clone(oe.far), slices.Clone(oe.evicted)
			}
		}
	}
}

// Rename moves the open dedup windows of oldUID to newUID (remint, merge),
// so a press whose reports straddle the rename stays one event. Where the
// new uid has its own window too (a merge), the newer one is kept.
func (s *Service) Rename(oldUID, newUID string) {
	f, t, unlock := s.shards.LockPair(oldUID, newUID)
	defer unlock()
	from, to := &f.V, &t.V
	src, ok := from.open.Delete(assets.UIDHash(oldUID), oldUID)
	if !ok {
		return
	}
	nh := assets.UIDHash(newUID)
	dst := to.open.Add(nh, newUID)
	mergeWindows(dst, &src)
	if dst.empty() {
		to.open.Delete(nh, newUID)
	}
}

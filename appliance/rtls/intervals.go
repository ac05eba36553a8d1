package rtls

import (
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// Zone intervals are written as writer ops. The engine does not remember
// the ordinal AppendZoneInterval assigns inside the transaction (and a
// merge renumbers ordinals anyway): a close names the interval by its
// enter time, which the engine knows (the beacon's since).

func appendOp(uid string, z *Zone, enter int64) func(*bolt.Tx) error {
	iv := store.ZoneInterval{ZoneID: z.ID, Zone: z.Name, MapID: z.MapID, Enter: enter}
	return func(tx *bolt.Tx) error {
		v := iv // the op may run again after a rollback: never reuse an ordinal
		return store.AppendZoneInterval(tx, uid, &v)
	}
}

func closeOp(uid string, enter, leave int64) func(*bolt.Tx) error {
	return func(tx *bolt.Tx) error { return store.CloseZoneIntervalEntered(tx, uid, enter, leave) }
}

func reviseOp(uid string, enter int64, z *Zone) func(*bolt.Tx) error {
	id, name, mapID := z.ID, z.Name, z.MapID
	return func(tx *bolt.Tx) error { return store.ReviseZoneInterval(tx, uid, enter, id, name, mapID) }
}

func dropOp(uid string, enter int64) func(*bolt.Tx) error {
	return func(tx *bolt.Tx) error { return store.DropZoneInterval(tx, uid, enter) }
}

func reopenOp(uid string, enter int64) func(*bolt.Tx) error {
	return func(tx *bolt.Tx) error { return store.ReopenZoneInterval(tx, uid, enter) }
}

// CloseOpenIntervals closes every interval a crash left open, each at
// its beacon's last sighting as saved (no later than now, Unix ms); the
// wiring runs it once at start, since the engine starts with no live
// state and would otherwise leave them open for ever. lastWrite is when
// the crashed process last wrote the database (0: unknown), which bounds
// a close taken from last_seen (store.CloseOpenZoneIntervals). It
// returns the stored last sightings it raised to those closes.
func CloseOpenIntervals(tx *bolt.Tx, now, lastWrite int64) (map[string]int64, error) {
	_, raised, err := store.CloseOpenZoneIntervals(tx, now, lastWrite)
	return raised, err
}

// queue hands ops made outside a batch to the writer.
func (e *Engine) queue(ops []func(*bolt.Tx) error) {
	if e.opts.Writer == nil {
		return
	}
	for _, op := range ops {
		e.opts.Writer.Do(op, func(err error) {
			if err != nil {
				e.log.Error("rtls: write failed", "err", err)
			}
		})
	}
}

// forgets hands the last sighting of a beacon whose state goes to
// Options.Heard, as uid's (b.uid, or the uid a merge folds it into).
// While the engine holds a beacon, its answers carry that exact time;
// the persisted last sighting moves in whole seconds
// (assets.Resolution), so without this a client polling last_seen saw it
// go back by up to a second at a stop, a restart or a merge (a review).
func (e *Engine) forgets(b *beacon, uid string) {
	if e.opts.Heard != nil && b.heard > 0 {
		e.opts.Heard(uid, b.heard)
	}
}

// resetState drops all live state (Start, Stop). As at a timeout, each
// located beacon's stay ends at its last sighting (not at the stop: the
// engine knows nothing of it after that) and listeners get its zone-0
// event, so a live map does not keep showing what the API already
// answers as unknown.
func (e *Engine) resetState() {
	m := e.model.Load()
	for i := range e.shards {
		sh := &e.shards[i]
		var ops []func(*bolt.Tx) error
		sh.Lock()
		sh.V.Range(func(_ string, bp **beacon) {
			b := *bp
			if b.zone >= 0 || b.open {
				e.commit(m, b, -1, position{}, b.heard, &ops)
			}
			e.forgets(b, b.uid)
		})
		sh.V = assets.UIDMap[*beacon]{}
		e.queue(ops)
		sh.Unlock()
	}
	m.live.reset()
}

// sweepEvery is how often beacons are checked for the timeout: a quarter
// of it, so a beacon turns unknown at most 25% late.
func (e *Engine) sweepEvery() time.Duration {
	return max(e.opts.Timeout/4, 100*time.Millisecond)
}

// sweepFrom schedules the next sweep of cadence gen; a cadence
// restartSweep replaced schedules none (sweepMu held).
func (e *Engine) sweepFrom(gen uint64) {
	if e.closed || gen != e.sweepGen {
		return
	}
	e.sweep = e.clock.AfterFunc(e.sweepEvery(), func() {
		e.sweepMu.Lock()
		stale := gen != e.sweepGen
		e.sweepMu.Unlock()
		if stale {
			return
		}
		e.expire(e.clock.Now().UnixMilli())
		e.saveHeard()
		e.rec.saveSurveys()
		e.reviveTalking()
		e.judgeLinks()
		e.sweepMu.Lock()
		e.sweepFrom(gen)
		e.sweepMu.Unlock()
	})
}

// restartSweep times the sweep from now (New, Start): a run's beacons turn
// unknown at the same point of a silence whatever ran before it. Timed
// from the engine's making, a silence a little over the timeout expired
// a beacon in one of rtls-eval's runs and not in the next, and an
// algorithm scored differently by the algorithms listed before it
// (TestRunIgnoresTheOtherAlgorithms).
func (e *Engine) restartSweep() {
	e.sweepMu.Lock()
	defer e.sweepMu.Unlock()
	if e.sweep != nil {
		e.sweep.Stop()
	}
	e.sweepGen++
	e.sweepFrom(e.sweepGen)
}

// expire turns beacons not heard for Timeout unknown, closing their
// intervals; their smoothed readings and filter state are dropped too.
func (e *Engine) expire(now int64) {
	if e.run.Load() == nil {
		return
	}
	limit := e.opts.Timeout.Milliseconds()
	e.leave(e.model.Load(), func(b *beacon) bool {
		if b.zone < 0 && len(b.rds) == 0 {
			return false
		}
		// A last sighting more than clockStep in the future means the
		// wall clock stepped back: the silence cannot be measured, so
		// the stay ends at that sighting now rather than an hour late
		// (Observe starts the beacon afresh at its next report).
		// A zone's evidence is the sightings of gateways that place the
		// beacon somewhere (model.zoned: placed in a zone, or learned
		// from the survey): heard only by others (a MAC the site does not
		// know, a gateway neither placed nor surveyed), a zone was held
		// for ever under knn and the filters, its time advancing (a
		// review: 80 s and counting). strongest and centroid hold it the
		// same timeout (holdRunsOut); the stay ends at that evidence.
		last := b.heard
		if b.zone >= 0 && b.zonedAt > 0 && b.zonedAt < b.heard {
			last = b.zonedAt
		}
		if now-last < limit && !beforeStepBack(b.heard, now) {
			return false
		}
		b.rds = nil // freed, not kept for a return that may never come
		return true
	})
	e.forget(now - forgetAfter.Milliseconds())
}

// saveHeard hands the writer the last sighting of each beacon with a
// stay open that was heard since the last save: the engine's own time,
// in the server's clock, at which a crash's open stays are closed at the
// next start (store.PutZoneHeard). Every sweep, so a crash loses at most
// a quarter of the timeout of each stay.
func (e *Engine) saveHeard() {
	if e.opts.Writer == nil || e.run.Load() == nil {
		return
	}
	var heard map[string]store.ZoneHeard
	for i := range e.shards {
		sh := &e.shards[i]
		sh.Lock()
		sh.V.Range(func(_ string, bp **beacon) {
			if b := *bp; b.open && b.heard > b.heardSaved {
				if heard == nil {
					heard = map[string]store.ZoneHeard{}
				}
				// The stay's enter names it, as the interval ops do.
				// While a hold runs, the zone gateway's last sighting:
				// where its stay ends if the process dies now.
				heard[b.uid], b.heardSaved = store.ZoneHeard{Enter: b.since, Heard: b.stayEnd(b.heard)}, b.heard
			}
		})
		sh.Unlock()
	}
	if heard != nil {
		e.queue([]func(*bolt.Tx) error{store.PutZoneHeard(heard)})
	}
}

// forgetAfter is how long an unknown beacon's (small) remaining state is
// kept: beacons deleted, retired or gone from the site would otherwise
// stay in the engine, and in Status().Beacons, for the whole run.
const forgetAfter = 24 * time.Hour

// forget drops the state of beacons unknown and last heard before
// before; Location then answers false, as for a beacon not seen since
// Start (the API answers the same null zone either way).
func (e *Engine) forget(before int64) {
	for i := range e.shards {
		sh := &e.shards[i]
		sh.Lock()
		sh.V.DeleteFunc(func(_ string, bp **beacon) bool {
			b := *bp
			keep := b.zone >= 0 || b.open || len(b.rds) > 0 || b.heard >= before
			if !keep {
				e.forgets(b, b.uid)
			}
			return keep
		})
		sh.Unlock()
	}
}

// leave makes unknown every beacon that out picks (a timeout, a zone an
// edit deleted; out may also drop state the beacon no longer needs). Its
// interval ends at its last sighting, not when this noticed: no report
// observed later can open the next interval before that. Listeners get
// the zone-0 event, and the algorithm state starts again on m. The closes
// are handed to the writer under each shard's lock, as Observe hands its
// writes, so a beacon's next interval cannot reach the store first.
func (e *Engine) leave(m *model, out func(b *beacon) bool) {
	for i := range e.shards {
		sh := &e.shards[i]
		var ops []func(*bolt.Tx) error
		sh.Lock()
		sh.V.Range(func(_ string, bp **beacon) {
			if b := *bp; out(b) {
				e.commit(m, b, -1, position{}, b.heard, &ops)
				b.reset(m)
			}
		})
		e.queue(ops)
		sh.Unlock()
	}
}

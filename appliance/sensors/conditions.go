package sensors

import (
	"slices"
	"strings"
	"sync"

	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// Condition kinds. A condition's key is "<kind>:<subject>", the subject
// being the asset_uid (or the MAC of an unassigned device), so humidity
// and temperature of one sensor share one out-of-range condition.
const (
	CondRange       = "range"
	CondBattery     = "battery"
	CondNotSeen     = "notseen"
	CondCalibration = "calibration"
)

// Conditions is the one internal interface of sensor conditions: the
// active set (restored from the store at start, so a condition active
// before a restart stays active and is not reported again), transitions as
// explicit active/resolved records, and Subscribe for the push layer.
type Conditions struct {
	db     *store.DB
	mu     sync.Mutex
	active map[string]store.SensorCondition
	subs   []func(store.SensorConditionRecord)
	seq    uint64 // last record number handed out
}

// NewConditions loads the active set.
func NewConditions(db *store.DB) (*Conditions, error) {
	cs, err := db.ActiveSensorConditions()
	if err != nil {
		return nil, err
	}
	// Scanning the log once at start is fine: it grows by transitions,
	// not readings.
	seq, err := db.LastSensorConditionSeq()
	if err != nil {
		return nil, err
	}
	c := &Conditions{db: db, active: map[string]store.SensorCondition{}, seq: seq}
	for _, x := range cs {
		c.active[x.Key] = x
	}
	return c, nil
}

// Subscribe registers fn for every transition. fn runs on the deciding
// goroutine (ingest or a checker), under the lock the transition was
// decided under, and must not block; the durable copy is in the store
// (Records), which a subscriber that falls behind re-reads. fn hears a
// transition once it is queued for the store, before it commits, so that
// every listener hears an asset's transitions in the order they were
// decided; if that commit fails, fn has heard one the store does not hold.
func (c *Conditions) Subscribe(fn func(store.SensorConditionRecord)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.subs = append(c.subs, fn)
}

// Active returns the active conditions in key order.
func (c *Conditions) Active() []store.SensorCondition {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]store.SensorCondition, 0, len(c.active))
	for _, x := range c.active {
		out = append(out, x)
	}
	slices.SortFunc(out, func(a, b store.SensorCondition) int {
		if a.Key < b.Key {
			return -1
		}
		if a.Key > b.Key {
			return 1
		}
		return 0
	})
	return out
}

// IsActive reports whether kind is active for subject.
func (c *Conditions) IsActive(kind, subject string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.active[kind+":"+subject]
	return ok
}

// Records returns persisted transitions after cursor ("" = all).
func (c *Conditions) Records(cursor string, limit int) ([]store.SensorConditionRecord, error) {
	return c.db.SensorConditionRecords(cursor, limit)
}

// decide applies one desired state and returns the transition, if any. A
// still-active condition whose message changed is not a transition.
func (c *Conditions) decide(kind, subject string, on bool, msg string, at int64) (store.SensorConditionRecord, bool) {
	key := kind + ":" + subject
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, was := c.active[key]
	switch {
	case on && !was:
		c.active[key] = store.SensorCondition{Key: key, Kind: kind, Subject: subject, Since: at, At: at, Message: msg}
		c.seq++
		return store.SensorConditionRecord{Seq: c.seq, Key: key, Kind: kind, Subject: subject, Phase: store.HealthActive, At: at, Since: at, Message: msg}, true
	case !on && was:
		delete(c.active, key)
		c.seq++
		return store.SensorConditionRecord{Seq: c.seq, Key: key, Kind: kind, Subject: subject, Phase: store.HealthResolved, At: at, Since: cur.Since, Message: msg}, true
	}
	return store.SensorConditionRecord{}, false
}

func (c *Conditions) notify(recs []store.SensorConditionRecord) {
	c.mu.Lock()
	subs := slices.Clone(c.subs)
	c.mu.Unlock()
	for _, r := range recs {
		for _, fn := range subs {
			fn(r)
		}
	}
}

// op is the durable write of recs for an ingest batch (re-runnable).
func op(recs []store.SensorConditionRecord) func(tx *bolt.Tx) error {
	return func(tx *bolt.Tx) error { return store.ApplySensorConditions(tx, recs) }
}

// checkWrites carries a checker's transitions to the store. Each asset's
// are queued before the lock they were decided under is released, as the
// ingest path does (ingest.Writes), and wait collects the outcome once
// every lock is released.
//
// Committed on their own after the decision, as they were at first, a
// not-seen the checker had just opened could reach the store after the
// "seen again" a heartbeat decided a moment later and the group-commit
// writer committed first: the store (and every restart) then kept the
// condition active while memory had resolved it, and listeners heard
// resolved before active.
type checkWrites struct {
	m   *Monitor
	wg  sync.WaitGroup
	mu  sync.Mutex
	err error
}

// hand queues recs and tells the listeners; call it under the lock they
// were decided under.
func (c *checkWrites) hand(recs []store.SensorConditionRecord) {
	if len(recs) == 0 {
		return
	}
	if w := c.m.Writer; w != nil {
		c.wg.Add(1)
		w.Do(op(recs), func(err error) { c.note(err); c.wg.Done() })
	} else {
		// No writer (a monitor on its own in a unit test): committing
		// under the lock keeps the order just as well.
		c.note(c.m.db.Update(op(recs)))
	}
	c.m.Conds.notify(recs)
}

func (c *checkWrites) note(err error) {
	if err == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
}

// wait returns once everything handed is committed, with the first error.
func (c *checkWrites) wait() error {
	c.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Rename moves the active conditions of oldUID to newUID (remint, merge),
// keeping newUID's own where it has one. The store is renamed by the
// asset transaction; this is the in-memory copy.
func (c *Conditions) Rename(oldUID, newUID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	suffix := ":" + oldUID
	for key, x := range c.active {
		head, ok := strings.CutSuffix(key, suffix)
		if !ok || head != x.Kind {
			continue
		}
		delete(c.active, key)
		nk := head + ":" + newUID
		if _, taken := c.active[nk]; taken {
			continue
		}
		x.Key, x.Subject = nk, newUID
		x.Message = strings.ReplaceAll(x.Message, oldUID, newUID) // as the store's (renameSensorConds)
		c.active[nk] = x
	}
}

// Package status owns the appliance's view of its own health: probes of
// MQTT, alertsys and the push server (reachability and delivery), fleet
// counts (stale and never-seen beacons and gateways), the dashboard and
// forced rechecks behind /api/v1/status/*, and the health conditions those
// probes raise and resolve.
//
// Conditions are the one internal interface the push subsystem publishes
// from: every transition is persisted as an explicit active or resolved
// record before subscribers hear of it, and the active set survives a
// restart, so "was up and is no longer" is judged against the last known
// state, not against a fresh process.
package status

import (
	"log/slog"
	"sort"
	"strings"
	"sync"

	"beaconhub/appliance/clock"
	"beaconhub/store"
)

// Condition keys (spec "Health event keys").
const (
	KeyMQTTDown       = "mqtt_down"
	KeyAlertsysDown   = "alertsys_down"
	KeyPushDown       = "push_down"
	KeyPushTestFailed = "push_test_failed"
	fleetPrefix       = "fleet:"
)

// FleetKey is the key of a fleet condition; what is "stale" or
// "never_seen".
func FleetKey(what, assetUID string) string { return fleetPrefix + what + ":" + assetUID }

// Change is a desired state of one condition.
type Change struct {
	Key     string
	Active  bool
	Message string
}

// Conditions holds the active health conditions and records transitions.
type Conditions struct {
	db    *store.DB
	clock clock.Clock
	log   *slog.Logger

	mu       sync.Mutex
	active   map[string]store.HealthCondition
	notifyMu sync.Mutex // taken before mu is released: subscribers hear transitions in order
	subs     []func(store.HealthRecord)
}

// NewConditions loads the active set from the store.
func NewConditions(db *store.DB, clk clock.Clock, log *slog.Logger) (*Conditions, error) {
	if clk == nil {
		clk = clock.Real{}
	}
	if log == nil {
		log = slog.Default()
	}
	c := &Conditions{db: db, clock: clk, log: log, active: map[string]store.HealthCondition{}}
	list, err := db.ActiveHealth()
	if err != nil {
		return nil, err
	}
	for _, hc := range list {
		c.active[hc.Key] = hc
	}
	return c, nil
}

// Subscribe registers fn for every transition, after it is persisted. fn
// must be quick (hand off to a queue): transitions are delivered in order
// on the goroutine that caused them.
func (c *Conditions) Subscribe(fn func(store.HealthRecord)) {
	c.notifyMu.Lock()
	c.subs = append(c.subs, fn)
	c.notifyMu.Unlock()
}

// Set changes one condition; it reports whether that was a transition.
func (c *Conditions) Set(key string, active bool, message string) bool {
	return len(c.Apply([]Change{{key, active, message}})) > 0
}

// Apply moves conditions to the given states in one transaction and returns
// the transitions recorded (none for a condition already in that state).
// If the store refuses, nothing changes in memory either, so the next
// evaluation tries the same transitions again.
func (c *Conditions) Apply(changes []Change) []store.HealthRecord {
	now := c.clock.Now().UnixMilli()
	c.mu.Lock()
	var recs []store.HealthRecord
	seen := map[string]bool{}
	for _, ch := range changes {
		if seen[ch.Key] {
			continue
		}
		seen[ch.Key] = true
		cur, isActive := c.active[ch.Key]
		switch {
		case ch.Active && !isActive:
			recs = append(recs, store.HealthRecord{Key: ch.Key, Phase: store.HealthActive, At: now, Since: now, Message: ch.Message})
		case !ch.Active && isActive:
			recs = append(recs, store.HealthRecord{Key: ch.Key, Phase: store.HealthResolved, At: now, Since: cur.Since, Message: ch.Message})
		}
	}
	if len(recs) == 0 {
		c.mu.Unlock()
		return nil
	}
	stored, err := c.db.ApplyHealth(recs)
	if err != nil {
		c.mu.Unlock()
		c.log.Error("health conditions not stored", "err", err, "transitions", len(recs))
		return nil
	}
	for _, r := range stored {
		if r.Phase == store.HealthActive {
			c.active[r.Key] = store.HealthCondition{Key: r.Key, Since: r.Since, UpdatedAt: r.At, Message: r.Message}
		} else {
			delete(c.active, r.Key)
		}
	}
	c.notifyMu.Lock()
	c.mu.Unlock()
	defer c.notifyMu.Unlock()
	for _, r := range stored {
		if r.Phase == store.HealthActive {
			c.log.Warn("health condition active", "key", r.Key, "message", r.Message)
		} else {
			c.log.Info("health condition resolved", "key", r.Key)
		}
		for _, fn := range c.subs {
			fn(r)
		}
	}
	return stored
}

// Active returns the active conditions ordered by key.
func (c *Conditions) Active() []store.HealthCondition {
	c.mu.Lock()
	out := make([]store.HealthCondition, 0, len(c.active))
	for _, hc := range c.active {
		out = append(out, hc)
	}
	c.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// IsActive reports whether key is active.
func (c *Conditions) IsActive(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.active[key]
	return ok
}

// activeWithPrefix is the set of active keys starting with prefix.
func (c *Conditions) activeWithPrefix(prefix string) map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]bool{}
	for k := range c.active {
		if strings.HasPrefix(k, prefix) {
			out[k] = true
		}
	}
	return out
}

// Rename moves fleet conditions of oldUID to newUID (remint, merge), so
// the next fleet check sees them as still active instead of resolving
// the old key and raising the new one; the survivor's condition wins.
func (c *Conditions) Rename(oldUID, newUID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, x := range c.active {
		head, ok := strings.CutSuffix(key, ":"+oldUID)
		if !ok || !strings.HasPrefix(key, fleetPrefix) {
			continue
		}
		delete(c.active, key)
		nk := head + ":" + newUID
		if _, taken := c.active[nk]; !taken {
			x.Key = nk
			c.active[nk] = x
		}
	}
}

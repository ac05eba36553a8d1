package auth

import (
	"sync"
	"time"

	"beaconhub/appliance/clock"
)

// Limiter throttles failed logins per account and per client address.
// After SlowAfter failures inside Window each further attempt is refused
// until a growing delay has passed (slowed); after LockAfter failures the
// key is refused for Lockout. Refusals are 429s with a retry hint.
type Limiter struct {
	mu        sync.Mutex
	clock     clock.Clock
	entries   map[string]*limitEntry
	Window    time.Duration
	SlowAfter int
	LockAfter int
	Lockout   time.Duration
}

type limitEntry struct {
	fails     int
	first     time.Time
	blockedTo time.Time
}

// maxEntries bounds memory under a spray of addresses.
const maxEntries = 100000

// NewLimiter returns a limiter with production thresholds.
func NewLimiter(c clock.Clock) *Limiter {
	return &Limiter{clock: c, entries: map[string]*limitEntry{},
		Window: 15 * time.Minute, SlowAfter: 3, LockAfter: 10, Lockout: 15 * time.Minute}
}

// Check reports whether any key is currently refused and for how long.
func (l *Limiter) Check(keys ...string) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	var worst time.Duration
	for _, k := range keys {
		if e, ok := l.entries[k]; ok && now.Before(e.blockedTo) {
			if d := e.blockedTo.Sub(now); d > worst {
				worst = d
			}
		}
	}
	return worst, worst > 0
}

// Fail records a failed attempt for every key.
func (l *Limiter) Fail(keys ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	if len(l.entries) > maxEntries {
		for k, e := range l.entries {
			if now.Sub(e.first) > l.Window && now.After(e.blockedTo) {
				delete(l.entries, k)
			}
		}
	}
	for _, k := range keys {
		e, ok := l.entries[k]
		if !ok || (now.Sub(e.first) > l.Window && now.After(e.blockedTo)) {
			e = &limitEntry{first: now}
			l.entries[k] = e
		}
		e.fails++
		switch {
		case e.fails >= l.LockAfter:
			e.blockedTo = now.Add(l.Lockout)
		case e.fails >= l.SlowAfter:
			// 1s, 2s, 4s ... between attempts: slows guessing to a crawl
			// while a person who mistyped waits seconds.
			e.blockedTo = now.Add(time.Second << (e.fails - l.SlowAfter))
		}
	}
}

// Success clears the record of key (the account, not the address, so one
// valid login does not whitewash an address that sprays many accounts).
func (l *Limiter) Success(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.entries, key)
}

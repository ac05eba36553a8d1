package ingest

import (
	"sync"
	"sync/atomic"
)

// LastSeen keeps when each asset (by asset_uid) and each gateway was last
// heard. It changes on every report, so it lives in memory and is flushed
// in batches. Every report touches it from many read loops at once: a
// sync.Map lookup (no shared lock word bouncing between cores, which an
// RWMutex costs at millions of reports a second) and an atomic update.
type LastSeen struct {
	mu sync.Mutex // serialises Rename and restore against each other
	at sync.Map   // asset_uid -> *seenEntry
	gw sync.Map   // MAC -> *seenEntry
}

type seenEntry struct {
	ts    atomic.Int64
	dirty atomic.Bool
	key   string // persisted key: asset_uid, or "gw:<MAC>"
}

func newLastSeen() *LastSeen { return &LastSeen{} }

func (l *LastSeen) restore(m map[string]int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, v := range m {
		e := &seenEntry{key: k}
		e.ts.Store(v)
		if len(k) == 15 && k[:3] == "gw:" {
			if mac, ok := ParseMAC(k[3:]); ok {
				l.gw.Store(mac, e)
				continue
			}
		}
		l.at.Store(k, e)
	}
}

// bump raises e to ts (never lowers it: reports arrive out of order).
func (e *seenEntry) bump(ts int64) {
	for {
		cur := e.ts.Load()
		if ts <= cur {
			return
		}
		if e.ts.CompareAndSwap(cur, ts) {
			if !e.dirty.Load() { // a load does not take the cache line away
				e.dirty.Store(true)
			}
			return
		}
	}
}

func (l *LastSeen) asset(uid string, ts int64) {
	v, ok := l.at.Load(uid)
	if !ok {
		v, _ = l.at.LoadOrStore(uid, &seenEntry{key: uid})
	}
	v.(*seenEntry).bump(ts)
}

func (l *LastSeen) gateway(m MAC, ts int64) {
	v, ok := l.gw.Load(m)
	if !ok {
		v, _ = l.gw.LoadOrStore(m, &seenEntry{key: "gw:" + m.String()})
	}
	v.(*seenEntry).bump(ts)
}

// Asset returns when the asset was last heard (0 = never).
func (l *LastSeen) Asset(uid string) int64 {
	if v, ok := l.at.Load(uid); ok {
		return v.(*seenEntry).ts.Load()
	}
	return 0
}

// Gateway returns when a gateway last published (0 = never).
func (l *LastSeen) Gateway(m MAC) int64 {
	if v, ok := l.gw.Load(m); ok {
		return v.(*seenEntry).ts.Load()
	}
	return 0
}

// Rename moves an asset's time to a new uid (remint, merge).
func (l *LastSeen) Rename(oldUID, newUID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	old, ok := l.at.LoadAndDelete(oldUID)
	if !ok {
		return
	}
	v, _ := l.at.LoadOrStore(newUID, &seenEntry{key: newUID})
	e := v.(*seenEntry)
	e.bump(old.(*seenEntry).ts.Load())
	e.dirty.Store(true)
}

// takeDirty returns the times changed since the last call.
func (l *LastSeen) takeDirty() map[string]int64 {
	var out map[string]int64
	take := func(_, v any) bool {
		e := v.(*seenEntry)
		if e.dirty.Swap(false) {
			if out == nil {
				out = map[string]int64{}
			}
			out[e.key] = e.ts.Load()
		}
		return true
	}
	l.at.Range(take)
	l.gw.Range(take)
	return out
}

package ingest

import "sync"

// LastSeen keeps when each asset (by asset_uid) and each gateway was last
// heard. It changes on every report, so it lives in memory and is flushed
// in batches; "dirty" tracks what changed since the last flush.
type LastSeen struct {
	mu    sync.Mutex
	at    map[string]int64
	gw    map[MAC]int64
	dirty map[string]int64
}

func newLastSeen() *LastSeen {
	return &LastSeen{at: map[string]int64{}, gw: map[MAC]int64{}, dirty: map[string]int64{}}
}

func (l *LastSeen) restore(m map[string]int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, v := range m {
		if len(k) == 15 && k[:3] == "gw:" {
			if mac, ok := ParseMAC(k[3:]); ok {
				l.gw[mac] = v
				continue
			}
		}
		l.at[k] = v
	}
}

func (l *LastSeen) asset(uid string, ts int64) {
	l.mu.Lock()
	if ts > l.at[uid] {
		l.at[uid] = ts
		l.dirty[uid] = ts
	}
	l.mu.Unlock()
}

func (l *LastSeen) gateway(m MAC, ts int64) {
	l.mu.Lock()
	if ts > l.gw[m] {
		l.gw[m] = ts
		l.dirty["gw:"+m.String()] = ts
	}
	l.mu.Unlock()
}

// Asset returns when the asset was last heard (0 = never).
func (l *LastSeen) Asset(uid string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.at[uid]
}

// Gateway returns when a gateway last published (0 = never).
func (l *LastSeen) Gateway(m MAC) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gw[m]
}

// Rename moves an asset's time to a new uid (remint, merge).
func (l *LastSeen) Rename(oldUID, newUID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ts, ok := l.at[oldUID]; ok {
		delete(l.at, oldUID)
		if ts > l.at[newUID] {
			l.at[newUID] = ts
			l.dirty[newUID] = ts
		}
	}
}

func (l *LastSeen) takeDirty() map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.dirty) == 0 {
		return nil
	}
	d := l.dirty
	l.dirty = map[string]int64{}
	return d
}

package ingest

import (
	"sync"
	"sync/atomic"

	"beaconhub/appliance/assets"
)

// SeenCells is where assets' last-heard times live: on the registry, one
// cell per asset_uid hanging off the Asset the MAC lookup returns, so the
// per-report update is an atomic on a pointer already in hand (a map
// lookup per report cost 17% of ingest CPU at 10,000 beacons).
type SeenCells interface {
	SeenCell(uid string) *assets.Seen
	SeenIfAny(uid string) (*assets.Seen, bool)
	RangeSeen(fn func(uid string, s *assets.Seen))
	RenameSeen(oldUID, newUID string)
}

// LastSeen keeps when each asset (by asset_uid) and each gateway (by MAC)
// was last heard. It lives in memory and is flushed in batches.
type LastSeen struct {
	cells SeenCells
	gw    sync.Map // MAC -> *gwSeen
	// ngw counts gw's entries: one for a gateway not registered is made
	// only below maxGateways, so a flood of random gateway topics neither
	// grows memory nor the stored last-seen times without end (a
	// review). A registered gateway always gets one.
	ngw atomic.Int64
}

type gwSeen struct {
	assets.Seen        // raised, not bumped: a gateway's time is exact
	key         string // "gw:<MAC>"
	// msgs counts the gateway's messages since the start that decoded
	// (GatewayMessages).
	msgs atomic.Int64
}

func newLastSeen(cells SeenCells) *LastSeen { return &LastSeen{cells: cells} }

// Restored takes times the store holds already (a start's repair of
// them, before ingest runs), as the start's restore does.
func (l *LastSeen) Restored(m map[string]int64) { l.restore(m) }

// restore takes times the store holds: each cell raised to its exact
// time (made where missing) and not dirty, since it is stored already.
func (l *LastSeen) restore(m map[string]int64) {
	for k, v := range m {
		if len(k) == 15 && k[:3] == "gw:" {
			if mac, ok := ParseMAC(k[3:]); ok {
				e := &gwSeen{key: k}
				e.Raise(v)
				e.TakeDirty() // restored, not changed
				if _, had := l.gw.Swap(mac, e); !had {
					l.ngw.Add(1)
				}
				continue
			}
		}
		c := l.cells.SeenCell(k)
		c.Raise(v)
		c.TakeDirty() // restored, not changed
	}
}

func (l *LastSeen) asset(a *assets.Asset, ts int64) {
	if a.Seen != nil {
		a.Seen.Bump(ts)
		return
	}
	l.cells.SeenCell(a.UID).Bump(ts)
}

// gateway notes a decoded message from gateway m; registered says it is
// a registered gateway, which is noted however many others are.
func (l *LastSeen) gateway(m MAC, ts int64, registered bool) {
	v, ok := l.gw.Load(m)
	if !ok {
		if !registered && l.ngw.Load() >= maxGateways {
			return
		}
		var loaded bool
		if v, loaded = l.gw.LoadOrStore(m, &gwSeen{key: "gw:" + m.String()}); !loaded {
			l.ngw.Add(1)
		}
	}
	e := v.(*gwSeen)
	e.Raise(ts)
	e.msgs.Add(1)
}

// GatewayMessages is how many messages gateway m has sent since the
// start that decoded (a status heartbeat, a report list, one with some
// bad reports): that it talks, counted rather than timed, as its last
// word's time may be from before a restart in a clock that came up
// behind it. Messages that did not decode (an unknown kind, a body that
// is not JSON) are not talk: a broker's will, say, from a dead gateway
// brought it back when they counted (a review). A registered gateway is
// counted however many unregistered ones a flood of random topics made
// (Stats' gateway table, whose cap such a flood fills, once held it).
func (l *LastSeen) GatewayMessages(m MAC) int64 {
	if v, ok := l.gw.Load(m); ok {
		return v.(*gwSeen).msgs.Load()
	}
	return 0
}

// Asset returns when the asset was last heard (0 = never).
func (l *LastSeen) Asset(uid string) int64 {
	if c, ok := l.cells.SeenIfAny(uid); ok {
		return c.Load()
	}
	return 0
}

// RaiseAsset raises an asset's last-heard time to ts, however little it
// advances (assets.Seen.Raise).
func (l *LastSeen) RaiseAsset(uid string, ts int64) {
	if c, ok := l.cells.SeenIfAny(uid); ok {
		c.Raise(ts)
	}
}

// Gateway returns when a gateway last published (0 = never).
func (l *LastSeen) Gateway(m MAC) int64 {
	if v, ok := l.gw.Load(m); ok {
		return v.(*gwSeen).Load()
	}
	return 0
}

// Rename moves an asset's time to a new uid (remint, merge).
func (l *LastSeen) Rename(oldUID, newUID string) { l.cells.RenameSeen(oldUID, newUID) }

// takeDirty returns the times changed since the last call.
func (l *LastSeen) takeDirty() map[string]int64 {
	var out map[string]int64
	put := func(k string, ts int64) {
		if out == nil {
			out = map[string]int64{}
		}
		out[k] = ts
	}
	l.cells.RangeSeen(func(uid string, s *assets.Seen) {
		if ts, ok := s.TakeDirty(); ok {
			put(uid, ts)
		}
	})
	l.gw.Range(func(_, v any) bool {
		e := v.(*gwSeen)
		if ts, ok := e.TakeDirty(); ok {
			put(e.key, ts)
		}
		return true
	})
	return out
}

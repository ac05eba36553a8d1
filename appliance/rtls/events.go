package rtls

import (
	"sync"

	"beaconhub/appliance/ingest"
)

type listener struct {
	l     Listener
	debug func(uid string) bool
}

// Listen registers l for track events and, for uids debug accepts, debug
// events. debug may be nil. Listeners and debug run on the ingest path
// under the beacon's shard lock: they must not block and must not call
// back into the engine.
func (e *Engine) Listen(l Listener, debug func(uid string) bool) (cancel func()) {
	ln := &listener{l: l, debug: debug}
	e.lmu.Lock()
	old := *e.listeners.Load()
	next := append(append(make([]*listener, 0, len(old)+1), old...), ln)
	e.listeners.Store(&next)
	if debug != nil {
		e.debugs.Add(1)
	}
	e.lmu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			e.lmu.Lock()
			defer e.lmu.Unlock()
			cur := *e.listeners.Load()
			next := make([]*listener, 0, len(cur))
			for _, x := range cur {
				if x != ln {
					next = append(next, x)
				}
			}
			e.listeners.Store(&next)
			if debug != nil {
				e.debugs.Add(-1)
			}
		})
	}
}

func (e *Engine) emitTrack(m *model, b *beacon) {
	b.seq++ // under b's shard lock, as every emit
	ls := *e.listeners.Load()
	if len(ls) == 0 {
		return
	}
	ev := Event{Location: b.location(m), AssetUID: b.uid}
	for _, l := range ls {
		l.l(ev)
	}
}

func (e *Engine) emitDebug(b *beacon) {
	if e.debugs.Load() == 0 {
		return
	}
	var ev *Event
	for _, l := range *e.listeners.Load() {
		if l.debug == nil || !l.debug(b.uid) {
			continue
		}
		if ev == nil {
			ev = &Event{Debug: true, AssetUID: b.uid, RSSI: make([]GatewayRSSI, 0, len(b.rds)), Offset: b.off.a}
			for _, rd := range b.rds {
				// smoothed as heard: the average is kept offset-corrected
				ev.RSSI = append(ev.RSSI, GatewayRSSI{Gateway: ingest.MAC(rd.mac).String(), RSSI: int(rd.raw), Smoothed: rd.ema + b.off.a, At: rd.last})
			}
			if b.still != nil {
				st := b.standing()
				ev.Standing = &st
			}
		}
		l.l(*ev)
	}
}

package rtls

import (
	"sort"

	"beaconhub/appliance/assets"
)

// Status summarises the engine.
func (e *Engine) Status() Status {
	st := Status{Reports: e.reports.Load(), Samples: int(e.nSample.Load())}
	if r := e.run.Load(); r != nil {
		st.Running, st.Algorithm, st.Since = true, r.name, r.since
	}
	m := e.model.Load()
	st.GatewaysDown = []string{}
	st.Surveys = e.rec.surveys()
	for g := range m.live.downs() {
		st.GatewaysDown = append(st.GatewaysDown, assets.FormatMAC(m.gwMAC[g]))
	}
	for i := range e.shards {
		sh := &e.shards[i]
		sh.Lock()
		st.Beacons += sh.V.Len()
		sh.V.Range(func(_ string, b **beacon) {
			if _, ok := (*b).zoneIn(m); ok {
				st.Located++
			}
		})
		sh.Unlock()
	}
	return st
}

// Location is uid's live prediction; false when not seen since Start.
func (e *Engine) Location(uid string) (Location, bool) {
	m := e.model.Load()
	return viewBeacon(e, uid, func(b *beacon) Location { return b.location(m) })
}

// TagOffset is the offset the engine applies to uid's readings: how many
// dB louder than the survey tag it hears uid, less offsetDeadZone
// (docs/rtls.md, "Tag offset"); false when uid was not seen since Start.
func (e *Engine) TagOffset(uid string) (float64, bool) {
	return viewBeacon(e, uid, func(b *beacon) float64 { return b.off.a })
}

// JudgedDown is how many times a gateway has been judged down since New
// (liveness.go): rtls-eval's count of false alarms on a recording where
// no gateway went down.
func (e *Engine) JudgedDown() uint64 { return e.judgedDown.Load() }

// viewBeacon is f of uid's live state, read under its shard lock; false
// when uid was not seen since Start.
func viewBeacon[T any](e *Engine, uid string, f func(b *beacon) T) (T, bool) {
	sh := e.shards.OfUID(uid)
	sh.Lock()
	defer sh.Unlock()
	b := sh.V.Get(assets.UIDHash(uid), uid)
	if b == nil {
		var zero T
		return zero, false
	}
	return f(*b), true
}

// Locations lists every beacon seen since Start, by asset_uid.
func (e *Engine) Locations() []Location {
	m := e.model.Load()
	var out []Location
	for i := range e.shards {
		sh := &e.shards[i]
		sh.Lock()
		sh.V.Range(func(_ string, b **beacon) { out = append(out, (*b).location(m)) })
		sh.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].AssetUID < out[j].AssetUID })
	return out
}

// zoneIn is b's zone as an index of model m, false when b has none there.
// It goes by id: b.zone indexes the model b last decided on, which may be
// older than m.
func (b *beacon) zoneIn(m *model) (int, bool) {
	zi, ok := m.zoneIdx[b.zoneID]
	return zi, ok && b.zoneID != 0
}

func (b *beacon) location(m *model) Location {
	l := Location{AssetUID: b.uid, Updated: b.heard, Seq: b.seq}
	if zi, ok := b.zoneIn(m); ok {
		z := &m.zones[zi]
		l.Zone, l.ZoneName, l.MapID, l.Since = z.ID, z.Name, z.MapID, b.since
		l.X, l.Y = z.centre()
		if b.pos.ok {
			l.X, l.Y, l.HasPos = b.pos.x, b.pos.y, true
		}
	}
	return l
}

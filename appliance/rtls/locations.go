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
	for i := range e.shards {
		sh := &e.shards[i]
		sh.Lock()
		st.Beacons += sh.V.Len()
		sh.V.Range(func(_ string, b **beacon) {
			// by id, as location() reads it: the zone index belongs to
			// the model the beacon last decided on
			if _, ok := m.zoneIdx[(*b).zoneID]; ok && (*b).zoneID != 0 {
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
	sh := e.shards.OfUID(uid)
	sh.Lock()
	defer sh.Unlock()
	b := sh.V.Get(assets.UIDHash(uid), uid)
	if b == nil {
		return Location{}, false
	}
	return (*b).location(m), true
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

func (b *beacon) location(m *model) Location {
	l := Location{AssetUID: b.uid, Updated: b.heard}
	// by id: b may not have been reset onto a newer model yet
	if zi, ok := m.zoneIdx[b.zoneID]; ok && b.zoneID != 0 {
		z := &m.zones[zi]
		l.Zone, l.ZoneName, l.MapID, l.Since = z.ID, z.Name, z.MapID, b.since
		l.X, l.Y = z.centre()
		if b.pos.ok {
			l.X, l.Y, l.HasPos = b.pos.x, b.pos.y, true
		}
	}
	return l
}

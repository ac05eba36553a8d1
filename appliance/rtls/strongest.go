package rtls

// strongest reports the zone of the gateway that hears the beacon loudest
// (smoothed). Hysteresis: a challenger replaces the incumbent gateway only
// after beating it by Margin dB for MarginDwell; an incumbent that stopped
// hearing the beacon is replaced at once.
type strongest struct{}

func (strongest) info(m *model) AlgorithmInfo {
	return infoOf(AlgStrongest, "zone of the loudest gateway, with hysteresis (margin and dwell)",
		commonParams(&m.p, map[string]any{"margin_db": m.p.Margin, "margin_dwell_ms": m.p.MarginDwell.Milliseconds(), "decide_every_ms": m.p.DecideEvery.Milliseconds()}),
		m.lacks(false, true, false, false))
}

func (strongest) update(m *model, p *Params, b *beacon, _ *reading, now int64) (int, position) {
	if !b.dueFixOrRefix(p, now) {
		return b.zone, b.pos
	}
	stale := b.stale(p)
	usable := func(i int) bool {
		return i >= 0 && i < len(b.rds) && b.rds[i].liveWithin(stale, now) && m.zoned(b.rds[i].g)
	}
	// Ties go to the gateway the model lists first, not to the one the
	// beacon happened to be heard by first: readings restart from a raw
	// whole dBm after a silence, so equal averages are common, and the
	// pick depended on the order of the first scan's reports.
	best := -1
	for i := range b.rds {
		if !usable(i) {
			continue
		}
		if best < 0 || b.rds[i].ema > b.rds[best].ema || b.rds[i].ema == b.rds[best].ema && b.rds[i].g < b.rds[best].g {
			best = i
		}
	}
	if best < 0 {
		// Heard, but only by gateways in no zone: the zone holds while a
		// zone's gateway was heard within the not-heard timeout, then
		// the beacon is unknown. It held for as long as the beacon was
		// heard so; going unknown at Stale made it flap where a room's
		// gateway hears it only now and then (a review: 171 changes in
		// ten minutes).
		if b.holdRunsOut(now, m.holdMs, m.zoned) {
			return -1, position{}
		}
		return b.zone, b.pos
	}
	b.heldFrom = 0 // a zone's gateway hears it: nothing held
	switch {
	case !usable(b.gw) || b.firstScan(now):
		b.gw, b.challenger = best, -1
	case best == b.gw || b.rds[best].ema < b.rds[b.gw].ema+p.Margin:
		b.challenger = -1
	default:
		if b.challenger != best {
			b.challenger, b.challengerSince = best, now
		}
		if now-b.challengerSince >= p.MarginDwell.Milliseconds() {
			b.gw, b.challenger = best, -1
		}
	}
	return m.gwZone[b.rds[b.gw].g], position{}
}

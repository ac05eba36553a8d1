package rtls

import "math"

// centroid estimates a point as the mean of the hearing gateways'
// positions weighted by 1/d², with d from the log-distance model, and
// reports the zone containing it (or the nearest zone on that map).
// Gateways without a placement stand at the centre of the zone the survey
// learned for them. Only gateways on the map of the loudest one count.
type centroid struct{}

func (centroid) info(m *model) AlgorithmInfo {
	return infoOf(AlgCentroid, "weighted centroid of placed gateways (log-distance model), then the containing or nearest zone",
		commonParams(&m.p, map[string]any{"tx_power_dbm": m.p.TxPower, "path_loss_exponent": m.p.PathLoss,
			"dwell_ms": m.p.Dwell.Milliseconds(), "decide_every_ms": m.p.DecideEvery.Milliseconds()}),
		m.lacks(true, false, false, false))
}

func (centroid) update(m *model, p *Params, b *beacon, _ *reading, now int64) (int, position) {
	if !b.due(p, now) {
		return b.zone, b.pos
	}
	loud := -1
	for i := range b.rds {
		rd := &b.rds[i]
		if rd.live(p, now) && m.gwPos[rd.g].ok {
			if loud < 0 || rd.ema > b.rds[loud].ema {
				loud = i
			}
		}
	}
	if loud < 0 {
		return b.zone, b.pos
	}
	mapID := m.gwPos[b.rds[loud].g].mapID
	ppm := m.pixelsPerMeter(mapID)
	var sw, sx, sy float64
	for i := range b.rds {
		rd := &b.rds[i]
		if !rd.live(p, now) {
			continue
		}
		gp := m.gwPos[rd.g]
		if !gp.ok || gp.mapID != mapID {
			continue
		}
		d := p.distance(rd.ema) * ppm
		w := 1 / (d * d)
		sw += w
		sx += w * gp.x
		sy += w * gp.y
	}
	x, y := sx/sw, sy/sw
	if math.IsNaN(x) || math.IsNaN(y) {
		return b.zone, b.pos
	}
	z := b.confirm(p, m.zoneAt(mapID, x, y), now)
	return z, position{mapID: mapID, x: x, y: y, ok: true}
}

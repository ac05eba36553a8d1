package rtls

import "math"

// centroid estimates a point as the mean of the hearing gateways'
// positions weighted by 1/d², with d from the log-distance model, and
// reports the zone containing it (or the nearest zone on that map).
// Gateways without a placement stand at the centre of the zone the survey
// learned for them. Only the centroidN loudest gateways on the map of
// the loudest one count.
type centroid struct{}

// centroidN: the usual choice of weighted-centroid trackers, enough to
// place a point between gateways.
const centroidN = 4

func (centroid) info(m *model) AlgorithmInfo {
	return infoOf(AlgCentroid, "weighted centroid of placed gateways (log-distance model), then the containing or nearest zone",
		commonParams(&m.p, map[string]any{"tx_power_dbm": m.p.TxPower, "path_loss_exponent": m.p.PathLoss,
			"dwell_ms": m.p.Dwell.Milliseconds(), "decide_every_ms": m.p.DecideEvery.Milliseconds()}),
		m.lacks(true, false, false, false))
}

func (centroid) update(m *model, p *Params, b *beacon, _ *reading, now int64) (int, position) {
	if !b.dueFirstFix(p, now) {
		return b.zone, b.pos
	}
	stale := b.stale(p)
	loud := -1
	for i := range b.rds {
		rd := &b.rds[i]
		if rd.liveWithin(stale, now) && m.zoned(rd.g) {
			if loud < 0 || rd.ema > b.rds[loud].ema {
				loud = i
			}
		}
	}
	if loud < 0 {
		// Only gateways without a position on a map with zones hear
		// it: as strongest, the zone holds for the not-heard timeout
		// from the last gateway with one. A gateway on a map without
		// zones counted, and its point, in no zone, kept the old zone
		// for as long as it was heard so (a review).
		if b.holdRunsOut(now, m.holdMs, m.zoned) {
			return -1, position{}
		}
		return b.zone, b.pos
	}
	b.heldFrom = 0 // a gateway on a map with zones hears it: nothing held
	mapID := m.gwPos[b.rds[loud].g].mapID
	ppm := m.pixelsPerMeter(mapID)
	// The centroidN loudest gateways only: on a large site dozens of
	// distant gateways, each weighing little, together pulled every
	// point towards the middle of the map (256 zones of 3 m, 60
	// gateways: 5% of zones right).
	var top [centroidN]int
	n := 0
	for i := range b.rds {
		rd := &b.rds[i]
		if !rd.liveWithin(stale, now) || !m.zoned(rd.g) || m.gwPos[rd.g].mapID != mapID {
			continue
		}
		k := min(n, centroidN-1)
		if n == centroidN && rd.ema <= b.rds[top[k]].ema {
			continue
		}
		for k > 0 && b.rds[top[k-1]].ema < rd.ema {
			top[k] = top[k-1]
			k--
		}
		top[k] = i
		n = min(n+1, centroidN)
	}
	var sw, sx, sy float64
	for _, i := range top[:n] {
		rd := &b.rds[i]
		gp := m.gwPos[rd.g]
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

package rtls

import "math"

// knn compares the beacon's smoothed RSSI vector (Floor for gateways not
// heard) with every survey sample in Euclidean dB distance; the K nearest
// vote for their zone with weight 1/(1+distance).
//
// Cost is O(samples x gateways heard): each sample keeps the distance of
// an all-Floor vector (base), and only the heard gateways correct it.
type knn struct{}

func (knn) info(m *model) AlgorithmInfo {
	return infoOf(AlgKNN, "k nearest survey samples in RSSI space vote for their zone",
		commonParams(&m.p, map[string]any{"k": m.p.K, "floor_dbm": m.p.Floor,
			"dwell_ms": m.p.Dwell.Milliseconds(), "decide_every_ms": m.p.DecideEvery.Milliseconds()}),
		m.lacks(false, false, true, false))
}

func (knn) update(m *model, p *Params, b *beacon, _ *reading, now int64) (int, position) {
	if len(m.samples) == 0 || !b.due(p, now) {
		return b.zone, b.pos
	}
	if len(b.votes) != len(m.zones) {
		b.votes = make([]float64, len(m.zones))
	}
	best, ok := vote(m, p, b, now, false, b.votes)
	if !ok {
		return b.zone, b.pos
	}
	return b.confirm(p, best, now), position{}
}

// vote runs the k-NN vote of b's readings into votes (one entry per
// zone) and returns the winning zone; false when nothing was heard. With
// raw, the vector is the raw readings of the last SampleWindow (the
// filter's evidence), otherwise the live smoothed readings.
func vote(m *model, p *Params, b *beacon, now int64, raw bool, votes []float64) (int, bool) {
	var topD [maxK]float64
	var topZ [maxK]int
	n := 0
	heard := false
	for i := range m.samples {
		s := &m.samples[i]
		d := s.base
		for j := range b.rds {
			rd := &b.rds[j]
			var x float64
			switch {
			case raw && rd.fresh(p, now):
				x = float64(rd.raw)
			case !raw && rd.live(p, now):
				x = rd.ema
			default:
				continue
			}
			heard = true
			v := float64(s.v[rd.g])
			d += (v-x)*(v-x) - (v-p.Floor)*(v-p.Floor)
		}
		// insertion into the sorted top-K
		if n < p.K {
			n++
		} else if d >= topD[n-1] {
			continue
		}
		k := n - 1
		for k > 0 && topD[k-1] > d {
			topD[k], topZ[k] = topD[k-1], topZ[k-1]
			k--
		}
		topD[k], topZ[k] = d, s.zone
	}
	if !heard {
		return -1, false
	}
	for i := range votes {
		votes[i] = 0
	}
	best := -1
	for i := 0; i < n; i++ {
		z := topZ[i]
		votes[z] += 1 / (1 + math.Sqrt(math.Max(topD[i], 0)))
		if best < 0 || votes[z] > votes[best] {
			best = z
		}
	}
	return best, true
}

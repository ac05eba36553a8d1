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
	best, ok := vote(m, p, b, now, b.votes)
	if !ok {
		return b.zone, b.pos
	}
	return b.confirm(p, best, now), position{}
}

// maxHeard bounds the gateways one decision compares (the loudest are
// not preferred: readings beyond it are simply ignored, and 64 gateways
// hearing one beacon at once is far beyond any real site).
const maxHeard = 64

// vote runs the k-NN vote of b's readings into votes (one entry per
// zone) and returns the winning zone over the live smoothed readings;
// false when nothing was heard.
func vote(m *model, p *Params, b *beacon, now int64, votes []float64) (int, bool) {
	// The heard gateways, gathered once. For a sample value v and a
	// reading x, (v-x)^2 - (v-F)^2 = 2(F-x)v + (x^2 - F^2): linear in v,
	// so each sample costs one multiply-add per heard gateway.
	var gs [maxHeard]int32
	var as [maxHeard]float64
	nh, c := 0, 0.0
	for j := range b.rds {
		rd := &b.rds[j]
		if !rd.live(p, now) {
			continue
		}
		x := rd.ema
		if nh == maxHeard {
			break
		}
		gs[nh], as[nh] = int32(rd.g), 2*(p.Floor-x)
		c += x*x - p.Floor*p.Floor
		nh++
	}
	if nh == 0 {
		return -1, false
	}
	var topD [maxK]float64
	var topZ [maxK]int
	n := 0
	for i := range m.samples {
		s := &m.samples[i]
		d := s.base + c
		for k := 0; k < nh; k++ {
			d += as[k] * float64(s.v[gs[k]])
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

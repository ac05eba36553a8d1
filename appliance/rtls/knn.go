package rtls

import (
	"math"
	"slices"
)

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
	if len(m.samples) == 0 || !b.dueFirstFix(p, now) {
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

// vote runs the k-NN vote of b's live smoothed readings into votes (one
// entry per zone) and returns the winning zone; false when nothing was
// heard.
func vote(m *model, p *Params, b *beacon, now int64, votes []float64) (int, bool) {
	var q query
	stale := b.stale(p)
	for j := range b.rds {
		rd := &b.rds[j]
		if rd.liveWithin(stale, now) && !q.add(p, rd.g, rd.ema) {
			break
		}
	}
	if q.n == 0 {
		return -1, false
	}
	q.leaveOutDown(m)
	return m.nearest(p, &q, -1, votes), true
}

// query is a reading vector prepared for the nearest-sample search. For a
// sample value v and a reading x, (v-x)^2 - (v-F)^2 = 2(F-x)v + (x^2 -
// F^2): linear in v, so each sample costs one multiply-add per heard
// gateway on top of its precomputed all-Floor distance.
type query struct {
	gs [maxHeard]int32
	as [maxHeard]float64
	c  float64
	n  int
	// dn are the gateways judged down (liveness.go) and not heard: their
	// dimension is left out, a dead gateway's silence saying nothing.
	dn [maxHeard]int32
	nd int
}

// leaveOutDown adds to q the gateways judged down that q has not heard.
func (q *query) leaveOutDown(m *model) {
	for g := range m.live.downs() {
		if q.nd == maxHeard {
			return
		}
		if !slices.Contains(q.gs[:q.n], int32(g)) {
			q.dn[q.nd] = int32(g)
			q.nd++
		}
	}
}

// add puts gateway g's reading x into q; false when q is full.
func (q *query) add(p *Params, g int, x float64) bool {
	if q.n == maxHeard {
		return false
	}
	q.gs[q.n], q.as[q.n] = int32(g), 2*(p.Floor-x)
	q.c += x*x - p.Floor*p.Floor
	q.n++
	return true
}

// nearest runs the k-NN vote of q over the samples (all but skip, -1
// none) into votes and returns the winning zone.
func (m *model) nearest(p *Params, q *query, skip int, votes []float64) int {
	var topD [maxK]float64
	var topZ [maxK]int
	n := 0
	for i := range m.samples {
		if i == skip {
			continue
		}
		s := &m.samples[i]
		d := s.base + q.c
		for k := 0; k < q.n; k++ {
			d += q.as[k] * float64(s.v[q.gs[k]])
		}
		for k := 0; k < q.nd; k++ {
			e := float64(s.v[q.dn[k]]) - p.Floor
			d -= e * e
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
	return best
}

// voteLogShare turns k-NN votes into log zone probabilities: the K
// neighbours' vote shares as K observations of the zone distribution,
// with one more observation's worth spread evenly over the zones (so a
// zone without a vote keeps a finite probability).
func voteLogShare(k int, votes []float64) {
	var tot float64
	for _, v := range votes {
		tot += v
	}
	if tot <= 0 {
		for z := range votes {
			votes[z] = 0
		}
		return
	}
	nz, kf := float64(len(votes)), float64(k)
	// At most K zones have a vote: the others share one value.
	none := math.Log((1 / nz) / (kf + 1))
	for z, v := range votes {
		if v == 0 {
			votes[z] = none
			continue
		}
		votes[z] = math.Log((kf*v/tot + 1/nz) / (kf + 1))
	}
}

package rtls

import "math"

// bayes is the survey-trained naive-Bayes classifier of emission.go run
// recursively over time, without the zone graph: a "sticky"
// uniform-transition HMM.
//
// Prediction: in dt the beacon stays in its zone with probability
// p = exp(-dt/MeanStay) and otherwise may be in any other zone with equal
// probability (1-p)/(n-1). MeanStay is the decay time constant of the
// posterior: the expected dwell in one zone, so evidence older than about
// MeanStay has largely been forgotten. Unlike hmm, mass may move to any
// zone, so a gap in coverage or a missing graph edge cannot trap the
// estimate.
//
// Update: the same likelihood as hmm (heard and unheard gateways of the
// last SampleWindow, logLikelihood, and their k-NN vote, knnLikelihood),
// weighted by Evidence x the
// calibrated weight of one window x min(1, dt/SampleWindow), so
// confidence is gained per second, not per sighting.
//
// Report: the first fix is the most probable zone; after that the
// reported zone changes to the most probable zone only when it is at
// least SwitchOdds times as probable as the reported one.
type bayes struct{}

func (bayes) info(m *model) AlgorithmInfo {
	params := filterParams(m)
	params["lost"] = m.p.Lost
	return infoOf(AlgBayes, "naive-Bayes classifier of heard and unheard gateways with a sticky uniform-transition prior (forgetting time MeanStay) and odds hysteresis",
		commonParams(&m.p, params), m.lacks(false, false, false, true))
}

func (bayes) update(m *model, p *Params, b *beacon, _ *reading, now int64) (int, position) {
	nz := len(m.zones)
	if nz == 0 {
		return -1, position{}
	}
	if !beginStep(m, p, b, now) {
		return b.zone, b.pos
	}
	if dt := now - b.stepped; dt > 0 && !b.refining(now) {
		stay := math.Exp(-float64(dt) / float64(p.MeanStay.Milliseconds()))
		jump := 0.0
		if nz > 1 {
			jump = (1 - stay) / float64(nz-1)
		}
		for z, v := range b.belief {
			// stay with v's mass, or arrive from any other zone
			b.prior[z] = stay*v + jump*(1-v)
		}
		b.weight = windowWeight(m, p, dt)
		b.stepped = now
	}
	if _, ok := correct(m, p, b, now, 1e-12); !ok {
		return b.zone, b.pos
	}
	return switchZone(p, b, b.belief, now), position{}
}

// switchZone is the odds hysteresis of bayes, grid and fusion on the
// zone posterior post: the first fix is the most probable zone; after
// that the zone changes when another is SwitchOdds times as probable as
// the reported one.
func switchZone(p *Params, b *beacon, post []float64, now int64) int {
	best := 0
	for z := range post {
		if post[z] > post[best] {
			best = z
		}
	}
	if b.zone < 0 || b.firstScan(now) {
		return best
	}
	if best != b.zone && post[best] >= p.SwitchOdds*post[b.zone] {
		return best
	}
	return b.zone
}

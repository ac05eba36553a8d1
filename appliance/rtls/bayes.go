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
// last SampleWindow, logLikelihood), weighted by Evidence x
// min(1, dt/SampleWindow), so confidence is gained per second, not per
// sighting.
//
// Report: the first fix is the most probable zone; after that the
// reported zone changes to the most probable zone only when it is at
// least SwitchOdds times as probable as the reported one.
type bayes struct{}

func (bayes) info(m *model) AlgorithmInfo {
	return infoOf(AlgBayes, "naive-Bayes classifier of heard and unheard gateways with a sticky uniform-transition prior (forgetting time MeanStay) and odds hysteresis",
		commonParams(&m.p, map[string]any{"mean_stay_ms": m.p.MeanStay.Milliseconds(), "evidence": m.p.Evidence,
			"switch_odds": m.p.SwitchOdds, "sigma_db": m.p.Sigma, "sigma_floor_db": m.p.SigmaFloor,
			"floor_dbm": m.p.Floor, "lost": m.p.Lost, "sample_window_ms": m.p.SampleWindow.Milliseconds(),
			"decide_every_ms": m.p.DecideEvery.Milliseconds()}),
		m.lacks(false, false, false, true))
}

func (bayes) update(m *model, p *Params, b *beacon, _ *reading, now int64) (int, position) {
	nz := len(m.zones)
	if nz == 0 {
		return -1, position{}
	}
	first := len(b.belief) != nz
	if first {
		b.belief, b.prior = make([]float64, nz), make([]float64, nz)
		b.scratch = make([]float64, nz)
		for i := range b.prior {
			b.prior[i] = 1 / float64(nz)
		}
		copy(b.belief, b.prior)
		b.stepped, b.weight = now, p.Evidence
	}
	// As in hmm: absence counts only in proportion to how much of a
	// SampleWindow the current run of sightings covers.
	if now-b.lastSight >= p.Stale.Milliseconds() || first {
		b.burst = now
	}
	b.lastSight = now
	if !b.due(p, now) {
		return b.zone, b.pos
	}
	if dt := now - b.stepped; dt > 0 {
		stay := math.Exp(-float64(dt) / float64(p.MeanStay.Milliseconds()))
		jump := 0.0
		if nz > 1 {
			jump = (1 - stay) / float64(nz-1)
		}
		for z, v := range b.belief {
			// stay with v's mass, or arrive from any other zone
			b.prior[z] = stay*v + jump*(1-v)
		}
		b.weight = p.Evidence * math.Min(1, float64(dt)/float64(p.SampleWindow.Milliseconds()))
		b.stepped = now
	}
	ll := b.scratch
	cover := math.Min(1, float64(now-b.burst)/float64(p.SampleWindow.Milliseconds()))
	if !logLikelihood(m, p, b, now, cover, ll) {
		copy(b.belief, b.prior)
		return b.zone, b.pos
	}
	top := math.Inf(-1)
	for _, v := range ll {
		top = math.Max(top, v)
	}
	var sum float64
	for z := range b.belief {
		b.belief[z] = b.prior[z] * math.Exp(b.weight*(ll[z]-top))
		sum += b.belief[z]
	}
	best := 0
	for z := range b.belief {
		b.belief[z] = math.Max(b.belief[z]/sum, 1e-12)
		if b.belief[z] > b.belief[best] {
			best = z
		}
	}
	if b.zone < 0 || b.firstScan(now) {
		return best, position{}
	}
	if best != b.zone && b.belief[best] >= p.SwitchOdds*b.belief[b.zone] {
		return best, position{}
	}
	return b.zone, position{}
}

package rtls

import "math"

// filter is a discrete Bayes filter (an HMM run forward) over the zones.
//
// Prediction: in dt a beacon leaves its zone with probability
// 1-exp(-dt/MeanStay), spread evenly over the zone's graph neighbours, so
// probability mass only ever flows along the zone graph.
//
// Update: the likelihood of the beacon's readings of the last
// SampleWindow in each zone (each gateway's mean, as a survey sample
// has; emission.go): with survey samples a naive-Bayes model of which
// gateways hear the beacon and at what RSSI, absence
// included, plus the k-NN vote of the same readings (which gateways are
// heard together, which naive Bayes cannot see), the two weighed as
// calibrated on the survey; without samples, placed gateways predict the
// log-distance RSSI at each zone centre (Gaussian, Sigma). The
// log-likelihood is scaled by
// Evidence x the model's weight of one window (calibrated on the survey,
// emission.go calibrate) x min(1, dt/SampleWindow), so the filter gains
// the same confidence per second however often it decides; sightings in
// the same millisecond as the last update refine that update instead of
// counting again.
//
// Report: the first fix is the most probable zone; after that the
// reported zone moves one hop along the graph towards the most probable
// zone whenever that zone is SwitchOdds times as probable as the
// reported one (hysteresis in probability space). The reported
// zone therefore never jumps between non-adjacent zones (the one
// exception: zones with no path between them at all). There is no extra
// Dwell: the posterior already integrates evidence over time, and a
// second delay on top cost accuracy without a principled reason.
type filter struct{}

func (filter) info(m *model) AlgorithmInfo {
	return infoOf(AlgFilter, "adjacency-constrained Bayes filter (HMM) over zones; naive-Bayes likelihood of heard and unheard gateways from survey samples, or the log-distance model",
		commonParams(&m.p, filterParams(m)), m.lacks(false, false, false, true))
}

// filterParams are the parameters of the zone filter, which hmm, bayes
// and fusion share.
func filterParams(m *model) map[string]any {
	return map[string]any{"mean_stay_ms": m.p.MeanStay.Milliseconds(), "evidence": m.p.Evidence, "window_weight": m.temper, "knn_weight": m.knnW,
		"switch_odds": m.p.SwitchOdds, "sigma_db": m.p.Sigma, "sigma_floor_db": m.p.SigmaFloor,
		"floor_dbm": m.p.Floor, "lost": m.p.Lost, "sample_window_ms": m.p.SampleWindow.Milliseconds(), "decide_every_ms": m.p.DecideEvery.Milliseconds()}
}

// stepMS bounds one prediction step so a long gap is integrated in
// several steps (mass can then travel several hops, as it would).
const stepMS = 1000

func (filter) update(m *model, p *Params, b *beacon, _ *reading, now int64) (int, position) {
	nz := len(m.zones)
	if nz == 0 {
		return -1, position{}
	}
	if !beginStep(m, p, b, now) {
		return b.zone, b.pos
	}
	best, ok := stepFilter(m, p, b, now)
	if !ok {
		return b.zone, b.pos
	}
	from := b.heldBefore(now)
	if b.zone < 0 || from < 0 || b.firstScan(now) {
		return best, position{}
	}
	target := from
	if best != from && b.belief[best] >= p.SwitchOdds*b.belief[from] {
		target = int(m.nextHop[from*nz+best])
		if target < 0 {
			target = best // unreachable: no graph path exists to walk
		}
	}
	return target, position{}
}

// stepFilter moves b's zone belief to now along the zone graph and folds
// in the evidence (correct); beginStep must have run.
func stepFilter(m *model, p *Params, b *beacon, now int64) (best int, ok bool) {
	if dt := now - b.stepped; dt > 0 && !b.refining(now) {
		copy(b.prior, b.belief)
		for steps := 0; dt > 0 && steps < 60; steps++ {
			s := min(dt, stepMS)
			predict(m, b, 1-math.Exp(-float64(s)/float64(p.MeanStay.Milliseconds())))
			dt -= s
		}
		b.weight = windowWeight(m, p, now-b.stepped)
		b.stepped = now
	}
	return correct(m, p, b, now, 1e-9)
}

// predict moves share pm of each zone's mass evenly to its neighbours.
func predict(m *model, b *beacon, pm float64) {
	out := b.scratch
	for z := range out {
		out[z] = 0
	}
	for z, v := range b.prior {
		nb := m.adj[z]
		if len(nb) == 0 {
			out[z] += v
			continue
		}
		out[z] += v * (1 - pm)
		share := v * pm / float64(len(nb))
		for _, u := range nb {
			out[u] += share
		}
	}
	copy(b.prior, out)
}

// windowWeight is the weight of the evidence gathered over dt ms:
// Evidence x the model's calibrated weight of one window, pro rata up to
// one SampleWindow.
func windowWeight(m *model, p *Params, dt int64) float64 {
	return p.Evidence * m.temper * math.Min(1, float64(dt)/float64(p.SampleWindow.Milliseconds()))
}

// beginStep sizes b's belief for nz zones (uniform at first) and tracks
// the run of sightings absence is weighed against: after a silence of
// Stale or more (or the first ever), until a whole SampleWindow of the new
// run has passed, gateways that have not reported may simply not have had
// their turn yet (each gateway publishes its own reports, in its own
// rhythm), so absence counts only in proportion (cover, in correct). It
// returns false when the beacon is not due for a decision.
func beginStep(m *model, p *Params, b *beacon, now int64) bool {
	nz := len(m.zones)
	first := len(b.belief) != nz
	if first {
		b.belief, b.prior = make([]float64, nz), make([]float64, nz)
		b.scratch, b.votes = make([]float64, nz), make([]float64, nz)
		for i := range b.prior {
			b.prior[i] = 1 / float64(nz)
		}
		copy(b.belief, b.prior)
		b.stepped, b.weight = now, p.Evidence*m.temper
	}
	if now-b.lastSight >= p.Stale.Milliseconds() || first {
		b.burst = now
	}
	b.lastSight = now
	return b.due(p, now)
}

// cover is the share of the evidence window (beacon.window) in which
// silence counts as not heard (logLikelihood, grid): the part of it the
// beacon has been heard in since it reappeared (burst).
func (b *beacon) cover(p *Params, now int64) float64 { return b.coverSince(p, b.burst, now) }

// coverSince is cover for a run of sightings that began at burst (the
// offset estimate keeps its own, being run for every algorithm).
func (b *beacon) coverSince(p *Params, burst, now int64) float64 {
	return math.Min(1, float64(now-burst)/float64(b.window(p, now)))
}

// correct folds the evidence at now into b.prior: b.belief becomes the
// normalised posterior, floored at floor so every zone stays recoverable
// after long certainty, and best its most probable zone. With no usable
// evidence the belief stays the prior and ok is false.
func correct(m *model, p *Params, b *beacon, now int64, floor float64) (best int, ok bool) {
	ll := b.scratch
	cover := b.cover(p, now)
	if !logLikelihood(m, p, b, now, cover, ll) {
		copy(b.belief, b.prior)
		return 0, false
	}
	knnLikelihood(m, p, b, now, cover, ll)
	void := m.void
	top := math.Inf(-1)
	for z, v := range ll {
		if void == nil || !void[z] {
			top = math.Max(top, v)
		}
	}
	var sum float64
	for z := range b.belief {
		if void != nil && void[z] {
			b.belief[z] = 0
			continue
		}
		b.belief[z] = b.prior[z] * math.Exp(b.weight*(ll[z]-top))
		sum += b.belief[z]
	}
	for z := range b.belief {
		if void != nil && void[z] {
			continue
		}
		b.belief[z] = math.Max(b.belief[z]/sum, floor)
		if b.belief[z] > b.belief[best] {
			best = z
		}
	}
	return best, true
}

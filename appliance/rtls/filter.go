package rtls

import "math"

// filter is a discrete Bayes filter (an HMM run forward) over the zones.
//
// Prediction: in dt a beacon leaves its zone with probability
// 1-exp(-dt/MeanStay), spread evenly over the zone's graph neighbours;
// mass never moves between non-adjacent zones in one step.
// Update: every sighting multiplies each zone's belief by the likelihood
// of that raw RSSI there (per-zone Gaussian from the survey samples times
// the chance the gateway hears the beacon there, or the log-distance
// model for placed gateways), raised to Evidence.
// Report: the first fix is the most probable zone; after that the reported
// zone only moves one hop along the graph towards the most probable zone,
// once that zone's posterior reaches SwitchProb and the hop has won for
// Dwell. The reported zone therefore never jumps between non-adjacent
// zones (zones with no path between them, e.g. separate floors with no
// link in the graph, are the one exception).
type filter struct{}

func (filter) info(m *model) AlgorithmInfo {
	return infoOf(AlgFilter, "adjacency-constrained Bayes filter (HMM) over zones, emission from survey fingerprints or the log-distance model",
		commonParams(&m.p, map[string]any{"mean_stay_ms": m.p.MeanStay.Milliseconds(), "evidence": m.p.Evidence,
			"switch_prob": m.p.SwitchProb, "dwell_ms": m.p.Dwell.Milliseconds(), "sigma_floor_db": m.p.SigmaFloor}),
		m.lacks(false, false, false, true))
}

// stepMS bounds one prediction step so a long gap is integrated in
// several steps (mass can then travel several hops, as it would).
const stepMS = 1000

func (filter) update(m *model, p *Params, b *beacon, rd *reading, now int64) (int, position) {
	nz := len(m.zones)
	if nz == 0 {
		return -1, position{}
	}
	if len(b.belief) != nz {
		b.belief, b.scratch = make([]float64, nz), make([]float64, nz)
		for i := range b.belief {
			b.belief[i] = 1 / float64(nz)
		}
		b.stepped = now
	}
	if dt := now - b.stepped; dt > 0 {
		for steps := 0; dt > 0 && steps < 60; steps++ {
			s := min(dt, stepMS)
			predict(m, b, 1-math.Exp(-float64(s)/float64(p.MeanStay.Milliseconds())))
			dt -= s
		}
		b.stepped = now
	}
	if rd.g < 0 || !m.hasEm[rd.g] {
		return b.zone, b.pos
	}
	r := float64(rd.raw)
	em := m.em[rd.g*nz : (rd.g+1)*nz]
	top := math.Inf(-1)
	for z := range em {
		d := r - em[z].mu
		ll := (em[z].logK - d*d*em[z].inv2s2) * p.Evidence
		b.scratch[z] = ll
		top = math.Max(top, ll)
	}
	var sum float64
	for z := range b.belief {
		b.belief[z] *= math.Exp(b.scratch[z] - top)
		sum += b.belief[z]
	}
	best := 0
	for z := range b.belief {
		// the floor keeps every zone recoverable after long certainty
		b.belief[z] = math.Max(b.belief[z]/sum, 1e-9)
		if b.belief[z] > b.belief[best] {
			best = z
		}
	}
	if b.zone < 0 {
		return best, position{}
	}
	target := b.zone
	if best != b.zone && b.belief[best] >= p.SwitchProb {
		target = int(m.nextHop[b.zone*nz+best])
		if target < 0 {
			target = best // unreachable: no graph path exists to walk
		}
	}
	return b.confirm(p, target, now), position{}
}

// predict moves share pm of each zone's mass evenly to its neighbours.
func predict(m *model, b *beacon, pm float64) {
	for z := range b.scratch {
		b.scratch[z] = 0
	}
	for z, v := range b.belief {
		nb := m.adj[z]
		if len(nb) == 0 {
			b.scratch[z] += v
			continue
		}
		b.scratch[z] += v * (1 - pm)
		share := v * pm / float64(len(nb))
		for _, u := range nb {
			b.scratch[u] += share
		}
	}
	copy(b.belief, b.scratch)
}

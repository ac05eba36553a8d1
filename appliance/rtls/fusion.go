package rtls

import "math"

// fusion runs hmm's zone filter and grid's position filter side by side
// on the same readings and reports from the logarithmic opinion pool of
// their zone posteriors: each zone's pooled probability is proportional
// to the geometric mean of the two filters' (equal weights, no fit).
//
// The two make different mistakes. The zone filter reads the survey's
// fingerprints (which gateways are heard together and how loud, zone by
// zone) but has no notion of where in a zone a beacon stands; grid reads
// a fitted radio law and moves a position at walking pace but trusts the
// law where the fingerprints would know better. A confident wrong belief
// of one is seldom shared by the other, and the pooled odds that change
// the zone (SwitchOdds, as for bayes and grid) need both to lean the same
// way: on most of the outside generator's sets and the walks it flips
// less than either alone at their accuracy or better (docs/performance.md,
// "fusion", which also has where grid alone does better).
//
// Each half reads the readings less its own tag offset estimate: the
// zone filter's on the survey's zone models (beacon.off, the one the API
// shows), grid's against its law where grid reads one (beacon.goff;
// offset.go, learnOffsets). One estimate for both, learned on the law,
// cost the pool 5 points on one of the outside generator's sets where
// the zone filter's own differs by 0.5-1 dB.
//
// The zone change is direct, as for bayes and grid (the pool's grid half
// is not walked over the zone graph). Where grid cannot run (a zone
// without an area, no gateway it can model) the decision is the zone
// filter's alone, with that direct change; at a decision where grid
// learned nothing (no gateway it models heard the beacon) grid counts as
// undecided.
type fusion struct{}

func (fusion) info(m *model) AlgorithmInfo {
	params := filterParams(m)
	params["pool"], params["grid_cells"], params["gateways_modelled"] = "logarithmic, equal weights", 0, 0
	gridMotionParams(m, params)
	if g := m.grid; g != nil {
		params["grid_cells"], params["gateways_modelled"] = len(g.czone), g.modelled
	}
	return infoOf(AlgFusion, "hmm's zone filter and grid's position filter on the same readings; the zone from the geometric mean of their posteriors, with odds hysteresis",
		commonParams(&m.p, params), m.lacks(false, false, false, true))
}

// poolFloor keeps a zone one filter rules out (grid's mass can be 0)
// from ruling it out for both: the pool stays finite and the other's
// evidence can still move it.
const poolFloor = 1e-12

func (fusion) update(m *model, p *Params, b *beacon, _ *reading, now int64) (int, position) {
	nz := len(m.zones)
	if nz == 0 {
		return -1, position{}
	}
	if !beginStep(m, p, b, now) {
		return b.zone, b.pos
	}
	_, okF := stepFilter(m, p, b, now)
	usable := m.gridReady() && m.grid.shaped
	okG := usable && stepGrid(m, p, b, now, b.goff.a)
	if !okF && !okG {
		return b.zone, b.pos
	}
	if len(b.pooled) != nz {
		b.pooled = make([]float64, nz)
	}
	switch {
	case !usable:
		copy(b.pooled, b.belief)
	case okG:
		pool(b.pooled, b.belief, b.gmass)
	default:
		// No gateway grid models heard the beacon: grid learned nothing,
		// and its last belief, however certain, would hold the pool
		// where the beacon was (a room heard only by a gateway the fit
		// could not model: fusion stayed in the room left, at pooled
		// odds of 9.96). It counts as undecided instead, so the
		// threshold the zone filter must reach stays the one it meets
		// when grid is undecided: dropping grid from such decisions
		// lowered it now and then, and a tag heard by grid's gateways
		// only some of the time changed zone about twice as often
		// (TestFusionHeardByGridNowAndThen).
		pool(b.pooled, b.belief, nil)
	}
	b.post = b.pooled
	return switchZone(p, b, b.pooled, now), position{}
}

// pool writes to out the normalised geometric mean of the posteriors a
// and g; a nil g is undecided (uniform).
func pool(out, a, g []float64) {
	// sqrt(a g) rather than exp((log a + log g) / 2): the same mean
	// without a log and an exp per zone, which were 8% of fusion's time
	// per report; the floors keep it above 1e-12, far from underflow.
	var sum float64
	for z := range out {
		v := math.Sqrt(max(a[z], poolFloor))
		if g != nil {
			v *= math.Sqrt(max(g[z], poolFloor))
		}
		out[z] = v
		sum += v
	}
	for z := range out {
		out[z] /= sum
	}
}

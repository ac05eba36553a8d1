package rtls

import "slices"

// algorithm turns one beacon's smoothed readings into a zone. update runs
// for every sighting (under the beacon's shard lock) after the sighting
// has been folded into rd; it returns the zone index to report (-1
// unknown) and, when the algorithm estimates one, a position.
type algorithm interface {
	info(m *model) AlgorithmInfo
	update(m *model, p *Params, b *beacon, rd *reading, now int64) (int, position)
}

// Algorithm names, in the order Algorithms lists them.
const (
	AlgStrongest = "strongest"
	AlgCentroid  = "centroid"
	AlgKNN       = "knn"
	AlgFilter    = "hmm"
	AlgBayes     = "bayes"
	AlgGrid      = "grid"
	AlgFusion    = "fusion"
)

var algorithmNames = []string{AlgStrongest, AlgCentroid, AlgKNN, AlgFilter, AlgBayes, AlgGrid, AlgFusion}

// AlgorithmNames are the algorithms the engine has, in its order.
func AlgorithmNames() []string { return slices.Clone(algorithmNames) }

func newAlgorithm(name string) algorithm {
	switch name {
	case AlgStrongest:
		return strongest{}
	case AlgCentroid:
		return centroid{}
	case AlgKNN:
		return knn{}
	case AlgFilter:
		return filter{}
	case AlgBayes:
		return bayes{}
	case AlgGrid:
		return grid{}
	case AlgFusion:
		return fusion{}
	}
	return nil
}

// readiness is shared by the info methods: what the algorithm lacks, or "".
func (m *model) lacks(needPositions, needZones, needSamples, needEmission bool) string {
	if len(m.zones) == 0 {
		return "no zones defined"
	}
	if needSamples && len(m.samples) == 0 {
		return "no survey samples recorded"
	}
	if needPositions && !anyOf(len(m.gwZone), m.zoned) {
		return "no gateway placed on a map with zones (or learned from samples)"
	}
	if needZones && !anyOf(len(m.gwZone), m.zoned) {
		return "no gateway placed in a zone (or learned from samples)"
	}
	if needEmission && len(m.samples) == 0 && !anyOf(len(m.hasEm), func(i int) bool { return m.hasEm[i] }) {
		return "needs survey samples or placed gateways"
	}
	return ""
}

func anyOf(n int, f func(int) bool) bool {
	for i := 0; i < n; i++ {
		if f(i) {
			return true
		}
	}
	return false
}

func infoOf(name, desc string, params map[string]any, reason string) AlgorithmInfo {
	return AlgorithmInfo{Name: name, Description: desc, Params: params, Ready: reason == "", Reason: reason}
}

// commonParams are the smoothing parameters every algorithm shares.
func commonParams(p *Params, extra map[string]any) map[string]any {
	out := map[string]any{
		"smooth_tau_ms": p.SmoothTau.Milliseconds(),
		"stale_ms":      p.Stale.Milliseconds(),
		// every algorithm reads RSSI corrected by the tag offset (offset.go)
		"offset_tau_ms":    p.OffsetTau.Milliseconds(),
		"offset_spread_db": p.OffsetSpread,
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

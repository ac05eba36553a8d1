package rtls

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// A site surveys with one tag and tracks many: another model, another
// battery, a tag worn on a body or in a pocket is heard some dB louder or
// quieter than the survey tag at the same spot, at every gateway alike.
// Every algorithm but strongest compares readings with what the survey
// (or the log-distance model) expects, so such an offset moves every
// comparison the same way: on the synthetic walks 4 dB cost the filters
// 20-40 points of accuracy and 8 dB left them near chance
// (docs/performance.md, "Tag offset").
//
// Each beacon therefore carries an estimate of its offset against the
// reference, learned as it is tracked, and the algorithms see its
// readings minus the estimate; the survey recorder and the debug feed
// see them as heard.
//
// The estimate maximises the offset's likelihood with the zone left
// open: every offsetEvery SampleWindows a window's readings are scored
// under the survey's reading model (estimatesAt) at the whole dB below,
// at and above the estimate, each score the log of the sum over zones of the
// window's calibrated likelihood weighted by the algorithm's belief over
// zones (uniform for the memoryless algorithms), and a Newton step moves
// the estimate: an extended Kalman filter for a constant, in which every
// window's curvature adds to the estimate's precision. The prior is 0
// with a spread of OffsetSpread dB; old windows are forgotten with time
// constant OffsetTau.
//
// Why not the residual against the reported zone, which is simpler: that
// zone was chosen with the offset uncorrected, so a wrong zone explains
// part of the offset away and the residual under-reads it. On walk A it
// settled at -5.3 dB for a tag 8 dB quieter (this estimate: -6.3; the
// rest is the model's, a zone's readings are not Gaussian).

// maxOffset bounds the estimate (dB): a tag 20 dB off the survey tag is
// a configuration error, not something to track through.
const maxOffset = 20

// tagOffset is one beacon's offset estimate.
type tagOffset struct {
	v  float64 // the estimate, dB
	d  float64 // precision the windows have given it (1/dB^2), forgotten
	at int64   // Unix ms of the last window scored; 0 none
}

// offsetEvery is how many SampleWindows apart the estimate scores a
// window. An offset is the tag's and changes over minutes (OffsetTau):
// scoring every window cost hmm a quarter more time per report on the
// benchmark site, one in three costs nothing measurable and learns
// about as fast (docs/performance.md, "Tag offset").
const offsetEvery = 3

// learn scores b's readings of the window before now (at the first
// report of a millisecond, offsetEvery SampleWindows after the last) and
// moves the estimate.
func (o *tagOffset) learn(m *model, p *Params, b *beacon, now int64) {
	nz := len(m.zones)
	if p.OffsetTau <= 0 || nz < 2 || now-o.at < offsetEvery*p.SampleWindow.Milliseconds() {
		return
	}
	// Whatever comes of it, the next try is offsetEvery windows later:
	// trying again within this millisecond would read the rest of its
	// scan with another offset than its first report.
	prev := o.at
	o.at = now
	cover := math.Min(1, float64(now-b.burst)/float64(p.SampleWindow.Milliseconds()))
	sc := m.offs.scratch.Get().(*offsetScratch)
	defer m.offs.scratch.Put(sc)
	// The belief over zones the algorithm holds (grid leaves its zone
	// masses in scratch), summed over the zones within 1e-4 of the most
	// probable (the rest cannot move the sum); without a belief (the
	// memoryless algorithms) every zone, alike.
	pi := []float64(nil)
	if len(b.cells) > 0 && len(b.scratch) == nz {
		pi = b.scratch
	} else if len(b.belief) == nz {
		pi = b.belief
	}
	zs, top := sc.zs[:0], 0.0
	for _, v := range pi {
		top = math.Max(top, v)
	}
	for z := 0; z < nz; z++ {
		if pi == nil || pi[z] >= 1e-4*top {
			zs = append(zs, int32(z))
		}
	}
	k0 := math.Round(o.v)
	var l [3]float64
	for i := range l {
		off := k0 + float64(i-1)
		if math.Abs(off) > maxOffset {
			return
		}
		v, ok := scoreWindow(m, p, b, now, cover, off, zs, pi, sc.ll)
		if !ok {
			return
		}
		l[i] = v
	}
	if prev > 0 {
		o.d *= math.Exp(-float64(now-prev) / float64(p.OffsetTau.Milliseconds()))
	}
	// The window's log-likelihood as a parabola through k0-1, k0, k0+1:
	// gradient g and curvature c at k0 (c < 0 adds no precision).
	g := (l[2] - l[0]) / 2
	c := math.Max(0, 2*l[1]-l[0]-l[2])
	prior := 1 / (p.OffsetSpread * p.OffsetSpread)
	o.d += c
	step := (g - c*(o.v-k0) - prior*o.v) / (prior + o.d)
	o.v = math.Max(-maxOffset, math.Min(maxOffset, o.v+math.Max(-1, math.Min(1, step))))
}

// A tag heard quieter than the survey tag is also heard less often: its
// far readings fall under the gateways' sensitivity. Correcting the
// readings alone leaves the "not heard" model of the survey tag, which
// then reads every missed far gateway as evidence for a zone away from
// it. The models that count silence take
// their "not heard" terms from tables made for the beacon's offset,
// rounded to whole dB and made the first time a beacon needs them:
//
//   - grid's law already says why a reading goes unheard (below the site's
//     sensitivity floor, or lost): an offset of v dB moves the expected
//     reading by v against the same floor;
//   - the zone filters' hit rates are counted, not modelled: a gateway's
//     readings in a zone are taken as Gaussian, heard above the survey's
//     sensitivity floor (its quietest heard sample), and the counted rate
//     is scaled by how much more or less of that Gaussian an offset of v
//     lifts above the floor (never above 1-Lost).

// offsetIndex is the table index of offset v (whole dB, 0 at index
// maxOffset).
func offsetIndex(v float64) int { return int(math.Round(v)) + maxOffset }

// emTable is the filters' reading model for one offset.
type emTable struct {
	em       []emission
	missZone []float64
}

// offsetTables holds a model's tables per whole dB of offset; a pointer,
// so the model stays copyable (withGrid copies it).
type offsetTables struct {
	em, est [2*maxOffset + 1]atomic.Pointer[emTable]
	// scratch holds the estimate's per-zone buffers: a beacon's own
	// would cost 12 bytes per zone for each of 10,000 beacons, and the
	// cache misses with them.
	scratch sync.Pool // *offsetScratch
}

type offsetScratch struct {
	ll []float64
	zs []int32
}

func newOffsetTables(nz int) *offsetTables {
	t := &offsetTables{}
	t.scratch.New = func() any { return &offsetScratch{ll: make([]float64, nz), zs: make([]int32, 0, nz)} }
	return t
}

// emissionsAt is the filters' reading model for a tag offset v dB.
func (m *model) emissionsAt(v float64) ([]emission, []float64) {
	i := offsetIndex(v)
	if i == maxOffset || m.offs == nil || len(m.samples) == 0 {
		return m.em, m.missZone // no offset, or no counted rates to move
	}
	if t := m.offs.em[i].Load(); t != nil {
		return t.em, t.missZone
	}
	t := m.buildEmTable(float64(i-maxOffset), false)
	m.offs.em[i].Store(t) // two read loops may both build it: the same table
	return t.em, t.missZone
}

// estimatesAt is the reading model the offset estimate scores windows
// with at offset v: the survey's hit rates and reading spreads, but the
// mean a gateway's readings in a zone would have if the floor did not
// hide the quiet ones (truncMean). The filters' own model keeps the mean
// of what was heard, which is what a reading of the survey tag is
// compared with; the estimate compares offsets, and with the heard mean
// the hidden tail pulled every estimate towards 0 (walk A: -6.3 dB for
// a tag 8 dB quieter, +3 for one 8 dB louder).
func (m *model) estimatesAt(v float64) ([]emission, []float64) {
	i := offsetIndex(v)
	if m.offs == nil || len(m.samples) == 0 {
		// The log-distance model: no floor, nothing hidden or counted.
		return m.em, m.missZone
	}
	if t := m.offs.est[i].Load(); t != nil {
		return t.em, t.missZone
	}
	t := m.buildEmTable(float64(i-maxOffset), true)
	m.offs.est[i].Store(t)
	return t.em, t.missZone
}

// buildEmTable moves the survey's reading model to a tag heard v dB
// louder: the share of each gateway's readings in a zone that clears
// the survey's sensitivity floor changes, so its hit rate does (never
// above 1-Lost). A heard reading's density is the survey's moved by v:
// with untruncated means (est) its hit term is the rate of the whole
// Gaussian, of which the floor hides part; otherwise the filters' term
// is kept as it is (counting the floor in it again would pull decisions
// towards the zones the quiet tag is heard in least).
func (m *model) buildEmTable(v float64, est bool) *emTable {
	nz := len(m.zones)
	t := &emTable{em: slices.Clone(m.em), missZone: make([]float64, nz)}
	top := 1 - m.p.Lost
	for i := range t.em {
		e := &t.em[i]
		sig := math.Sqrt(1 / (2 * e.inv2s2))
		mu := e.mu
		if est {
			mu = m.muT[i]
		}
		q0 := stdNormCDF((mu - m.sens) / sig)
		q1 := stdNormCDF((mu + v - m.sens) / sig)
		p0 := math.Exp(e.logHit)
		ph := math.Max(math.Min(p0*q1/math.Max(q0, 1e-6), top), 1e-6)
		if est {
			e.mu = mu
			e.logHit = math.Log(math.Min(p0/math.Max(q0, 1e-6), 1))
		}
		e.logMiss = math.Log1p(-ph)
		t.missZone[i%nz] += e.logMiss
	}
	return t
}

// truncMean is the mean of a Gaussian with spread sig whose part above
// floor has mean heard: E[x | x > floor] = mu + sig*phi(a)/(1-Phi(a)),
// a = (floor-mu)/sig, increasing in mu, solved by bisection within 5 sig
// below heard.
func truncMean(heard, sig, floor float64) float64 {
	lo, hi := heard-5*sig, heard
	for range 50 {
		mu := (lo + hi) / 2
		a := (floor - mu) / sig
		tail := 0.5 * math.Erfc(a/math.Sqrt2)
		mean := heard + 1 // nothing above the floor: too low a mu
		if tail > 1e-12 {
			mean = mu + sig*math.Exp(-a*a/2)/math.Sqrt(2*math.Pi)/tail
		}
		if mean > heard {
			hi = mu
		} else {
			lo = mu
		}
	}
	return (lo + hi) / 2
}

// gridMiss is grid's "not heard" model for one offset.
type gridMiss struct {
	lmiss []float32 // [g*nc+c]
	base  []float32 // per cell: sum over modelled gateways of lmiss
}

type gridOffsets [2*maxOffset + 1]atomic.Pointer[gridMiss]

// missAt is grid's "not heard" model for a tag offset v dB.
func (g *gridModel) missAt(v float64) ([]float32, []float32) {
	i := offsetIndex(v)
	if i == maxOffset || g.offs == nil {
		return g.lmiss, g.base
	}
	if t := g.offs[i].Load(); t != nil {
		return t.lmiss, t.base
	}
	t := g.buildMiss(float64(i - maxOffset))
	g.offs[i].Store(t)
	return t.lmiss, t.base
}

// scoreWindow is the log-likelihood of b's window at offset off with the
// zone left open: log of the sum over zones zs of pi[z] (1 without pi)
// times the window's calibrated likelihood in z under the estimate's
// reading model (estimatesAt). ll is scratch, per zone. false when no
// reading carries information.
func scoreWindow(m *model, p *Params, b *beacon, now int64, cover, off float64, zs []int32, pi, ll []float64) (float64, bool) {
	ems, missZone := m.estimatesAt(off)
	if !windowLL(m, p, b, now, cover, off, ems, missZone, zs, ll) {
		return 0, false
	}
	top := math.Inf(-1)
	for _, z := range zs {
		top = math.Max(top, ll[z])
	}
	var sum float64
	for _, z := range zs {
		w := 1.0
		if pi != nil {
			w = pi[z]
		}
		sum += w * math.Exp(m.temper*(ll[z]-top))
	}
	return m.temper*top + math.Log(sum), true
}

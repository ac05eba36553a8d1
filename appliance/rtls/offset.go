package rtls

import (
	"math"
	"slices"
	"sync"
)

// A site surveys with one tag and tracks many: another model, another
// battery, a tag worn on a body or in a pocket is heard some dB louder or
// quieter than the survey tag at the same spot, at every gateway alike.
// Every algorithm but strongest compares readings with what the survey
// (or the log-distance model) expects, so such an offset moves every
// comparison the same way: on the synthetic walks 4 dB cost the filters
// up to 37 points of accuracy and 8 dB left them at 14-26%
// (docs/performance.md, "Tag offset").
//
// Each beacon therefore carries an estimate of its offset against the
// survey tag, learned as it is tracked, and the algorithms see its
// readings minus the offset applied (tagOffset.a); the survey recorder
// and the debug feed see them as heard.
//
// The estimate maximises the offset's likelihood with the zone left
// open: every offsetEvery SampleWindows a window's readings are scored
// under the survey's reading model (emT) at the whole dB below, at and
// above the estimate, each score the log of the sum over zones of the
// window's calibrated likelihood weighted by the algorithm's belief over
// zones (uniform for the memoryless algorithms), and a Newton step moves
// the estimate: an extended Kalman filter for a constant, in which every
// window's curvature adds to the estimate's precision. The prior is 0
// with a spread of OffsetSpread dB; old windows are forgotten with time
// constant OffsetTau.
//
// Why not the residual against the reported zone, which is simpler: that
// zone was chosen with the offset uncorrected, so a wrong zone explains
// part of the offset away and the residual under-reads it (-5.3 dB for a
// tag 8 dB quieter on walk A; this estimate about -7).

// maxOffset bounds the estimate (dB): a tag 20 dB off the survey tag is
// a configuration error, not something to track through. offsetStep is
// the spacing of the "not heard" tables (below) and of the offsets the
// estimate scores a window at: a table is 4 bytes per gateway and zone
// (or cell, for grid), and one erfc per entry to make; 21 of them add
// about 55 ms to a model build on a 196-gateway, 196-zone site (0.23 s
// before), 41 added twice that.
const (
	maxOffset  = 20
	offsetStep = 2
	nOffsets   = 2*maxOffset/offsetStep + 1
)

// tagOffset is one beacon's offset estimate.
type tagOffset struct {
	v, a float64 // the estimate, and the offset applied (below), dB
	d    float64 // precision the windows have given it (1/dB^2), forgotten
	// a is the offset the algorithms take off every reading: the
	// estimate as far as it stands out of its own uncertainty (a
	// James-Stein-like shrinkage, a = v * max(0, 1 - var/v^2)). Five
	// windows of one or two gateways each (all the UCI test file gives)
	// put v at +2.5 dB with a spread of 3 dB, and applied it cost k-NN 4
	// points there: a is 0 there. After minutes of a tag heard by a
	// dozen gateways the spread is tenths of a dB and a is v.
	// at is when a window was last tried with readings in it (the next is
	// offsetEvery windows later), scored when the precision was last
	// forgotten and added to, tried the millisecond of the last attempt.
	at, scored, tried int64
	// burst is when the current run of sightings began (after a silence
	// of Stale): the share of a window the beacon has been heard in
	// weighs silence (cover), as in the filters, whichever algorithm
	// runs.
	burst int64
}

// offsetEvery is how many SampleWindows apart the estimate scores a
// window. An offset is the tag's and changes over minutes (OffsetTau):
// scoring every window cost hmm a quarter more time per report on the
// benchmark site, one in three costs nothing measurable and learns
// about as fast (docs/performance.md, "Tag offset").
const offsetEvery = 3

// scanSettle (ms) is how long after a beacon's last report the next one
// starts a new scan for the estimate: the reports of one advertisement
// reach the gateways' read loops within tens of milliseconds.
const scanSettle = 500

// learn runs before each sighting of b is folded in. At the first report
// of a millisecond, offsetEvery SampleWindows after the last window it
// scored, it scores the readings of the window before now and moves the
// estimate; a try that finds no reading in the window (the first report
// of a burst) leaves the next report of the burst to try again.
func (o *tagOffset) learn(m *model, p *Params, b *beacon, now int64) {
	win := p.SampleWindow.Milliseconds()
	if b.heard == 0 || now-b.heard >= p.Stale.Milliseconds() {
		o.burst = now
	}
	nz := len(m.zones)
	// Only at the first report of a scan (scanSettle after the last
	// report): the window (beacon.window) then holds whole scans. A
	// report in the middle of a scan whose gateways report one by one
	// would see the gateways still to report as not hearing the tag (a
	// survey tag advertising every 3 s, its gateways 20 ms apart, went
	// to -15 dB). A tag heard without pause (reports less than
	// scanSettle apart: 5 a second or more) has one scan that never
	// ends; once it has lasted a window, the window is all of it, and
	// any report will do (before, such a tag never learned its offset:
	// walk C 6 dB quieter at 5 Hz, hmm 39% against 86% at 1 Hz).
	if p.OffsetTau <= 0 || nz < 2 || now == o.tried || now-o.at < offsetEvery*win ||
		now-b.heard < scanSettle && now-b.scanStart < win {
		return
	}
	o.tried = now
	cover := b.coverSince(p, o.burst, now)
	sc := m.offs.scratch.Get().(*offsetScratch)
	defer m.offs.scratch.Put(sc)
	// The belief over zones the algorithm decides on (grid's zone
	// masses, fusion's pooled posterior, else the zone filters'),
	// summed over the zones within 1e-4 of the most probable (the rest
	// cannot move the sum); without a belief (the memoryless
	// algorithms) every zone, alike.
	pi := []float64(nil)
	if len(b.post) == nz {
		pi = b.post
	} else if len(b.belief) == nz {
		pi = b.belief
	}
	// Only a surveyed zone says how loud the survey tag was there; an
	// unsurveyed one is the law's extrapolation, whose error reads as an
	// offset. A window whose belief is mostly in unsurveyed zones is not
	// scored (grid, with its own belief there, ran a tag to +4.5 dB on a
	// site whose test walked where the survey never went, and scored
	// 19% against 56% without the estimate), and the others are scored
	// on their surveyed zones only.
	surveyed := func(z int) bool { return m.zoneSurveyed == nil || m.zoneSurveyed[z] }
	if m.zoneSurveyed != nil {
		w := pi
		if w == nil {
			// A memoryless algorithm holds no belief: the window's own
			// evidence at the current estimate says where the tag is.
			zs := sc.zs[:0]
			for z := 0; z < nz; z++ {
				zs = append(zs, int32(z))
			}
			if _, ok := scoreWindow(m, p, b, now, cover, o.a, zs, nil, sc.ll); !ok {
				return
			}
			top := math.Inf(-1)
			for _, v := range sc.ll {
				top = math.Max(top, v)
			}
			for z, v := range sc.ll {
				sc.ll[z] = math.Exp(m.temper * (v - top))
			}
			w = sc.ll
		} else if !readable(m, p, b, now) {
			return // an empty window is no try: the next report tries
		}
		var in, all float64
		for z, v := range w {
			all += v
			if surveyed(z) {
				in += v
			}
		}
		if in < 0.5*all {
			o.at = now
			return
		}
	}
	zs, top := sc.zs[:0], 0.0
	for _, v := range pi {
		top = math.Max(top, v)
	}
	for z := 0; z < nz; z++ {
		if (pi == nil || pi[z] >= 1e-4*top) && surveyed(z) {
			zs = append(zs, int32(z))
		}
	}
	if len(zs) == 0 {
		// Every surveyed zone under 1e-4 of the top (more than 5,000 of
		// them with the rest of the belief elsewhere): nothing to score,
		// and scoring nothing would make the estimate NaN.
		o.at = now
		return
	}
	// Scored at the table offsets k0-step, k0 and k0+step, all within
	// the tables' range: an estimate at the bound must still be able to
	// come back.
	const h = offsetStep
	k0 := h * math.Round(o.v/h)
	k0 = math.Max(-maxOffset+h, math.Min(maxOffset-h, k0))
	var l [3]float64
	for i := range l {
		v, ok := scoreWindow(m, p, b, now, cover, k0+float64((i-1)*h), zs, pi, sc.ll)
		if !ok {
			return
		}
		l[i] = v
	}
	o.at = now
	// The past windows' precision, forgotten since the last scored one.
	keep := 0.0
	if o.scored > 0 {
		keep = math.Exp(-float64(now-o.scored) / float64(p.OffsetTau.Milliseconds()))
	}
	o.scored = now
	// The window's log-likelihood as a parabola through the three:
	// gradient g at the estimate and curvature c, per dB (c < 0 adds no
	// precision). The objective is the prior (0 +- OffsetSpread, never
	// forgotten) plus the windows, each forgotten by its age; the past
	// windows balanced the prior at the old estimate, so what pulls
	// towards 0 now is only the share of them forgotten since. A step is
	// at most 1 dB, the parabola being local, and what a clamped step
	// leaves behind is not carried over: convergence to a large offset
	// is slower than the information would allow (10 dB: 7.2 after a
	// minute, 8.4 after two), but the information form that carries it
	// also followed five heavy-tailed UCI windows, whose near-linear
	// likelihoods peak tens of dB away, to +5 dB.
	c := math.Max(0, (2*l[1]-l[0]-l[2])/(h*h))
	g := (l[2]-l[0])/(2*h) - c*(o.v-k0)
	prior := 1 / (p.OffsetSpread * p.OffsetSpread)
	step := (g - (1-keep)*prior*o.v) / (prior + keep*o.d + c)
	o.d = keep*o.d + c
	o.v = math.Max(-maxOffset, math.Min(maxOffset, o.v+math.Max(-1, math.Min(1, step))))
	a := 0.0
	if vr := 1 / (prior + o.d); o.v*o.v > vr {
		a = o.v * (1 - vr/(o.v*o.v))
	}
	// Half a dB is below what the estimate's model can tell from
	// nothing: a tag heard 10 times a second settles 0.5-1 dB from its
	// true offset (a far gateway's window mean is the mean of the
	// readings that cleared the floor), and the survey tag itself,
	// tracked at +0.5 to +1 dB, lost 5-7 points on walk A. The offset
	// applied is the estimate less that much.
	a -= math.Max(-offsetDeadZone, math.Min(offsetDeadZone, a)) // +0, never -0
	// The moving averages hold readings minus the applied offset: move
	// them with it, or the algorithms that read them (and the debug
	// feed) would mix corrections.
	for i := range b.rds {
		b.rds[i].ema -= a - o.a
	}
	o.a = a
}

// readable reports whether b's window holds a reading the estimate
// reads (scoreWindow's windowLL, with m.surveyed).
func readable(m *model, p *Params, b *beacon, now int64) bool {
	win := b.window(p, now)
	for i := range b.rds {
		if m.readsWindow(&b.rds[i], win, now, m.surveyed) {
			return true
		}
	}
	return false
}

// readsWindow reports whether windowLL reads rd in a window of win ms to
// now: fresh, of a gateway with a reading model, and in use (nil: all).
func (m *model) readsWindow(rd *reading, win, now int64, use []bool) bool {
	return rd.fresh(win, now) && m.hasEm[rd.g] && (use == nil || use[rd.g])
}

// offsetDeadZone (dB) is taken off the magnitude of every applied
// offset (learn).
const offsetDeadZone = 0.5

// A tag heard quieter than the survey tag is also heard less often: its
// far readings fall under the gateways' sensitivity. Correcting the
// readings alone leaves the "not heard" model of the survey tag, which
// then reads every missed far gateway as evidence for a zone away from
// it. The models that count silence take their "not heard" terms from
// tables made with the model for every offsetStep dB of offset, the
// nearest to the beacon's, so nothing is built on the ingest path:
//
//   - grid's law already says why a reading goes unheard (below the site's
//     sensitivity floor, or lost): an offset of v dB moves the expected
//     reading by v against the same floor;
//   - the zone filters' hit rates are counted, not modelled: a gateway's
//     readings in a zone are taken as Gaussian, heard above the survey's
//     sensitivity floor (its quietest heard sample), with the mean they
//     would have if the floor hid none of them (truncMean), and the
//     counted rate is scaled by how much more or less of that Gaussian an
//     offset of v lifts above the floor (never above 1-Lost).

// offsetIndex is the table index of offset v: the nearest multiple of
// offsetStep within the bound, 0 dB at nOffsets/2.
func offsetIndex(v float64) int {
	return int(math.Round(math.Max(-maxOffset, math.Min(maxOffset, v))/offsetStep)) + nOffsets/2
}

// offsetAt is the offset of table index k.
func offsetAt(k int) float64 { return float64((k - nOffsets/2) * offsetStep) }

// missTable is the zone filters' "not heard" model for one offset: per
// gateway and zone log P(not heard), [g*nz+z], and per zone their sum.
type missTable struct {
	lm   []float32
	zone []float64
}

// offsetTables holds a model's offset state; a pointer, so the model
// stays copyable (withGrid copies it).
type offsetTables struct {
	// miss is per offsetIndex, nil at 0 dB (the model's own em and
	// missZone) and without survey samples (nothing counted to move).
	miss [nOffsets]*missTable
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

// buildOffsetTables makes the zone filters' miss tables and the
// estimate's reading model (emT) from the survey-trained em, at model
// build.
func (m *model) buildOffsetTables() {
	nz := len(m.zones)
	m.emT = slices.Clone(m.em)
	// Per cell: the survey's hit rate over q0, the share of the
	// untruncated Gaussian above the floor, and where the floor sits in
	// it (z0, in spreads), so each table costs one erfc and one log per
	// cell.
	rate, z0, isig := make([]float64, len(m.em)), make([]float64, len(m.em)), make([]float64, len(m.em))
	for i := range m.em {
		if !m.surveyed[i/nz] {
			continue // its own model at every offset (below)
		}
		e := &m.emT[i]
		sig := math.Sqrt(1 / (2 * e.inv2s2))
		e.mu = truncMean(e.mu, sig, m.sens)
		z0[i], isig[i] = (e.mu-m.sens)/sig, 1/sig
		q0 := math.Max(stdNormCDF(z0[i]), 1e-6)
		rate[i] = math.Exp(e.logHit) / q0
		// The heard term of the whole Gaussian: the survey heard the
		// share q0 of it at rate p, so a reading's density counts p/q0.
		e.logHit = math.Min(math.Log(rate[i]), 0)
	}
	top := 1 - m.p.Lost
	for k := range m.offs.miss {
		v := offsetAt(k)
		if v == 0 {
			continue
		}
		t := &missTable{lm: make([]float32, len(m.em)), zone: make([]float64, nz)}
		for i := range m.em {
			lm := m.em[i].logMiss
			if m.surveyed[i/nz] {
				ph := rate[i] * stdNormCDF(z0[i]+v*isig[i])
				lm = math.Log1p(-math.Max(math.Min(ph, top), 1e-6))
			}
			t.lm[i] = float32(lm)
			t.zone[i%nz] += lm
		}
		m.offs.miss[k] = t
	}
}

// missAt is the zone filters' "not heard" model for a tag offset v dB;
// nil: the model's own (em's logMiss, missZone).
func (m *model) missAt(v float64) *missTable { return m.offs.miss[offsetIndex(v)] }

// gridOffsets holds grid's miss models per table index (offsetIndex;
// 0 dB: the fitted lmiss and base).
type gridOffsets [nOffsets]*gridMiss

// gridMiss is grid's "not heard" model for one offset.
type gridMiss struct {
	lmiss []float32 // [g*nc+c]
	base  []float32 // per cell: sum over modelled gateways of lmiss
}

// missAt is grid's "not heard" model for a tag offset v dB; only a
// fitted grid has one (grid.update runs on no other).
func (g *gridModel) missAt(v float64) ([]float32, []float32) {
	t := g.offs[offsetIndex(v)]
	return t.lmiss, t.base
}

// truncMean is the mean of a Gaussian with spread sig whose part above
// floor has mean heard: E[x | x > floor] = mu + sig*lambda(a), lambda
// the inverse Mills ratio phi(a)/(1-Phi(a)), a = (floor-mu)/sig. The
// left side increases in mu with slope in (0, 1), so Newton's method from
// mu = heard converges (guarded by bisection within 5 sig below heard).
func truncMean(heard, sig, floor float64) float64 {
	if heard <= floor {
		return heard // no Gaussian has its part above the floor below it
	}
	lo, hi := heard-5*sig, heard
	mu := heard
	for range 30 {
		a := (floor - mu) / sig
		tail := 0.5 * math.Erfc(a/math.Sqrt2)
		if tail < 1e-12 {
			lo = mu // nothing above the floor: mu is too low
			mu = (lo + hi) / 2
			continue
		}
		lam := math.Exp(-a*a/2) / math.Sqrt(2*math.Pi) / tail
		f := mu + sig*lam - heard
		if f > 0 {
			hi = mu
		} else {
			lo = mu
		}
		if math.Abs(f) < 1e-6 {
			return mu
		}
		// d/dmu (mu + sig*lambda(a)) = 1 - lambda(lambda - a)
		next := mu - f/math.Max(1-lam*(lam-a), 1e-3)
		if next <= lo || next >= hi {
			next = (lo + hi) / 2
		}
		mu = next
	}
	return mu
}

// scoreWindow is the log-likelihood of b's window at offset off with the
// zone left open: log of the sum over zones zs of pi[z] (1 without pi)
// times the window's calibrated likelihood in z under the estimate's
// reading model (emT, or em without a survey). ll is scratch, per zone.
// false when no reading carries information.
func scoreWindow(m *model, p *Params, b *beacon, now int64, cover, off float64, zs []int32, pi, ll []float64) (float64, bool) {
	ems := m.emT
	if ems == nil {
		ems = m.em // the log-distance model: no floor, nothing hidden
	}
	// A gateway the survey never heard (installed since) has only the
	// site-wide prior as its model: its readings would read as a louder
	// tag (a survey tag went to +2.3 dB with two such gateways, one 7 dB
	// quieter to +4.2), so the estimate does not read them.
	if !windowLL(m, p, b, now, cover, off, ems, m.missAt(off), m.surveyed, zs, ll) {
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

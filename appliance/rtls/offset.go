package rtls

import (
	"math"
	"slices"

	"beaconhub/appliance/assets"
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

// learnOffsets moves b's offset estimates before a sighting is folded
// in: off against the model the running algorithm reads (grid's law for
// grid, the zone filters' models otherwise) and, for fusion, goff
// against grid's law for its grid half: each half reads the readings
// less the offset its own model sees. (fusion's zone filter, given the
// offset learned on the law, lost 5 points on one of the outside
// generator's sets where its own estimate differs by 0.5-1 dB.)
func (b *beacon) learnOffsets(m *model, p *Params, now int64, alg string) {
	if alg == AlgStrongest {
		// An offset moves every gateway's reading alike, and strongest
		// only compares them with each other: learning it would cost
		// most of strongest's time and change none of its decisions.
		return
	}
	a := b.off.a
	b.off.learn(m, p, b, now, alg == AlgGrid)
	if alg == AlgFusion {
		if m.readsLaw() {
			b.goff.learn(m, p, b, now, true)
		} else {
			b.goff = b.off // no law to read: the halves share one
		}
	}
	// The moving averages hold readings minus the applied offset: move
	// them with it, or the algorithms that read them (and the debug
	// feed) would mix corrections.
	if d := b.off.a - a; d != 0 {
		for i := range b.rds {
			b.rds[i].ema -= d
		}
	}
}

// learn runs before each sighting of b is folded in. At the first report
// of a millisecond, offsetEvery SampleWindows after the last window it
// scored, it scores the readings of the window before now and moves the
// estimate, against grid's law (law: scoreCells) or the zone filters'
// models (scoreWindow); a try that finds no reading in the window (the
// first report of a burst) leaves the next report of the burst to try
// again.
func (o *tagOffset) learn(m *model, p *Params, b *beacon, now int64, law bool) {
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
	sc := m.offs.scratchOf(b, nz)
	// The belief over zones the algorithm decides on (grid's zone
	// masses, fusion's pooled posterior, else the zone filters'),
	// summed over the zones within 1e-4 of the most probable (the rest
	// cannot move the sum); without a belief (the memoryless
	// algorithms) every zone, alike.
	law = law && m.readsLaw()
	pi := []float64(nil)
	if law && len(b.gmass) == nz {
		pi = b.gmass
	} else if len(b.post) == nz {
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
			// Void zones (model.void) are nowhere a tag can be: scored,
			// a quiet tag fitted an empty floor best, every window read
			// as mostly unsurveyed, and knn never learned its offset
			// (a review: right 669 s of 960 against 856 without the
			// empty floor, TestVoidZonesDoNotStopTheOffsetEstimate).
			void := m.void
			top := math.Inf(-1)
			for z, v := range sc.ll {
				if void == nil || !void[z] {
					top = math.Max(top, v)
				}
			}
			for z, v := range sc.ll {
				if void != nil && void[z] {
					sc.ll[z] = 0
					continue
				}
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
	if law {
		// The window read ends at the last sighting before this one,
		// not now: before this report is folded in, the window to now
		// holds one scan of a tag heard once a second (the one before
		// is a whole window old), while the survey's windows, whose
		// miss rates the law is fitted on, hold two, and each gateway
		// missed in that one scan reads as more silence than the law
		// allows: quieter. The survey tag losing 40% of its readings
		// read -0.8 dB so, +0.4 with this window
		// (TestGridOffsetOfTheSurveyTagLosingReadings). The zone
		// filters' estimate below has the same mismatch (the survey
		// tag at -0.2 to -0.6 dB on walk A, -1.2 to -2.4 on walk B);
		// the same change there moved a quiet tag's estimate by 1-2 dB
		// in the unit tests, whose synthetic survey samples are single
		// scans, and is left for a change that records them as the
		// survey recorder does (docs/rtls.md, Tag offset).
		at := b.heard
		if at < o.burst {
			return // nothing of this burst before now: the next report tries
		}
		if !scoreCells(m, p, b, at, b.coverSince(p, o.burst, at), k0, pi, sc, &l) {
			return
		}
	} else {
		for i := range l {
			v, ok := scoreWindow(m, p, b, now, cover, k0+float64((i-1)*h), zs, pi, sc.ll)
			if !ok {
				return
			}
			l[i] = v
		}
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
	// scratch holds the estimate's buffers per shard of the engine's
	// beacon state (learn runs under its beacon's shard lock, so a
	// shard's is never shared): a beacon's own would cost 12 bytes per
	// zone for each of 10,000 beacons, and the cache misses with them;
	// a sync.Pool allocated whenever a collection emptied it, and under
	// the race detector, which drops a share of what is put back, at
	// fusion's estimates now and then (TestSteadyStateDoesNotAllocate).
	// The model and its fitted copy (withGrid) share it, as they share
	// the engine's shard locks.
	scratch [assets.NShards]*offsetScratch
}

// scratchOf is the buffer of b's shard, made at its first use.
func (t *offsetTables) scratchOf(b *beacon, nz int) *offsetScratch {
	if t.scratch[b.shard] == nil {
		t.scratch[b.shard] = &offsetScratch{ll: make([]float64, nz), zs: make([]int32, 0, nz)}
	}
	return t.scratch[b.shard]
}

type offsetScratch struct {
	ll []float64
	zs []int32
	// scoreCells: per gateway its window mean (NaN: not heard), and the
	// window's log-likelihood per scored cell at three offsets.
	hx    []float32
	cells []float64
	mapW  []float64 // per map: log weight of each of its cells (scoreCells)
}

func newOffsetTables() *offsetTables { return &offsetTables{} }

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
	// For the tag offset estimate (cellsLL), on its cells only
	// (gridModel.ocells, index j): lmiss [g*len(ocells)+j], and the sum
	// over the anchors (model.anchor) per cell.
	olm, oanchors []float32
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

// offsetCells bounds the cells scoreCells reads a window in (every
// k-th of the surveyed zones' cells, at most offsetCells, gridModel.ocells): the
// sum over positions is smooth at the scale of a cell or two, and the
// whole grid three times a window costs as much as a grid update.
const offsetCells = 256

// scoreCells is scoreWindow on grid's law, at the offsets k0-offsetStep,
// k0 and k0+offsetStep (l): the log of the sum over the cells of
// surveyed zones of the window's likelihood there (cellsLL), reading the
// anchors (model.anchor) in the window ending at now (learn passes the
// last sighting).
//
// The position is left open over the whole grid, every cell alike, not
// weighed by grid's belief: that belief was formed with the offset
// applied so far, and weighed by it the estimate stays near where it
// started (the belief puts a tag heard too loud nearer its gateways,
// where the window then looks right). On the outside generator's sets
// of 5 m zones a tag 2.8 dB louder than the survey's stayed at +1.0 to
// +1.3 dB weighed by the belief and at +1.0 to +2.2 on the zone
// filters' models, whose zone means explain an offset away the same
// way; known, its offset was worth 11 points of grid's accuracy there
// (docs/performance.md, "The tag offset against grid's law").
//
// The floor, though, is the belief's (pi, zone masses; nil: every cell
// alike): each map's cells count by the share of the belief on that
// map. A reading is scored on its own gateway's map only (cellsLL), so a
// tag on one floor, its own floor's gateways loud and the other's heard
// 12 dB quieter through the ceiling, fitted the other floor as well at
// an offset of about -10 dB, where those quiet readings are what that
// floor's gateways would hear nearby and the loud ones are not read at
// all: the survey tag itself ran to -9.7 dB and was then reported in
// one zone wherever it stood (TestGridOffsetReadsEachGatewayOnItsFloor).
// Which floor a tag is on the belief tells from the first scans.
func scoreCells(m *model, p *Params, b *beacon, now int64, cover, k0 float64, pi []float64, sc *offsetScratch, l *[3]float64) bool {
	g := m.grid
	ng := len(g.gw)
	if cap(sc.hx) < ng {
		sc.hx = make([]float32, ng)
	}
	hx := sc.hx[:ng]
	for gi := range hx {
		hx[gi] = float32(math.NaN())
	}
	win, any := b.window(p, now), false
	for i := range b.rds {
		rd := &b.rds[i]
		if rd.fresh(win, now) && m.anchor(rd.g) {
			hx[rd.g], any = float32(rd.windowMean(win, now)), true
		}
	}
	if !any {
		return false
	}
	// A silent anchor judged down (liveness.go) says nothing of how loud
	// the tag is either: left in the anchors' sum, it read as a tag too
	// quiet for the gateway over it to hear.
	for gi := range m.silentDown(b, win, now) {
		if m.anchor(gi) {
			hx[gi] = float32(math.Inf(1))
		}
	}
	var lw []float64
	if nm := len(g.mapIDs); nm > 1 && len(pi) == len(m.zones) {
		if cap(sc.mapW) < nm {
			sc.mapW = make([]float64, nm)
		}
		lw = sc.mapW[:nm]
		clear(lw)
		for z, v := range pi {
			if mi := slices.Index(g.mapIDs, m.zones[z].MapID); mi >= 0 {
				lw[mi] += v
			}
		}
		for mi, share := range lw {
			// Per cell: the map's share over its scored cells (every
			// cell alike on a map, as on a site of one).
			if n := g.omap[mi+1] - g.omap[mi]; n > 0 {
				lw[mi] = math.Log(max(share, 1e-300)) - math.Log(float64(n))
			}
		}
	}
	var ok bool
	sc.cells, ok = g.cellsLL(hx, cover, k0, lw, sc.cells, l)
	return ok
}

// readsLaw reports whether grid's estimates read its law (scoreCells):
// grid is fitted with at least minAnchors anchors.
func (m *model) readsLaw() bool { return m.gridReady() && m.grid.anchors >= minAnchors }

// minAnchors is how many anchors (placed gateways the survey heard,
// m.anchor) grid's law must have for the tag offset to be read against
// it (learn); with fewer, the zone filters' models.
const minAnchors = 3

// anchor reports whether gateway gi's law can say how loud a tag should
// be where it stands: modelled by grid, placed, and fitted on its map's
// survey (or no survey at all): a placed gateway its floor's survey
// heard too seldom keeps the default law, and one on a floor never
// surveyed, heard across the floor by the survey of another, put the
// survey tag at +1.7 to +3.2 dB (a review). An unplaced gateway's position is searched
// together with its law on samples taken to be at their zones' centres,
// and without known positions where in its zone each sample was cannot
// be told (placeSurvey); read against such laws, the survey tag itself
// went to -1.5 to -2.4 dB on the synthetic walks (no gateway placed)
// and grid lost 3 points of walk A. Without minAnchors anchors (UCI,
// the walks) the estimate stays on the zone filters' models.
func (m *model) anchor(gi int) bool {
	gw := &m.grid.gw[gi]
	return gw.ok && m.gwPlaced[gi] && (len(m.samples) == 0 || gw.fittedOnSurvey)
}

// cellsLL writes to l, at the offsets k0-offsetStep, k0 and
// k0+offsetStep against the law, the log of the sum over the cells
// g.ocells of the likelihood of a window: hx per gateway its mean (NaN:
// silent; +Inf: silent and judged down, whose silence is taken out;
// only anchors are read, model.anchor), each heard one less the
// offset against its gateway's law, each silent anchor's "not heard"
// term from the offset's table weighed by cover; each cell's term
// weighed by lw, per map index the log weight of each of its cells (nil:
// all alike). ll is scratch; false when no cell is scored. It reads
// tables of those cells only, gateway by gateway: cell by cell over the
// grid's own tables, every term was a cache miss, 77 us a window on the
// benchmark's site, and grid's cost per report doubled.
func (g *gridModel) cellsLL(hx []float32, cover, k0 float64, lw, ll []float64, l *[3]float64) ([]float64, bool) {
	n := len(g.ocells)
	if n == 0 {
		return ll, false
	}
	if cap(ll) < 3*n {
		ll = make([]float64, 3*n)
	}
	ll = ll[:3*n]
	var ts [3]*gridMiss
	for i := range ts {
		ts[i] = g.offs[offsetIndex(k0+float64((i-1)*offsetStep))]
		for j, v := range ts[i].oanchors {
			ll[i*n+j] = cover * float64(v)
		}
	}
	for gi, x := range hx {
		if x != x {
			continue // silent: in the anchors' sum
		}
		if math.IsInf(float64(x), 1) { // down: out of the anchors' sum
			for i, t := range ts {
				lm, out := t.olm[gi*n:(gi+1)*n], ll[i*n:(i+1)*n]
				for j := range out {
					out[j] -= cover * float64(lm[j])
				}
			}
			continue
		}
		// Only the cells of the gateway's own map: the law has it
		// practically never heard on another floor, so a reading heard
		// across the floor was impossibly loud on every cell there and a
		// larger offset always fitted better (the survey tag went to +5.3
		// dB on a review's two-floor site). Its "not heard" term there
		// is about 0, and is left in the anchors' sum.
		gw := &g.gw[gi]
		lo, hi := g.omap[gw.mapIdx], g.omap[gw.mapIdx+1]
		mu := g.omu[gi*n : (gi+1)*n]
		for i, t := range ts {
			v := k0 + float64((i-1)*offsetStep)
			lm, out := t.olm[gi*n:(gi+1)*n], ll[i*n:(i+1)*n]
			for j := lo; j < hi; j++ {
				d := float64(x) - v - float64(mu[j])
				out[j] += gw.lhitK - d*d*gw.inv2s2 - cover*float64(lm[j])
			}
		}
	}
	if lw != nil {
		for i := range l {
			for mi := range g.mapIDs {
				for j := g.omap[mi]; j < g.omap[mi+1]; j++ {
					ll[i*n+j] += lw[mi]
				}
			}
		}
	}
	for i := range l {
		out := ll[i*n : (i+1)*n]
		best := math.Inf(-1)
		for _, v := range out {
			best = math.Max(best, v)
		}
		var sum float64
		for _, v := range out {
			sum += math.Exp(v - best)
		}
		l[i] = best + math.Log(sum)
	}
	return ll, true
}

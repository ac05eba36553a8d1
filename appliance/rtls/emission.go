package rtls

import "math"

// emission is the filter's reading model of one gateway in one zone: the
// gateway hears the beacon with probability exp(logHit) (else
// exp(logMiss)), and when it does the reading is Gaussian around mu. The
// log-likelihood of a heard reading r is
//
//	logHit - logMiss + logK - (r-mu)^2 * inv2s2
//
// relative to the zone's all-unheard baseline model.missZone[z]; so one
// observation costs one term per heard gateway, not one per gateway.
type emission struct {
	mu, inv2s2, logK float64
	logHit, logMiss  float64
}

func gaussian(mu, sigma float64) emission {
	return emission{mu: mu, inv2s2: 1 / (2 * sigma * sigma), logK: -math.Log(sigma)}
}

// The priors of the survey-trained emission model (docs/rtls.md,
// "Emission model"). They are statistical conventions, not fitted values:
//
//   - hitPrior: Jeffreys' Beta(1/2, 1/2) prior on the probability that a
//     gateway hears the beacon in a zone, so a gateway never heard in n
//     samples of a zone gets P(heard) = 0.5/(n+1): absence is strong but
//     finite evidence, and a zone with few samples is judged less harshly
//     than one surveyed at length.
//   - meanPrior: the per-zone mean and variance are shrunk towards the
//     gateway's site-wide mean and variance with the weight of one
//     pseudo-observation, so a zone where a gateway was heard once or
//     never still has a finite, deliberately wide reading model.
const (
	hitPrior  = 0.5
	meanPrior = 1.0
)

// buildEmissions fills the filter's reading model. With survey samples it
// is learned from them (the same samples k-NN uses): per gateway and zone
// the share of samples that heard the gateway and the mean and variance of
// what it heard, variance floored at SigmaFloor. Without samples placed
// gateways predict the log-distance RSSI at each zone centre with spread
// Sigma, and absence carries no information (a model of the radio without
// a survey cannot say who should have heard).
func (m *model) buildEmissions() {
	nz, ng := len(m.zones), len(m.gwMAC)
	m.em = make([]emission, ng*nz)
	m.hasEm = make([]bool, ng)
	m.missZone = make([]float64, nz)
	m.temper, m.knnW = uncalibrated, 0
	m.findVoid()
	if len(m.samples) > 0 {
		m.learnEmissions()
		return
	}
	p := m.p
	for g := 0; g < ng; g++ {
		if !m.gwPlaced[g] {
			continue
		}
		for z := 0; z < nz; z++ {
			if m.gwPos[g].mapID != m.zones[z].MapID {
				// another floor: expect it barely heard
				m.em[g*nz+z] = gaussian(p.Floor, p.Sigma)
				continue
			}
			cx, cy := m.zones[z].centre()
			d := math.Hypot(cx-m.gwPos[g].x, cy-m.gwPos[g].y) / m.pixelsPerMeter(m.zones[z].MapID)
			m.em[g*nz+z] = gaussian(p.rssiAt(d), p.Sigma)
		}
		m.hasEm[g] = true
	}
}

// findVoid sets m.void: the zones neither surveyed nor on a map with a
// gateway placed, or learned from the survey (its zone's map: the
// filter and grid model a skipped room from learned positions too; a
// review found one-floor sites without placements losing every room
// the survey skipped).
func (m *model) findVoid() {
	m.void = nil
	placedOn := map[uint64]bool{}
	for g, ok := range m.gwPlaced {
		if ok || m.gwZone[g] >= 0 {
			placedOn[m.gwPos[g].mapID] = true
		}
	}
	surveyed := make([]bool, len(m.zones))
	for i := range m.samples {
		surveyed[m.samples[i].zone] = true
	}
	void := make([]bool, len(m.zones))
	n := 0
	for z := range m.zones {
		void[z] = !surveyed[z] && !placedOn[m.zones[z].MapID]
		if void[z] {
			n++
		}
	}
	if n > 0 && n < len(m.zones) {
		m.void = void
	}
}

// learnEmissions is the survey-trained naive-Bayes model.
func (m *model) learnEmissions() {
	nz, ng := len(m.zones), len(m.gwMAC)
	floor, sfloor := m.p.Floor, m.p.SigmaFloor
	n := make([]float64, nz) // samples per zone
	hit := make([]float64, ng*nz)
	sum := make([]float64, ng*nz)
	sq := make([]float64, ng*nz)
	gHit, gSum, gSq := make([]float64, ng), make([]float64, ng), make([]float64, ng)
	gMu, gVar := make([]float64, ng), make([]float64, ng)
	// cell is the reading model of one gateway in one zone from h hits in
	// n samples (sum and sum of squares of the heard values), shrunk
	// towards the gateway's site-wide mean mu0 and variance v0.
	cell := func(h, sum, sq, n, mu0, v0 float64) emission {
		mu := (sum + meanPrior*mu0) / (h + meanPrior)
		// sum of squares about mu, plus the prior's spread
		ss := sq - 2*mu*sum + h*mu*mu
		v := (math.Max(ss, 0) + meanPrior*v0) / (h + meanPrior)
		e := gaussian(mu, math.Max(math.Sqrt(v), sfloor))
		ph := (1 - m.p.Lost) * (h + hitPrior) / (n + 2*hitPrior)
		e.logHit, e.logMiss = math.Log(ph), math.Log1p(-ph)
		return e
	}
	m.sens = math.Inf(1)
	for _, s := range m.samples {
		n[s.zone]++
		for g, v := range s.v {
			x := float64(v)
			if x <= floor {
				continue
			}
			m.sens = math.Min(m.sens, x)
			i := g*nz + s.zone
			hit[i]++
			sum[i] += x
			sq[i] += x * x
			gHit[g]++
			gSum[g] += x
			gSq[g] += x * x
		}
	}
	m.surveyed = make([]bool, ng)
	m.zoneSurveyed = make([]bool, nz)
	for z := range nz {
		m.zoneSurveyed[z] = n[z] > 0
	}
	for g := 0; g < ng; g++ {
		m.hasEm[g] = true
		m.surveyed[g] = gHit[g] > 0
		// Site-wide reading model of the gateway: the shrinkage target.
		mu, v := floor, m.p.Sigma*m.p.Sigma
		if gHit[g] > 0 {
			mu = gSum[g] / gHit[g]
			v = math.Max(gSq[g]/gHit[g]-mu*mu, v)
		}
		gMu[g], gVar[g] = mu, v
		law, lawOK := m.fitLaw(g, hit, sum, nz)
		for z := 0; z < nz; z++ {
			i := g*nz + z
			var e emission
			if n[z] == 0 && lawOK && m.gwPos[g].mapID == m.zones[z].MapID {
				e = m.unsurveyed(g, z, law, math.Sqrt(v))
			} else {
				e = cell(hit[i], sum[i], sq[i], n[z], mu, v)
			}
			m.em[i] = e
			m.missZone[z] += e.logMiss
		}
	}
	m.buildOffsetTables()
	m.calibrate(func(s *sampleVec, ll []float64) {
		// Leave s out: only its own zone's cells change (the site-wide
		// shrinkage target moves by one sample in hundreds: kept).
		copy(ll, m.missZone)
		own := 0.0
		for g, v := range s.v {
			x := float64(v)
			i := g*nz + s.zone
			if x <= floor {
				own += cell(hit[i], sum[i], sq[i], n[s.zone]-1, gMu[g], gVar[g]).logMiss
				continue
			}
			em := m.em[g*nz : (g+1)*nz]
			for z := range em {
				ll[z] += em[z].heard(x)
			}
			e := cell(hit[i]-1, sum[i]-x, sq[i]-x*x, n[s.zone]-1, gMu[g], gVar[g])
			own += e.logHit + e.logK - (x-e.mu)*(x-e.mu)*e.inv2s2
		}
		ll[s.zone] = own
	})
}

// gwLaw is a gateway's log-distance law fitted to the surveyed zones:
// RSSI = p0 - 10 n log10(d), d from the gateway to a zone's centre.
type gwLaw struct{ p0, n float64 }

// fitLaw fits gateway g's law to the mean reading of each surveyed zone
// (weighted by its readings), and reports whether g has a position and
// was heard at all: the law predicts it where the survey did not go.
// The exponent is kept to 1.5..4 (free space to a cluttered indoor
// floor). With fewer than three zones heard, all at one distance, or a
// gateway not placed (its position is the centre of the zone it is
// loudest in, too rough for a slope: bayes lost 11 points on a walk),
// the default exponent is kept and only p0 fitted.
func (m *model) fitLaw(g int, hit, sum []float64, nz int) (gwLaw, bool) {
	pos := m.gwPos[g]
	if !pos.ok {
		return gwLaw{}, false
	}
	var h, sx, sy, sxx, sxy float64
	zones := 0
	for z := range nz {
		i := g*nz + z
		if hit[i] == 0 || m.zones[z].MapID != pos.mapID {
			continue
		}
		x, y := -10*math.Log10(math.Max(m.zoneDistance(g, z), 0.5)), sum[i]/hit[i]
		h += hit[i]
		sx, sy, sxx, sxy = sx+hit[i]*x, sy+hit[i]*y, sxx+hit[i]*x*x, sxy+hit[i]*x*y
		zones++
	}
	if h == 0 {
		return gwLaw{}, false
	}
	mx, my := sx/h, sy/h
	n := m.p.PathLoss
	if v := sxx/h - mx*mx; zones >= 3 && v > 1 && m.gwPlaced[g] {
		n = math.Min(math.Max((sxy/h-mx*my)/v, 1.5), 4)
	}
	return gwLaw{p0: my - n*mx, n: n}, true
}

func (m *model) zoneDistance(g, z int) float64 {
	cx, cy := m.zones[z].centre()
	return math.Hypot(cx-m.gwPos[g].x, cy-m.gwPos[g].y) / m.pixelsPerMeter(m.zones[z].MapID)
}

// unsurveyed is gateway g's reading model in zone z, which the survey
// never visited: its fitted law at the zone's centre with the gateway's
// site-wide spread sigma, heard when that lands above the site's
// sensitivity. Shrunk to the gateway's site-wide mean like a surveyed
// zone with no samples, such a zone looked like nowhere in particular,
// and a tag in it was placed in the nearest surveyed zone (a walk split
// in time whose test went where its survey had not: hmm 42%; grid,
// which reads its own law, 84%).
func (m *model) unsurveyed(g, z int, law gwLaw, sigma float64) emission {
	mu := law.p0 - 10*law.n*math.Log10(math.Max(m.zoneDistance(g, z), 0.5))
	e := gaussian(mu, math.Max(sigma, m.p.SigmaFloor))
	sens := m.sens
	if math.IsInf(sens, 1) {
		sens = m.p.Floor
	}
	ph := 0.5 * math.Erfc((sens-mu)/(sigma*math.Sqrt2))
	ph = (1 - m.p.Lost) * math.Min(math.Max(ph, 0.02), 0.98)
	e.logHit, e.logMiss = math.Log(ph), math.Log1p(-ph)
	return e
}

// neutralUnsurveyed gives the zones without survey samples an even
// share in the k-NN view's log shares: k-NN cannot vote for them, which
// is no opinion, not "never". calibrate must see the same view, or it
// counts k-NN as always ruling them out and overweights it (knnW 0.10
// on a fully surveyed walk, 0.70 with two zones skipped).
func (m *model) neutralUnsurveyed(shares []float64) {
	if m.zoneSurveyed == nil {
		return
	}
	even := math.Log(1 / float64(len(shares)))
	for z, ok := range m.zoneSurveyed {
		if !ok {
			shares[z] = even
		}
	}
}

// heard is the log-likelihood of reading x relative to "not heard".
func (e *emission) heard(x float64) float64 { return e.heardMiss(x, e.logMiss) }

// heardMiss is heard against a "not heard" term of lm (a tag offset's,
// offset.go).
func (e *emission) heardMiss(x, lm float64) float64 {
	d := x - e.mu
	return e.logHit - lm + e.logK - d*d*e.inv2s2
}

// maxCalibrate bounds the samples calibrate looks at (evenly spread), so
// a large survey costs a bounded time and memory at model build.
const maxCalibrate = 2000

// calibrate sets the weights of two views of one window's evidence:
// temper for the naive-Bayes log-likelihood and knnW for the k-NN vote
// (voteLogShare), the pair maximising the sum over survey samples of
// log softmax(temper*nb + knnW*knn)[true zone], with both views computed
// leaving the sample out (loo fills nb for one sample). Naive Bayes
// treats the gateways as independent given the zone; they are not (one
// position in the zone, one body, one multipath pattern moves them
// together), so its raw posterior is over- or underconfident by a factor
// that depends on the site. k-NN sees which gateways are heard together,
// which naive Bayes cannot; how much that adds depends on the site too.
// The objective is concave in the weights, so Newton's method converges
// in a few steps.
func (m *model) calibrate(loo func(s *sampleVec, ll []float64)) {
	m.temper, m.knnW = 1, 0
	nz := len(m.zones)
	if nz < 2 || len(m.samples) < 2 {
		return
	}
	withKNN := len(m.samples) > m.p.K
	step := max(1, len(m.samples)/maxCalibrate)
	var nb, kn [][]float64
	var truth []int
	for i := 0; i < len(m.samples); i += step {
		s := &m.samples[i]
		a := make([]float64, nz)
		loo(s, a)
		c := make([]float64, nz)
		if withKNN {
			var q query
			for g, v := range s.v {
				if x := float64(v); x > m.p.Floor && !q.add(&m.p, g, x) {
					break
				}
			}
			m.nearest(&m.p, &q, i, c)
			voteLogShare(m.p.K, c)
			m.neutralUnsurveyed(c)
		}
		nb, kn, truth = append(nb, a), append(kn, c), append(truth, s.zone)
	}
	w := [2]float64{1, 0}
	if withKNN {
		w[1] = 0.5
	}
	for it := 0; it < 50; it++ {
		// gradient g and Hessian h of the objective
		var g [2]float64
		var h [2][2]float64
		for k := range nb {
			top := math.Inf(-1)
			for z := range nb[k] {
				top = math.Max(top, w[0]*nb[k][z]+w[1]*kn[k][z])
			}
			var z0 float64
			var z1 [2]float64
			var z2 [2][2]float64
			for z := range nb[k] {
				f := [2]float64{nb[k][z], kn[k][z]}
				e := math.Exp(w[0]*f[0] + w[1]*f[1] - top)
				z0 += e
				for a := 0; a < 2; a++ {
					z1[a] += e * f[a]
					for b := 0; b < 2; b++ {
						z2[a][b] += e * f[a] * f[b]
					}
				}
			}
			t := truth[k]
			f := [2]float64{nb[k][t], kn[k][t]}
			for a := 0; a < 2; a++ {
				g[a] += f[a] - z1[a]/z0
				for b := 0; b < 2; b++ {
					h[a][b] -= z2[a][b]/z0 - z1[a]*z1[b]/(z0*z0)
				}
			}
		}
		var next [2]float64
		det := h[0][0]*h[1][1] - h[0][1]*h[1][0]
		if !withKNN || det <= 1e-12 || w[1] == 0 && g[1] <= 0 {
			// one-dimensional step in temper (k-NN off or pinned at 0)
			if h[0][0] >= 0 {
				break
			}
			next = [2]float64{w[0] - g[0]/h[0][0], 0}
		} else {
			next[0] = w[0] - (h[1][1]*g[0]-h[0][1]*g[1])/det
			next[1] = w[1] - (h[0][0]*g[1]-h[1][0]*g[0])/det
		}
		if math.IsNaN(next[0]) || math.IsNaN(next[1]) {
			break
		}
		next[0] = math.Min(math.Max(next[0], math.Max(w[0]/4, minTemper)), math.Min(w[0]*4, maxTemper))
		next[1] = math.Min(math.Max(next[1], 0), maxTemper)
		done := math.Abs(next[0]-w[0]) < 1e-6*w[0] && math.Abs(next[1]-w[1]) < 1e-6
		w = next
		if done {
			break
		}
	}
	m.temper, m.knnW = w[0], w[1]
}

// uncalibrated is the weight of one window without survey samples (the
// log-distance model, nothing to calibrate on): successive 2 s windows
// overlap and the gateways' readings are correlated (same body, same
// multipath), so two windows count as one independent observation.
const uncalibrated = 0.5

// minTemper and maxTemper bound the calibrated temperature: a survey
// whose zones cannot be told apart at all would drive w to 0, a
// perfectly separable one to infinity.
const (
	minTemper = 0.05
	maxTemper = 4
)

// logLikelihood adds to ll[z] the log-likelihood of the beacon's
// readings of the last SampleWindow (each gateway's mean, windowMean) in
// each zone, corrected by its tag offset (offset.go); false when no
// reading carries information.
// Gateways not heard in the window count as "not heard" through
// missZone, weighted by cover: the share of the window during which the
// beacon was being heard at all (a gateway that has not reported since
// the beacon appeared may not have had its turn yet).
func logLikelihood(m *model, p *Params, b *beacon, now int64, cover float64, ll []float64) bool {
	return windowLL(m, p, b, now, cover, b.off.a, m.em, m.missAt(b.off.a), nil, nil, ll)
}

// windowLL fills ll[z], for the zones zs (nil: every zone), with the
// log-likelihood of b's readings in its evidence window (each gateway's
// mean)
// (beacon.window) heard off dB louder than the survey tag, from the
// gateways use says (nil: all): heard terms from ems, silence from mt
// (nil: ems' own logMiss and the model's missZone).
func windowLL(m *model, p *Params, b *beacon, now int64, cover, off float64, ems []emission, mt *missTable, use []bool, zs []int32, ll []float64) bool {
	nz, any, win := len(m.zones), false, b.window(p, now)
	missZone := m.missZone
	if mt != nil {
		missZone = mt.zone
	}
	if zs == nil {
		for z := range nz {
			ll[z] = cover * missZone[z]
		}
	}
	for _, z := range zs {
		ll[z] = cover * missZone[z]
	}
	if cover > 0 {
		unDown(m, b, win, now, cover, mt, zs, ll)
	}
	for i := range b.rds {
		rd := &b.rds[i]
		if !m.readsWindow(rd, win, now, use) {
			continue
		}
		any = true
		x := rd.windowMean(win, now) - off
		em := ems[rd.g*nz : (rd.g+1)*nz]
		if mt == nil {
			if zs == nil {
				for z := range em {
					ll[z] += em[z].heard(x) + (1-cover)*em[z].logMiss
				}
			}
			for _, z := range zs {
				ll[z] += em[z].heard(x) + (1-cover)*em[z].logMiss
			}
			continue
		}
		lm := mt.lm[rd.g*nz : (rd.g+1)*nz]
		if zs == nil {
			for z := range em {
				l := float64(lm[z])
				ll[z] += em[z].heardMiss(x, l) + (1-cover)*l
			}
		}
		for _, z := range zs {
			l := float64(lm[z])
			ll[z] += em[z].heardMiss(x, l) + (1-cover)*l
		}
	}
	return any
}

// unDown takes out of ll the silence of the gateways judged down
// (liveness.go) that missZone (mt's or the model's) charged.
func unDown(m *model, b *beacon, win, now int64, cover float64, mt *missTable, zs []int32, ll []float64) {
	nz := len(m.zones)
	for g := range m.silentDown(b, win, now) {
		if !m.hasEm[g] {
			continue
		}
		if zs == nil {
			for z := range nz {
				ll[z] -= cover * m.logMissIn(mt, g*nz+z)
			}
		}
		for _, z := range zs {
			ll[z] -= cover * m.logMissIn(mt, g*nz+int(z))
		}
	}
}

// logMissIn is the "not heard" term of gateway g in zone z (i =
// g*nz+z) that missZone charges: mt's, or the model's own (nil, 0 dB).
func (m *model) logMissIn(mt *missTable, i int) float64 {
	if mt != nil {
		return float64(mt.lm[i])
	}
	return m.em[i].logMiss
}

// knnLikelihood adds to ll the k-NN view of the same window means
// logLikelihood used (heard in the last SampleWindow; unheard gateways at
// Floor), in the units of the naive-Bayes log-likelihood: its calibrated
// weight relative to temper (the caller weighs ll by temper). Like
// absence in logLikelihood it counts in proportion to cover, because the
// vote reads every unheard gateway as silent.
func knnLikelihood(m *model, p *Params, b *beacon, now int64, cover float64, ll []float64) {
	if m.knnW <= 0 || cover <= 0 {
		return
	}
	var q query
	win := b.window(p, now)
	for i := range b.rds {
		if rd := &b.rds[i]; rd.fresh(win, now) && !q.add(p, rd.g, rd.windowMean(win, now)-b.off.a) {
			break
		}
	}
	if q.n == 0 {
		return
	}
	q.leaveOutDown(m)
	m.nearest(p, &q, -1, b.votes)
	voteLogShare(p.K, b.votes)
	m.neutralUnsurveyed(b.votes)
	r := cover * m.knnW / m.temper
	for z := range ll {
		ll[z] += r * b.votes[z]
	}
}

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
	m.temper = uncalibrated
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
	for _, s := range m.samples {
		n[s.zone]++
		for g, v := range s.v {
			x := float64(v)
			if x <= floor {
				continue
			}
			i := g*nz + s.zone
			hit[i]++
			sum[i] += x
			sq[i] += x * x
			gHit[g]++
			gSum[g] += x
			gSq[g] += x * x
		}
	}
	for g := 0; g < ng; g++ {
		m.hasEm[g] = true
		// Site-wide reading model of the gateway: the shrinkage target.
		mu, v := floor, m.p.Sigma*m.p.Sigma
		if gHit[g] > 0 {
			mu = gSum[g] / gHit[g]
			v = math.Max(gSq[g]/gHit[g]-mu*mu, v)
		}
		gMu[g], gVar[g] = mu, v
		for z := 0; z < nz; z++ {
			i := g*nz + z
			e := cell(hit[i], sum[i], sq[i], n[z], mu, v)
			m.em[i] = e
			m.missZone[z] += e.logMiss
		}
	}
	m.temper = m.calibrate(func(s *sampleVec, ll []float64) {
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

// heard is the log-likelihood of reading x relative to "not heard".
func (e *emission) heard(x float64) float64 {
	d := x - e.mu
	return e.logHit - e.logMiss + e.logK - d*d*e.inv2s2
}

// maxCalibrate bounds the samples calibrate looks at (evenly spread), so
// a large survey costs a bounded time and memory at model build.
const maxCalibrate = 2000

// calibrate returns the temperature w of the naive-Bayes log-likelihood
// that makes it honest on the survey: the w maximising the sum over
// samples of log softmax(w * ll)[true zone], where ll are leave-one-out
// log-likelihoods (loo fills them for one sample). Naive Bayes treats the
// gateways as independent given the zone; they are not (one position in
// the zone, one body, one multipath pattern moves them together), so its
// raw posterior is overconfident by a factor that depends on the site
// (how many gateways, how far apart, how noisy): w < 1 corrects it, and
// w > 1 where the model is underconfident. The objective is concave in
// w, so Newton's method converges in a few steps.
func (m *model) calibrate(loo func(s *sampleVec, ll []float64)) float64 {
	nz := len(m.zones)
	if nz < 2 || len(m.samples) < 2 {
		return 1
	}
	step := max(1, len(m.samples)/maxCalibrate)
	var lls [][]float64
	var truth []int
	for i := 0; i < len(m.samples); i += step {
		ll := make([]float64, nz)
		loo(&m.samples[i], ll)
		lls, truth = append(lls, ll), append(truth, m.samples[i].zone)
	}
	w := 1.0
	for it := 0; it < 50; it++ {
		var d1, d2 float64 // first and second derivative of the objective
		for k, ll := range lls {
			top := math.Inf(-1)
			for _, v := range ll {
				top = math.Max(top, w*v)
			}
			var z0, z1, z2 float64
			for _, v := range ll {
				e := math.Exp(w*v - top)
				z0 += e
				z1 += e * v
				z2 += e * v * v
			}
			mean := z1 / z0
			d1 += ll[truth[k]] - mean
			d2 -= z2/z0 - mean*mean
		}
		if d2 >= 0 || math.IsNaN(d1) {
			break
		}
		next := math.Min(math.Max(w-d1/d2, w/4), w*4)
		next = math.Min(math.Max(next, minTemper), maxTemper)
		if math.Abs(next-w) < 1e-6*w {
			w = next
			break
		}
		w = next
	}
	return w
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

// logLikelihood adds to ll[z] the log-likelihood of the beacon's raw
// readings of the last SampleWindow in each zone; false when no reading
// carries information. Gateways not heard in the window count as "not
// heard" through missZone, weighted by cover: the share of the window
// during which the beacon was being heard at all (a gateway that has not
// reported since the beacon appeared may not have had its turn yet).
func logLikelihood(m *model, p *Params, b *beacon, now int64, cover float64, ll []float64) bool {
	for z := range ll {
		ll[z] = cover * m.missZone[z]
	}
	nz, any := len(m.zones), false
	for i := range b.rds {
		rd := &b.rds[i]
		if !rd.fresh(p, now) || !m.hasEm[rd.g] {
			continue
		}
		any = true
		em := m.em[rd.g*nz : (rd.g+1)*nz]
		for z := range em {
			ll[z] += em[z].heard(float64(rd.raw)) + (1-cover)*em[z].logMiss
		}
	}
	return any
}

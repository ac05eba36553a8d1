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
		gMu, gVar := floor, m.p.Sigma*m.p.Sigma
		if gHit[g] > 0 {
			gMu = gSum[g] / gHit[g]
			gVar = math.Max(gSq[g]/gHit[g]-gMu*gMu, gVar)
		}
		for z := 0; z < nz; z++ {
			i := g*nz + z
			h := hit[i]
			mu := (sum[i] + meanPrior*gMu) / (h + meanPrior)
			// sum of squares about mu, plus the prior's spread
			ss := sq[i] - 2*mu*sum[i] + h*mu*mu
			v := (math.Max(ss, 0) + meanPrior*gVar) / (h + meanPrior)
			e := gaussian(mu, math.Max(math.Sqrt(v), sfloor))
			ph := (1 - m.p.Lost) * (h + hitPrior) / (n[z] + 2*hitPrior)
			e.logHit, e.logMiss = math.Log(ph), math.Log1p(-ph)
			m.em[i] = e
			m.missZone[z] += e.logMiss
		}
	}
}

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
			d := float64(rd.raw) - em[z].mu
			ll[z] += em[z].logHit - cover*em[z].logMiss + em[z].logK - d*d*em[z].inv2s2
		}
	}
	return any
}

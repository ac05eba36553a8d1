package rtls

import (
	"math"
	"sort"
)

// model is the compiled, immutable view of the site plus the survey
// samples that every algorithm reads. SetSite and SetSamples build a new
// one and swap it atomically, so the ingest path never locks to read it;
// beacon state built against an older model is reset when it notices the
// generation changed.
type model struct {
	gen     uint64
	p       Params
	zones   []Zone
	zoneIdx map[uint64]int
	adj     [][]int // neighbours, without self
	nextHop []int32 // zone i -> first hop on a shortest path to j, at i*n+j; -1 unreachable
	maps    map[uint64]Map

	gwIdx    map[[6]byte]int
	gwMAC    [][6]byte
	gwPos    []position // placed position, else centre of the learned zone
	gwPlaced []bool
	gwZone   []int // zone the gateway stands in (placed) or is loudest in (learned); -1

	samples []sampleVec
	// emission tables for the adjacency filter, [g*nz+z]
	em    []emission
	hasEm []bool // per gateway: any emission information at all
}

type position struct {
	mapID uint64
	x, y  float64
	ok    bool
}

type sampleVec struct {
	zone int
	v    []float32 // per model gateway, Floor when not heard
	base float64   // sum over gateways of (v-Floor)^2
}

// emission is the per-(gateway, zone) reading model of the filter: a
// Gaussian around Mu with the log of the detection probability added.
type emission struct {
	mu, inv2s2, logK float64 // log density = logK - (r-mu)^2 * inv2s2
}

func (z *Zone) contains(mapID uint64, x, y float64) bool {
	return z.MapID == mapID && x >= math.Min(z.X1, z.X2) && x <= math.Max(z.X1, z.X2) &&
		y >= math.Min(z.Y1, z.Y2) && y <= math.Max(z.Y1, z.Y2)
}

func (z *Zone) centre() (float64, float64) { return (z.X1 + z.X2) / 2, (z.Y1 + z.Y2) / 2 }

// dist2 is the squared distance from (x,y) to the rectangle (0 inside).
func (z *Zone) dist2(x, y float64) float64 {
	dx := math.Max(math.Max(math.Min(z.X1, z.X2)-x, 0), x-math.Max(z.X1, z.X2))
	dy := math.Max(math.Max(math.Min(z.Y1, z.Y2)-y, 0), y-math.Max(z.Y1, z.Y2))
	return dx*dx + dy*dy
}

// zoneAt is the zone containing the point, else the nearest zone on the
// same map, else -1.
func (m *model) zoneAt(mapID uint64, x, y float64) int {
	best, bd := -1, math.Inf(1)
	for i := range m.zones {
		z := &m.zones[i]
		if z.MapID != mapID {
			continue
		}
		if d := z.dist2(x, y); d < bd {
			best, bd = i, d
		}
	}
	return best
}

func (m *model) pixelsPerMeter(mapID uint64) float64 {
	if mp, ok := m.maps[mapID]; ok && mp.PixelsPerMeter > 0 {
		return mp.PixelsPerMeter
	}
	return 10
}

func buildModel(gen uint64, p Params, site Site, samples []Sample) *model {
	m := &model{gen: gen, p: p, zoneIdx: map[uint64]int{}, maps: map[uint64]Map{}, gwIdx: map[[6]byte]int{}}
	for _, mp := range site.Maps {
		m.maps[mp.ID] = mp
	}
	for _, z := range site.Zones {
		if _, dup := m.zoneIdx[z.ID]; dup || z.ID == 0 {
			continue
		}
		m.zoneIdx[z.ID] = len(m.zones)
		m.zones = append(m.zones, z)
	}
	nz := len(m.zones)
	m.adj = make([][]int, nz)
	for i, z := range m.zones {
		for _, id := range z.Adjacent {
			j, ok := m.zoneIdx[id]
			if !ok || j == i {
				continue
			}
			m.adj[i] = appendUnique(m.adj[i], j)
			m.adj[j] = appendUnique(m.adj[j], i) // adjacency is symmetric even if one side omits it
		}
	}
	for i := range m.adj {
		sort.Ints(m.adj[i])
	}
	m.buildNextHop()

	addGW := func(mac [6]byte) int {
		if i, ok := m.gwIdx[mac]; ok {
			return i
		}
		m.gwIdx[mac] = len(m.gwMAC)
		m.gwMAC = append(m.gwMAC, mac)
		m.gwPos = append(m.gwPos, position{})
		m.gwPlaced = append(m.gwPlaced, false)
		m.gwZone = append(m.gwZone, -1)
		return len(m.gwMAC) - 1
	}
	for _, g := range site.Gateways {
		i := addGW(g.MAC)
		if g.Placed {
			m.gwPos[i] = position{mapID: g.MapID, x: g.X, y: g.Y, ok: true}
			m.gwPlaced[i] = true
			m.gwZone[i] = m.zoneAt(g.MapID, g.X, g.Y)
		}
	}
	for _, s := range samples {
		if _, ok := m.zoneIdx[s.Zone]; !ok {
			continue
		}
		for mac := range s.RSSI {
			addGW(mac)
		}
	}
	m.buildSamples(samples)
	m.learnGatewayZones()
	m.buildEmissions()
	return m
}

func appendUnique(s []int, v int) []int {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// buildNextHop runs one BFS per zone so the filter can walk its reported
// zone along the graph one hop at a time.
func (m *model) buildNextHop() {
	n := len(m.zones)
	m.nextHop = make([]int32, n*n)
	for i := range m.nextHop {
		m.nextHop[i] = -1
	}
	queue := make([]int, 0, n)
	first := make([]int32, n)
	for src := 0; src < n; src++ {
		for i := range first {
			first[i] = -2
		}
		first[src] = int32(src)
		queue = append(queue[:0], src)
		for len(queue) > 0 {
			u := queue[0]
			queue = queue[1:]
			for _, v := range m.adj[u] {
				if first[v] != -2 {
					continue
				}
				if u == src {
					first[v] = int32(v)
				} else {
					first[v] = first[u]
				}
				queue = append(queue, v)
			}
		}
		for j := 0; j < n; j++ {
			if first[j] >= 0 {
				m.nextHop[src*n+j] = first[j]
			}
		}
	}
}

func (m *model) buildSamples(samples []Sample) {
	ng := len(m.gwMAC)
	floor := m.p.Floor
	for _, s := range samples {
		zi, ok := m.zoneIdx[s.Zone]
		if !ok || len(s.RSSI) == 0 {
			continue
		}
		sv := sampleVec{zone: zi, v: make([]float32, ng)}
		for g := range sv.v {
			sv.v[g] = float32(floor)
		}
		for mac, r := range s.RSSI {
			sv.v[m.gwIdx[mac]] = float32(math.Max(r, floor))
		}
		for _, x := range sv.v {
			d := float64(x) - floor
			sv.base += d * d
		}
		m.samples = append(m.samples, sv)
	}
}

// learnGatewayZones gives every unplaced gateway the zone in which the
// survey heard it loudest on average, and a position at that zone's
// centre, so strongest-gateway and centroid work on sites whose gateways
// were never placed on the map.
func (m *model) learnGatewayZones() {
	nz, ng := len(m.zones), len(m.gwMAC)
	if len(m.samples) == 0 || nz == 0 {
		return
	}
	sum := make([]float64, ng*nz)
	cnt := make([]float64, ng*nz)
	for _, s := range m.samples {
		for g, v := range s.v {
			if float64(v) > m.p.Floor {
				sum[g*nz+s.zone] += float64(v)
				cnt[g*nz+s.zone]++
			}
		}
	}
	for g := 0; g < ng; g++ {
		if m.gwPlaced[g] {
			continue
		}
		best, bv := -1, math.Inf(-1)
		for z := 0; z < nz; z++ {
			if c := cnt[g*nz+z]; c > 0 && sum[g*nz+z]/c > bv {
				best, bv = z, sum[g*nz+z]/c
			}
		}
		if best >= 0 {
			m.gwZone[g] = best
			x, y := m.zones[best].centre()
			m.gwPos[g] = position{mapID: m.zones[best].MapID, x: x, y: y, ok: true}
		}
	}
}

// buildEmissions fills the filter's reading model. With survey samples a
// zone's model of a gateway is the mean and spread of that gateway's
// sample RSSI there, times the share of samples that heard it; without
// samples a placed gateway predicts the log-distance RSSI at the zone
// centre. Gateways with neither carry no information.
func (m *model) buildEmissions() {
	nz, ng := len(m.zones), len(m.gwMAC)
	m.em = make([]emission, ng*nz)
	m.hasEm = make([]bool, ng)
	p := m.p
	perZone := make([]float64, nz)
	for _, s := range m.samples {
		perZone[s.zone]++
	}
	weakest := 0.0
	for _, s := range m.samples {
		for _, v := range s.v {
			if float64(v) > p.Floor && float64(v) < weakest {
				weakest = float64(v)
			}
		}
	}
	for g := 0; g < ng; g++ {
		var n, sum, sq []float64
		if len(m.samples) > 0 {
			n, sum, sq = make([]float64, nz), make([]float64, nz), make([]float64, nz)
			for _, s := range m.samples {
				if v := float64(s.v[g]); v > p.Floor {
					n[s.zone]++
					sum[s.zone] += v
					sq[s.zone] += v * v
				}
			}
		}
		for z := 0; z < nz; z++ {
			var mu, sigma, pdet float64
			switch {
			case n != nil && perZone[z] > 0:
				pdet = (n[z] + 1) / (perZone[z] + 2) // Laplace: never certain either way
				if n[z] > 0 {
					mu = sum[z] / n[z]
					sigma = p.SigmaDefault
					if n[z] >= 3 {
						sigma = math.Sqrt(math.Max(sq[z]/n[z]-mu*mu, 0))
					}
				} else {
					mu, sigma = weakest, p.SigmaDefault
				}
				sigma = math.Max(sigma, p.SigmaFloor)
			case m.gwPlaced[g] && m.gwPos[g].mapID == m.zones[z].MapID:
				cx, cy := m.zones[z].centre()
				d := math.Hypot(cx-m.gwPos[g].x, cy-m.gwPos[g].y) / m.pixelsPerMeter(m.zones[z].MapID)
				mu, sigma, pdet = p.rssiAt(d), p.SigmaDefault, 1
			case n != nil:
				// A zone nobody surveyed: a broad prior, so it is neither
				// favoured nor ruled out by this gateway.
				mu, sigma, pdet = p.UnsurveyedMean, p.UnsurveyedSigma, 0.5
			default:
				continue
			}
			m.hasEm[g] = true
			m.em[g*nz+z] = emission{mu: mu, inv2s2: 1 / (2 * sigma * sigma), logK: math.Log(pdet) - math.Log(sigma)}
		}
	}
}

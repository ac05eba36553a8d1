package rtls

import (
	"bytes"
	"cmp"
	"maps"
	"math"
	"slices"
	"sort"
)

// model is the compiled, immutable view of the site plus the survey
// samples that every algorithm reads. SetSite and SetSamples build a new
// one and swap it atomically, so the ingest path never locks to read it;
// beacon state built against an older model is reset when it notices the
// generation changed.
type model struct {
	gen uint64
	p   Params
	// unready names the algorithms this model lacks the input of
	// (AlgorithmInfo.Ready false): one running on it locates nothing.
	unready map[string]bool
	// holdMs is the engine's not-heard timeout: how long strongest and
	// centroid keep a beacon's zone while only gateways in no zone hear
	// it (beacon.holdRunsOut).
	holdMs  int64
	zones   []Zone
	zoneIdx map[uint64]int
	adj     [][]int // neighbours, without self
	nextHop []int32 // zone i -> first hop on a shortest path to j, at i*n+j; -1 unreachable
	maps    map[uint64]Map

	gwIdx map[[6]byte]int
	gwMAC [][6]byte
	// nSiteGW: the first nSiteGW gateways are the site's; the others
	// are named only by survey samples.
	nSiteGW int
	gwPos   []position // placed position, else centre of the learned zone
	// zoneSurveyed[z]: the survey has samples of zone z (nil without a
	// survey).
	zoneSurveyed []bool
	gwPlaced     []bool
	gwZone       []int // zone the gateway stands in (placed) or is loudest in (learned); -1

	samples []sampleVec
	// Per gateway, what the survey's windows say of single readings
	// (Sample.N, Sample.SD): fadeSS and fadeDof sum (N-1) SD² and N-1
	// over the windows that heard it at least twice, winInv and winN
	// sum 1/N and count the windows that say N (gridGW.fade).
	fadeSS, fadeDof, winInv, winN []float64
	logN                          []float64 // per zone: log(number of samples), -Inf without
	// emission tables for the adjacency filter, [g*nz+z] (emission.go)
	em    []emission
	hasEm []bool // per gateway: any emission information at all
	// void[z]: nothing models the radio in zone z (no survey sample of
	// it, no placed gateway on its map), so the zone filter never puts
	// a beacon there; nil when no zone is void, or every zone is.
	// Modelled as "every gateway barely heard" (or the site-wide mean,
	// with a survey), such a zone fitted a tag quieter than the survey's
	// better than where it stood: a floor drawn with no gateway yet took
	// 88-100% of a tag 8 dB quieter than the survey tag under hmm and
	// bayes (TestAFloorWithNothingToModelItCatchesNoTag).
	void     []bool
	missZone []float64 // per zone: sum over gateways of log P(not heard)
	// sens is the survey's sensitivity floor (its quietest heard
	// reading), and offs the emission tables of tags heard louder or
	// quieter than the survey tag (offset.go).
	sens float64
	emT  []emission // [g*nz+z] em as the offset estimate reads it (offset.go)
	// surveyed is per gateway whether the survey ever heard it: one
	// installed since has only the site-wide prior, which says nothing
	// about an offset (offset.go).
	surveyed []bool
	offs     *offsetTables
	// temper is the weight of one window's log-likelihood, calibrated on
	// the survey samples (emission.go, calibrate), else uncalibrated.
	temper float64
	// knnW weighs the k-NN vote of the same window (calibrate); 0 off.
	knnW float64
	// grid is the cell grid and per-gateway radio model of AlgGrid
	// (grid.go); the radio model is fitted only for grid to run
	// (withGrid), never in a published model.
	grid *gridModel
	// live judges which gateways are down (liveness.go); withGrid's
	// copy shares it.
	live *liveness
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

func (z *Zone) centre() (float64, float64) { return (z.X1 + z.X2) / 2, (z.Y1 + z.Y2) / 2 }

// dist2 is the squared distance from (x,y) to the rectangle (0 inside).
func (z *Zone) dist2(x, y float64) float64 {
	dx := math.Max(math.Max(math.Min(z.X1, z.X2)-x, 0), x-math.Max(z.X1, z.X2))
	dy := math.Max(math.Max(math.Min(z.Y1, z.Y2)-y, 0), y-math.Max(z.Y1, z.Y2))
	return dx*dx + dy*dy
}

// zoneAt is the zone containing the point (the smallest, where zones
// overlap: a room drawn inside the corridor or hall around it; of equal
// ones, the one whose centre is nearest), else the nearest zone on the
// same map, else -1.
func (m *model) zoneAt(mapID uint64, x, y float64) int {
	best, bd, ba, bc := -1, math.Inf(1), math.Inf(1), math.Inf(1)
	for i := range m.zones {
		z := &m.zones[i]
		if z.MapID != mapID {
			continue
		}
		d, a := z.dist2(x, y), math.Abs((z.X2-z.X1)*(z.Y2-z.Y1))
		cx, cy := z.centre()
		c := (cx-x)*(cx-x) + (cy-y)*(cy-y)
		if d < bd || d == 0 && bd == 0 && (a < ba || a == ba && c < bc) {
			best, bd, ba, bc = i, d, a, c
		}
	}
	return best
}

// zoned reports whether gateway g is in a zone: placed on a map with
// zones (its zone the nearest, zoneAt) or learned from the survey. Such a
// gateway has a position too (gwZone is only set with gwPos), so this is
// both strongest's input and centroid's: a point on a map without zones
// is in no zone, and neither is a gateway placed there.
func (m *model) zoned(g int) bool { return m.gwZone[g] >= 0 }

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
	m.offs = newOffsetTables()
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
	m.linkIsolatedZones()
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
	m.nSiteGW = len(m.gwMAC)
	for _, s := range samples {
		if _, ok := m.zoneIdx[s.Zone]; !ok {
			continue
		}
		// In the MACs' order, not the map's: a gateway's index decides
		// the order of sums and ties over gateways (learnGatewayZones),
		// and a sample can name gateways the site no longer has.
		for _, mac := range slices.SortedFunc(maps.Keys(s.RSSI), func(a, b [6]byte) int { return bytes.Compare(a[:], b[:]) }) {
			addGW(mac)
		}
	}
	m.buildSamples(samples)
	m.logN = make([]float64, len(m.zones))
	cnt := make([]float64, len(m.zones))
	for _, s := range m.samples {
		cnt[s.zone]++
	}
	for z, c := range cnt {
		m.logN[z] = math.Log(c)
	}
	m.learnGatewayZones()
	m.buildEmissions()
	m.buildLiveness()
	m.buildGrid()
	for _, n := range algorithmNames {
		if !newAlgorithm(n).info(m).Ready {
			if m.unready == nil {
				m.unready = map[string]bool{}
			}
			m.unready[n] = true
		}
	}
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

// touchMeters and doorMeters say when two zone rectangles count as
// neighbours for linkIsolatedZones: they overlap, or come within
// touchMeters of each other (drawn by hand, neighbouring rooms rarely
// share an edge to the pixel) along a stretch of at least doorMeters
// (room for a door; rooms meeting at a corner are not neighbours).
const (
	touchMeters = 0.5
	doorMeters  = 1.0
)

// linkIsolatedZones links every zone with no declared neighbour to the
// zones of its map its rectangle borders, or else to the nearest one. A
// zone without neighbours is a trap for hmm: its belief can neither
// leave nor enter it, so a beacon reported there stays until the
// evidence against it beats the belief floor (on UCI with the adjacency
// left out, hmm fell from 71% to 56%). An admin who draws zones and
// never links them gets the graph the drawing implies; declared links
// are kept as they are, and a zone with any is not given more, except
// by an unlinked zone bordering it (links are symmetric).
func (m *model) linkIsolatedZones() {
	var isolated []int
	for i := range m.zones {
		if len(m.adj[i]) == 0 {
			isolated = append(isolated, i)
		}
	}
	if len(isolated) == 0 {
		return
	}
	onMap := map[uint64][]int{}
	for i := range m.zones {
		onMap[m.zones[i].MapID] = append(onMap[m.zones[i].MapID], i)
	}
	index := map[uint64]*zoneIndex{}
	mark := make([]bool, len(m.zones))
	for _, i := range isolated {
		zi := &m.zones[i]
		ix := index[zi.MapID]
		if ix == nil {
			ix = newZoneIndex(m.zones, onMap[zi.MapID])
			index[zi.MapID] = ix
		}
		ppm := m.pixelsPerMeter(zi.MapID)
		linked := false
		for _, j := range ix.within(i, touchMeters*ppm, mark) {
			if gap, shared, ok := rectContact(zi, &m.zones[j]); ok && gap <= touchMeters*ppm && shared >= doorMeters*ppm {
				m.adj[i] = appendUnique(m.adj[i], j)
				m.adj[j] = appendUnique(m.adj[j], i)
				linked = true
			}
		}
		if !linked {
			if near := ix.nearest(i, mark); near >= 0 {
				m.adj[i] = appendUnique(m.adj[i], near)
				m.adj[near] = appendUnique(m.adj[near], i)
			}
		}
	}
	m.joinLinkedParts(isolated)
}

// joinLinkedParts makes the graph of every map on which
// linkIsolatedZones linked a zone connected, joining its parts through
// their nearest pair of zones. Unlinked zones that border only each
// other (two rows of rooms either side of a corridor nobody drew)
// otherwise made two parts the belief could not cross. A map whose zones
// were all linked by hand is left as declared, parts and all.
//
// The links are those of joining the globally nearest pair of zones in
// different parts, one pair at a time (ties to the lowest indices), as
// it was first written; that is Kruskal's spanning forest of the parts,
// built here Borůvka's way: each round links every part to its nearest
// zone elsewhere, found through the zone index. Rescanning every pair
// for every join took 3.8 s a build for 600 zones drawn in pairs.
func (m *model) joinLinkedParts(linked []int) {
	if len(linked) == 0 {
		return
	}
	n := len(m.zones)
	autoMap := map[uint64]bool{}
	for _, i := range linked {
		autoMap[m.zones[i].MapID] = true
	}
	parent := make([]int, n)
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		if parent[i] != i {
			parent[i] = find(parent[i])
		}
		return parent[i]
	}
	for i, nb := range m.adj {
		for _, j := range nb {
			parent[find(i)] = find(j)
		}
	}
	onMap := map[uint64][]int{}
	for i := range m.zones {
		if autoMap[m.zones[i].MapID] {
			onMap[m.zones[i].MapID] = append(onMap[m.zones[i].MapID], i)
		}
	}
	index := map[uint64]*zoneIndex{}
	for id, members := range onMap {
		index[id] = newZoneIndex(m.zones, members)
	}
	type edge struct {
		d    float64
		a, b int
	}
	// Nearest first, ties to the lowest indices.
	order := func(x, y edge) int {
		return cmp.Or(cmp.Compare(x.d, y.d), cmp.Compare(x.a, y.a), cmp.Compare(x.b, y.b))
	}
	mark := make([]bool, n)
	for {
		best := map[int]edge{}
		for _, members := range onMap {
			one := true // a map all in one part has no pair to join
			for _, i := range members {
				if find(i) != find(members[0]) {
					one = false
					break
				}
			}
			if one {
				continue
			}
			for _, i := range members {
				ri := find(i)
				limit := math.Inf(1)
				if cur, ok := best[ri]; ok {
					limit = cur.d // farther cannot be this part's nearest
				}
				j := index[m.zones[i].MapID].nearestWhere(i, mark, func(j int) bool { return find(j) != ri }, limit)
				if j < 0 {
					continue
				}
				e := edge{rectGap(&m.zones[i], &m.zones[j]), min(i, j), max(i, j)}
				if cur, ok := best[ri]; !ok || order(e, cur) < 0 {
					best[ri] = e
				}
			}
		}
		edges := slices.SortedFunc(maps.Values(best), order)
		joined := false
		for _, e := range edges {
			if ra, rb := find(e.a), find(e.b); ra != rb {
				parent[ra] = rb
				m.adj[e.a] = appendUnique(m.adj[e.a], e.b)
				m.adj[e.b] = appendUnique(m.adj[e.b], e.a)
				joined = true
			}
		}
		if !joined {
			return
		}
	}
}

// rectOverlap is how far two zone rectangles' projections on each axis
// overlap (negative: the gap between them on that axis).
func rectOverlap(a, b *Zone) (ox, oy float64) {
	ox = math.Min(math.Max(a.X1, a.X2), math.Max(b.X1, b.X2)) - math.Max(math.Min(a.X1, a.X2), math.Min(b.X1, b.X2))
	oy = math.Min(math.Max(a.Y1, a.Y2), math.Max(b.Y1, b.Y2)) - math.Max(math.Min(a.Y1, a.Y2), math.Min(b.Y1, b.Y2))
	return ox, oy
}

// rectContact measures how two zone rectangles face each other: gap is
// the distance across (0 when they overlap) and shared the length of the
// stretch they face each other along; ok is false when they do not face
// each other at all (diagonal to each other).
func rectContact(a, b *Zone) (gap, shared float64, ok bool) {
	ox, oy := rectOverlap(a, b)
	switch {
	case ox >= 0 && oy >= 0: // overlapping
		return 0, math.Max(ox, oy), true
	case ox >= 0: // one above the other
		return -oy, ox, true
	case oy >= 0: // side by side
		return -ox, oy, true
	}
	return 0, 0, false
}

// rectGap is the distance between two zone rectangles (0 when they touch
// or overlap).
func rectGap(a, b *Zone) float64 {
	ox, oy := rectOverlap(a, b)
	return math.Hypot(math.Max(0, -ox), math.Max(0, -oy))
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

// maxWindowSD (dB) bounds a sample's SD (Sample.SD): readings within
// the contract's -127..0 dBm cannot stray further from their mean.
const maxWindowSD = 127

func (m *model) buildSamples(samples []Sample) {
	ng := len(m.gwMAC)
	floor := m.p.Floor
	m.fadeSS, m.fadeDof = make([]float64, ng), make([]float64, ng)
	m.winInv, m.winN = make([]float64, ng), make([]float64, ng)
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
			g := m.gwIdx[mac]
			sv.v[g] = float32(math.Max(r, floor))
			if n := s.N[mac]; n >= 1 {
				m.winInv[g] += 1 / float64(n)
				m.winN[g]++
				// An SD no window of whole dBm in the gateway contract's
				// range can have (a store edited by hand) is not read: its
				// square overflowed, and the belief turned NaN.
				if sd, ok := s.SD[mac]; ok && n >= 2 && sd >= 0 && sd <= maxWindowSD {
					m.fadeSS[g] += float64(n-1) * sd * sd
					m.fadeDof[g] += float64(n - 1)
				}
			}
		}
		for _, x := range sv.v {
			d := float64(x) - floor
			sv.base += d * d
		}
		m.samples = append(m.samples, sv)
	}
}

// learnGatewayZones gives every unplaced gateway the zone in which the
// survey most often heard it loudest of all gateways (ties: the higher
// mean RSSI there), and a position at that zone's centre, so
// strongest-gateway and centroid work on sites whose gateways were never
// placed on the map.
func (m *model) learnGatewayZones() {
	nz, ng := len(m.zones), len(m.gwMAC)
	if len(m.samples) == 0 || nz == 0 {
		return
	}
	wins := make([]float64, ng*nz)
	sum := make([]float64, ng*nz)
	cnt := make([]float64, ng*nz)
	for _, s := range m.samples {
		top := -1
		for g, v := range s.v {
			if float64(v) > m.p.Floor {
				sum[g*nz+s.zone] += float64(v)
				cnt[g*nz+s.zone]++
				if top < 0 || v > s.v[top] {
					top = g
				}
			}
		}
		if top >= 0 {
			wins[top*nz+s.zone]++
		}
	}
	for g := 0; g < ng; g++ {
		if m.gwPlaced[g] {
			continue
		}
		best := -1
		score := func(z int) (float64, float64) {
			i := g*nz + z
			if cnt[i] == 0 {
				return wins[i], math.Inf(-1)
			}
			return wins[i], sum[i] / cnt[i]
		}
		for z := 0; z < nz; z++ {
			if cnt[g*nz+z] == 0 {
				continue
			}
			if best < 0 {
				best = z
				continue
			}
			w, mean := score(z)
			bw, bmean := score(best)
			if w > bw || (w == bw && mean > bmean) {
				best = z
			}
		}
		if best >= 0 {
			m.gwZone[g] = best
			x, y := m.zones[best].centre()
			m.gwPos[g] = position{mapID: m.zones[best].MapID, x: x, y: y, ok: true}
		}
	}
}

package nav

import "math"

// Landmark (ALT) lower bounds. The straight-line heuristic knows nothing
// of floors: a query to another floor explores most of the start floor
// before it finds the stairs, and those queries made the p99 tail. With
// exact distances d_L from a few landmark nodes, |d_L(t) - d_L(v)| is a
// lower bound on d(v, t) (triangle inequality on an undirected graph), and
// it sees stairs, lifts and walls. avoid_stairs queries get a second table
// computed on the accessible edges only: full-graph bounds would still be
// valid there, but they count stairs a step-free route cannot take.

// numLandmarks trades build time (two Dijkstras each, per graph edit) and
// memory (2 x 16 float64 per node) against tighter bounds. Each query
// uses only the maxActive landmarks that bound its start best, so more
// landmarks make bounds tighter without making every estimate dearer. On
// the 50,000-node building, cross-floor queries settle ~3,500 nodes with
// 8 landmarks all used, ~2,000 with 16, ~1,200 with 32.
const (
	numLandmarks = 16
	maxActive    = 16
)

// active is the per-query choice of landmarks with the target's distances.
type active struct {
	idx [maxActive]int
	tv  [maxActive]float64
	n   int
}

// choose keeps the landmarks giving the largest bound between s and t.
func (l *landmarks) choose(s, t int32, act *active) {
	act.n = 0
	if l.nl == 0 {
		return
	}
	var score [maxActive]float64
	srow, trow := l.row(s), l.row(t)
	for i := range srow {
		a, b := trow[i], srow[i]
		if a < 0 || b < 0 {
			continue
		}
		sc := math.Abs(a - b)
		j := act.n
		if j == maxActive {
			if sc <= score[maxActive-1] {
				continue
			}
			j--
		} else {
			act.n++
		}
		for ; j > 0 && score[j-1] < sc; j-- {
			score[j], act.idx[j], act.tv[j] = score[j-1], act.idx[j-1], act.tv[j-1]
		}
		score[j], act.idx[j], act.tv[j] = sc, i, a
	}
}

// Heuristic modes; only benchmarks change the default, to measure the
// baselines in the same run.
const (
	heurALT      = iota // max(straight line, landmarks)
	heurEuclid          // straight line only (the previous search)
	heurDijkstra        // none: plain Dijkstra
)

// landmarks is one table: lm[v*nl+i] is the distance from landmark i to
// v, -1 when unreachable.
type landmarks struct {
	lm []float64
	nl int
}

func (l *landmarks) row(v int32) []float64 {
	return l.lm[int(v)*l.nl : int(v)*l.nl+l.nl]
}

// buildLandmarks picks landmarks by farthest-point selection (each new one
// is the node farthest from those chosen, so they sit on the building's
// extremities, where bounds are tightest) and fills g.alt[0] (all edges)
// and g.alt[1] (accessible edges only).
func (g *Graph) buildLandmarks() {
	for i, acc := range []bool{false, true} {
		g.alt[i] = g.landmarkTable(acc)
	}
}

func (g *Graph) landmarkTable(accessibleOnly bool) landmarks {
	n := len(g.ids)
	if n == 0 {
		return landmarks{}
	}
	var l landmarks
	l.nl = min(numLandmarks, n)
	l.lm = make([]float64, n*l.nl)
	nearest := make([]float64, n)
	for i := range nearest {
		nearest[i] = math.Inf(1)
	}
	d := make([]float64, n)
	g.distancesFrom(0, d, accessibleOnly)
	next := farthest(d)
	for i := 0; i < l.nl; i++ {
		g.distancesFrom(next, d, accessibleOnly)
		for v, dv := range d {
			if math.IsInf(dv, 1) {
				l.lm[v*l.nl+i] = -1
				continue
			}
			l.lm[v*l.nl+i] = dv
			nearest[v] = min(nearest[v], dv)
		}
		next = farthest(nearest)
	}
	return l
}

// farthest returns the index of the largest value (+Inf first: an
// unreached component deserves a landmark of its own).
func farthest(d []float64) int32 {
	best := 0
	for i, v := range d {
		if v > d[best] {
			best = i
		}
	}
	return int32(best)
}

// distancesFrom is plain Dijkstra into d (+Inf unreached).
func (g *Graph) distancesFrom(src int32, d []float64, accessibleOnly bool) {
	for i := range d {
		d[i] = math.Inf(1)
	}
	var open openHeap
	d[src] = 0
	open.push(item{0, 0, src})
	for len(open) > 0 {
		it := open.pop()
		u := it.node
		if it.g > d[u] {
			continue
		}
		for _, a := range g.adj[g.start[u]:g.start[u+1]] {
			if accessibleOnly && !a.accessible {
				continue
			}
			if nd := d[u] + a.weight; nd < d[a.to] {
				d[a.to] = nd
				open.push(item{nd, nd, a.to})
			}
		}
	}
}

// estimate is the A* heuristic from v to t over the chosen landmarks of
// table l; shaved so rounding never makes it overestimate.
func (g *Graph) estimate(l *landmarks, v, t int32, act *active) float64 {
	switch g.heur {
	case heurDijkstra:
		return 0
	case heurEuclid:
		return g.scale * g.euclid(v, t)
	}
	h := g.scale * g.euclid(v, t)
	row := l.row(v)
	for j := 0; j < act.n; j++ {
		a, b := act.tv[j], row[act.idx[j]]
		if b < 0 {
			continue
		}
		if b > a {
			a, b = b, a
		}
		h = max(h, (a-b)*(1-1e-9))
	}
	return h
}

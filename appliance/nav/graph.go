// Package nav is indoor navigation: floors, the weighted node graph with
// stairs and lift connections between floors, validation of graph edits and
// shortest-path queries on an in-memory graph rebuilt after every change.
package nav

import (
	"math"
	"sync"

	"beaconhub/store"
)

// Graph is an immutable compressed adjacency (CSR) form of the stored
// graph. Queries share it without locks; an edit builds a new one.
type Graph struct {
	ids   []uint64 // dense index -> node id
	index map[uint64]int32
	// beacon is the node linked to each beacon asset_uid: the lowest node
	// id when stored data (from before edits refused it) links two.
	beacon map[string]int32
	nodes  []store.NavNode
	edges  []store.NavEdge // as stored, for the project payload
	xy     [][2]float64    // coordinates packed for the search loop
	start  []int32         // adjacency of i is adj[start[i]:start[i+1]]
	adj    []arc
	// scale makes scale*euclid(u, v) <= weight(u, v) for every edge, so the
	// A* heuristic scale*euclid(n, target) is consistent for any weights;
	// a graph with odd weights only degrades towards Dijkstra.
	scale float64
	pool  sync.Pool
	// Landmark lower bounds (landmarks.go): [0] all edges, [1] the
	// accessible ones (avoid_stairs).
	alt  [2]landmarks
	heur int
}

type arc struct {
	to         int32
	weight     float64
	accessible bool
}

// BuildGraph compiles nodes and edges; edges to unknown nodes are skipped
// (validation rejects them before they are stored).
func BuildGraph(g store.NavGraph) *Graph {
	n := len(g.Nodes)
	gr := &Graph{ids: make([]uint64, n), index: make(map[uint64]int32, n), nodes: g.Nodes, edges: g.Edges, start: make([]int32, n+1), scale: math.Inf(1)}
	gr.beacon = map[string]int32{}
	for i, nd := range g.Nodes {
		gr.ids[i] = nd.ID
		gr.index[nd.ID] = int32(i)
		gr.xy = append(gr.xy, [2]float64{nd.X, nd.Y})
		if nd.BeaconUID == "" {
			continue
		}
		if j, ok := gr.beacon[nd.BeaconUID]; !ok || nd.ID < g.Nodes[j].ID {
			gr.beacon[nd.BeaconUID] = int32(i)
		}
	}
	deg := make([]int32, n+1)
	for _, e := range g.Edges {
		a, okA := gr.index[e.From]
		b, okB := gr.index[e.To]
		if !okA || !okB {
			continue
		}
		deg[a]++
		deg[b]++
	}
	for i := 0; i < n; i++ {
		gr.start[i+1] = gr.start[i] + deg[i]
	}
	gr.adj = make([]arc, gr.start[n])
	fill := append([]int32(nil), gr.start[:n]...)
	for _, e := range g.Edges {
		a, okA := gr.index[e.From]
		b, okB := gr.index[e.To]
		if !okA || !okB {
			continue
		}
		gr.adj[fill[a]] = arc{b, e.Weight, e.Accessible}
		fill[a]++
		gr.adj[fill[b]] = arc{a, e.Weight, e.Accessible}
		fill[b]++
		if d := gr.euclid(a, b); d > 0 {
			gr.scale = math.Min(gr.scale, e.Weight/d)
		}
	}
	if math.IsInf(gr.scale, 1) {
		gr.scale = 0
	}
	// Shave a little so rounding can never make the heuristic overestimate.
	gr.scale *= 1 - 1e-9
	gr.pool.New = func() any { return newSearch(n) }
	gr.buildLandmarks()
	return gr
}

// euclid avoids math.Hypot, whose overflow care costs more than the whole
// relaxation step; map coordinates are far from overflow.
func (g *Graph) euclid(a, b int32) float64 {
	dx, dy := g.xy[a][0]-g.xy[b][0], g.xy[a][1]-g.xy[b][1]
	return math.Sqrt(dx*dx + dy*dy)
}

// Node returns a node by id.
func (g *Graph) Node(id uint64) (store.NavNode, bool) {
	i, ok := g.index[id]
	if !ok {
		return store.NavNode{}, false
	}
	return g.nodes[i], true
}

// Nearest returns the node of floor closest to (x, y).
func (g *Graph) Nearest(floor uint64, x, y float64) (store.NavNode, bool) {
	best, bestD := -1, math.Inf(1)
	for i, n := range g.nodes {
		if n.FloorID != floor {
			continue
		}
		if d := math.Hypot(n.X-x, n.Y-y); d < bestD {
			best, bestD = i, d
		}
	}
	if best < 0 {
		return store.NavNode{}, false
	}
	return g.nodes[best], true
}

// ByBeacon returns the node linked to a beacon's asset_uid (the lowest
// node id if several are).
func (g *Graph) ByBeacon(uid string) (store.NavNode, bool) {
	i, ok := g.beacon[uid]
	if !ok {
		return store.NavNode{}, false
	}
	return g.nodes[i], true
}

// search is per-query scratch space, pooled so that a query allocates
// almost nothing; gen stamps make resetting O(1).
type search struct {
	dist []float64
	prev []int32
	seen []uint32
	gen  uint32
	open openHeap
}

func newSearch(n int) *search {
	return &search{dist: make([]float64, n), prev: make([]int32, n), seen: make([]uint32, n)}
}

type item struct {
	f, g float64 // estimate and distance at push time
	node int32
}

// openHeap is a typed binary min-heap; container/heap would box every
// item in an interface, which dominated query time on large graphs.
type openHeap []item

func (h *openHeap) push(it item) {
	*h = append(*h, it)
	q := *h
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if q[p].f <= q[i].f {
			break
		}
		q[p], q[i] = q[i], q[p]
		i = p
	}
}

func (h *openHeap) pop() item {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q = q[:last]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(q) && q[l].f < q[m].f {
			m = l
		}
		if l+1 < len(q) && q[l+1].f < q[m].f {
			m = l + 1
		}
		if m == i {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	*h = q
	return top
}

// ShortestPath returns the node ids from src to dst and the total weight;
// ok is false when dst cannot be reached. avoidStairs skips every edge not
// marked accessible.
func (g *Graph) ShortestPath(src, dst uint64, avoidStairs bool) (path []uint64, length float64, ok bool) {
	s, okS := g.index[src]
	t, okT := g.index[dst]
	if !okS || !okT {
		return nil, 0, false
	}
	sc := g.pool.Get().(*search)
	defer g.pool.Put(sc)
	sc.gen++
	if sc.gen == 0 { // wrapped: old stamps could collide
		clear(sc.seen)
		sc.gen = 1
	}
	sc.open = sc.open[:0]
	lt := &g.alt[0]
	if avoidStairs {
		lt = &g.alt[1]
	}
	var act active
	lt.choose(s, t, &act)
	sc.dist[s], sc.prev[s], sc.seen[s] = 0, -1, sc.gen
	sc.open.push(item{g.estimate(lt, s, t, &act), 0, s})
	for len(sc.open) > 0 {
		it := sc.open.pop()
		u := it.node
		if u == t {
			break
		}
		// Stale entry: u was improved after this one was pushed.
		if it.g > sc.dist[u] {
			continue
		}
		for _, a := range g.adj[g.start[u]:g.start[u+1]] {
			if avoidStairs && !a.accessible {
				continue
			}
			nd := sc.dist[u] + a.weight
			if sc.seen[a.to] != sc.gen || nd < sc.dist[a.to] {
				sc.seen[a.to], sc.dist[a.to], sc.prev[a.to] = sc.gen, nd, u
				sc.open.push(item{nd + g.estimate(lt, a.to, t, &act), nd, a.to})
			}
		}
	}
	if sc.seen[t] != sc.gen {
		return nil, 0, false
	}
	for v := t; v != -1; v = sc.prev[v] {
		path = append(path, g.ids[v])
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return path, sc.dist[t], true
}

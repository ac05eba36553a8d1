package nav

import (
	"math"
	"math/rand/v2"
	"testing"

	"beaconhub/store"
)

// bruteForce is Bellman-Ford over the edge list: slow, obviously correct.
func bruteForce(g store.NavGraph, src, dst uint64, avoid bool) (float64, bool) {
	dist := map[uint64]float64{src: 0}
	for range g.Nodes {
		changed := false
		for _, e := range g.Edges {
			if avoid && !e.Accessible {
				continue
			}
			for _, p := range [][2]uint64{{e.From, e.To}, {e.To, e.From}} {
				du, ok := dist[p[0]]
				if !ok {
					continue
				}
				if dv, ok := dist[p[1]]; !ok || du+e.Weight < dv {
					dist[p[1]] = du + e.Weight
					changed = true
				}
			}
		}
		if !changed {
			break
		}
	}
	d, ok := dist[dst]
	return d, ok
}

func randomGraph(r *rand.Rand, n, m int) store.NavGraph {
	var g store.NavGraph
	for i := 1; i <= n; i++ {
		g.Nodes = append(g.Nodes, store.NavNode{ID: uint64(i * 3), FloorID: uint64(1 + r.IntN(2)), X: r.Float64() * 100, Y: r.Float64() * 100})
	}
	for j := 1; j <= m; j++ {
		a, b := g.Nodes[r.IntN(n)], g.Nodes[r.IntN(n)]
		if a.ID == b.ID {
			continue
		}
		e := store.NavEdge{ID: uint64(j), From: a.ID, To: b.ID, Accessible: r.IntN(4) != 0}
		switch r.IntN(3) {
		case 0: // geometric, the common case
			e.Weight = math.Hypot(a.X-b.X, a.Y-b.Y)
		case 1: // arbitrary, which must not break the heuristic
			e.Weight = r.Float64() * 50
		default:
			e.Weight = 0
		}
		g.Edges = append(g.Edges, e)
	}
	return g
}

func TestShortestPathMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		g := randomGraph(r, 2+r.IntN(30), r.IntN(80))
		gr := BuildGraph(g)
		for q := 0; q < 10; q++ {
			src, dst := g.Nodes[r.IntN(len(g.Nodes))].ID, g.Nodes[r.IntN(len(g.Nodes))].ID
			avoid := r.IntN(2) == 0
			want, wantOK := bruteForce(g, src, dst, avoid)
			path, got, ok := gr.ShortestPath(src, dst, avoid)
			if ok != wantOK {
				t.Fatalf("trial %d: reachable=%v, brute force says %v", trial, ok, wantOK)
			}
			if !ok {
				continue
			}
			if math.Abs(got-want) > 1e-6*math.Max(1, want) {
				t.Fatalf("trial %d %d->%d: length %v, brute force %v", trial, src, dst, got, want)
			}
			if path[0] != src || path[len(path)-1] != dst {
				t.Fatalf("path %v does not run %d->%d", path, src, dst)
			}
			if sum := pathWeight(t, g, path, avoid); math.Abs(sum-got) > 1e-6*math.Max(1, got) {
				t.Fatalf("path weight %v != reported length %v", sum, got)
			}
		}
	}
}

// pathWeight walks path over real edges, taking the lightest one per step.
func pathWeight(t *testing.T, g store.NavGraph, path []uint64, avoid bool) float64 {
	t.Helper()
	total := 0.0
	for i := 1; i < len(path); i++ {
		best := math.Inf(1)
		for _, e := range g.Edges {
			if avoid && !e.Accessible {
				continue
			}
			if (e.From == path[i-1] && e.To == path[i]) || (e.To == path[i-1] && e.From == path[i]) {
				best = math.Min(best, e.Weight)
			}
		}
		if math.IsInf(best, 1) {
			t.Fatalf("no edge between %d and %d", path[i-1], path[i])
		}
		total += best
	}
	return total
}

// twoFloors: a corridor on each floor joined by short stairs at one end
// and a long way round through a lift at the other.
func twoFloors() store.NavGraph {
	g := store.NavGraph{Nodes: []store.NavNode{
		{ID: 1, FloorID: 1, X: 0}, {ID: 2, FloorID: 1, X: 10}, {ID: 3, FloorID: 1, X: 100},
		{ID: 11, FloorID: 2, X: 0}, {ID: 12, FloorID: 2, X: 10}, {ID: 13, FloorID: 2, X: 100},
	}}
	g.Edges = []store.NavEdge{
		{ID: 1, From: 1, To: 2, Weight: 10, Accessible: true},
		{ID: 2, From: 2, To: 3, Weight: 90, Accessible: true},
		{ID: 3, From: 11, To: 12, Weight: 10, Accessible: true},
		{ID: 4, From: 12, To: 13, Weight: 90, Accessible: true},
		{ID: 5, From: 1, To: 11, Weight: 5, Kind: KindStairs},
		{ID: 6, From: 3, To: 13, Weight: 5, Kind: KindLift, Accessible: true},
	}
	return g
}

func TestCrossFloorAndStairsAvoidance(t *testing.T) {
	g := BuildGraph(twoFloors())
	res, err := g.Route(PathRequest{From: Endpoint{Node: 2}, To: Endpoint{Node: 12}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Length != 25 || len(res.Legs) != 2 || res.Legs[0].FloorID != 1 || res.Legs[1].FloorID != 2 {
		t.Fatalf("via stairs: %+v", res)
	}
	res, err = g.Route(PathRequest{From: Endpoint{Node: 2}, To: Endpoint{Node: 12}, AvoidStairs: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Length != 185 || res.Nodes[1] != 3 || res.Nodes[2] != 13 {
		t.Fatalf("avoiding stairs: %+v", res)
	}
	x, y := 98.0, 1.0
	res, err = g.Route(PathRequest{From: Endpoint{Floor: 2, X: &x, Y: &y}, To: Endpoint{Node: 3}})
	if err != nil || res.Nodes[0] != 13 || res.Length != 5 {
		t.Fatalf("from coordinate: %+v, %v", res, err)
	}
}

func TestUnreachable(t *testing.T) {
	tf := twoFloors()
	tf.Edges = tf.Edges[:5] // no lift: only stairs join the floors
	g := BuildGraph(tf)
	if _, err := g.Route(PathRequest{From: Endpoint{Node: 1}, To: Endpoint{Node: 13}, AvoidStairs: true}); err == nil {
		t.Fatal("route without stairs found although only stairs join the floors")
	}
	if _, err := g.Route(PathRequest{From: Endpoint{Node: 1}, To: Endpoint{Node: 99}}); err == nil {
		t.Fatal("unknown node accepted")
	}
	if _, err := g.Route(PathRequest{From: Endpoint{Node: 1, Beacon: "B"}, To: Endpoint{Node: 2}}); err == nil {
		t.Fatal("two start kinds accepted")
	}
}

// TestLandmarkSearchMatchesDijkstra: on a multi-floor building (where the
// landmark bounds do the work) and on a graph in two pieces, the shipped
// search finds the same lengths as plain Dijkstra.
func TestLandmarkSearchMatchesDijkstra(t *testing.T) {
	bg := building(3, 30, 20)
	// A separate island: nodes no landmark of the main part reaches.
	bg.Nodes = append(bg.Nodes, store.NavNode{ID: 90001, FloorID: 1, X: 5, Y: 5}, store.NavNode{ID: 90002, FloorID: 1, X: 6, Y: 5})
	bg.Edges = append(bg.Edges, store.NavEdge{ID: 90001, From: 90001, To: 90002, Weight: 1, Accessible: true})
	alt, plain := BuildGraph(bg), BuildGraph(bg)
	plain.heur = heurDijkstra
	r := rand.New(rand.NewPCG(3, 4))
	for q := 0; q < 300; q++ {
		a, b := bg.Nodes[r.IntN(len(bg.Nodes))].ID, bg.Nodes[r.IntN(len(bg.Nodes))].ID
		avoid := q%3 == 0
		_, got, ok := alt.ShortestPath(a, b, avoid)
		_, want, wantOK := plain.ShortestPath(a, b, avoid)
		if ok != wantOK || math.Abs(got-want) > 1e-9*math.Max(1, want) {
			t.Fatalf("%d->%d avoid=%v: %v %v, Dijkstra %v %v", a, b, avoid, got, ok, want, wantOK)
		}
	}
	if _, _, ok := alt.ShortestPath(1, 90002, false); ok {
		t.Fatal("route into the island")
	}
}

// TestByBeaconLowestNode: with two nodes linked to one beacon (stored
// before edits refused it) the lowest node id wins, whatever the order.
func TestByBeaconLowestNode(t *testing.T) {
	g := BuildGraph(store.NavGraph{Nodes: []store.NavNode{{ID: 5, FloorID: 1, BeaconUID: "B"}, {ID: 3, FloorID: 1, BeaconUID: "B"}, {ID: 4, FloorID: 1}}})
	if n, ok := g.ByBeacon("B"); !ok || n.ID != 3 {
		t.Fatalf("ByBeacon %+v %v, want node 3", n, ok)
	}
	if _, ok := g.ByBeacon(""); ok {
		t.Fatal("the empty uid found a node")
	}
}

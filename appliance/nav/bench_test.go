package nav

import (
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"beaconhub/store"
)

// building generates floors x (w*h) grid nodes, 1 m apart, with 5% of the
// corridor edges missing (walls), stairs at the four corners and a lift in
// the middle between every pair of adjacent floors.
func building(floors, w, h int) store.NavGraph {
	r := rand.New(rand.NewPCG(7, 7))
	var g store.NavGraph
	id := func(f, x, y int) uint64 { return uint64(f*w*h + y*w + x + 1) }
	var eid uint64
	edge := func(a, b uint64, wt float64, kind string, acc bool) {
		eid++
		g.Edges = append(g.Edges, store.NavEdge{ID: eid, From: a, To: b, Weight: wt, Kind: kind, Accessible: acc})
	}
	for f := 0; f < floors; f++ {
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				g.Nodes = append(g.Nodes, store.NavNode{ID: id(f, x, y), FloorID: uint64(f + 1), X: float64(x), Y: float64(y)})
				if x > 0 && r.IntN(20) != 0 {
					edge(id(f, x-1, y), id(f, x, y), 1, "", true)
				}
				if y > 0 && r.IntN(20) != 0 {
					edge(id(f, x, y-1), id(f, x, y), 1, "", true)
				}
			}
		}
		if f > 0 {
			for _, c := range [][2]int{{0, 0}, {w - 1, 0}, {0, h - 1}, {w - 1, h - 1}} {
				edge(id(f-1, c[0], c[1]), id(f, c[0], c[1]), 6, KindStairs, false)
			}
			edge(id(f-1, w/2, h/2), id(f, w/2, h/2), 15, KindLift, true)
		}
	}
	return g
}

// BenchmarkPathfind50k reports p99 latency per query and queries/s on the
// 10-floor, 50,000-node building between random nodes on random floors,
// a quarter with avoid_stairs, for the search as shipped (A* with landmark
// and straight-line bounds) and, on the same queries in the same run, the
// two baselines: A* with the straight line only and plain Dijkstra.
// Run: go test -run '^$' -bench Pathfind50k -cpu 2 -benchtime 20000x ./appliance/nav/
func BenchmarkPathfind50k(b *testing.B) {
	g, qs := benchQueries()
	for _, mode := range benchModes {
		b.Run(mode.name, func(b *testing.B) {
			g.heur = mode.heur
			defer func() { g.heur = heurALT }()
			var next atomic.Int64
			lat := make(chan []time.Duration, 64)
			b.ReportAllocs()
			b.ResetTimer()
			t0 := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				var mine []time.Duration
				for pb.Next() {
					q := qs[int(next.Add(1))%len(qs)]
					start := time.Now()
					g.ShortestPath(q.src, q.dst, q.avoid)
					mine = append(mine, time.Since(start))
				}
				lat <- mine
			})
			elapsed := time.Since(t0)
			close(lat)
			var all []time.Duration
			for l := range lat {
				all = append(all, l...)
			}
			slices.Sort(all)
			if len(all) > 0 {
				b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
				b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(len(all))/elapsed.Seconds(), "queries/s")
			}
		})
	}
}

type benchQuery struct {
	src, dst uint64
	avoid    bool
}

// benchModes are the shipped search and its two baselines.
var benchModes = []struct {
	name string
	heur int
}{{"alt", heurALT}, {"euclid", heurEuclid}, {"dijkstra", heurDijkstra}}

// benchQueries is the building and a fixed query list, so every mode and
// both benchmarks answer the same queries.
func benchQueries() (*Graph, []benchQuery) {
	bg := building(10, 100, 50)
	g := BuildGraph(bg)
	n := len(bg.Nodes)
	r := rand.New(rand.NewPCG(11, 13))
	qs := make([]benchQuery, 1<<15)
	for i := range qs {
		qs[i] = benchQuery{bg.Nodes[r.IntN(n)].ID, bg.Nodes[r.IntN(n)].ID, r.IntN(4) == 0}
	}
	return g, qs
}

// BenchmarkBuildGraph50k is the cost of recompiling the graph after an
// edit, landmarks included.
func BenchmarkBuildGraph50k(b *testing.B) {
	bg := building(10, 100, 50)
	b.ReportAllocs()
	for b.Loop() {
		BuildGraph(bg)
	}
}

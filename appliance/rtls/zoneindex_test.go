package rtls

import (
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
)

// linkIsolatedZonesNaive is linkIsolatedZones as it was, comparing every
// pair: the oracle the indexed one must agree with.
func (m *model) linkIsolatedZonesNaive() {
	var isolated []int
	for i := range m.zones {
		if len(m.adj[i]) == 0 {
			isolated = append(isolated, i)
		}
	}
	for _, i := range isolated {
		zi := &m.zones[i]
		ppm := m.pixelsPerMeter(zi.MapID)
		near, nearD := -1, math.Inf(1)
		linked := false
		for j := range m.zones {
			zj := &m.zones[j]
			if j == i || zj.MapID != zi.MapID {
				continue
			}
			if gap, shared, ok := rectContact(zi, zj); ok && gap <= touchMeters*ppm && shared >= doorMeters*ppm {
				m.adj[i] = appendUnique(m.adj[i], j)
				m.adj[j] = appendUnique(m.adj[j], i)
				linked = true
			} else if d := rectGap(zi, zj); d < nearD {
				near, nearD = j, d
			}
		}
		if !linked && near >= 0 {
			m.adj[i] = appendUnique(m.adj[i], near)
			m.adj[near] = appendUnique(m.adj[near], i)
		}
	}
	m.joinLinkedPartsNaive(isolated)
}

// joinLinkedPartsNaive is joinLinkedParts as it was: one rescan of every
// pair per join.
func (m *model) joinLinkedPartsNaive(linked []int) {
	if len(linked) == 0 {
		return
	}
	n := len(m.zones)
	autoMap := map[uint64]bool{}
	for _, i := range linked {
		autoMap[m.zones[i].MapID] = true
	}
	part := make([]int, n)
	for {
		for i := range part {
			part[i] = -1
		}
		np := 0
		for i := range part {
			if part[i] >= 0 {
				continue
			}
			stack := []int{i}
			part[i] = np
			for len(stack) > 0 {
				z := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				for _, u := range m.adj[z] {
					if part[u] < 0 {
						part[u] = np
						stack = append(stack, u)
					}
				}
			}
			np++
		}
		bi, bj, bd := -1, -1, math.Inf(1)
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				if part[i] == part[j] || m.zones[i].MapID != m.zones[j].MapID || !autoMap[m.zones[i].MapID] {
					continue
				}
				if d := rectGap(&m.zones[i], &m.zones[j]); d < bd {
					bi, bj, bd = i, j, d
				}
			}
		}
		if bi < 0 {
			return
		}
		m.adj[bi] = appendUnique(m.adj[bi], bj)
		m.adj[bj] = appendUnique(m.adj[bj], bi)
	}
}

// TestZoneIndexAgreesWithEveryPair: on random drawings (rooms of mixed
// sizes, touching, overlapping, scattered, on two maps at different
// scales, some linked by hand) the indexed linking gives exactly the
// graph that comparing every pair gave.
func TestZoneIndexAgreesWithEveryPair(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		s := Site{Maps: []Map{{ID: 1, Width: 4000, Height: 3000, PixelsPerMeter: 10}, {ID: 2, Width: 800, Height: 600, PixelsPerMeter: 2}}}
		n := 1 + rng.IntN(120)
		for i := 0; i < n; i++ {
			mp := uint64(1 + rng.IntN(2))
			w, h := 5+rng.Float64()*300, 5+rng.Float64()*200
			x, y := rng.Float64()*3000, rng.Float64()*2000
			if seed%3 == 1 && i%2 == 1 { // rooms in pairs, each part of two
				prev := s.Zones[i-1]
				mp, x, y, w, h = prev.MapID, max(prev.X1, prev.X2), prev.Y1, 50, prev.Y2-prev.Y1
			}
			if seed%3 == 0 { // a lattice of rooms, some touching to the pixel
				x, y = float64(rng.IntN(12))*100, float64(rng.IntN(8))*100
				w, h = 100-float64(rng.IntN(3))*3, 100
			}
			z := Zone{ID: uint64(i + 1), MapID: mp, X1: x, Y1: y, X2: x + w, Y2: y + h}
			if rng.IntN(2) == 0 {
				z.X1, z.X2 = z.X2, z.X1 // drawn right to left
			}
			if i > 0 && rng.IntN(8) == 0 {
				z.Adjacent = []uint64{uint64(1 + rng.IntN(i))}
			}
			s.Zones = append(s.Zones, z)
		}
		got := buildModel(1, DefaultParams(), s, nil).adj
		m := buildModel(1, DefaultParams(), Site{Maps: s.Maps}, nil)
		naive := *m
		naive.zoneIdx, naive.zones = map[uint64]int{}, nil
		for _, z := range s.Zones {
			naive.zoneIdx[z.ID] = len(naive.zones)
			naive.zones = append(naive.zones, z)
		}
		naive.adj = make([][]int, len(naive.zones))
		for i, z := range naive.zones {
			for _, id := range z.Adjacent {
				j := naive.zoneIdx[id]
				if j != i {
					naive.adj[i] = appendUnique(naive.adj[i], j)
					naive.adj[j] = appendUnique(naive.adj[j], i)
				}
			}
		}
		naive.linkIsolatedZonesNaive()
		for i := range naive.adj {
			sort.Ints(naive.adj[i])
		}
		if !reflect.DeepEqual(got, naive.adj) {
			t.Fatalf("seed %d, %d zones: indexed %v, every pair %v", seed, n, got, naive.adj)
		}
	}
}

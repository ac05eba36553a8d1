// Package rtlsbench builds the synthetic site the tracking benchmarks run
// on (the engine's cost per report in appliance/rtls, the whole live path
// to WebSocket frames in handlers), so both measure the same world: a
// 10 x 10 grid of 10 m zones on a 1000 x 1000 px map at 10 px/m, placed
// gateways at random points, three survey samples per zone, and a
// log-distance radio law with Gaussian noise.
package rtlsbench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/ingest/ingesttest"
	"beaconhub/appliance/rtls"
)

// Grid is the number of zones a side; each zone is 100 px (10 m).
const Grid = 10

// Point is a position in map pixels.
type Point struct{ X, Y float64 }

// World is the site, its survey, and the registry the pipeline resolves
// the gateways with (beacons are the caller's to add).
type World struct {
	Site    rtls.Site
	Samples []rtls.Sample
	Reg     *ingesttest.Registry
	GW      []Point   // gateway positions
	GWMAC   [][6]byte // and MACs, by index
}

// New builds the world with gateways gateways, drawing from rng in a
// fixed order (gateway positions, then the survey), so a caller that
// goes on drawing from rng sees the same numbers every run.
func New(rng *rand.Rand, gateways int) *World {
	w := &World{Reg: ingesttest.NewRegistry()}
	w.Site.Maps = []rtls.Map{{ID: 1, Width: 1000, Height: 1000, PixelsPerMeter: 10}}
	id := func(c, r int) uint64 { return uint64(1 + r*Grid + c) }
	for r := 0; r < Grid; r++ {
		for c := 0; c < Grid; c++ {
			z := rtls.Zone{ID: id(c, r), MapID: 1, Name: fmt.Sprintf("Z%d", id(c, r)), X1: float64(100 * c), Y1: float64(100 * r), X2: float64(100*c + 100), Y2: float64(100*r + 100)}
			if c > 0 {
				z.Adjacent = append(z.Adjacent, id(c-1, r))
			}
			if r > 0 {
				z.Adjacent = append(z.Adjacent, id(c, r-1))
			}
			w.Site.Zones = append(w.Site.Zones, z)
		}
	}
	w.GW = make([]Point, gateways)
	w.GWMAC = make([][6]byte, gateways)
	for i := range w.GW {
		w.GW[i] = Point{rng.Float64() * 1000, rng.Float64() * 1000}
		w.GWMAC[i] = [6]byte{0xAC, 0x23, 0x3F, 0xB0, byte(i >> 8), byte(i)}
		w.Reg.Gateways[w.GWMAC[i]] = &assets.Asset{UID: fmt.Sprintf("GW-%d", i), Type: "gateway", Kind: "gateway"}
		w.Site.Gateways = append(w.Site.Gateways, rtls.Gateway{MAC: w.GWMAC[i], MapID: 1, X: w.GW[i].X, Y: w.GW[i].Y, Placed: true})
	}
	// Three survey samples per zone, each the mean of two readings a
	// gateway as the recorder makes them (grid then weighs a reading by
	// the fading they show).
	for _, z := range w.Site.Zones {
		for k := 0; k < 3; k++ {
			x, y := z.X1+rng.Float64()*100, z.Y1+rng.Float64()*100
			s := rtls.Sample{Zone: z.ID, RSSI: map[[6]byte]float64{}, N: map[[6]byte]int{}, SD: map[[6]byte]float64{}}
			for i, g := range w.GW {
				if r := RSSI(g, x, y, rng.NormFloat64()*3); r > -95 {
					s.RSSI[w.GWMAC[i]] = float64(r)
					s.N[w.GWMAC[i]], s.SD[w.GWMAC[i]] = 2, 3*math.Abs(rng.NormFloat64())
				}
			}
			w.Samples = append(w.Samples, s)
		}
	}
	return w
}

// RSSI is what a gateway at g hears of a tag at x, y (map pixels): -59 dBm
// at 1 m, path-loss exponent 2.5, plus noise, clamped to the gateway
// contract's -127..0.
func RSSI(g Point, x, y, noise float64) int {
	d := math.Max(math.Hypot(g.X-x, g.Y-y)/10, 0.5)
	return int(math.Max(-127, math.Min(0, math.Round(-59-25*math.Log10(d)+noise))))
}

// Nearest returns the indexes of the n gateways nearest x, y, in idx
// (reused; len(idx) must be the number of gateways).
func (w *World) Nearest(x, y float64, n int, idx []int) []int {
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, c int) int {
		return int(math.Hypot(w.GW[a].X-x, w.GW[a].Y-y) - math.Hypot(w.GW[c].X-x, w.GW[c].Y-y))
	})
	return idx[:n]
}

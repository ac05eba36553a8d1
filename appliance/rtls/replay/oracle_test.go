package replay

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

// oracleWalk runs a grid filter that knows walk w's radio law and
// gateway positions (oracleGrid).
func oracleWalk(t *testing.T, w walk, odds float64) Result {
	dir := t.TempDir()
	writeWalk(t, dir, w)
	ds, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(w.seed, w.seed+1))
	mods := map[string]gwModel{}
	for i := 0; i < w.gateways; i++ {
		x, y := rng.Float64()*float64(100*w.grid), rng.Float64()*float64(100*w.grid)
		mods[fmt.Sprintf("G%d", i)] = gwModel{x, y, -59, w.pathLoss, w.noise, -90, w.miss}
	}
	return oracleGrid(ds, mods, odds)
}

// gwModel is one gateway's true radio law in a synthetic walk.
type gwModel struct{ x, y, p0, n, sig, floor, miss float64 }

// oracleGrid is a Bayes filter over the walk's 1 m cells that knows
// every gateway's position and law (mods), takes each scan whole, moves
// its belief at walking pace and reports the zone holding most of it,
// changing when another holds odds times as much. No causal tracker can
// know more, so its scores bound what the engine can reach on the walk.
func oracleGrid(ds *Dataset, mods map[string]gwModel, odds float64) Result {
	W, H := ds.Site.Maps[0].Width, ds.Site.Maps[0].Height
	cw, ch := int(W/10), int(H/10)
	var cx, cy []float64
	var zoneOf []string
	idx := map[[2]int]int{}
	for yy := 0; yy < ch; yy++ {
		for xx := 0; xx < cw; xx++ {
			x, y := float64(xx)*10+5, float64(yy)*10+5
			for _, z := range ds.Site.Zones {
				if x >= z.X1 && x < z.X2 && y >= z.Y1 && y < z.Y2 {
					idx[[2]int{xx, yy}] = len(cx)
					cx, cy, zoneOf = append(cx, x), append(cy, y), append(zoneOf, z.Name)
					break
				}
			}
		}
	}
	nc := len(cx)
	nb := make([][]int, nc)
	nw := make([][]float64, nc)
	for k := 0; k < nc; k++ {
		xx, yy := int(cx[k]/10), int(cy[k]/10)
		for dy := -1; dy <= 1; dy++ {
			for dx := -1; dx <= 1; dx++ {
				j, ok := idx[[2]int{xx + dx, yy + dy}]
				if !ok {
					continue
				}
				ww := 1.0
				if dx != 0 || dy != 0 {
					ww = 0.6
				}
				if dx != 0 && dy != 0 {
					ww = 0.35
				}
				nb[k], nw[k] = append(nb[k], j), append(nw[k], ww)
			}
		}
	}
	Phi := func(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }
	var gws []string
	for g := range mods {
		gws = append(gws, g)
	}
	mu := map[string][]float64{}
	lmiss := map[string][]float64{}
	lhit := map[string]float64{}
	for _, g := range gws {
		md := mods[g]
		m := make([]float64, nc)
		lm := make([]float64, nc)
		for i := 0; i < nc; i++ {
			d := math.Max(math.Hypot(md.x-cx[i], md.y-cy[i])/10, 0.5)
			m[i] = md.p0 - 10*md.n*math.Log10(d)
			pb := Phi((md.floor - m[i]) / md.sig)
			lm[i] = math.Log(pb + (1-pb)*md.miss)
		}
		mu[g], lmiss[g] = m, lm
		lhit[g] = math.Log(1-md.miss) - math.Log(md.sig)
	}
	bel := make([]float64, nc)
	for i := range bel {
		bel[i] = 1 / float64(nc)
	}
	tmp := make([]float64, nc)
	rows := ds.Test
	first := rows[0].T
	sc := newScorer(ds, 5*time.Second, 60*time.Second)
	cur := ""
	prevT := int64(0)
	for i := 0; i < len(rows); {
		j := i
		for j < len(rows) && rows[j].T == rows[i].T {
			j++
		}
		if prevT != 0 {
			steps := int((rows[i].T - prevT) / 1000)
			for s := 0; s < steps && s < 5; s++ {
				for k := 0; k < nc; k++ {
					var sum, wsum float64
					for q, jn := range nb[k] {
						sum += nw[k][q] * bel[jn]
						wsum += nw[k][q]
					}
					tmp[k] = sum / wsum
				}
				copy(bel, tmp)
			}
		}
		prevT = rows[i].T
		heard := map[string]float64{}
		for _, r := range rows[i:j] {
			heard[r.Gateway] = float64(r.RSSI)
		}
		ll := make([]float64, nc)
		top := math.Inf(-1)
		for k := 0; k < nc; k++ {
			var l float64
			for _, g := range gws {
				md := mods[g]
				if r, ok := heard[g]; ok {
					z := (r - mu[g][k]) / md.sig
					l += lhit[g] - 0.5*z*z
				} else {
					l += lmiss[g][k]
				}
			}
			ll[k] = l
			top = math.Max(top, l)
		}
		var tot float64
		for k := 0; k < nc; k++ {
			bel[k] *= math.Exp(ll[k] - top)
			bel[k] += 1e-12
			tot += bel[k]
		}
		zm := map[string]float64{}
		for k := 0; k < nc; k++ {
			bel[k] /= tot
			zm[zoneOf[k]] += bel[k]
		}
		best := ""
		for z, v := range zm {
			if best == "" || v > zm[best] {
				best = z
			}
		}
		if cur == "" || (best != cur && zm[best] >= odds*zm[cur]) {
			cur = best
		}
		for k := i; k < j; k++ {
			sc.add(event{v: rows[k].T - first, row: &rows[k]}, ds.ZoneID[cur])
		}
		i = j
	}
	var r Result
	sc.fill(&r)
	return r
}

// TestWalkOracleBound prints, per walk setting (five seeds each, as
// TestWalkSeedMeans), the accuracy and flips of oracleGrid at several
// odds: the frontier no algorithm can pass on these recordings. Only with
// RTLS_WALKS=1; it asserts nothing.
func TestWalkOracleBound(t *testing.T) {
	if os.Getenv("RTLS_WALKS") == "" {
		t.Skip("set RTLS_WALKS=1 to print the oracle bound of the synthetic walks")
	}
	for _, s := range walkSettings {
		for _, odds := range []float64{1, 3, 10, 30} {
			var acc, flips float64
			for _, seed := range s.seeds {
				w := s.w
				w.seed = seed
				r := oracleWalk(t, w, odds)
				acc += r.Accuracy() / float64(len(s.seeds))
				flips += r.FlipsPerMin() / float64(len(s.seeds))
			}
			t.Logf("walk %s, true law and positions, odds %g: %.1f%% / %.2f flips/min", s.name, odds, 100*acc, flips)
		}
	}
}

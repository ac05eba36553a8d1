package replay

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// synthLaw is the radio law testdata/synth.py draws its readings from:
// p0 - 10 n log10(max(d, 0.5 m)) + the tag's offset + N(0, sig), not
// reported under floor, lost with probability 1-hear.
type synthLaw struct{ p0, n, sig, floor, hear float64 }

// oracleMotion is how fast the oracle's belief spreads: cell edge in
// metres and how many 3 x 3 neighbour steps a second. {1, 1} is grid's
// own (1 m cells, one step a second); {0.5, 2} spreads half as far.
type oracleMotion struct {
	cell  float64
	steps int
}

// synthOracle is a Bayes filter over square cells of a synth.py
// recording (map units are metres, gateways placed in site.json) that
// knows the law and, with knowOffset, each test beacon's offset (the
// mean residual of its readings against the law at the recorded true
// positions). Each reading is folded in as it comes, each gateway not
// heard in a whole second adds its "not heard" term at the end of that
// second, and the belief spreads by motion each second; it reports the
// zone holding most of the belief, changing when another holds odds
// times as much. It is the bound a causal tracker with the engine's
// information could reach at that motion model (docs/performance.md,
// "What the generated recordings allow").
func synthOracle(t *testing.T, dir string, law synthLaw, mo oracleMotion, knowOffset bool, odds float64) Result {
	t.Helper()
	ds, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var site struct {
		Map   struct{ Width, Height float64 }
		Zones []struct {
			Name           string
			X1, Y1, X2, Y2 float64
		}
		Gateways []struct {
			ID   string
			X, Y *float64
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "site.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &site); err != nil {
		t.Fatal(err)
	}
	cw, ch := int(math.Round(site.Map.Width/mo.cell)), int(math.Round(site.Map.Height/mo.cell))
	nc := cw * ch
	zoneOf := make([]int, nc)
	cx, cy := make([]float64, nc), make([]float64, nc)
	for k := range nc {
		cx[k], cy[k] = (float64(k%cw)+0.5)*mo.cell, (float64(k/cw)+0.5)*mo.cell
		for zi, z := range site.Zones {
			if cx[k] >= z.X1 && cx[k] < z.X2 && cy[k] >= z.Y1 && cy[k] < z.Y2 {
				zoneOf[k] = zi
			}
		}
	}
	gi := map[string]int{}
	mu := make([][]float64, len(site.Gateways))
	at := func(g int, x, y float64) float64 {
		gw := site.Gateways[g]
		return law.p0 - 10*law.n*math.Log10(math.Max(0.5, math.Hypot(*gw.X-x, *gw.Y-y)))
	}
	for g, gw := range site.Gateways {
		if gw.X == nil || gw.Y == nil {
			t.Skipf("%s: gateway %s is not placed; the oracle needs every position", dir, gw.ID)
		}
		gi[gw.ID] = g
		mu[g] = make([]float64, nc)
		for k := range nc {
			mu[g][k] = at(g, cx[k], cy[k])
		}
	}
	off := map[string]float64{}
	if knowOffset {
		n := map[string]float64{}
		for _, r := range ds.Test {
			var x, y float64
			if _, err := fmt.Sscanf(r.Pos, "%g,%g", &x, &y); err != nil {
				t.Fatalf("%s: row without a true position (%q)", dir, r.Pos)
			}
			off[r.Beacon] += float64(r.RSSI) - at(gi[r.Gateway], x, y)
			n[r.Beacon]++
		}
		for b := range off {
			off[b] /= n[b]
		}
	}
	Phi := func(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }
	spread := func(bel, tmp []float64) {
		for k := range nc {
			x, y := k%cw, k/cw
			var s, ws float64
			for dy := -1; dy <= 1; dy++ {
				for dx := -1; dx <= 1; dx++ {
					if x+dx < 0 || y+dy < 0 || x+dx >= cw || y+dy >= ch {
						continue
					}
					w := 1.0 // grid's own neighbour weights
					switch {
					case dx != 0 && dy != 0:
						w = 0.35
					case dx != 0 || dy != 0:
						w = 0.6
					}
					s += w * bel[(y+dy)*cw+x+dx]
					ws += w
				}
			}
			tmp[k] = s / ws
		}
		copy(bel, tmp)
	}
	type state struct {
		bel, tmp []float64
		heard    []bool
		second   int64
		cur      int
	}
	states := map[string]*state{}
	rows := append([]Row(nil), ds.Test...)
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].T < rows[j].T })
	t0 := rows[0].T
	sc := newScorer(ds, 5*time.Second, 60*time.Second)
	zm := make([]float64, len(site.Zones))
	for i := range rows {
		r := &rows[i]
		o := off[r.Beacon]
		s := states[r.Beacon]
		if s == nil {
			s = &state{bel: make([]float64, nc), tmp: make([]float64, nc), heard: make([]bool, len(mu)), second: (r.T - t0) / 1000, cur: -1}
			for k := range s.bel {
				s.bel[k] = 1 / float64(nc)
			}
			states[r.Beacon] = s
		}
		for ; s.second < (r.T-t0)/1000; s.second++ {
			for g, h := range s.heard {
				if !h {
					for k := range nc {
						p := Phi((law.floor - mu[g][k] - o) / law.sig)
						s.bel[k] *= p + (1-p)*(1-law.hear)
					}
				}
				s.heard[g] = false
			}
			var tot float64
			for _, v := range s.bel {
				tot += v
			}
			for k := range s.bel {
				s.bel[k] = s.bel[k]/tot + 1e-12
			}
			for range mo.steps {
				spread(s.bel, s.tmp)
			}
		}
		g := gi[r.Gateway]
		s.heard[g] = true
		var tot float64
		for k := range nc {
			z := (float64(r.RSSI) - mu[g][k] - o) / law.sig
			s.bel[k] *= math.Exp(-0.5 * z * z)
			tot += s.bel[k]
		}
		clear(zm)
		for k := range nc {
			s.bel[k] /= tot
			zm[zoneOf[k]] += s.bel[k]
		}
		best := 0
		for z := range zm {
			if zm[z] > zm[best] {
				best = z
			}
		}
		if s.cur < 0 || best != s.cur && zm[best] >= odds*zm[s.cur] {
			s.cur = best
		}
		sc.add(event{v: r.T - t0, row: r}, ds.ZoneID[site.Zones[s.cur].Name])
	}
	var res Result
	sc.fill(&res)
	return res
}

// TestSynthOracleBound prints the oracle's accuracy and flips on the
// synth.py recordings named by RTLS_ORACLE (directories, comma
// separated) at the engine's SwitchOdds (10) and 30, with grid's motion
// and a slower one, knowing each tag's offset and not (it then takes
// the law's 0 dB). RTLS_ORACLE_LAW overrides synth.py's law
// ("p0,n,sig,floor,hear"; for --phear P recordings the last is P).
// Asserts only that the oracle beats chance; it is a measuring tool.
func TestSynthOracleBound(t *testing.T) {
	dirs := os.Getenv("RTLS_ORACLE")
	if dirs == "" {
		t.Skip("set RTLS_ORACLE=DIR[,DIR...] (synth.py recordings) to print the oracle bound")
	}
	law := synthLaw{p0: -59, n: 2.2, sig: 4, floor: -100, hear: 0.9}
	if v := os.Getenv("RTLS_ORACLE_LAW"); v != "" {
		f := strings.Split(v, ",")
		if len(f) != 5 {
			t.Fatalf("RTLS_ORACLE_LAW %q: want p0,n,sig,floor,hear", v)
		}
		ps := []*float64{&law.p0, &law.n, &law.sig, &law.floor, &law.hear}
		for i, s := range f {
			x, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("RTLS_ORACLE_LAW %q: %v", v, err)
			}
			*ps[i] = x
		}
	}
	for _, dir := range strings.Split(dirs, ",") {
		for _, mo := range []oracleMotion{{1, 1}, {0.5, 2}} {
			for _, known := range []bool{true, false} {
				for _, odds := range []float64{10, 30} {
					r := synthOracle(t, dir, law, mo, known, odds)
					t.Logf("%s cell %.1f m x %d steps/s, offset known %v, odds %g: %.1f%% / %.2f flips/min",
						filepath.Base(dir), mo.cell, mo.steps, known, odds, 100*r.Accuracy(), r.FlipsPerMin())
					if r.Accuracy() < 0.2 {
						t.Errorf("%s: the oracle scored %.1f%%: the law or the file is not synth.py's", dir, 100*r.Accuracy())
					}
				}
			}
		}
	}
}

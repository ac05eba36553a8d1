package replay

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFilterLeadsOnNoisyWalk: on a walk that only moves between adjacent
// zones (16 zones of 10 m, 12 unplaced gateways at random points, 6 dB
// noise, 30% of readings missed, stays of 20-40 s), the adjacency filter
// must beat the memoryless algorithms clearly; this is the case it exists
// for.
func TestFilterLeadsOnNoisyWalk(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(11, 12))
	const n = 4
	var zones, adj, gws []string
	for r := 0; r < n; r++ {
		for c := 0; c < n; c++ {
			zones = append(zones, fmt.Sprintf(`{"name":"Z%d%d","x1":%d,"y1":%d,"x2":%d,"y2":%d}`, c, r, 100*c, 100*r, 100*c+100, 100*r+100))
			if c > 0 {
				adj = append(adj, fmt.Sprintf(`["Z%d%d","Z%d%d"]`, c-1, r, c, r))
			}
			if r > 0 {
				adj = append(adj, fmt.Sprintf(`["Z%d%d","Z%d%d"]`, c, r-1, c, r))
			}
		}
	}
	type pt struct{ x, y float64 }
	var gp []pt
	for i := 0; i < 12; i++ {
		p := pt{rng.Float64() * 400, rng.Float64() * 400}
		gp = append(gp, p)
		gws = append(gws, fmt.Sprintf(`{"id":"G%d","x":null,"y":null}`, i))
	}
	site := `{"map":{"width":400,"height":400},"zones":[` + strings.Join(zones, ",") + `],"adjacency":[` + strings.Join(adj, ",") + `],"gateways":[` + strings.Join(gws, ",") + `]}`
	writeFile(t, filepath.Join(dir, "site.json"), site)
	emit := func(b *strings.Builder, ts int64, x, y float64) {
		c, r := int(x/100), int(y/100)
		for i, g := range gp {
			d := math.Max(math.Hypot(g.x-x, g.y-y)/10, 0.5)
			rssi := -59 - 25*math.Log10(d) + rng.NormFloat64()*6
			if rssi < -90 || rng.Float64() < 0.3 {
				continue
			}
			fmt.Fprintf(b, "%d,G%d,TAG,%d,Z%d%d,%.0f,%.0f\n", ts, i, int(math.Round(rssi)), c, r, x, y)
		}
	}
	var tr strings.Builder
	tr.WriteString("t_ms,gateway,beacon,rssi,zone,x,y\n")
	ts := int64(1_700_000_000_000)
	for r := 0; r < n; r++ {
		for c := 0; c < n; c++ {
			for s := 0; s < 30; s++ {
				emit(&tr, ts, float64(100*c)+5+rng.Float64()*90, float64(100*r)+5+rng.Float64()*90)
				ts += 1000
			}
		}
	}
	var te strings.Builder
	te.WriteString("t_ms,gateway,beacon,rssi,zone,x,y\n")
	x, y := 50.0, 50.0
	for leg := 0; leg < 40; leg++ {
		c, r := int(x/100), int(y/100)
		// pick an adjacent zone, walk there at 1.4 m/s, stay 20-40 s
		nc, nr := c, r
		for nc == c && nr == r || nc < 0 || nr < 0 || nc >= n || nr >= n {
			nc, nr = c, r
			if rng.IntN(2) == 0 {
				nc += rng.IntN(3) - 1
			} else {
				nr += rng.IntN(3) - 1
			}
		}
		tx, ty := float64(100*nc)+10+rng.Float64()*80, float64(100*nr)+10+rng.Float64()*80
		for math.Hypot(tx-x, ty-y) > 14 {
			d := math.Hypot(tx-x, ty-y)
			x, y = x+(tx-x)/d*14, y+(ty-y)/d*14
			emit(&te, ts, x, y)
			ts += 1000
		}
		for s := 0; s < 20+rng.IntN(20); s++ {
			emit(&te, ts, x+rng.NormFloat64()*3, y+rng.NormFloat64()*3)
			ts += 1000
		}
	}
	writeFile(t, filepath.Join(dir, "train.csv"), tr.String())
	writeFile(t, filepath.Join(dir, "test.csv"), te.String())
	ds, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := Run(ds, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	Format(&b, rs)
	t.Log("\n" + b.String())
	acc := map[string]float64{}
	for _, r := range rs {
		acc[r.Algorithm] = r.Accuracy()
	}
	for _, other := range []string{"strongest", "centroid", "knn"} {
		if acc["hmm"] <= acc[other]+0.03 {
			t.Fatalf("filter %.3f does not lead %s %.3f on a walk of adjacent moves", acc["hmm"], other, acc[other])
		}
	}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

package replay

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"beaconhub/appliance/rtls"
)

// walkedSet is a Dataset whose train rows are beacons walking at random:
// each second a step of variance v m² along each axis, recorded every
// every seconds (two gateways hear each position), in map units of 10
// a metre.
func walkedSet(beacons, seconds, every int, v float64, seed uint64) *Dataset {
	ds := &Dataset{Site: rtls.Site{Maps: []rtls.Map{{ID: 1, PixelsPerMeter: 10}}}}
	rng := rand.New(rand.NewPCG(seed, seed+1))
	for b := range beacons {
		x, y := 0.0, 0.0
		for s := range seconds {
			x += rng.NormFloat64() * math.Sqrt(v)
			y += rng.NormFloat64() * math.Sqrt(v)
			if s%every != 0 {
				continue
			}
			pos := fmt.Sprintf("%.2f,%.2f", 10*x, 10*y)
			for _, g := range []string{"G1", "G2"} {
				ds.Train = append(ds.Train, Row{T: int64(1000*s + 37*b), Gateway: g, Beacon: fmt.Sprint("B", b), RSSI: -70, Zone: "Z", Pos: pos})
			}
		}
	}
	return ds
}

// TestMotionOfARandomWalk: on a walk that is the random walk grid's
// prediction assumes, Motion gives back its variance a second.
func TestMotionOfARandomWalk(t *testing.T) {
	for _, v := range []float64{0.1, 0.3} {
		d, lag, pairs, ok := walkedSet(4, 3600, 1, v, 1).Motion()
		t.Logf("walk of %.2f m²/s: %.3f (lag %d s, %d pairs)", v, d, lag, pairs)
		if !ok || d < 0.95*v || d > 1.15*v {
			t.Errorf("walk of %.2f m²/s measured %.3f (ok %v)", v, d, ok)
		}
	}
}

// TestMotionBounds: a walk faster than one neighbour step a second
// gives grid's default; a beacon that barely moves still lets the
// belief follow it at an eighth of it.
func TestMotionBounds(t *testing.T) {
	if d, _, _, ok := walkedSet(2, 600, 1, 2, 2).Motion(); !ok || d != rtls.MaxDiffusion {
		t.Errorf("fast walk: %v %v, want %v", d, ok, rtls.MaxDiffusion)
	}
	if d, _, _, ok := walkedSet(2, 600, 1, 0.0001, 3).Motion(); !ok || d != rtls.MaxDiffusion/8 {
		t.Errorf("still beacon: %v %v, want %v", d, ok, rtls.MaxDiffusion/8)
	}
}

// TestMotionNeedsAWalk: without positions, with positions a minute
// apart (a clock in minutes, a survey of still points) or jumping about
// faster than anyone walks, nothing is measured and grid keeps its
// default.
func TestMotionNeedsAWalk(t *testing.T) {
	noPos := walkedSet(2, 600, 1, 0.2, 4)
	for i := range noPos.Train {
		noPos.Train[i].Pos = ","
	}
	short := walkedSet(1, 225, 1, 0.2, 6) // 205 pairs 20 s apart, 195 30 s apart
	// A survey at a random point of a 10 m room every second.
	jumps := walkedSet(2, 600, 1, 0.2, 7)
	rng := rand.New(rand.NewPCG(8, 9))
	for i := 0; i < len(jumps.Train); i += 2 {
		pos := fmt.Sprintf("%.1f,%.1f", 100*rng.Float64(), 100*rng.Float64())
		jumps.Train[i].Pos, jumps.Train[i+1].Pos = pos, pos
	}
	// A walk with one position out of place (x = 1e300).
	outlier := walkedSet(2, 600, 1, 0.2, 10)
	outlier.Train[100].Pos = "1e300,0"
	for name, ds := range map[string]*Dataset{"no positions": noPos, "a minute apart": walkedSet(4, 7200, 60, 0.2, 5), "too short": short,
		"random points": jumps, "an outlier": outlier} {
		if d, _, _, ok := ds.Motion(); ok {
			t.Errorf("%s: measured %v", name, d)
		}
		// Said when it was a walk by its pairs but too fast; nothing
		// to say of a file that is no walk at all.
		why := ds.MotionRefused()
		if fast := name == "random points" || name == "an outlier"; fast != strings.Contains(why, "faster than anyone walks") {
			t.Errorf("%s: refusal %q", name, why)
		}
	}
}

// TestMotionTakesTheLargestLag: a tag that walks 3 m at 0.3 m/s, stands
// 5 s, walks back and stands 5 s spreads most at lags of 10-20 s;
// Motion gives the largest spread a second over the lags, not the one
// of a second (which sees mostly standing) nor of 30 s. A blank ("nan")
// position is no position.
func TestMotionTakesTheLargestLag(t *testing.T) {
	ds := &Dataset{Site: rtls.Site{Maps: []rtls.Map{{ID: 1, PixelsPerMeter: 10}}}}
	var xs []float64
	for s := range 1800 {
		x := 0.0
		switch c := s % 30; {
		case c < 10:
			x = 0.3 * float64(c)
		case c < 15:
			x = 3
		case c < 25:
			x = 0.3 * float64(25-c)
		}
		xs = append(xs, x)
		pos := fmt.Sprintf("%.1f,0", 10*x)
		if s%97 == 0 {
			pos = "nan,nan"
		}
		ds.Train = append(ds.Train, Row{T: int64(1000 * s), Gateway: "G1", Beacon: "B", Pos: pos})
	}
	per := map[int64]float64{}
	for _, lag := range motionLags {
		var sum float64
		n := 0
		for s := 0; s+int(lag) < len(xs); s++ {
			if s%97 == 0 || (s+int(lag))%97 == 0 {
				continue
			}
			dx := xs[s+int(lag)] - xs[s]
			sum += dx * dx / 2
			n++
		}
		per[lag] = sum / float64(n) / float64(lag)
	}
	d, lag, _, ok := ds.Motion()
	t.Logf("per lag %v: measured %v at %d s", per, d, lag)
	if !ok || math.Abs(d-per[lag]) > 1e-9 || d != slices.Max(slices.Collect(maps.Values(per))) {
		t.Fatalf("measured %v at lag %d (ok %v), per lag %v", d, lag, ok, per)
	}
	if per[1] > d/2 || per[30] > d/2 || d >= rtls.MaxDiffusion || d <= rtls.MaxDiffusion/8 {
		t.Fatalf("the lags do not differ enough to test anything: %v", per)
	}
}

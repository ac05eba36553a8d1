package replay

import (
	"fmt"
	"os"
	"testing"

	"beaconhub/appliance/rtls"
)

// TestWalkTable prints every algorithm's score on the three synthetic
// walks of docs/performance.md (A, B, C). It only runs with
// RTLS_WALKS=1: it asserts nothing, it reproduces the documented figures
// (go test -run WalkTable -v ./appliance/rtls/replay/ with RTLS_WALKS=1).
func TestWalkTable(t *testing.T) {
	if os.Getenv("RTLS_WALKS") == "" {
		t.Skip("set RTLS_WALKS=1 to print the synthetic walk table")
	}
	for _, c := range []struct {
		name string
		w    walk
	}{
		{"A", walk{seed: 11, grid: 4, gateways: 12, pathLoss: 2.5, noise: 6, miss: 0.3, legs: 40, stayMin: 20}},
		{"B", walk{seed: 5, grid: 5, gateways: 8, pathLoss: 3, noise: 8, miss: 0.5, legs: 40, stayMin: 10}},
		{"C", walk{seed: 7, grid: 3, gateways: 15, pathLoss: 2, noise: 4, miss: 0.2, legs: 40, stayMin: 30}},
	} {
		evalWalk(t, c.w, c.name)
	}
}

// TestWalkSeedMeans prints each algorithm's mean score over the walk
// settings A, B and C with four fresh seeds each plus the documented one
// (the "seeds 101-104" rows of docs/performance.md), so a change to the
// engine is judged on fifteen recordings, not three. Like TestWalkTable
// it runs only with RTLS_WALKS=1 and asserts nothing.
func TestWalkSeedMeans(t *testing.T) {
	if os.Getenv("RTLS_WALKS") == "" {
		t.Skip("set RTLS_WALKS=1 to print the synthetic walk means")
	}
	for _, s := range walkSettings {
		acc, flips := map[string]float64{}, map[string]float64{}
		var order []string
		for _, seed := range s.seeds {
			w := s.w
			w.seed = seed
			for _, r := range evalWalk(t, w, "") {
				if _, seen := acc[r.Algorithm]; !seen {
					order = append(order, r.Algorithm)
				}
				acc[r.Algorithm] += r.Accuracy() / float64(len(s.seeds))
				flips[r.Algorithm] += r.FlipsPerMin() / float64(len(s.seeds))
			}
		}
		for _, a := range order {
			t.Logf("walk %s, seeds %v: %-9s %.1f%% / %.2f flips/min", s.name, s.seeds, a, 100*acc[a], flips[a])
		}
	}
}

// walkSettings are the three walk settings of docs/performance.md with
// five seeds each: the documented one first, then four fresh ones.
var walkSettings = []struct {
	name  string
	w     walk
	seeds []uint64
}{
	{"A", walk{grid: 4, gateways: 12, pathLoss: 2.5, noise: 6, miss: 0.3, legs: 40, stayMin: 20}, []uint64{11, 101, 102, 103, 104}},
	{"B", walk{grid: 5, gateways: 8, pathLoss: 3, noise: 8, miss: 0.5, legs: 40, stayMin: 10}, []uint64{5, 201, 202, 203, 204}},
	{"C", walk{grid: 3, gateways: 15, pathLoss: 2, noise: 4, miss: 0.2, legs: 40, stayMin: 30}, []uint64{7, 301, 302, 303, 304}},
}

// TestWalkOffsetMeans prints, per walk setting and tag offset, each
// algorithm's mean score over three seeds with the tag offset estimate
// (rtls offset.go) and without it: the test tag is heard offset dB
// louder than the survey tag (docs/performance.md, "Tag offset").
// RTLS_WALKS=1 only; it asserts nothing (TestTagOffsetOnWalk does).
func TestWalkOffsetMeans(t *testing.T) {
	if os.Getenv("RTLS_WALKS") == "" {
		t.Skip("set RTLS_WALKS=1 to print the offset means")
	}
	type score struct{ acc, flips float64 }
	for _, off := range []float64{-8, -4, 4, 8} {
		for _, s := range walkSettings {
			seeds := s.seeds[:3]
			sum := map[string]*[2]score{}
			var order []string
			for _, seed := range seeds {
				w := s.w
				w.seed, w.offset = seed, off
				dir := t.TempDir()
				writeWalk(t, dir, w)
				ds, err := Load(dir)
				if err != nil {
					t.Fatal(err)
				}
				noOffset := rtls.DefaultParams()
				noOffset.OffsetTau = -1
				for k, p := range []rtls.Params{{}, noOffset} {
					rs, err := Run(ds, Options{Params: p})
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range rs {
						if sum[r.Algorithm] == nil {
							sum[r.Algorithm] = &[2]score{}
							order = append(order, r.Algorithm)
						}
						sum[r.Algorithm][k].acc += 100 * r.Accuracy() / float64(len(seeds))
						sum[r.Algorithm][k].flips += r.FlipsPerMin() / float64(len(seeds))
					}
				}
			}
			row := fmt.Sprintf("| %+.0f dB | %s |", off, s.name)
			for _, a := range order {
				v := sum[a]
				row += fmt.Sprintf(" %.1f / %.2f (%.1f / %.2f) |", v[0].acc, v[0].flips, v[1].acc, v[1].flips)
			}
			t.Logf("%s  columns %v, seeds %v; with the estimate (without)", row, order, seeds)
		}
	}
}

// TestWalkRateMeans prints, per walk setting and report rate (scans a
// second, survey and test alike), each algorithm's mean score over
// three seeds (docs/performance.md, "Report rate"). RTLS_WALKS=1 only;
// it asserts nothing (TestFiltersHoldAtFiveReportsASecond does).
func TestWalkRateMeans(t *testing.T) {
	if os.Getenv("RTLS_WALKS") == "" {
		t.Skip("set RTLS_WALKS=1 to print the report rate means")
	}
	logKnobMeans(t, "%d Hz", []int{1, 2, 5, 10}, func(w *walk, v int) { w.rate = v })
}

// TestWalkSpreadMeans prints, per walk setting and spread (ms over which
// each scan's reports arrive, survey and test alike), each algorithm's
// mean score over three seeds (docs/performance.md, "Reports spread over
// the second"). RTLS_WALKS=1 only; it asserts nothing
// (TestSpreadScansKeepTheirEvidence, TestSpreadScanDecidesAsOne do).
func TestWalkSpreadMeans(t *testing.T) {
	if os.Getenv("RTLS_WALKS") == "" {
		t.Skip("set RTLS_WALKS=1 to print the spread means")
	}
	logKnobMeans(t, "%d ms", []int{0, 20, 100, 1000}, func(w *walk, v int) { w.spread = v })
}

// TestWalkPlacedMeans prints, per walk setting, each algorithm's mean
// score over three seeds with the gateways' positions withheld (0) and
// given in site.json (1) (docs/performance.md, "Placed gateways").
// RTLS_WALKS=1 only; it asserts nothing.
func TestWalkPlacedMeans(t *testing.T) {
	if os.Getenv("RTLS_WALKS") == "" {
		t.Skip("set RTLS_WALKS=1 to print the placed-gateway means")
	}
	logKnobMeans(t, "placed %d", []int{0, 1}, func(w *walk, v int) { w.placed = v == 1 })
}

// TestWalkUnitsMeans prints, per walk setting, each algorithm's mean
// score over three seeds with the same walks drawn in decimetres (10
// map units a metre, as A, B, C), metres (1) and centimetres (100)
// (docs/performance.md, "Map units"). RTLS_WALKS=1 only; it asserts
// nothing (TestWalkInMetres does).
func TestWalkUnitsMeans(t *testing.T) {
	if os.Getenv("RTLS_WALKS") == "" {
		t.Skip("set RTLS_WALKS=1 to print the map-unit means")
	}
	logKnobMeans(t, "%d/m", []int{10, 1, 100}, func(w *walk, v int) { w.units = float64(v) })
}

// TestWalkSkipMeans prints, per walk setting, each algorithm's mean
// score over three seeds with the gateways placed and the survey
// leaving out the last 0, 2 or 4 zones (docs/performance.md,
// "Unsurveyed zones"). RTLS_WALKS=1 only; it asserts nothing
// (TestUnsurveyedZones does).
func TestWalkSkipMeans(t *testing.T) {
	if os.Getenv("RTLS_WALKS") == "" {
		t.Skip("set RTLS_WALKS=1 to print the unsurveyed-zone means")
	}
	logKnobMeans(t, "skip %d", []int{0, 2, 4}, func(w *walk, v int) { w.placed, w.skip = true, v })
}

// logKnobMeans logs, for each value of one walk knob (set) and each walk
// setting, a table row of every algorithm's mean accuracy / flips per
// minute over the setting's first three seeds; label formats the value.
func logKnobMeans(t *testing.T, label string, values []int, set func(*walk, int)) {
	for _, v := range values {
		for _, s := range walkSettings {
			seeds := s.seeds[:3]
			acc, flips := map[string]float64{}, map[string]float64{}
			var order []string
			for _, seed := range seeds {
				w := s.w
				w.seed = seed
				set(&w, v)
				for _, r := range evalWalk(t, w, "") {
					if _, seen := acc[r.Algorithm]; !seen {
						order = append(order, r.Algorithm)
					}
					acc[r.Algorithm] += 100 * r.Accuracy() / float64(len(seeds))
					flips[r.Algorithm] += r.FlipsPerMin() / float64(len(seeds))
				}
			}
			row := fmt.Sprintf("| "+label+" | %s |", v, s.name)
			for _, a := range order {
				row += fmt.Sprintf(" %.1f / %.2f |", acc[a], flips[a])
			}
			t.Logf("%s  columns %v, seeds %v", row, order, seeds)
		}
	}
}

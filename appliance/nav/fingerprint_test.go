package nav

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestModelJSONGolden pins the spec's field names and types: the app
// parses this file, so a renamed field breaks every phone.
func TestModelJSONGolden(t *testing.T) {
	at := time.UnixMilli(1700000000123)
	m := BuildModel(4, []Scan{
		{X: 10, Y: 20, RSSI: map[string]float64{"ble:AABBCCDDEEFF": -70.4, "wifi:001122334455": -55}},
	}, 3, -100, at)
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"version":1,"generated_at":1700000000123,"floor_id":4,"k":3,"missing_rssi":-100,` +
		`"features":["ble:AABBCCDDEEFF","wifi:001122334455"],` +
		`"samples":[{"x":10,"y":20,"features":{"ble:AABBCCDDEEFF":-70,"wifi:001122334455":-55}}]}`
	if string(data) != want {
		t.Fatalf("model JSON\n got %s\nwant %s", data, want)
	}
	empty, _ := json.Marshal(BuildModel(4, nil, 3, -100, at))
	if string(empty) != `{"version":1,"generated_at":1700000000123,"floor_id":4,"k":3,"missing_rssi":-100,"features":[],"samples":[]}` {
		t.Fatalf("empty model %s", empty)
	}
}

func TestBuildModelAggregatesRepeatedScans(t *testing.T) {
	scans := []Scan{
		{X: 5, Y: 5, RSSI: map[string]float64{"ble:A": -60, "ble:B": -80}},
		{X: 5, Y: 5, RSSI: map[string]float64{"ble:A": -62}},
		{X: 5, Y: 5, RSSI: map[string]float64{"ble:A": -90, "ble:C": -85}},
		{X: 5, Y: 5, RSSI: map[string]float64{"ble:A": -61}},
		{X: 1, Y: 9, RSSI: map[string]float64{"ble:C": -70}},
	}
	m := BuildModel(1, scans, 3, -100, time.Time{})
	if len(m.Samples) != 2 || m.Samples[0].X != 1 || m.Samples[1].X != 5 {
		t.Fatalf("samples %+v", m.Samples)
	}
	// A: median of -60 -62 -90 -61 is -61.5, rounded half away from zero;
	// B and C were heard in 1 of 4 scans: strays, dropped.
	got := m.Samples[1].Features
	if len(got) != 1 || got["ble:A"] != -62 {
		t.Fatalf("aggregated features %v", got)
	}
	if fmt.Sprint(m.Features) != "[ble:A ble:C]" {
		t.Fatalf("features %v", m.Features)
	}
	// Same scans in another order: the same model.
	rev := []Scan{scans[4], scans[3], scans[2], scans[1], scans[0]}
	a, _ := json.Marshal(m)
	b, _ := json.Marshal(BuildModel(1, rev, 3, -100, time.Time{}))
	if string(a) != string(b) {
		t.Fatalf("order changed the model:\n%s\n%s", a, b)
	}
}

func TestLocateKnownAnswer(t *testing.T) {
	m := BuildModel(1, []Scan{
		{X: 0, Y: 0, RSSI: map[string]float64{"ble:A": -50, "ble:B": -90}},
		{X: 10, Y: 0, RSSI: map[string]float64{"ble:A": -70, "ble:B": -70}},
		{X: 20, Y: 0, RSSI: map[string]float64{"ble:A": -90, "ble:B": -50}},
	}, 1, -100, time.Time{})
	l := m.Compile()
	x, y, ok := l.Locate(map[string]float64{"ble:A": -71, "ble:B": -69, "ble:unknown": -40}, -1)
	if !ok || x != 10 || y != 0 {
		t.Fatalf("k=1 locate (%v, %v, %v)", x, y, ok)
	}
	// k=2 with equal distances averages the two neighbours.
	m.K = 2
	x, _, _ = m.Compile().Locate(map[string]float64{"ble:A": -80, "ble:B": -60}, -1)
	if math.Abs(x-15) > 1e-9 {
		t.Fatalf("k=2 x = %v, want 15", x)
	}
	// Leave-one-out with k=1: each end is located at the middle (error
	// 10), the middle at an end (error 10).
	m.K = 1
	if s := EvaluateLOO(m); s.N != 3 || s.Mean != 10 || s.P50 != 10 || s.P90 != 10 {
		t.Fatalf("loo %+v", s)
	}
	if s := EvaluateLOO(BuildModel(1, m.scansForTest()[:1], 1, -100, time.Time{})); s.N != 0 {
		t.Fatalf("one-sample loo %+v", s)
	}
}

func (m Model) scansForTest() []Scan {
	out := make([]Scan, len(m.Samples))
	for i, s := range m.Samples {
		r := map[string]float64{}
		for f, v := range s.Features {
			r[f] = float64(v)
		}
		out[i] = Scan{X: s.X, Y: s.Y, RSSI: r}
	}
	return out
}

// syntheticFloor is a 12 x 12 survey grid (spacing 10) with eight beacons
// following a clean log-distance path-loss model.
func syntheticFloor() []Scan {
	beacons := [][2]float64{{0, 0}, {110, 0}, {0, 110}, {110, 110}, {55, 0}, {0, 55}, {110, 55}, {55, 110}}
	var scans []Scan
	for i := 0; i < 12; i++ {
		for j := 0; j < 12; j++ {
			x, y := float64(i*10), float64(j*10)
			r := map[string]float64{}
			for b, p := range beacons {
				d := math.Hypot(x-p[0], y-p[1])
				r[fmt.Sprintf("ble:%012X", b)] = -40 - 20*math.Log10(1+d)
			}
			scans = append(scans, Scan{X: x, Y: y, RSSI: r})
		}
	}
	return scans
}

// TestEvaluateLOOSeparatesGoodFromShuffled: on a clean path-loss floor a
// point is placed within about one grid spacing; with fingerprints
// shuffled across positions the same code is no better than guessing.
func TestEvaluateLOOSeparatesGoodFromShuffled(t *testing.T) {
	scans := syntheticFloor()
	clean := EvaluateLOO(BuildModel(1, scans, 3, -100, time.Time{}))
	if clean.N != 144 || clean.Mean > 10 || clean.P90 > 15 {
		t.Fatalf("clean floor loo %+v", clean)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	shuffled := append([]Scan(nil), scans...)
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i].RSSI, shuffled[j].RSSI = shuffled[j].RSSI, shuffled[i].RSSI })
	bad := EvaluateLOO(BuildModel(1, shuffled, 3, -100, time.Time{}))
	if bad.Mean < 3*clean.Mean || bad.Mean < 30 {
		t.Fatalf("shuffled floor loo %+v vs clean %+v", bad, clean)
	}
	t.Logf("loo mean: clean %.1f, shuffled %.1f", clean.Mean, bad.Mean)
	m := BuildModel(1, scans, 3, -100, time.Time{})
	if test, base := Evaluate(m, scans), CentroidBaseline(m, scans); test.Mean > 5 || base.Mean < 40 {
		t.Fatalf("resubstitution %+v, centroid %+v", test, base)
	}
}

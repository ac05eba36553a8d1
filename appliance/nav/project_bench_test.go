package nav

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"beaconhub/store"
)

// Survey density of the payload benchmark: a point every 3 m over each
// 100 m x 50 m floor (34 x 17 = 578 points), two scans per point, from 30
// access points and 40 BLE beacons per floor, each heard when its
// path-loss RSSI is above -95 dBm (~20 wifi and ~12 BLE per scan).
const (
	surveyStep      = 3
	scansPerPoint   = 2
	apsPerFloor     = 30
	beaconsPerFloor = 40
)

func surveyFloor(r *rand.Rand, floor uint64) []store.SurveySample {
	type tx struct {
		mac  string
		wifi bool
		x, y float64
	}
	var txs []tx
	for i := 0; i < apsPerFloor+beaconsPerFloor; i++ {
		txs = append(txs, tx{fmt.Sprintf("%04X%08X", floor, i), i < apsPerFloor, r.Float64() * 100, r.Float64() * 50})
	}
	var out []store.SurveySample
	for x := 0; x < 100; x += surveyStep {
		for y := 0; y < 50; y += surveyStep {
			for s := 0; s < scansPerPoint; s++ {
				sm := store.SurveySample{FloorID: floor, X: float64(x), Y: float64(y), Device: store.SurveyDevice{Model: "Pixel 8", OS: "Android 15"}}
				for _, t := range txs {
					rssi := int(math.Round(-40 - 25*math.Log10(1+math.Hypot(t.x-float64(x), t.y-float64(y))) + r.NormFloat64()*3))
					if rssi < -95 {
						continue
					}
					o := store.SurveyObs{MAC: t.mac, RSSI: rssi}
					if t.wifi {
						sm.WiFi = append(sm.WiFi, o)
					} else {
						sm.BLE = append(sm.BLE, o)
					}
				}
				out = append(out, sm)
			}
		}
	}
	return out
}

// BenchmarkProject50k: the mobile project payload of the 10-floor,
// 50,000-node building with a fingerprint model per floor. "cold" is the
// first build after a survey change (models rebuilt from the stored
// samples), "warm" every later one (models cached); the baselines read the
// same records and json.Marshal them raw, without and with the survey.
// Run: go test -run '^$' -bench Project50k -cpu 2 ./appliance/nav/
func BenchmarkProject50k(b *testing.B) {
	db, err := store.Open(filepath.Join(b.TempDir(), "nav.db"), store.OpenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s, err := New(db, nil)
	if err != nil {
		b.Fatal(err)
	}
	// A floor's location must exist.
	if err := db.UpdateAssets(time.Now(), func(t *store.AssetTx) error { return t.PutLocation(&store.Location{Name: "Site"}) }); err != nil {
		b.Fatal(err)
	}
	for f := 1; f <= 10; f++ {
		if _, err := s.SaveFloor(store.Floor{Name: fmt.Sprint("L", f), Level: f, LocationID: 1}); err != nil {
			b.Fatal(err)
		}
	}
	bg := building(10, 100, 50)
	for i := range bg.Edges {
		bg.Edges[i].FloorID = 0
	}
	if _, err := s.edit(func(store.NavGraph) (store.NavGraph, error) { return bg, nil }); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 5))
	samples := 0
	for f := uint64(1); f <= 10; f++ {
		sv := surveyFloor(r, f)
		samples += len(sv)
		if _, err := db.AddSurveySamples(f, sv, MaxSurveyPerFloor, time.UnixMilli(1700000000000)); err != nil {
			b.Fatal(err)
		}
	}
	p, _, err := s.Project(1)
	if err != nil {
		b.Fatal(err)
	}
	payload, _ := json.Marshal(map[string]any{"sha": "", "project": p})
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(payload)
	_ = zw.Close()
	b.Logf("%d nodes, %d edges, %d survey samples, %d model points; payload %d bytes, gzip %d bytes",
		len(bg.Nodes), len(bg.Edges), samples, len(p.Floors[0].FingerprintModel.Samples)*10, len(payload), gz.Len())

	build := func(b *testing.B, cold bool) {
		b.ReportAllocs()
		for b.Loop() {
			if cold {
				for f := uint64(1); f <= 10; f++ {
					s.models.drop(f)
				}
			}
			// What the handler does: build, hash, and wrap the same bytes.
			_, data, sha, err := s.ProjectJSON(1)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(map[string]any{"sha": sha, "project": json.RawMessage(data)}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(payload)), "payload-bytes")
	}
	b.Run("cold", func(b *testing.B) { build(b, true) })
	b.Run("warm", func(b *testing.B) { build(b, false) })
	raw := func(b *testing.B, survey bool) {
		b.ReportAllocs()
		for b.Loop() {
			fs, _ := db.ListFloors()
			g, _ := db.AllNavGraph()
			rec := map[string]any{"floors": fs, "nodes": g.Nodes, "edges": g.Edges}
			if survey {
				var all []store.SurveySample
				for f := uint64(1); f <= 10; f++ {
					sv, _, _ := db.SurveySamples(f)
					all = append(all, sv...)
				}
				rec["survey"] = all
			}
			if _, err := json.Marshal(rec); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("baseline-records", func(b *testing.B) { raw(b, false) })
	b.Run("baseline-records+survey", func(b *testing.B) { raw(b, true) })
}

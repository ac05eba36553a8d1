package nav

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkParseSurvey: a full upload (5,000 samples of ~20 wifi and ~12
// BLE observations, ~4.5 MB) through ParseSurvey against a baseline that
// only json.Unmarshals each line, in the same run; and the model build
// from those samples.
// Run: go test -run '^$' -bench 'ParseSurvey|BuildModel' ./appliance/nav/
func BenchmarkParseSurvey(b *testing.B) {
	sv := surveyFloor(rand.New(rand.NewPCG(9, 9)), 1)
	for len(sv) < MaxSurveyUpload {
		sv = append(sv, sv...)
	}
	sv = sv[:MaxSurveyUpload]
	var body bytes.Buffer
	if err := WriteSurvey(&body, sv); err != nil {
		b.Fatal(err)
	}
	data := body.Bytes()
	b.Run("parse", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ParseSurvey(bytes.NewReader(data), 1); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline-unmarshal", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			sc := bufio.NewScanner(bytes.NewReader(data))
			sc.Buffer(make([]byte, 0, 64<<10), MaxSurveyLine)
			for sc.Scan() {
				var l SurveyLine
				if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("build-model", func(b *testing.B) {
		scans := make([]Scan, len(sv))
		for i, s := range sv {
			scans[i] = ScanOf(s)
		}
		b.ReportAllocs()
		for b.Loop() {
			BuildModel(1, scans, DefaultK, DefaultMissingRSSI, time.Time{})
		}
	})
}

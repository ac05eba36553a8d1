package ingest

import (
	"encoding/json"
	"strings"
	"testing"
)

// Figures, `go test -run=^$ -bench=. -benchmem ./appliance/ingest/`, Go 1.26,
// linux/amd64, 2-vCPU VM shared with other builds, so each is the min and
// median of 15 runs of -benchtime=200ms:
//
//	                              ns/op (min / median)   B/op  allocs/op
//	Decode (8 adv4 reports)         806 / 843               0      0
//	DecodeStdlibJSON (same)        6980 / 7525            464     19   ~8.9x slower, and validates nothing
//	Decode, 1 adv1 report           228 / 241               0      0
//	Decode, 8 adv1 reports         1210 / 1249              0      0   16 floats; strconv.ParseFloat is ~20%
//	Decode, 500 adv4 reports      42548 / 46740             0      0
//	Decode, status                  137 / 144               0      0   ip/fw strings cached across messages
//	Decode, 64 KiB bad at the end 82137 / 86883             0      0   worst case a hostile gateway can cause
//	DecodeParallel (2 cores)        409 / 437               0      0
//
// github.com/goccy/go-json v0.12.0 decoding the same payload into the same
// plain struct measured 781 / 999 ns, 176 B, 12 allocs (14 allocs with the
// pointer fields needed to tell null/absent from zero), again with no
// validation at all. It is not benchmarked here because keeping the package
// free of it is worth more than the comparison: the hand-written scanner
// matches it on speed while also validating, and allocates nothing.

// bench8Adv4 is the hot-path shape the budget is stated for: one adv4 publish
// carrying 8 button frames, a mix of presses and heartbeats.
var bench8Adv4 = `{"ts":1732290000123,"is_test":false,"reports":[` +
	`{"mac":"C3000000B001","rssi":-58,"beacon_is_pushed":true,"press":"double"},` +
	`{"mac":"C3000000B002","rssi":-60,"beacon_is_pushed":false,"motion":true},` +
	`{"mac":"c3:00:00:00:b0:03","rssi":-71,"beacon_is_pushed":true,"press":"single","motion":false},` +
	`{"mac":"C3000000B004","rssi":-80,"beacon_is_pushed":false},` +
	`{"mac":"C3000000B005","rssi":-45,"ts":1732290000001,"beacon_is_pushed":true,"press":"long"},` +
	`{"mac":"C3000000B006","rssi":-66,"beacon_is_pushed":false,"motion":false},` +
	`{"mac":"C3-00-00-00-B0-07","rssi":-90,"beacon_is_pushed":true,"press":"triple"},` +
	`{"mac":"C3000000B008","rssi":-52,"beacon_is_pushed":false,"motion":true}` +
	`]}`

func benchDecode(b *testing.B, topic, payload string, wantReports int) {
	p := []byte(payload)
	var m Message
	if !Decode(topic, p, now, &m) || len(m.Reports) != wantReports {
		b.Fatalf("bad benchmark input: %s / %d reports", dropsString(m.Drops), len(m.Reports))
	}
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		Decode(topic, p, now, &m)
	}
}

func BenchmarkDecode(b *testing.B) {
	benchDecode(b, gwTopic+"adv4", bench8Adv4, 8)
}

func BenchmarkDecodeAdv1(b *testing.B) {
	benchDecode(b, contractExamples[0].topic, contractExamples[0].payload, 1)
}

// BenchmarkDecodeAdv1x8 is the float-parsing cost: strconv does the work.
func BenchmarkDecodeAdv1x8(b *testing.B) {
	r := `{"mac":"C30000000A01","rssi":-71,"temperature":4.6,"humidity":61.2,"vbatt":2950}`
	benchDecode(b, gwTopic+"adv1", msg(strings.Repeat(r+",", 7)+r), 8)
}

func BenchmarkDecode500(b *testing.B) {
	r := `{"mac":"C3000000B001","rssi":-58,"beacon_is_pushed":true,"press":"double"}`
	benchDecode(b, gwTopic+"adv4", msg(strings.Repeat(r+",", 499)+r), 500)
}

func BenchmarkDecodeStatus(b *testing.B) {
	benchDecode(b, gwTopic+"status", `{"ts":1732290000123,"ip":"192.0.2.10","fw":"1.4.2","uptime":86400}`, 0)
}

// BenchmarkDecodeNotJSON is the cost of junk: a full-size payload that fails
// at the last byte, the worst a hostile gateway can make us read.
func BenchmarkDecodeNotJSON(b *testing.B) {
	r := `{"mac":"C3000000B001","rssi":-58,"beacon_is_pushed":true,"press":"double","x":[1,{"y":"z"}]},`
	p := []byte(`{"reports":[` + strings.Repeat(r, (MaxPayload-20)/len(r)) + `x]}`)
	var m Message
	Decode(gwTopic+"adv4", p, now, &m) // grow m.Reports outside the timing, as in benchDecode
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		if Decode(gwTopic+"adv4", p, now, &m) {
			b.Fatal("accepted")
		}
	}
}

func BenchmarkDecodeParallel(b *testing.B) {
	p := []byte(bench8Adv4)
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var m Message
		for pb.Next() {
			Decode(gwTopic+"adv4", p, now, &m)
		}
	})
}

// stdMessage is what a straightforward encoding/json decoder would use. The
// baseline only decodes; it does none of the validation Decode does, so the
// ratio understates the difference.
type stdMessage struct {
	TS      int64       `json:"ts"`
	IsTest  bool        `json:"is_test"`
	Reports []stdReport `json:"reports"`
}

type stdReport struct {
	MAC         string  `json:"mac"`
	RSSI        int     `json:"rssi"`
	TS          int64   `json:"ts"`
	Temperature float64 `json:"temperature"`
	Humidity    float64 `json:"humidity"`
	VBatt       int     `json:"vbatt"`
	Interval    int     `json:"interval"`
	Pushed      bool    `json:"beacon_is_pushed"`
	Press       string  `json:"press"`
	Motion      bool    `json:"motion"`
}

func BenchmarkDecodeStdlibJSON(b *testing.B) {
	p := []byte(bench8Adv4)
	var m stdMessage
	if err := json.Unmarshal(p, &m); err != nil || len(m.Reports) != 8 {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		// Reuse the target like Decode reuses its Message, to compare like
		// with like; encoding/json keeps the slice's backing array.
		m.Reports = m.Reports[:0]
		if err := json.Unmarshal(p, &m); err != nil {
			b.Fatal(err)
		}
	}
}

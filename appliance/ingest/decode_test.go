package ingest

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// now is the receive time used throughout; contract example timestamps are
// within a few minutes of it so the skew rule keeps them.
const now int64 = 1732290000000

const gwTopic = "gw/AC233FA0B1C2/"

var gwMAC = MAC{0xAC, 0x23, 0x3F, 0xA0, 0xB1, 0xC2}

func decodeStr(topic, payload string) (*Message, bool) {
	var m Message
	ok := Decode(topic, []byte(payload), now, &m)
	return &m, ok
}

// msg wraps report objects into a payload.
func msg(reports ...string) string {
	return `{"reports":[` + strings.Join(reports, ",") + `]}`
}

func mustMAC(s string) MAC {
	m, ok := ParseMAC(s)
	if !ok {
		panic("bad test MAC " + s)
	}
	return m
}

func dropsString(ds []Drop) string {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "%s@%d ", d.Reason, d.Index)
	}
	return strings.TrimSpace(b.String())
}

func TestParseMAC(t *testing.T) {
	want := MAC{0xC3, 0x00, 0x00, 0x00, 0x0A, 0x01}
	good := []string{
		"C30000000A01",
		"c30000000a01",
		"C3:00:00:00:0A:01",
		"c3:00:00:00:0a:01",
		"C3-00-00-00-0A-01",
		"c3-00-00-00-0A-01",
	}
	for _, s := range good {
		got, ok := ParseMAC(s)
		if !ok || got != want {
			t.Errorf("ParseMAC(%q) = %v, %v; want %v, true", s, got, ok, want)
		}
		if got.String() != "C30000000A01" {
			t.Errorf("ParseMAC(%q).String() = %q", s, got.String())
		}
	}
	bad := []string{
		"",
		"C30000000A0",          // 11 digits
		"C30000000A011",        // 13 digits
		"C30000000A0G",         // non-hex
		"C3:00:00:00:0A:0",     // short with separators
		"C3:00-00:00:0A:01",    // mixed separators
		"C3.00.00.00.0A.01",    // other separator
		"C3:00:00:00:0A:01:",   // trailing separator
		"C300:00:00:0A:01",     // partial separators
		"C3::00:00:00:0A:01",   // double separator
		" C30000000A01",        // whitespace
		"C30000000A01\x00",     // NUL
		"C3:00:00:00:0A:0\xff", // high byte
		"0xC30000000A01",
		"C3 00 00 00 0A 01",
		"C300.0000.0A01",
		"ｃ30000000A01", // full-width letter
	}
	for _, s := range bad {
		if got, ok := ParseMAC(s); ok {
			t.Errorf("ParseMAC(%q) = %v, true; want false", s, got)
		}
	}
	if s := (MAC{0xAB, 0xCD, 0xEF, 0x01, 0x23, 0x45}).String(); s != "ABCDEF012345" {
		t.Errorf("String = %q", s)
	}
}

func TestStringers(t *testing.T) {
	kinds := map[Kind]string{KindUnknown: "unknown", KindAdv1: "adv1", KindSData: "sData", KindAdv4: "adv4", KindAdv8: "adv8", KindStatus: "status", 99: "unknown"}
	for k, s := range kinds {
		if k.String() != s {
			t.Errorf("Kind(%d).String() = %q, want %q", k, k.String(), s)
		}
		if k != KindUnknown && k != 99 && parseKind(s) != k {
			t.Errorf("parseKind(%q) != %v", s, k)
		}
	}
	presses := map[Press]string{PressNone: "none", PressSingle: "single", PressDouble: "double", PressTriple: "triple", PressLong: "long", 42: "none"}
	for p, s := range presses {
		if p.String() != s {
			t.Errorf("Press(%d).String() = %q, want %q", p, p.String(), s)
		}
	}

	// Drop reason names are metric labels: all distinct, snake_case, and
	// the ones the brief names must exist with exactly these spellings.
	snake := regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)
	seen := map[string]bool{}
	for _, r := range DropReasons() {
		s := r.String()
		if !snake.MatchString(s) || s == "invalid" {
			t.Errorf("reason %d has label %q", r, s)
		}
		if seen[s] {
			t.Errorf("duplicate label %q", s)
		}
		seen[s] = true
	}
	for _, s := range []string{"bad_topic", "unknown_kind", "bad_gateway_mac", "too_large", "not_json", "no_reports", "too_many_reports", "bad_mac", "bad_rssi", "bad_value", "bad_press", "bad_status", "bad_report", "missing_field"} {
		if !seen[s] {
			t.Errorf("missing reason %q", s)
		}
	}
	if len(seen) != 14 {
		t.Errorf("%d reasons; update this test and the docs when adding one", len(seen))
	}
	if DropReason(0).String() != "invalid" || DropReason(200).String() != "invalid" {
		t.Error("out-of-range DropReason must not index past the table")
	}
}

// contractExamples are the examples section of gateway-mqtt.md verbatim.
var contractExamples = []struct {
	topic, payload string
	want           []Report
}{
	{
		"gw/AC233FA0B1C2/adv1", `{"ts":1732290000123,"reports":[{"mac":"C3:00:00:00:0A:01","rssi":-71,"temperature":4.6,"humidity":61.2,"vbatt":2950}]}`,
		[]Report{{MAC: mustMAC("C30000000A01"), RSSI: -71, TS: 1732290000123, Has: HasTemperature | HasHumidity | HasVBatt | HasTS, Temperature: 4.6, Humidity: 61.2, VBatt: 2950}},
	},
	{
		"gw/AC233FA0B1C2/adv4", `{"reports":[{"mac":"c3000000b001","rssi":-58,"beacon_is_pushed":true,"press":"double"}]}`,
		[]Report{{MAC: mustMAC("C3000000B001"), RSSI: -58, TS: now, Pushed: true, Press: PressDouble}},
	},
	{
		"gw/AC233FA0B1C2/adv4", `{"reports":[{"mac":"C3000000B001","rssi":-60,"beacon_is_pushed":false,"motion":true}]}`,
		[]Report{{MAC: mustMAC("C3000000B001"), RSSI: -60, TS: now, Has: HasMotion, Motion: true}},
	},
	{
		"gw/AC233FA0B1C2/adv8", `{"reports":[{"mac":"C3000000B001","rssi":-62,"vbatt":2710}]}`,
		[]Report{{MAC: mustMAC("C3000000B001"), RSSI: -62, TS: now, Has: HasVBatt, VBatt: 2710}},
	},
	{
		"gw/AC233FA0B1C2/sData", `{"reports":[{"mac":"F1D0000000A7","rssi":-80,"temperature":-18.4,"interval":120}]}`,
		[]Report{{MAC: mustMAC("F1D0000000A7"), RSSI: -80, TS: now, Has: HasTemperature | HasInterval, Temperature: -18.4, Interval: 120}},
	},
}

func TestDecodeContractExamples(t *testing.T) {
	for _, ex := range contractExamples {
		m, ok := decodeStr(ex.topic, ex.payload)
		if !ok || len(m.Drops) != 0 {
			t.Errorf("%s %s: ok=%v drops=%s", ex.topic, ex.payload, ok, dropsString(m.Drops))
			continue
		}
		if m.Gateway != gwMAC || m.Gateway.String() != "AC233FA0B1C2" {
			t.Errorf("%s: gateway %v", ex.topic, m.Gateway)
		}
		if m.Kind.String() != ex.topic[len(gwTopic):] {
			t.Errorf("%s: kind %v", ex.topic, m.Kind)
		}
		if !reflect.DeepEqual(m.Reports, ex.want) {
			t.Errorf("%s %s:\n got %+v\nwant %+v", ex.topic, ex.payload, m.Reports, ex.want)
		}
	}
	// The payload example in the contract, with its placeholder field.
	m, ok := decodeStr(gwTopic+"adv1", `{
  "ts": 1732290000123,
  "is_test": false,
  "reports": [
    {"mac": "C30000000A01", "rssi": -67, "...kind fields...": 0}
  ]
}`)
	if !ok || len(m.Reports) != 1 || m.Reports[0].RSSI != -67 || m.Reports[0].Has != HasTS || m.TS != 1732290000123 {
		t.Errorf("contract payload example: ok=%v %+v drops=%s", ok, m.Reports, dropsString(m.Drops))
	}
}

func TestDecodeTopic(t *testing.T) {
	good := msg(`{"mac":"C30000000A01","rssi":-60,"vbatt":3000}`)
	tests := []struct {
		topic  string
		reason DropReason // 0: accepted
		gw     MAC
		kind   Kind
	}{
		{"gw/AC233FA0B1C2/adv8", 0, gwMAC, KindAdv8},
		{"gw/ac233fa0b1c2/adv8", 0, gwMAC, KindAdv8},
		{"gw/Ac233fA0b1C2/adv8", 0, gwMAC, KindAdv8},
		{"gw/AC233FA0B1C2/adv9", DropUnknownKind, gwMAC, KindUnknown},
		{"gw/AC233FA0B1C2/sdata", DropUnknownKind, gwMAC, KindUnknown},
		{"gw/AC233FA0B1C2/ADV8", DropUnknownKind, gwMAC, KindUnknown},
		{"gw/AC233FA0B1C2/", DropUnknownKind, gwMAC, KindUnknown},
		{"gw/AC233FA0B1C2/test", DropUnknownKind, gwMAC, KindUnknown},
		{"gw/AC233FA0B1C2/adv8/x", DropBadTopic, MAC{}, KindUnknown},
		{"gw/AC233FA0B1C2/adv8/", DropBadTopic, MAC{}, KindUnknown},
		{"gw/AC233FA0B1C2", DropBadTopic, MAC{}, KindUnknown},
		{"gw/", DropBadTopic, MAC{}, KindUnknown},
		{"gw", DropBadTopic, MAC{}, KindUnknown},
		{"", DropBadTopic, MAC{}, KindUnknown},
		{"/gw/AC233FA0B1C2/adv8", DropBadTopic, MAC{}, KindUnknown},
		{"GW/AC233FA0B1C2/adv8", DropBadTopic, MAC{}, KindUnknown},
		{"gateway/AC233FA0B1C2/adv8", DropBadTopic, MAC{}, KindUnknown},
		{"gw/AC:23:3F:A0:B1:C2/adv8", DropBadGatewayMAC, MAC{}, KindUnknown},
		{"gw/AC-23-3F-A0-B1-C2/adv8", DropBadGatewayMAC, MAC{}, KindUnknown},
		{"gw/AC233FA0B1C/adv8", DropBadGatewayMAC, MAC{}, KindUnknown},
		{"gw/AC233FA0B1CZ/adv8", DropBadGatewayMAC, MAC{}, KindUnknown},
		{"gw//adv8", DropBadGatewayMAC, MAC{}, KindUnknown},
		{"gw/AC233FA0B1CZ/bogus", DropBadGatewayMAC, MAC{}, KindUnknown},
	}
	for _, tt := range tests {
		m, ok := decodeStr(tt.topic, good)
		if tt.reason == 0 {
			if !ok || len(m.Reports) != 1 {
				t.Errorf("%q: ok=%v drops=%s", tt.topic, ok, dropsString(m.Drops))
			}
		} else if r, dropped := m.Dropped(); ok || !dropped || r != tt.reason {
			t.Errorf("%q: ok=%v drops=%s, want %s@-1", tt.topic, ok, dropsString(m.Drops), tt.reason)
		}
		if m.Gateway != tt.gw || m.Kind != tt.kind {
			t.Errorf("%q: gateway %v kind %v, want %v %v", tt.topic, m.Gateway, m.Kind, tt.gw, tt.kind)
		}
		if !ok && (len(m.Reports) != 0 || m.TS != now) {
			t.Errorf("%q: dropped message has reports %v / ts %d", tt.topic, m.Reports, m.TS)
		}
	}
}

func TestDecodeMessageDrops(t *testing.T) {
	r := `{"mac":"C30000000A01","rssi":-60}`
	many := func(n int) string {
		rs := make([]string, n)
		for i := range rs {
			rs[i] = r
		}
		return msg(rs...)
	}
	tests := []struct {
		name    string
		kind    string
		payload string
		reason  DropReason // 0: accepted
	}{
		// Size.
		{"exactly 64 KiB", "adv1", msg(r) + strings.Repeat(" ", MaxPayload-len(msg(r))), 0},
		{"one byte over", "adv1", msg(r) + strings.Repeat(" ", MaxPayload-len(msg(r))+1), DropTooLarge},
		{"huge garbage", "adv1", strings.Repeat("x", 1<<20), DropTooLarge},
		{"size checked for status too", "status", `{"fw":"1"}` + strings.Repeat(" ", MaxPayload), DropTooLarge},

		// JSON syntax and shape.
		{"empty", "adv1", ``, DropNotJSON},
		{"whitespace only", "adv1", " \n\t\r", DropNotJSON},
		{"array", "adv1", `[` + r + `]`, DropNotJSON},
		{"string", "adv1", `"reports"`, DropNotJSON},
		{"null", "adv1", `null`, DropNotJSON},
		{"number", "adv1", `1`, DropNotJSON},
		{"unterminated", "adv1", `{"reports":[` + r, DropNotJSON},
		{"trailing garbage", "adv1", msg(r) + `x`, DropNotJSON},
		{"two objects", "adv1", msg(r) + msg(r), DropNotJSON},
		{"trailing comma in array", "adv1", `{"reports":[` + r + `,]}`, DropNotJSON},
		{"trailing comma in object", "adv1", `{"reports":[` + r + `],}`, DropNotJSON},
		{"trailing comma in report", "adv1", msg(`{"mac":"C30000000A01","rssi":-60,}`), DropNotJSON},
		{"single quotes", "adv1", `{'reports':[]}`, DropNotJSON},
		{"unquoted key", "adv1", `{reports:[` + r + `]}`, DropNotJSON},
		{"comment", "adv1", `{/*c*/"reports":[` + r + `]}`, DropNotJSON},
		{"BOM", "adv1", "\uFEFF" + msg(r), DropNotJSON},
		{"NaN", "adv1", msg(`{"mac":"C30000000A01","rssi":-60,"temperature":NaN}`), DropNotJSON},
		{"Infinity", "adv1", msg(`{"mac":"C30000000A01","rssi":-60,"temperature":-Infinity}`), DropNotJSON},
		{"leading zero", "adv1", msg(`{"mac":"C30000000A01","rssi":-060}`), DropNotJSON},
		{"leading plus", "adv1", msg(`{"mac":"C30000000A01","rssi":+0}`), DropNotJSON},
		{"bare dot", "adv1", msg(`{"mac":"C30000000A01","rssi":-60,"temperature":.5}`), DropNotJSON},
		{"dangling dot", "adv1", msg(`{"mac":"C30000000A01","rssi":-60,"temperature":5.}`), DropNotJSON},
		{"dangling exponent", "adv1", msg(`{"mac":"C30000000A01","rssi":-60,"temperature":5e}`), DropNotJSON},
		{"hex number", "adv1", msg(`{"mac":"C30000000A01","rssi":-0x3c}`), DropNotJSON},
		{"raw control char in string", "adv1", msg(`{"mac":"C30000000A01` + "\n" + `","rssi":-60}`), DropNotJSON},
		{"bad escape", "adv1", msg(`{"mac":"C3\x0000000A01","rssi":-60}`), DropNotJSON},
		{"short unicode escape", "adv1", msg(`{"mac":"\u00C","rssi":-60}`), DropNotJSON},
		{"truncated literal", "adv1", msg(`{"mac":"C30000000A01","rssi":-60,"x":tru}`), DropNotJSON},
		{"capitalised literal", "adv1", msg(`{"mac":"C30000000A01","rssi":-60,"x":True}`), DropNotJSON},
		{"literal with suffix", "adv1", msg(`{"mac":"C30000000A01","rssi":-60,"x":nullx}`), DropNotJSON},
		{"missing colon", "adv1", `{"reports" [` + r + `]}`, DropNotJSON},
		{"missing comma", "adv1", msg(`{"mac":"C30000000A01" "rssi":-60}`), DropNotJSON},
		{"bad nested unknown", "adv1", msg(`{"mac":"C30000000A01","rssi":-60,"x":{"a":[1,}]}}`), DropNotJSON},
		{"mismatched brackets", "adv1", msg(`{"mac":"C30000000A01","rssi":-60,"x":[1}`), DropNotJSON},
		{"bad JSON after 500 reports", "adv1", `{"reports":[` + strings.Repeat(r+",", 600) + `x]}`, DropNotJSON},
		{"not_json outranks bad ts", "adv1", `{"ts":"x","reports":[` + r + `]`, DropNotJSON},
		{"status not json", "status", `{"ip":}`, DropNotJSON},
		{"invalid JSON beats status", "status", `{"ip":"nope"} {}`, DropNotJSON},

		// reports.
		{"no reports field", "adv1", `{"ts":1732290000123}`, DropNoReports},
		{"empty object", "adv1", `{}`, DropNoReports},
		{"reports null", "adv1", `{"reports":null}`, DropNoReports},
		{"reports empty", "adv1", `{"reports":[]}`, DropNoReports},
		{"reports empty with ws", "adv1", `{"reports":[ ]}`, DropNoReports},
		{"reports object", "adv1", `{"reports":{}}`, DropBadValue},
		{"reports string", "adv1", `{"reports":"x"}`, DropBadValue},
		{"reports number", "adv1", `{"reports":5}`, DropBadValue},
		{"Reports is a different field", "adv1", `{"Reports":[` + r + `]}`, DropNoReports},
		{"500 reports", "adv1", many(500), 0},
		{"501 reports", "adv1", many(501), DropTooManyReports},
		{"501 junk elements", "adv1", `{"reports":[` + strings.Repeat("1,", 500) + `1]}`, DropTooManyReports},
		{"last reports wins (empty)", "adv1", `{"reports":[` + r + `],"reports":[]}`, DropNoReports},
		{"last reports wins (type)", "adv1", `{"reports":[` + r + `],"reports":7}`, DropBadValue},

		// Message-level field types.
		// A ts that is no integer is not trusted (TestUntrustedTSIsReceiveTime).
		{"ts string", "adv1", `{"ts":"1732290000123","reports":[` + r + `]}`, 0},
		{"ts fraction", "adv1", `{"ts":1.5,"reports":[` + r + `]}`, 0},
		{"ts exponent", "adv1", `{"ts":1e3,"reports":[` + r + `]}`, 0},
		{"ts integral float", "adv1", `{"ts":1732290000123.0,"reports":[` + r + `]}`, 0},
		{"ts overflow", "adv1", `{"ts":9223372036854775808,"reports":[` + r + `]}`, 0},
		{"ts bool", "adv1", `{"ts":true,"reports":[` + r + `]}`, 0},
		{"ts array", "adv1", `{"reports":[` + r + `],"ts":[]}`, 0},
		{"ts null is absent", "adv1", `{"ts":null,"reports":[` + r + `]}`, 0},
		{"is_test string", "adv1", `{"is_test":"true","reports":[` + r + `]}`, DropBadValue},
		{"is_test number", "adv1", `{"is_test":1,"reports":[` + r + `]}`, DropBadValue},
		{"is_test null", "adv1", `{"is_test":null,"reports":[` + r + `]}`, 0},
		{"a bad ts drops nothing: no reports is the reason", "adv1", `{"ts":"x"}`, DropNoReports},
		{"unknown message fields ignored", "adv1", `{"fw_extra":{"a":[1,2,{"b":null}]},"seq":-1.5e-3,"reports":[` + r + `],"z":"\u00e9"}`, 0},
	}
	for _, tt := range tests {
		m, ok := decodeStr(gwTopic+tt.kind, tt.payload)
		if tt.reason == 0 {
			if !ok {
				t.Errorf("%s: dropped: %s", tt.name, dropsString(m.Drops))
			}
			continue
		}
		if r, dropped := m.Dropped(); ok || !dropped || r != tt.reason {
			t.Errorf("%s: ok=%v drops=%s, want %s@-1", tt.name, ok, dropsString(m.Drops), tt.reason)
		}
		if len(m.Reports) != 0 || m.Gateway != gwMAC {
			t.Errorf("%s: dropped message kept %d reports, gateway %v", tt.name, len(m.Reports), m.Gateway)
		}
	}
}

// TestDecodeReports covers every per-report rule: each case is one report in
// a message of its kind, expected either to decode to want or to be dropped
// with reason.
func TestDecodeReports(t *testing.T) {
	mac := mustMAC("C30000000A01")
	base := Report{MAC: mac, RSSI: -60, TS: now}
	with := func(f func(*Report)) Report {
		r := base
		f(&r)
		return r
	}
	tests := []struct {
		name   string
		kind   string
		report string
		want   Report
		reason DropReason
	}{
		// mac.
		{"mac plain", "adv8", `{"mac":"C30000000A01","rssi":-60,"vbatt":1}`, with(func(r *Report) { r.VBatt, r.Has = 1, HasVBatt }), 0},
		{"mac lower", "adv8", `{"mac":"c30000000a01","rssi":-60,"vbatt":1}`, with(func(r *Report) { r.VBatt, r.Has = 1, HasVBatt }), 0},
		{"mac colons", "adv8", `{"mac":"c3:00:00:00:0a:01","rssi":-60,"vbatt":1}`, with(func(r *Report) { r.VBatt, r.Has = 1, HasVBatt }), 0},
		{"mac dashes", "adv8", `{"mac":"C3-00-00-00-0A-01","rssi":-60,"vbatt":1}`, with(func(r *Report) { r.VBatt, r.Has = 1, HasVBatt }), 0},
		{"mac escaped", "adv8", `{"mac":"C3\u003a00:00:00:0A:01","rssi":-60,"vbatt":1}`, with(func(r *Report) { r.VBatt, r.Has = 1, HasVBatt }), 0},
		{"key escaped", "adv8", `{"m\u0061c":"C30000000A01","rssi":-60,"vbatt":1}`, with(func(r *Report) { r.VBatt, r.Has = 1, HasVBatt }), 0},
		{"mac missing", "adv8", `{"rssi":-60,"vbatt":1}`, Report{}, DropBadMAC},
		{"mac null", "adv8", `{"mac":null,"rssi":-60,"vbatt":1}`, Report{}, DropBadMAC},
		{"mac number", "adv8", `{"mac":1,"rssi":-60,"vbatt":1}`, Report{}, DropBadMAC},
		{"mac object", "adv8", `{"mac":{},"rssi":-60,"vbatt":1}`, Report{}, DropBadMAC},
		{"mac short", "adv8", `{"mac":"C30000000A0","rssi":-60,"vbatt":1}`, Report{}, DropBadMAC},
		{"mac mixed separators", "adv8", `{"mac":"C3:00-00:00:0A:01","rssi":-60,"vbatt":1}`, Report{}, DropBadMAC},
		{"mac non-hex", "adv8", `{"mac":"C30000000A0Z","rssi":-60,"vbatt":1}`, Report{}, DropBadMAC},
		{"mac empty", "adv8", `{"mac":"","rssi":-60,"vbatt":1}`, Report{}, DropBadMAC},
		{"mac long escaped", "adv8", `{"mac":"` + strings.Repeat(`\u0041`, 40) + `","rssi":-60,"vbatt":1}`, Report{}, DropBadMAC},
		{"MAC key is unknown", "adv8", `{"MAC":"C30000000A01","rssi":-60,"vbatt":1}`, Report{}, DropBadMAC},
		{"bad mac outranks bad rssi", "adv8", `{"mac":"x","rssi":"x","vbatt":1}`, Report{}, DropBadMAC},

		// rssi.
		{"rssi -127", "adv8", `{"mac":"C30000000A01","rssi":-127,"vbatt":1}`, with(func(r *Report) { r.RSSI, r.VBatt, r.Has = -127, 1, HasVBatt }), 0},
		{"rssi 0", "adv8", `{"mac":"C30000000A01","rssi":0,"vbatt":1}`, with(func(r *Report) { r.RSSI, r.VBatt, r.Has = 0, 1, HasVBatt }), 0},
		{"rssi -0", "adv8", `{"mac":"C30000000A01","rssi":-0,"vbatt":1}`, with(func(r *Report) { r.RSSI, r.VBatt, r.Has = 0, 1, HasVBatt }), 0},
		{"rssi -128", "adv8", `{"mac":"C30000000A01","rssi":-128,"vbatt":1}`, Report{}, DropBadRSSI},
		{"rssi 1", "adv8", `{"mac":"C30000000A01","rssi":1,"vbatt":1}`, Report{}, DropBadRSSI},
		{"rssi missing", "adv8", `{"mac":"C30000000A01","vbatt":1}`, Report{}, DropBadRSSI},
		{"rssi null", "adv8", `{"mac":"C30000000A01","rssi":null,"vbatt":1}`, Report{}, DropBadRSSI},
		{"rssi string", "adv8", `{"mac":"C30000000A01","rssi":"x","vbatt":1}`, Report{}, DropBadRSSI},
		{"rssi numeric string", "adv8", `{"mac":"C30000000A01","rssi":"-60","vbatt":1}`, Report{}, DropBadRSSI},
		{"rssi fraction", "adv8", `{"mac":"C30000000A01","rssi":-60.5,"vbatt":1}`, Report{}, DropBadRSSI},
		{"rssi integral float", "adv8", `{"mac":"C30000000A01","rssi":-60.0,"vbatt":1}`, Report{}, DropBadRSSI},
		{"rssi exponent", "adv8", `{"mac":"C30000000A01","rssi":-6e1,"vbatt":1}`, Report{}, DropBadRSSI},
		{"rssi huge", "adv8", `{"mac":"C30000000A01","rssi":-99999999999999999999999,"vbatt":1}`, Report{}, DropBadRSSI},
		{"rssi int8 wrap", "adv8", `{"mac":"C30000000A01","rssi":-256,"vbatt":1}`, Report{}, DropBadRSSI},
		{"rssi bool", "adv8", `{"mac":"C30000000A01","rssi":true,"vbatt":1}`, Report{}, DropBadRSSI},

		// ts (values; the skew rule has its own test).
		{"ts string", "adv8", `{"mac":"C30000000A01","rssi":-60,"ts":"1","vbatt":1}`, with(func(r *Report) { r.VBatt, r.Has = 1, HasVBatt }), 0},
		{"ts fraction", "adv8", `{"mac":"C30000000A01","rssi":-60,"ts":1.5,"vbatt":1}`, with(func(r *Report) { r.VBatt, r.Has = 1, HasVBatt }), 0},
		{"ts overflow", "adv8", `{"mac":"C30000000A01","rssi":-60,"ts":-9223372036854775809,"vbatt":1}`, with(func(r *Report) { r.VBatt, r.Has = 1, HasVBatt }), 0},
		{"ts min int64 is far away", "adv8", `{"mac":"C30000000A01","rssi":-60,"ts":-9223372036854775808,"vbatt":1}`, with(func(r *Report) { r.VBatt, r.Has = 1, HasVBatt }), 0},
		{"ts null", "adv8", `{"mac":"C30000000A01","rssi":-60,"ts":null,"vbatt":1}`, with(func(r *Report) { r.VBatt, r.Has = 1, HasVBatt }), 0},
		{"a bad ts drops nothing: bad vbatt does", "adv8", `{"mac":"C30000000A01","rssi":-60,"ts":"x","vbatt":"x"}`, Report{}, DropBadValue},

		// adv1.
		{"adv1 bare", "adv1", `{"mac":"C30000000A01","rssi":-60}`, base, 0},
		{"adv1 all", "adv1", `{"mac":"C30000000A01","rssi":-60,"temperature":-60,"humidity":100,"vbatt":5000}`,
			with(func(r *Report) {
				r.Temperature, r.Humidity, r.VBatt, r.Has = -60, 100, 5000, HasTemperature|HasHumidity|HasVBatt
			}), 0},
		{"adv1 zero values are present", "adv1", `{"mac":"C30000000A01","rssi":-60,"temperature":0,"humidity":0,"vbatt":0}`,
			with(func(r *Report) { r.Has = HasTemperature | HasHumidity | HasVBatt }), 0},
		{"adv1 temp 150", "adv1", `{"mac":"C30000000A01","rssi":-60,"temperature":150}`, with(func(r *Report) { r.Temperature, r.Has = 150, HasTemperature }), 0},
		{"adv1 temp exponent", "adv1", `{"mac":"C30000000A01","rssi":-60,"temperature":1.5E1}`, with(func(r *Report) { r.Temperature, r.Has = 15, HasTemperature }), 0},
		{"adv1 temp -0.0", "adv1", `{"mac":"C30000000A01","rssi":-60,"temperature":-0.0}`, with(func(r *Report) { r.Temperature, r.Has = float32(math.Copysign(0, -1)), HasTemperature }), 0},
		{"adv1 temp 150.01", "adv1", `{"mac":"C30000000A01","rssi":-60,"temperature":150.01}`, Report{}, DropBadValue},
		{"adv1 temp -60.01", "adv1", `{"mac":"C30000000A01","rssi":-60,"temperature":-60.01}`, Report{}, DropBadValue},
		{"adv1 temp rounds into range", "adv1", `{"mac":"C30000000A01","rssi":-60,"temperature":150.000000001}`, with(func(r *Report) { r.Temperature, r.Has = 150, HasTemperature }), 0},
		{"adv1 temp overflow", "adv1", `{"mac":"C30000000A01","rssi":-60,"temperature":1e999}`, Report{}, DropBadValue},
		{"adv1 temp -overflow", "adv1", `{"mac":"C30000000A01","rssi":-60,"temperature":-1e39}`, Report{}, DropBadValue},
		{"adv1 temp tiny", "adv1", `{"mac":"C30000000A01","rssi":-60,"temperature":1e-999}`, with(func(r *Report) { r.Has = HasTemperature }), 0},
		{"adv1 temp string", "adv1", `{"mac":"C30000000A01","rssi":-60,"temperature":"4.6"}`, Report{}, DropBadValue},
		{"adv1 temp null", "adv1", `{"mac":"C30000000A01","rssi":-60,"temperature":null}`, base, 0},
		{"adv1 humidity -1", "adv1", `{"mac":"C30000000A01","rssi":-60,"humidity":-1}`, Report{}, DropBadValue},
		{"adv1 humidity 100.5", "adv1", `{"mac":"C30000000A01","rssi":-60,"humidity":100.5}`, Report{}, DropBadValue},
		{"adv1 humidity bool", "adv1", `{"mac":"C30000000A01","rssi":-60,"humidity":false}`, Report{}, DropBadValue},
		{"adv1 vbatt 5001", "adv1", `{"mac":"C30000000A01","rssi":-60,"vbatt":5001}`, Report{}, DropBadValue},
		{"adv1 vbatt -1", "adv1", `{"mac":"C30000000A01","rssi":-60,"vbatt":-1}`, Report{}, DropBadValue},
		{"adv1 vbatt float", "adv1", `{"mac":"C30000000A01","rssi":-60,"vbatt":2950.0}`, Report{}, DropBadValue},
		{"adv1 ignores interval", "adv1", `{"mac":"C30000000A01","rssi":-60,"interval":"x"}`, base, 0},
		{"adv1 ignores adv4 fields", "adv1", `{"mac":"C30000000A01","rssi":-60,"beacon_is_pushed":1,"press":2}`, base, 0},

		// sData.
		{"sData bare", "sData", `{"mac":"F1D0000000A7","rssi":-60}`, with(func(r *Report) { r.MAC = mustMAC("F1D0000000A7") }), 0},
		{"sData all", "sData", `{"mac":"C30000000A01","rssi":-60,"temperature":-18.4,"humidity":0.5,"interval":86400}`,
			with(func(r *Report) {
				r.Temperature, r.Humidity, r.Interval, r.Has = -18.4, 0.5, 86400, HasTemperature|HasHumidity|HasInterval
			}), 0},
		{"sData interval 1", "sData", `{"mac":"C30000000A01","rssi":-60,"interval":1}`, with(func(r *Report) { r.Interval, r.Has = 1, HasInterval }), 0},
		{"sData interval 0", "sData", `{"mac":"C30000000A01","rssi":-60,"interval":0}`, Report{}, DropBadValue},
		{"sData interval 86401", "sData", `{"mac":"C30000000A01","rssi":-60,"interval":86401}`, Report{}, DropBadValue},
		{"sData interval float", "sData", `{"mac":"C30000000A01","rssi":-60,"interval":120.5}`, Report{}, DropBadValue},
		{"sData interval string", "sData", `{"mac":"C30000000A01","rssi":-60,"interval":"120"}`, Report{}, DropBadValue},
		{"sData temp 151", "sData", `{"mac":"C30000000A01","rssi":-60,"temperature":151}`, Report{}, DropBadValue},
		{"sData ignores vbatt", "sData", `{"mac":"C30000000A01","rssi":-60,"vbatt":99999}`, base, 0},

		// adv4.
		{"adv4 single", "adv4", `{"mac":"C30000000A01","rssi":-60,"beacon_is_pushed":true,"press":"single"}`, with(func(r *Report) { r.Pushed, r.Press = true, PressSingle }), 0},
		{"adv4 triple", "adv4", `{"mac":"C30000000A01","rssi":-60,"beacon_is_pushed":true,"press":"triple"}`, with(func(r *Report) { r.Pushed, r.Press = true, PressTriple }), 0},
		{"adv4 long + motion", "adv4", `{"mac":"C30000000A01","rssi":-60,"beacon_is_pushed":true,"press":"long","motion":false}`,
			with(func(r *Report) { r.Pushed, r.Press, r.Has = true, PressLong, HasMotion }), 0},
		{"adv4 press escaped", "adv4", `{"mac":"C30000000A01","rssi":-60,"beacon_is_pushed":true,"press":"\u0073ingle"}`, with(func(r *Report) { r.Pushed, r.Press = true, PressSingle }), 0},
		{"adv4 heartbeat", "adv4", `{"mac":"C30000000A01","rssi":-60,"beacon_is_pushed":false}`, base, 0},
		{"adv4 not pushed ignores press", "adv4", `{"mac":"C30000000A01","rssi":-60,"beacon_is_pushed":false,"press":"bogus"}`, base, 0},
		{"adv4 not pushed ignores press type", "adv4", `{"mac":"C30000000A01","rssi":-60,"beacon_is_pushed":false,"press":[1]}`, base, 0},
		{"adv4 pushed missing", "adv4", `{"mac":"C30000000A01","rssi":-60,"press":"single"}`, Report{}, DropMissingField},
		{"adv4 pushed null", "adv4", `{"mac":"C30000000A01","rssi":-60,"beacon_is_pushed":null}`, Report{}, DropMissingField},
		{"adv4 pushed string", "adv4", `{"mac":"C30000000A01","rssi":-60,"beacon_is_pushed":"true","press":"single"}`, Report{}, DropBadValue},
		{"adv4 pushed number", "adv4", `{"mac":"C30000000A01","rssi":-60,"beacon_is_pushed":1,"press":"single"}`, Report{}, DropBadValue},
		{"adv4 press missing", "adv4", `{"mac":"C30000000A01","rssi":-60,"beacon_is_pushed":true}`, Report{}, DropBadPress},
		{"adv4 press null", "adv4", `{"mac":"C30000000A01","rssi":-60,"beacon_is_pushed":true,"press":null}`, Report{}, DropBadPress},
		{"adv4 press bogus", "adv4", `{"mac":"C30000000A01","rssi":-60,"beacon_is_pushed":true,"press":"quadruple"}`, Report{}, DropBadPress},
		{"adv4 press case", "adv4", `{"mac":"C30000000A01","rssi":-60,"beacon_is_pushed":true,"press":"Double"}`, Report{}, DropBadPress},
		{"adv4 press none", "adv4", `{"mac":"C30000000A01","rssi":-60,"beacon_is_pushed":true,"press":"none"}`, Report{}, DropBadPress},
		{"adv4 press number", "adv4", `{"mac":"C30000000A01","rssi":-60,"beacon_is_pushed":true,"press":2}`, Report{}, DropBadPress},
		{"adv4 press long string", "adv4", `{"mac":"C30000000A01","rssi":-60,"beacon_is_pushed":true,"press":"\u0073ingle\u0073"}`, Report{}, DropBadPress},
		{"adv4 motion string", "adv4", `{"mac":"C30000000A01","rssi":-60,"beacon_is_pushed":false,"motion":"yes"}`, Report{}, DropBadValue},
		{"adv4 bad press outranks bad motion", "adv4", `{"mac":"C30000000A01","rssi":-60,"beacon_is_pushed":true,"motion":1}`, Report{}, DropBadPress},

		// adv8.
		{"adv8 vbatt 0", "adv8", `{"mac":"C30000000A01","rssi":-60,"vbatt":0}`, with(func(r *Report) { r.Has = HasVBatt }), 0},
		{"adv8 vbatt 5000", "adv8", `{"mac":"C30000000A01","rssi":-60,"vbatt":5000}`, with(func(r *Report) { r.VBatt, r.Has = 5000, HasVBatt }), 0},
		{"adv8 vbatt missing", "adv8", `{"mac":"C30000000A01","rssi":-60}`, Report{}, DropMissingField},
		{"adv8 vbatt null", "adv8", `{"mac":"C30000000A01","rssi":-60,"vbatt":null}`, Report{}, DropMissingField},
		{"adv8 vbatt 5001", "adv8", `{"mac":"C30000000A01","rssi":-60,"vbatt":5001}`, Report{}, DropBadValue},
		{"adv8 vbatt string", "adv8", `{"mac":"C30000000A01","rssi":-60,"vbatt":"2710"}`, Report{}, DropBadValue},
		{"adv8 vbatt int32 wrap", "adv8", `{"mac":"C30000000A01","rssi":-60,"vbatt":4294967297}`, Report{}, DropBadValue},

		// Generic object handling.
		{"duplicate key last wins", "adv8", `{"mac":"x","rssi":"x","vbatt":1,"mac":"C30000000A01","rssi":-60}`, with(func(r *Report) { r.VBatt, r.Has = 1, HasVBatt }), 0},
		{"duplicate key last wins (bad)", "adv8", `{"mac":"C30000000A01","rssi":-60,"vbatt":1,"rssi":5}`, Report{}, DropBadRSSI},
		{"unknown fields of every type", "adv8", `{"a":1,"b":-2.5e+3,"c":"s\"\\\/\b\f\n\r\t\u1234","d":true,"e":false,"f":null,"g":[],"h":{},"i":[{"j":[[]]}],"mac":"C30000000A01","rssi":-60,"vbatt":1}`,
			with(func(r *Report) { r.VBatt, r.Has = 1, HasVBatt }), 0},
		{"whitespace everywhere", "adv8", " {\n\t\"mac\" :\r \"C30000000A01\" , \"rssi\"\t:\t-60 ,\"vbatt\":1 \n} ", with(func(r *Report) { r.VBatt, r.Has = 1, HasVBatt }), 0},
		{"empty report", "adv8", `{}`, Report{}, DropBadMAC},
		{"report is number", "adv8", `1`, Report{}, DropBadReport},
		{"report is string", "adv8", `"C30000000A01"`, Report{}, DropBadReport},
		{"report is array", "adv8", `["C30000000A01",-60]`, Report{}, DropBadReport},
		{"report is null", "adv8", `null`, Report{}, DropBadReport},
	}
	for _, tt := range tests {
		m, ok := decodeStr(gwTopic+tt.kind, msg(tt.report))
		if !ok {
			t.Errorf("%s: whole message dropped: %s", tt.name, dropsString(m.Drops))
			continue
		}
		if tt.reason != 0 {
			if len(m.Reports) != 0 || len(m.Drops) != 1 || m.Drops[0] != (Drop{tt.reason, 0}) {
				t.Errorf("%s: reports %+v drops %s, want %s@0", tt.name, m.Reports, dropsString(m.Drops), tt.reason)
			}
			continue
		}
		if len(m.Drops) != 0 || len(m.Reports) != 1 {
			t.Errorf("%s: reports %+v drops %s", tt.name, m.Reports, dropsString(m.Drops))
			continue
		}
		got := m.Reports[0]
		// -0 == 0 for floats, so compare bits to see the sign survive.
		if got != tt.want || math.Float32bits(got.Temperature) != math.Float32bits(tt.want.Temperature) {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.name, got, tt.want)
		}
	}
}

func TestDecodeMixedReports(t *testing.T) {
	payload := msg(
		`{"mac":"C30000000A01","rssi":-50,"beacon_is_pushed":true,"press":"single"}`,
		`{"mac":"nope","rssi":-50,"beacon_is_pushed":true,"press":"single"}`,
		`{"mac":"C30000000A02","rssi":-50,"beacon_is_pushed":false,"motion":true}`,
		`{"mac":"C30000000A03","rssi":50,"beacon_is_pushed":false}`,
		`42`,
		`{"mac":"C30000000A04","rssi":-50,"beacon_is_pushed":true}`,
		`{"mac":"C30000000A05","rssi":-50}`,
		`{"mac":"C30000000A06","rssi":-50,"beacon_is_pushed":false,"motion":0}`,
		`{"mac":"c3:00:00:00:0a:07","rssi":-50,"beacon_is_pushed":true,"press":"long"}`,
	)
	m, ok := decodeStr(gwTopic+"adv4", payload)
	if !ok {
		t.Fatalf("dropped: %s", dropsString(m.Drops))
	}
	want := []Report{
		{MAC: mustMAC("C30000000A01"), RSSI: -50, TS: now, Pushed: true, Press: PressSingle},
		{MAC: mustMAC("C30000000A02"), RSSI: -50, TS: now, Has: HasMotion, Motion: true},
		{MAC: mustMAC("C30000000A07"), RSSI: -50, TS: now, Pushed: true, Press: PressLong},
	}
	if !reflect.DeepEqual(m.Reports, want) {
		t.Errorf("reports\n got %+v\nwant %+v", m.Reports, want)
	}
	if got, want := dropsString(m.Drops), "bad_mac@1 bad_rssi@3 bad_report@4 bad_press@5 missing_field@6 bad_value@7"; got != want {
		t.Errorf("drops %q, want %q", got, want)
	}

	// All reports bad is still a well-formed message: true, no reports.
	m, ok = decodeStr(gwTopic+"adv8", msg(`{"mac":"x","rssi":-1}`, `{"mac":"C30000000A01","rssi":-1}`))
	if !ok || len(m.Reports) != 0 || dropsString(m.Drops) != "bad_mac@0 missing_field@1" {
		t.Errorf("all bad: ok=%v reports=%v drops=%s", ok, m.Reports, dropsString(m.Drops))
	}

	// A repeated reports array replaces the first, drops included.
	m, ok = decodeStr(gwTopic+"adv8", `{"reports":[{"mac":"x"},{"mac":"C30000000A01","rssi":-1,"vbatt":1}],"reports":[{"mac":"C30000000A02","rssi":-2,"vbatt":2}]}`)
	if !ok || len(m.Reports) != 1 || m.Reports[0].MAC != mustMAC("C30000000A02") || len(m.Drops) != 0 {
		t.Errorf("repeated reports: ok=%v reports=%+v drops=%s", ok, m.Reports, dropsString(m.Drops))
	}
}

func TestDecodeSkew(t *testing.T) {
	const skew = 5 * 60 * 1000
	tests := []struct {
		name      string
		msgTS     string // JSON value, "" for absent
		reportTS  string
		wantMsg   int64
		wantRepor int64
	}{
		{"none", "", "", now, now},
		{"message exact", fmt.Sprint(now + 123), "", now + 123, now + 123},
		{"message +5min", fmt.Sprint(now + skew), "", now + skew, now + skew},
		{"message -5min", fmt.Sprint(now - skew), "", now - skew, now - skew},
		{"message +5min+1ms", fmt.Sprint(now + skew + 1), "", now, now},
		{"message -5min-1ms", fmt.Sprint(now - skew - 1), "", now, now},
		{"message zero", "0", "", now, now},
		{"message negative", "-1", "", now, now},
		{"message max int64", fmt.Sprint(int64(math.MaxInt64)), "", now, now},
		{"message min int64", fmt.Sprint(int64(math.MinInt64)), "", now, now},
		{"message seconds not ms", fmt.Sprint(now / 1000), "", now, now},
		{"report own", fmt.Sprint(now + 1), fmt.Sprint(now - 2), now + 1, now - 2},
		{"report +5min", "", fmt.Sprint(now + skew), now, now + skew},
		{"report -5min", "", fmt.Sprint(now - skew), now, now - skew},
		{"report +5min+1ms falls back to message", fmt.Sprint(now + 7), fmt.Sprint(now + skew + 1), now + 7, now + 7},
		{"report -5min-1ms falls back to message", fmt.Sprint(now + 7), fmt.Sprint(now - skew - 1), now + 7, now + 7},
		{"report skewed, message skewed", fmt.Sprint(now + skew + 1), fmt.Sprint(now - skew - 1), now, now},
		{"report skew is against now, not message ts", fmt.Sprint(now - skew), fmt.Sprint(now + skew), now - skew, now + skew},
		{"report null", fmt.Sprint(now + 7), "null", now + 7, now + 7},
	}
	for _, tt := range tests {
		report := `{"mac":"C30000000A01","rssi":-60,"vbatt":1`
		if tt.reportTS != "" {
			report += `,"ts":` + tt.reportTS
		}
		report += "}"
		// The message ts goes after the reports in half the runs: firmware
		// does not promise an order.
		for _, tsLast := range []bool{false, true} {
			payload := `{"reports":[` + report + `]}`
			if tt.msgTS != "" {
				if tsLast {
					payload = `{"reports":[` + report + `],"ts":` + tt.msgTS + `}`
				} else {
					payload = `{"ts":` + tt.msgTS + `,"reports":[` + report + `]}`
				}
			}
			m, ok := decodeStr(gwTopic+"adv8", payload)
			if !ok || len(m.Reports) != 1 {
				t.Errorf("%s: ok=%v drops=%s", tt.name, ok, dropsString(m.Drops))
				continue
			}
			if m.TS != tt.wantMsg || m.Reports[0].TS != tt.wantRepor {
				t.Errorf("%s (ts last %v): message ts %d report ts %d, want %d %d", tt.name, tsLast, m.TS, m.Reports[0].TS, tt.wantMsg, tt.wantRepor)
			}
			// HasTS says the ts is the gateway's; none of the private bit.
			want := HasVBatt
			if tt.wantRepor != now {
				want |= HasTS
			}
			if m.Reports[0].Has != want {
				t.Errorf("%s: Has %08b, want %08b", tt.name, m.Reports[0].Has, want)
			}
		}
	}

	// now itself at the extremes must not overflow the comparison.
	for _, n := range []int64{math.MinInt64, math.MaxInt64, 0} {
		var m Message
		p := fmt.Sprintf(`{"ts":%d,"reports":[{"mac":"C30000000A01","rssi":-60,"vbatt":1,"ts":%d}]}`, int64(math.MinInt64), int64(math.MaxInt64))
		if !Decode(gwTopic+"adv8", []byte(p), n, &m) || m.TS != n || m.Reports[0].TS != n {
			t.Errorf("now=%d: ts %d / %+v", n, m.TS, m.Reports)
		}
	}
}

func TestDecodeIsTest(t *testing.T) {
	r := `{"mac":"C30000000A01","rssi":-60,"vbatt":1}`
	for payload, want := range map[string]bool{
		`{"reports":[` + r + `]}`:                                false,
		`{"is_test":false,"reports":[` + r + `]}`:                false,
		`{"is_test":true,"reports":[` + r + `]}`:                 true,
		`{"reports":[` + r + `],"is_test":true}`:                 true,
		`{"is_test":true,"is_test":false,"reports":[` + r + `]}`: false,
	} {
		m, ok := decodeStr(gwTopic+"adv8", payload)
		if !ok || m.IsTest != want {
			t.Errorf("%s: ok=%v is_test=%v", payload, ok, m.IsTest)
		}
	}
	m, ok := decodeStr(gwTopic+"status", `{"is_test":true,"fw":"1"}`)
	if !ok || !m.IsTest {
		t.Errorf("status is_test: ok=%v %v", ok, m.IsTest)
	}
	// A dropped test message is not reported as a test.
	m, ok = decodeStr(gwTopic+"adv8", `{"is_test":true,"reports":[]}`)
	if ok || m.IsTest {
		t.Errorf("dropped: ok=%v is_test=%v", ok, m.IsTest)
	}
}

func TestDecodeStatus(t *testing.T) {
	fw64 := strings.Repeat("f", 64)
	tests := []struct {
		name    string
		payload string
		want    GatewayStatus
		reason  DropReason
	}{
		{"contract", `{"ts":1732290000123,"ip":"192.0.2.10","fw":"1.4.2","uptime":86400}`, GatewayStatus{TS: 1732290000123, IP: "192.0.2.10", FW: "1.4.2", Uptime: 86400}, 0},
		{"empty", `{}`, GatewayStatus{TS: now}, 0},
		{"nulls", `{"ts":null,"ip":null,"fw":null,"uptime":null}`, GatewayStatus{TS: now}, 0},
		{"ipv6", `{"ip":"2001:db8::1"}`, GatewayStatus{TS: now, IP: "2001:db8::1"}, 0},
		{"ip escaped", `{"ip":"192.0.2.1\u0030"}`, GatewayStatus{TS: now, IP: "192.0.2.10"}, 0},
		{"skewed ts", `{"ts":1,"uptime":0}`, GatewayStatus{TS: now}, 0},
		{"reports ignored", `{"reports":"whatever","fw":"x"}`, GatewayStatus{TS: now, FW: "x"}, 0},
		{"unknown fields ignored", `{"fw":"2","mem":{"free":1}}`, GatewayStatus{TS: now, FW: "2"}, 0},
		{"fw empty", `{"fw":""}`, GatewayStatus{TS: now}, 0},
		{"fw 64", `{"fw":"` + fw64 + `"}`, GatewayStatus{TS: now, FW: fw64}, 0},
		{"fw unicode", `{"fw":"v1-\u00e9\ud83d\ude00"}`, GatewayStatus{TS: now, FW: "v1-é😀"}, 0},
		{"fw invalid utf8 is replaced", "{\"fw\":\"a\xffb\"}", GatewayStatus{TS: now, FW: "a\uFFFDb"}, 0},
		{"fw lone surrogate is replaced", `{"fw":"\ud800x"}`, GatewayStatus{TS: now, FW: "\uFFFDx"}, 0},
		{"fw escapes", `{"fw":"a\b\f\n\r\t\"\\\/\u0041\u00e9"}`, GatewayStatus{TS: now, FW: "a\b\f\n\r\t\"\\/Aé"}, 0},
		{"fw 65", `{"fw":"` + fw64 + `f"}`, GatewayStatus{}, DropBadStatus},
		{"fw 60 + 4-byte rune", `{"fw":"` + fw64[4:] + `\ud83d\ude00"}`, GatewayStatus{TS: now, FW: fw64[4:] + "😀"}, 0},
		{"fw 61 + 4-byte rune", `{"fw":"` + fw64[3:] + `😀"}`, GatewayStatus{}, DropBadStatus},
		{"fw 65 + 4-byte runes", `{"fw":"` + fw64 + `f😀😀"}`, GatewayStatus{}, DropBadStatus},
		{"fw 63 + 2-byte rune", `{"fw":"` + fw64[1:] + `é"}`, GatewayStatus{}, DropBadStatus},
		{"fw number", `{"fw":1.4}`, GatewayStatus{}, DropBadStatus},
		{"ip bad", `{"ip":"192.0.2.300"}`, GatewayStatus{}, DropBadStatus},
		{"ip empty", `{"ip":""}`, GatewayStatus{}, DropBadStatus},
		{"ip hostname", `{"ip":"gateway.local"}`, GatewayStatus{}, DropBadStatus},
		{"ip with port", `{"ip":"192.0.2.10:80"}`, GatewayStatus{}, DropBadStatus},
		{"ip number", `{"ip":3221225994}`, GatewayStatus{}, DropBadStatus},
		{"ip too long", `{"ip":"fe80::1%` + strings.Repeat("e", 70) + `"}`, GatewayStatus{}, DropBadStatus},
		{"uptime negative", `{"uptime":-1}`, GatewayStatus{}, DropBadStatus},
		{"uptime float", `{"uptime":1.5}`, GatewayStatus{}, DropBadStatus},
		{"uptime string", `{"uptime":"86400"}`, GatewayStatus{}, DropBadStatus},
		{"uptime overflow", `{"uptime":9223372036854775808}`, GatewayStatus{}, DropBadStatus},
		{"ts bad is not trusted", `{"ts":"x","fw":"1"}`, GatewayStatus{TS: now, FW: "1"}, 0},
		{"not an object", `["fw"]`, GatewayStatus{}, DropNotJSON},
	}
	for _, tt := range tests {
		m, ok := decodeStr(gwTopic+"status", tt.payload)
		if tt.reason != 0 {
			if r, dropped := m.Dropped(); ok || !dropped || r != tt.reason || m.Status != (GatewayStatus{}) {
				t.Errorf("%s: ok=%v drops=%s status=%+v, want %s@-1", tt.name, ok, dropsString(m.Drops), m.Status, tt.reason)
			}
			continue
		}
		if !ok || m.Status != tt.want || len(m.Reports) != 0 || len(m.Drops) != 0 || m.Kind != KindStatus {
			t.Errorf("%s: ok=%v drops=%s\n got %+v\nwant %+v", tt.name, ok, dropsString(m.Drops), m.Status, tt.want)
		}
	}
}

// TestDecodeReuse checks that nothing leaks from one message to the next
// through a reused Message, including the status string cache.
func TestDecodeReuse(t *testing.T) {
	var m Message
	steps := []struct {
		topic, payload string
		check          func(*Message) bool
	}{
		{gwTopic + "status", `{"ip":"192.0.2.10","fw":"1.4.2","uptime":5}`, func(m *Message) bool {
			return m.Status == GatewayStatus{TS: now, IP: "192.0.2.10", FW: "1.4.2", Uptime: 5}
		}},
		{gwTopic + "status", `{"ip":"192.0.2.10"}`, func(m *Message) bool { return m.Status == GatewayStatus{TS: now, IP: "192.0.2.10"} }},
		{gwTopic + "status", `{"fw":"1.4.2"}`, func(m *Message) bool { return m.Status == GatewayStatus{TS: now, FW: "1.4.2"} }},
		{gwTopic + "status", `{"ip":""}`, func(m *Message) bool { return m.Status == GatewayStatus{} && len(m.Drops) == 1 }},
		{gwTopic + "adv4", contractExamples[1].payload, func(m *Message) bool {
			return len(m.Reports) == 1 && len(m.Drops) == 0 && m.Status == GatewayStatus{} && m.Kind == KindAdv4
		}},
		{gwTopic + "adv1", msg(`{"mac":"x"}`, `{"mac":"C30000000A01","rssi":-1}`), func(m *Message) bool {
			return len(m.Reports) == 1 && len(m.Drops) == 1 && m.Reports[0].Has == 0 && m.Reports[0].Pushed == false
		}},
		{"bogus", `{}`, func(m *Message) bool {
			return len(m.Reports) == 0 && len(m.Drops) == 1 && m.Kind == KindUnknown && m.Gateway == MAC{}
		}},
		{gwTopic + "status", `{"ip":"192.0.2.11"}`, func(m *Message) bool { return m.Status.IP == "192.0.2.11" }},
	}
	for i, s := range steps {
		Decode(s.topic, []byte(s.payload), now, &m)
		if !s.check(&m) {
			t.Errorf("step %d: %+v", i, m)
		}
	}
}

func TestDecodeAllocs(t *testing.T) {
	cases := map[string]struct{ topic, payload string }{
		"adv4x8":  {gwTopic + "adv4", bench8Adv4},
		"adv1":    {contractExamples[0].topic, contractExamples[0].payload},
		"status":  {gwTopic + "status", `{"ts":1732290000123,"ip":"192.0.2.10","fw":"1.4.2","uptime":86400}`},
		"mixed":   {gwTopic + "adv4", msg(`{"mac":"nope"}`, `{"mac":"C30000000A01","rssi":-1,"beacon_is_pushed":false,"x":[[{"y":1}]]}`)},
		"dropped": {gwTopic + "adv4", `{"reports":`},
	}
	for name, c := range cases {
		var m Message
		p := []byte(c.payload)
		Decode(c.topic, p, now, &m) // warm up capacity and the status cache
		if n := testing.AllocsPerRun(100, func() { Decode(c.topic, p, now, &m) }); n != 0 {
			t.Errorf("%s: %.1f allocs per message with a reused Message", name, n)
		}
	}
}

// TestDecodeNesting pins the depth limit to encoding/json's, from both sides.
func TestDecodeNesting(t *testing.T) {
	r := func(depth int, open, close string) string {
		// depth counts the top-level object (1), reports (2), the report (3).
		n := depth - 3
		return `{"reports":[{"mac":"C30000000A01","rssi":-60,"vbatt":1,"x":` + strings.Repeat(open, n) + strings.Repeat(close, n) + `}]}`
	}
	for _, c := range []struct{ open, close string }{{"[", "]"}, {`{"a":`, "}"}} {
		for _, depth := range []int{4, 100, 9999, 10000, 10001, 20000} {
			p := r(depth, c.open, c.close)
			if len(p) > MaxPayload {
				continue
			}
			m, ok := decodeStr(gwTopic+"adv8", p)
			if valid := json.Valid([]byte(p)); ok != valid {
				t.Errorf("depth %d (%s): Decode ok=%v (%s), json.Valid=%v", depth, c.open, ok, dropsString(m.Drops), valid)
			}
		}
	}
	// Top-level unknown field nesting, and the message-level limit.
	for _, depth := range []int{9999, 10000, 10001} {
		p := `{"fw":"1","x":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`
		m, ok := decodeStr(gwTopic+"status", p)
		if valid := json.Valid([]byte(p)); ok != valid {
			t.Errorf("status depth %d: Decode ok=%v (%s), json.Valid=%v", depth, ok, dropsString(m.Drops), valid)
		}
	}
	// Deep unclosed nesting must fail fast, not recurse.
	if _, ok := decodeStr(gwTopic+"adv8", `{"x":`+strings.Repeat("[", MaxPayload-10)); ok {
		t.Error("unclosed nesting accepted")
	}
}

// TestDecodeSyntaxMatchesStdlib runs hand-picked hard JSON cases through both
// Decode and json.Valid. The fuzz target does this at random; these are the
// cases worth keeping visible.
func TestDecodeSyntaxMatchesStdlib(t *testing.T) {
	values := []string{
		`0`, `-0`, `-0.0e-0`, `1E+2`, `1e-2`, `123456789012345678901234567890`, `-`, `--1`, `1.e1`, `01`, `00`, `1e`, `1e+`, `0x1`, `.1`, `1.`, `+1`,
		`""`, `"\u0000"`, `"\uD83D\uDE00"`, `"\uDE00"`, `"\uZZZZ"`, `"\u12"`, `"\a"`, `"\'"`, `"` + "\x7f" + `"`, "\"\xff\xfe\"", "\"\x1f\"", "\"\t\"", `"\`, `"`,
		`true`, `false`, `null`, `tru`, `nul`, `fals`, `TRUE`,
		`[]`, `{}`, `[1,]`, `[,1]`, `[1 2]`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{,}`, `{"a" 1}`, `{1:2}`, `[[[]]]`, `[{}]`, `{"a":[{"b":{}}]}`, `[`, `]`, `{`, `}`,
		"[1\x00]", "[\v1]", "[\f1]", "[\u00a01]",
	}
	for _, v := range values {
		for _, p := range []string{
			`{"reports":[{"mac":"C30000000A01","rssi":-60,"vbatt":1,"x":` + v + `}]}`,
			`{"reports":[{"x":` + v + `,"mac":"C30000000A01","rssi":-60,"vbatt":1}]}`,
			`{"x":` + v + `,"reports":[{"mac":"C30000000A01","rssi":-60,"vbatt":1}]}`,
			`{"reports":[` + v + `]}`,
			`{"reports":[{"mac":"C30000000A01","rssi":-60,"vbatt":1}],"x":` + v + `}`,
		} {
			m, _ := decodeStr(gwTopic+"adv8", p)
			r, dropped := m.Dropped()
			notJSON := dropped && r == DropNotJSON
			if valid := json.Valid([]byte(p)); notJSON == valid {
				t.Errorf("%s: not_json=%v but json.Valid=%v", p, notJSON, valid)
			}
		}
	}
}

// TestDecodeConcurrent is for the race detector: Decode must share nothing
// but read-only tables between goroutines.
func TestDecodeConcurrent(t *testing.T) {
	inputs := contractExamples
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var m Message
			for i := range 200 {
				in := inputs[(g+i)%len(inputs)]
				if !Decode(in.topic, []byte(in.payload), now, &m) || !reflect.DeepEqual(m.Reports, in.want) {
					t.Errorf("goroutine %d: %s decoded to %+v", g, in.payload, m.Reports)
					return
				}
				Decode(gwTopic+"status", []byte(fmt.Sprintf(`{"ip":"192.0.2.%d"}`, i%200)), now, &m)
			}
		}()
	}
	wg.Wait()
}

// A ts that is no integer (a string, seconds with a fraction) is not
// trusted, as one too far off is not: the message keeps the receive time
// and its reports the message's. Dropped, it took a panic press with it
// (a black-box check).
func TestUntrustedTSIsReceiveTime(t *testing.T) {
	press := `{"mac":"C3000000B001","rssi":-58,"beacon_is_pushed":true,"press":"single"%s}`
	for _, c := range []struct{ msgTS, reportTS string }{
		{`"ts":1795978400.5,`, ""}, {`"ts":"2026-11-29T18:00:00Z",`, ""}, {"", `,"ts":"x"`}, {`"ts":1732290000123,`, `,"ts":1.5`},
	} {
		payload := `{` + c.msgTS + `"reports":[` + fmt.Sprintf(press, c.reportTS) + `]}`
		m, ok := decodeStr(gwTopic+"adv4", payload)
		if !ok || len(m.Reports) != 1 || m.Reports[0].Press != PressSingle {
			t.Fatalf("%s: ok=%v drops=%s", payload, ok, dropsString(m.Drops))
		}
		want := now
		if strings.Contains(c.msgTS, "1732290000123") {
			want = 1732290000123
		}
		if m.Reports[0].TS != want || (m.Reports[0].Has&HasTS != 0) != (want != now) {
			t.Errorf("%s: report ts %d (has %b), want %d", payload, m.Reports[0].TS, m.Reports[0].Has, want)
		}
	}
}

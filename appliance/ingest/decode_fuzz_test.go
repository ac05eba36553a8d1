package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzDecode holds Decode to three things on arbitrary input: it never
// panics; what it returns obeys the contract's rules on its own terms
// (checkInvariants); and it agrees exactly with refDecode, a slow second
// implementation of the same rules on top of encoding/json. The last is what
// proves the hand-written scanner accepts exactly the JSON encoding/json
// accepts and reads it the same way.
func FuzzDecode(f *testing.F) {
	for _, ex := range contractExamples {
		f.Add(ex.topic, []byte(ex.payload), now)
	}
	seeds := []struct{ topic, payload string }{
		{gwTopic + "adv4", bench8Adv4},
		{gwTopic + "status", `{"ts":1732290000123,"ip":"192.0.2.10","fw":"1.4.2","uptime":86400}`},
		{gwTopic + "status", `{"ip":"fe80::1%eth0","fw":"v\u00e9\ud800","is_test":true}`},
		{gwTopic + "adv1", `{"ts":1732290000123,"is_test":true,"reports":[{"mac":"C3:00:00:00:0A:01","rssi":-71,"ts":1732290300123,"temperature":-60,"humidity":100,"vbatt":5000,"x":[{"y":null}]},7,{"m\u0061c":"c3-00-00-00-0a-02","rssi":-0}]}`},
		{gwTopic + "sData", `{"reports":[{"mac":"F1D0000000A7","rssi":-80,"temperature":1e999,"interval":86401},{"mac":"F1D0000000A7","rssi":-80,"humidity":1.5E1,"interval":1}],"reports":[{"mac":"F1D0000000A7","rssi":-1}]}`},
		{gwTopic + "adv8", `{"reports":[{"mac":"C3000000B001","rssi":-62,"vbatt":2710,"vbatt":null},{"mac":"C3000000B001","rssi":-62.0,"vbatt":1}]}`},
		{gwTopic + "adv4", `{"reports":[{"mac":"C3000000B001","rssi":-60,"beacon_is_pushed":true,"press":"\u0064ouble","motion":null},{"mac":"C3000000B001","rssi":-60,"beacon_is_pushed":false,"press":{}}]}`},
		{gwTopic + "adv4", `{"reports":[]}`},
		{gwTopic + "adv4", `[]`},
		{"gw/ac233fa0b1c2/bogus", `{}`},
		{"gw/AC:23:3F:A0:B1:C2/adv1", `{}`},
	}
	for _, s := range seeds {
		f.Add(s.topic, []byte(s.payload), now)
	}
	f.Add(gwTopic+"adv8", []byte(`{"ts":-9223372036854775808,"reports":[{"mac":"C3000000B001","rssi":-62,"vbatt":1,"ts":9223372036854775807}]}`), int64(math.MinInt64))

	f.Fuzz(func(t *testing.T, topic string, payload []byte, now int64) {
		var fresh Message
		ok := Decode(topic, payload, now, &fresh)
		checkInvariants(t, topic, now, ok, &fresh)

		ref := refDecode(topic, payload, now)
		got := resultOf(ok, &fresh)
		if !reflect.DeepEqual(got, ref) {
			t.Fatalf("Decode and refDecode disagree on %q %q now=%d\n   got %s\n   ref %s", topic, payload, now, got, ref)
		}

		// Raw mutations rarely keep a payload well-formed enough to reach the
		// inner parts of the parser, so the fuzzed bytes are also dropped
		// into every value and key position of known-good messages. That is
		// what exercises, say, "[1,]" as an unknown field three levels down.
		for _, c := range fuzzContexts {
			p := []byte(strings.ReplaceAll(c.template, "%s", string(payload)))
			var m Message
			ok := Decode(c.topic, p, now, &m)
			checkInvariants(t, c.topic, now, ok, &m)
			if got, ref := resultOf(ok, &m), refDecode(c.topic, p, now); !reflect.DeepEqual(got, ref) {
				t.Fatalf("Decode and refDecode disagree on %q %q now=%d\n   got %s\n   ref %s", c.topic, p, now, got, ref)
			}
		}

		// A reused Message, dirtied by a status message (which fills the
		// string cache) and a report list, must give the same answer.
		var reused Message
		Decode(gwTopic+"status", []byte(`{"ip":"192.0.2.10","fw":"1.4.2","uptime":1}`), now, &reused)
		Decode(gwTopic+"adv4", []byte(bench8Adv4), now, &reused)
		ok2 := Decode(topic, payload, now, &reused)
		if again := resultOf(ok2, &reused); !reflect.DeepEqual(got, again) {
			t.Fatalf("reused Message differs on %q %q\n fresh %s\nreused %s", topic, payload, got, again)
		}
	})
}

// fuzzContexts are the positions FuzzDecode splices its payload into; %s is
// replaced by the payload bytes.
var fuzzContexts = []struct{ topic, template string }{
	{gwTopic + "adv8", `{"reports":[{"mac":"C30000000A01","rssi":-1,"vbatt":1,"x":%s}]}`},
	{gwTopic + "adv8", `{"x":%s,"reports":[{"mac":"C30000000A01","rssi":-1,"vbatt":1}]}`},
	{gwTopic + "adv8", `{"reports":[%s,{"mac":"C30000000A01","rssi":-1,"vbatt":1}]}`},
	{gwTopic + "adv8", `{"reports":%s}`},
	{gwTopic + "adv8", `{"reports":[{%s:1,"mac":"C30000000A01","rssi":-1,"vbatt":1}]}`},
	{gwTopic + "adv8", `{"reports":[{"mac":%s,"rssi":%s,"vbatt":%s}]}`},
	{gwTopic + "adv8", `{"ts":%s,"is_test":%s,"reports":[{"mac":"C30000000A01","rssi":-1,"vbatt":1,"ts":%s}]}`},
	{gwTopic + "adv1", `{"reports":[{"mac":"C30000000A01","rssi":-1,"temperature":%s,"humidity":%s}]}`},
	{gwTopic + "sData", `{"reports":[{"mac":"C30000000A01","rssi":-1,"interval":%s}]}`},
	{gwTopic + "adv4", `{"reports":[{"mac":"C30000000A01","rssi":-1,"beacon_is_pushed":true,"press":%s,"motion":%s}]}`},
	{gwTopic + "status", `{"ip":%s}`},
	{gwTopic + "status", `{"fw":%s}`},
	{gwTopic + "status", `{"uptime":%s,"fw":"x"}`},
}

// checkInvariants asserts what must hold of any Decode result, whatever the
// input, without knowing what the right answer is.
func checkInvariants(t *testing.T, topic string, now int64, ok bool, m *Message) {
	t.Helper()
	if !ok {
		if len(m.Drops) != 1 || m.Drops[0].Index != -1 || len(m.Reports) != 0 || m.Status != (GatewayStatus{}) || m.TS != now || m.IsTest {
			t.Fatalf("dropped message not reset: %+v", m)
		}
		if r := m.Drops[0].Reason; r == 0 || r >= numDropReasons {
			t.Fatalf("invalid reason %d", r)
		}
		return
	}
	if !strings.HasPrefix(topic, "gw/"+m.Gateway.String()) && !strings.HasPrefix(strings.ToUpper(topic), "GW/"+m.Gateway.String()) {
		t.Fatalf("gateway %v not from topic %q", m.Gateway, topic)
	}
	if m.Kind == KindUnknown || !strings.HasSuffix(topic, "/"+m.Kind.String()) {
		t.Fatalf("kind %v not from topic %q", m.Kind, topic)
	}
	if m.TS != now && !withinSkewRef(m.TS, now) {
		t.Fatalf("message ts %d is skewed from %d", m.TS, now)
	}
	if len(m.Reports)+len(m.Drops) > MaxReports {
		t.Fatalf("%d reports + %d drops", len(m.Reports), len(m.Drops))
	}
	prev := -1
	for _, d := range m.Drops {
		if d.Index <= prev || d.Index >= MaxReports || d.Reason == 0 || d.Reason >= numDropReasons {
			t.Fatalf("bad report drop %+v after index %d", d, prev)
		}
		prev = d.Index
	}
	if m.Kind == KindStatus {
		st := m.Status
		if len(m.Reports) != 0 || len(m.Drops) != 0 || st.TS != m.TS || st.Uptime < 0 || len(st.FW) > 64 || !utf8.ValidString(st.FW) {
			t.Fatalf("bad status message %+v", m)
		}
		if st.IP != "" {
			if _, err := netip.ParseAddr(st.IP); err != nil {
				t.Fatalf("bad status ip %q", st.IP)
			}
		}
		return
	}
	if m.Status != (GatewayStatus{}) {
		t.Fatalf("status on %v message", m.Kind)
	}
	allowed := map[Kind]uint8{
		KindAdv1:  HasTemperature | HasHumidity | HasVBatt,
		KindSData: HasTemperature | HasHumidity | HasInterval,
		KindAdv4:  HasMotion,
		KindAdv8:  HasVBatt,
	}[m.Kind] | HasTS
	for _, r := range m.Reports {
		bad := r.RSSI < -127 || r.RSSI > 0 ||
			(r.TS != m.TS && !withinSkewRef(r.TS, now)) ||
			r.Has&^allowed != 0 ||
			!(r.Temperature >= -60 && r.Temperature <= 150) || (r.Has&HasTemperature == 0 && r.Temperature != 0) ||
			!(r.Humidity >= 0 && r.Humidity <= 100) || (r.Has&HasHumidity == 0 && r.Humidity != 0) ||
			r.VBatt < 0 || r.VBatt > 5000 || (r.Has&HasVBatt == 0 && r.VBatt != 0) ||
			(r.Has&HasInterval != 0 && (r.Interval < 1 || r.Interval > 86400)) || (r.Has&HasInterval == 0 && r.Interval != 0) ||
			(r.Pushed != (r.Press != PressNone)) || r.Press > PressLong ||
			(r.Motion && r.Has&HasMotion == 0) ||
			(m.Kind == KindAdv8 && r.Has&^HasTS != HasVBatt) ||
			(r.Has&HasTS == 0 && r.TS != now) || (r.Has&HasTS != 0 && !withinSkewRef(r.TS, now))
		if bad {
			t.Fatalf("report breaks the rules: %+v (kind %v, message ts %d, now %d)", r, m.Kind, m.TS, now)
		}
		if back, ok := ParseMAC(r.MAC.String()); !ok || back != r.MAC {
			t.Fatalf("MAC %v does not round-trip", r.MAC)
		}
	}
}

// result is the comparable, printable part of a Decode outcome.
type result struct {
	OK      bool
	Gateway MAC
	Kind    Kind
	IsTest  bool
	TS      int64
	Reports []Report
	Status  GatewayStatus
	Drops   []Drop
}

func (r result) String() string {
	return fmt.Sprintf("ok=%v gw=%v kind=%v test=%v ts=%d status=%+v drops=[%s] reports=%+v",
		r.OK, r.Gateway, r.Kind, r.IsTest, r.TS, r.Status, dropsString(r.Drops), r.Reports)
}

func resultOf(ok bool, m *Message) result {
	r := result{OK: ok, Gateway: m.Gateway, Kind: m.Kind, IsTest: m.IsTest, TS: m.TS, Status: m.Status}
	// Copies, and nil for empty, so DeepEqual ignores capacity and reuse.
	if len(m.Reports) > 0 {
		r.Reports = append([]Report(nil), m.Reports...)
	}
	if len(m.Drops) > 0 {
		r.Drops = append([]Drop(nil), m.Drops...)
	}
	return r
}

// withinSkewRef is the skew rule in arbitrary precision, independent of the
// overflow-avoiding arithmetic in withinSkew.
func withinSkewRef(ts, now int64) bool {
	d := new(big.Int).Sub(big.NewInt(ts), big.NewInt(now))
	return d.Abs(d).Cmp(big.NewInt(MaxSkewMS)) <= 0
}

// refDecode is the contract as a straightforward encoding/json program:
// decode into generic values (last duplicate wins, as in Decode), then apply
// the rules in the documented order. Speed is irrelevant here; being
// obviously right is the point.
func refDecode(topic string, payload []byte, now int64) result {
	res := result{TS: now}
	drop := func(r DropReason) result {
		return result{Gateway: res.Gateway, Kind: res.Kind, TS: now, Drops: []Drop{{r, -1}}}
	}
	parts := strings.Split(topic, "/")
	if len(parts) != 3 || parts[0] != "gw" {
		return drop(DropBadTopic)
	}
	gw, ok := ParseMAC(parts[1])
	if len(parts[1]) != 12 || !ok {
		return drop(DropBadGatewayMAC)
	}
	res.Gateway = gw
	kind, ok := map[string]Kind{"adv1": KindAdv1, "sData": KindSData, "adv4": KindAdv4, "adv8": KindAdv8, "status": KindStatus}[parts[2]]
	if !ok {
		return drop(DropUnknownKind)
	}
	res.Kind = kind
	if len(payload) > 64*1024 {
		return drop(DropTooLarge)
	}
	if !json.Valid(payload) {
		return drop(DropNotJSON)
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return drop(DropNotJSON)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return drop(DropNotJSON)
	}

	msgOwn := false // the message ts is the gateway's
	if x, ok := obj["ts"]; ok && x != nil {
		// No integer: not trusted, as too far off is not (nothing dropped).
		if ts, ok := refInt(x); ok && withinSkewRef(ts, now) {
			res.TS = ts
			msgOwn = true
		}
	}
	switch x := obj["is_test"].(type) {
	case nil:
	case bool:
		res.IsTest = x
	default:
		return drop(DropBadValue)
	}

	if kind == KindStatus {
		res.Status.TS = res.TS
		if x := obj["uptime"]; x != nil {
			up, ok := refInt(x)
			if !ok || up < 0 {
				return drop(DropBadStatus)
			}
			res.Status.Uptime = up
		}
		switch x := obj["ip"].(type) {
		case nil:
		case string:
			if _, err := netip.ParseAddr(x); err != nil || len(x) > 64 {
				return drop(DropBadStatus)
			}
			res.Status.IP = x
		default:
			return drop(DropBadStatus)
		}
		switch x := obj["fw"].(type) {
		case nil:
		case string:
			if len(x) > 64 {
				return drop(DropBadStatus)
			}
			res.Status.FW = x
		default:
			return drop(DropBadStatus)
		}
		res.OK = true
		return res
	}

	var reports []any
	switch x := obj["reports"].(type) {
	case nil:
		return drop(DropNoReports)
	case []any:
		reports = x
	default:
		return drop(DropBadValue)
	}
	switch {
	case len(reports) == 0:
		return drop(DropNoReports)
	case len(reports) > 500:
		return drop(DropTooManyReports)
	}
	for i, x := range reports {
		ro, ok := x.(map[string]any)
		if !ok {
			res.Drops = append(res.Drops, Drop{DropBadReport, i})
			continue
		}
		r, reason := refReport(ro, kind, now, res.TS, msgOwn)
		if reason != 0 {
			res.Drops = append(res.Drops, Drop{reason, i})
			continue
		}
		res.Reports = append(res.Reports, r)
	}
	res.OK = true
	return res
}

func refReport(o map[string]any, kind Kind, now, msgTS int64, msgOwn bool) (Report, DropReason) {
	var r Report
	s, ok := o["mac"].(string)
	if !ok {
		return r, DropBadMAC
	}
	if r.MAC, ok = ParseMAC(s); !ok {
		return r, DropBadMAC
	}
	rssi, ok := refInt(o["rssi"])
	if !ok || rssi < -127 || rssi > 0 {
		return r, DropBadRSSI
	}
	r.RSSI = int8(rssi)
	r.TS = msgTS
	if msgOwn {
		r.Has |= HasTS
	}
	if x := o["ts"]; x != nil {
		if ts, ok := refInt(x); ok && withinSkewRef(ts, now) {
			r.TS = ts
			r.Has |= HasTS
		}
	}

	// optional reads an optional integer or float field; bad means present
	// but of the wrong type or out of range.
	optional := func(key string, float bool, lo, hi float64) (f float64, present, bad bool) {
		x := o[key]
		if x == nil {
			return 0, false, false
		}
		if float {
			n, ok := x.(json.Number)
			if !ok {
				return 0, false, true
			}
			f, err := strconv.ParseFloat(string(n), 32)
			if err != nil || math.IsNaN(f) || f < lo || f > hi {
				return 0, false, true
			}
			return f, true, false
		}
		i, ok := refInt(x)
		if !ok || float64(i) < lo || float64(i) > hi {
			return 0, false, true
		}
		return float64(i), true, false
	}

	switch kind {
	case KindAdv1, KindSData:
		if f, present, bad := optional("temperature", true, -60, 150); bad {
			return r, DropBadValue
		} else if present {
			r.Temperature, r.Has = float32(f), r.Has|HasTemperature
		}
		if f, present, bad := optional("humidity", true, 0, 100); bad {
			return r, DropBadValue
		} else if present {
			r.Humidity, r.Has = float32(f), r.Has|HasHumidity
		}
		if kind == KindAdv1 {
			if f, present, bad := optional("vbatt", false, 0, 5000); bad {
				return r, DropBadValue
			} else if present {
				r.VBatt, r.Has = int32(f), r.Has|HasVBatt
			}
		} else {
			if f, present, bad := optional("interval", false, 1, 86400); bad {
				return r, DropBadValue
			} else if present {
				r.Interval, r.Has = int32(f), r.Has|HasInterval
			}
		}
	case KindAdv4:
		switch x := o["beacon_is_pushed"].(type) {
		case nil:
			return r, DropMissingField
		case bool:
			r.Pushed = x
		default:
			return r, DropBadValue
		}
		if r.Pushed {
			p, _ := o["press"].(string)
			r.Press = map[string]Press{"single": PressSingle, "double": PressDouble, "triple": PressTriple, "long": PressLong}[p]
			if r.Press == PressNone {
				return r, DropBadPress
			}
		}
		switch x := o["motion"].(type) {
		case nil:
		case bool:
			r.Motion, r.Has = x, r.Has|HasMotion
		default:
			return r, DropBadValue
		}
	case KindAdv8:
		f, present, bad := optional("vbatt", false, 0, 5000)
		if bad {
			return r, DropBadValue
		}
		if !present {
			return r, DropMissingField
		}
		r.VBatt, r.Has = int32(f), r.Has|HasVBatt
	}
	return r, 0
}

// refInt accepts what encoding/json would decode into an int64.
func refInt(x any) (int64, bool) {
	n, ok := x.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	return i, err == nil
}

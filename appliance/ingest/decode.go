package ingest

// Plausibility ranges, all inclusive. A value outside its range is a sensor or
// firmware fault rather than a reading, so the report is dropped instead of
// clamped (clamping would put a fake 150 °C on a dashboard):
//
//	rssi          -127 .. 0      dBm  integer          else bad_rssi
//	temperature    -60 .. 150    °C   number           else bad_value
//	humidity         0 .. 100    %RH  number           else bad_value
//	vbatt            0 .. 5000   mV   integer          else bad_value
//	interval         1 .. 86400  s    integer (sData)  else bad_value
//	uptime           0 .. 2^63-1 s    integer (status) else bad_status
//	fw             at most 64 bytes of UTF-8 (status)  else bad_status
//	ip             at most 64 bytes, must parse with netip.ParseAddr
//
// Temperature and humidity are range-checked after rounding to float32, the
// type they are stored in, so what passes the check is what is stored. NaN
// and ±Inf cannot be written in JSON, but an overflowing literal (1e999)
// parses to ±Inf and fails the range check like NaN would.
//
// Decisions the contract leaves open, fixed here so every consumer sees the
// same behaviour:
//
//   - JSON is parsed strictly: exactly what encoding/json's json.Valid
//     accepts (RFC 8259, nesting depth ≤ 10000, invalid UTF-8 inside strings
//     tolerated and read as U+FFFD). A differential fuzz test holds us to it.
//   - Field names are case-sensitive ("MAC" is an unknown field), unlike
//     encoding/json's struct matching. Escaped names ("m\u0061c") are decoded
//     first. If a name repeats, the last occurrence wins, as with a map.
//   - null is the same as an absent field. Unknown fields are validated as
//     JSON and otherwise ignored, and so are known fields of other kinds (an
//     adv8 report may carry "temperature" of any type).
//   - "Integer" means a JSON number without fraction or exponent that fits
//     in int64; 2950.0 and 1e3 are not integers.
//   - Each bad report yields exactly one Drop, for the first rule it breaks,
//     in this order: mac, rssi, then the kind's fields in the contract's
//     table order. So len(Reports) plus the report-level drops is always the
//     length of the reports array (for an accepted message).
//   - ts (message or report) that is no integer is not trusted and the
//     receive time (the message's time, for a report) stands, as for one
//     more than 5 minutes off: nothing is dropped for a ts.
//   - A whole-message drop outranks everything: not_json first (nothing is
//     trusted from a payload that does not parse), then a bad is_test
//     (bad_value), then bad_status / no_reports / too_many_reports.
//   - adv4: when beacon_is_pushed is false, press is ignored whatever it is.
//   - status: a "reports" field is ignored; ts and is_test follow the same
//     rules as for the other kinds.

import (
	"math"
	"net/netip"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

const (
	// MaxPayload is the contract's payload limit in bytes.
	MaxPayload = 64 << 10
	// MaxReports is the contract's limit on reports per message.
	MaxReports = 500
	// MaxSkewMS is how far (in ms, either direction) a gateway clock may be
	// from the server clock before its timestamp is replaced by the receive
	// time. Exactly MaxSkewMS away is still trusted.
	MaxSkewMS = 5 * 60 * 1000

	maxFWLen = 64
	maxIPLen = 64

	// maxDepth is encoding/json's nesting limit; matching it keeps the set of
	// accepted payloads identical to json.Valid.
	maxDepth = 10000

	// hasTSFallback is a private Report.Has bit marking a report without a
	// trusted ts of its own. The message ts it falls back on may come after
	// the reports in the payload, so the bit is resolved (and cleared) once
	// the whole object is read.
	hasTSFallback uint8 = 1 << 7
)

// Decode parses one publish. now is the server receive time (Unix ms). It
// fills m (after m.Reset()) and returns false when the whole message was
// dropped; m.Drops then holds exactly one Drop with Index -1 saying why, and
// m.Reports is empty. A true result means the message was well formed: its
// good reports are in m.Reports and each bad one has a Drop in m.Drops (all
// of them may be bad). Decode keeps no state between calls, so it is safe for
// concurrent use as long as each goroutine has its own Message.
func Decode(topic string, payload []byte, now int64, m *Message) bool {
	m.Reset()
	m.TS = now
	gw, kind, reason := parseTopic(topic)
	m.Gateway, m.Kind = gw, kind
	if reason != 0 {
		return m.drop(reason, now)
	}
	if len(payload) > MaxPayload {
		return m.drop(DropTooLarge, now)
	}
	d := decoder{b: payload, kind: kind, now: now, m: m}
	if reason := d.message(); reason != 0 {
		return m.drop(reason, now)
	}
	return true
}

func (m *Message) drop(r DropReason, now int64) bool {
	m.IsTest = false
	m.TS = now
	m.Status = GatewayStatus{}
	m.Reports = m.Reports[:0]
	m.Drops = append(m.Drops[:0], Drop{Reason: r, Index: -1})
	return false
}

// parseTopic checks the shape before the MAC and the MAC before the kind, so
// that a drop can be attributed to a gateway whenever the topic names one.
func parseTopic(t string) (MAC, Kind, DropReason) {
	rest, ok := strings.CutPrefix(t, "gw/")
	if !ok {
		return MAC{}, KindUnknown, DropBadTopic
	}
	macS, kindS, ok := strings.Cut(rest, "/")
	if !ok || strings.IndexByte(kindS, '/') >= 0 {
		return MAC{}, KindUnknown, DropBadTopic
	}
	if len(macS) != 12 {
		return MAC{}, KindUnknown, DropBadGatewayMAC
	}
	gw, ok := parseMAC(macS)
	if !ok {
		return MAC{}, KindUnknown, DropBadGatewayMAC
	}
	k := parseKind(kindS)
	if k == KindUnknown {
		return gw, KindUnknown, DropUnknownKind
	}
	return gw, k, 0
}

// withinSkew is written without subtraction overflow: ts and now are both
// attacker-influenced (now only in tests, ts always).
func withinSkew(ts, now int64) bool {
	var d uint64
	if ts >= now {
		d = uint64(ts) - uint64(now)
	} else {
		d = uint64(now) - uint64(ts)
	}
	return d <= MaxSkewMS
}

// valType classifies a scanned JSON value. Values are scanned once and
// interpreted later, because a repeated name must let the last occurrence win
// and because the message ts may come after the reports that fall back on it.
type valType uint8

const (
	vAbsent valType = iota
	vNull
	vFalse
	vTrue
	vString
	vNumber
	vCompound // object or array, already skipped
	vArray    // the reports array, already parsed
)

// val is a scanned value: its type and, for strings and numbers, where its
// text is in the payload (string contents exclude the quotes). Offsets are
// int32 because payloads are at most 64 KiB and a report holds ten vals that
// are zeroed and copied per report: keeping val small is measurably faster.
type val struct {
	s, e int32
	t    valType
	esc  bool // string contains backslash escapes
	frac bool // number has a fraction or exponent, so it is not an integer
}

type decoder struct {
	b    []byte
	i    int
	kind Kind
	now  int64
	m    *Message
}

// keyBufLen fits the longest known field name ("beacon_is_pushed") plus the
// slack unquote needs; longer escaped names cannot be known fields.
const keyBufLen = 16 + utf8.UTFMax

// message parses the top-level object and returns the whole-message drop
// reason, or 0.
func (d *decoder) message() DropReason {
	b, m := d.b, d.m
	d.ws()
	if d.i >= len(b) || b[d.i] != '{' {
		return DropNotJSON
	}
	d.i++
	var ts, isTest, reports, ip, fw, uptime val
	nReports := 0
	var kb [keyBufLen]byte
	d.ws()
	if d.i < len(b) && b[d.i] == '}' {
		d.i++
	} else {
		for {
			name, ok := d.key(kb[:])
			if !ok {
				return DropNotJSON
			}
			var slot *val
			switch string(name) {
			case "ts":
				slot = &ts
			case "is_test":
				slot = &isTest
			case "reports":
				if d.kind == KindStatus {
					break
				}
				if d.i < len(b) && b[d.i] == '[' {
					// A repeated "reports" replaces the earlier one.
					m.Reports, m.Drops = m.Reports[:0], m.Drops[:0]
					n, ok := d.reports()
					if !ok {
						return DropNotJSON
					}
					reports = val{t: vArray}
					nReports = n
					goto next
				}
				slot = &reports
			case "ip":
				if d.kind == KindStatus {
					slot = &ip
				}
			case "fw":
				if d.kind == KindStatus {
					slot = &fw
				}
			case "uptime":
				if d.kind == KindStatus {
					slot = &uptime
				}
			}
			{
				var skip val
				if slot == nil {
					slot = &skip
				}
				if !d.value(2, slot) {
					return DropNotJSON
				}
			}
		next:
			d.ws()
			if d.i >= len(b) {
				return DropNotJSON
			}
			if b[d.i] == ',' {
				d.i++
				d.ws()
				continue
			}
			if b[d.i] != '}' {
				return DropNotJSON
			}
			d.i++
			break
		}
	}
	d.ws()
	if d.i != len(b) {
		return DropNotJSON
	}

	var msgTS uint8 // HasTS when the message ts is the gateway's
	// A ts that is no integer (a string, seconds with a fraction) is not
	// trusted, as one too far off is: the receive time stands. Dropped,
	// it took a panic press with it (a black-box check), for a field
	// whose own rule is to fall back when it cannot be believed.
	if ts.t == vNumber {
		if v, ok := d.int(ts); ok && withinSkew(v, d.now) {
			m.TS = v
			msgTS = HasTS
		}
	}
	switch isTest.t {
	case vAbsent, vNull, vFalse:
	case vTrue:
		m.IsTest = true
	default:
		return DropBadValue
	}

	if d.kind == KindStatus {
		return d.status(ip, fw, uptime)
	}
	switch reports.t {
	case vAbsent, vNull:
		return DropNoReports
	case vArray:
	default:
		return DropBadValue
	}
	switch n := nReports; {
	case n == 0:
		return DropNoReports
	case n > MaxReports:
		return DropTooManyReports
	}
	for i := range m.Reports {
		if r := &m.Reports[i]; r.Has&hasTSFallback != 0 {
			r.TS = m.TS
			r.Has = r.Has&^hasTSFallback | msgTS
		}
	}
	return 0
}

// reports parses the reports array (b[d.i] == '[') at depth 2, appending good
// reports and report drops to the message, and returns the element count.
// Elements past MaxReports are only validated: the message will be dropped,
// but not_json must still win if the rest does not parse.
func (d *decoder) reports() (int, bool) {
	b := d.b
	d.i++
	d.ws()
	if d.i >= len(b) {
		return 0, false
	}
	if b[d.i] == ']' {
		d.i++
		return 0, true
	}
	n := 0
	var skip val
	for {
		switch {
		case n >= MaxReports:
			if !d.value(3, &skip) {
				return n, false
			}
		case b[d.i] == '{':
			if !d.report(n) {
				return n, false
			}
		default:
			if !d.value(3, &skip) {
				return n, false
			}
			d.m.Drops = append(d.m.Drops, Drop{Reason: DropBadReport, Index: n})
		}
		n++
		d.ws()
		if d.i >= len(b) {
			return n, false
		}
		switch b[d.i] {
		case ',':
			d.i++
			d.ws()
			if d.i >= len(b) {
				return n, false
			}
		case ']':
			d.i++
			return n, true
		default:
			return n, false
		}
	}
}

// Report field slots.
const (
	fMAC = iota
	fRSSI
	fTS
	fTemp
	fHum
	fVBatt
	fInterval
	fPushed
	fPress
	fMotion
	numFields
)

func reportField(name []byte) int {
	switch string(name) {
	case "mac":
		return fMAC
	case "rssi":
		return fRSSI
	case "ts":
		return fTS
	case "temperature":
		return fTemp
	case "humidity":
		return fHum
	case "vbatt":
		return fVBatt
	case "interval":
		return fInterval
	case "beacon_is_pushed":
		return fPushed
	case "press":
		return fPress
	case "motion":
		return fMotion
	}
	return -1
}

// report parses one report object (b[d.i] == '{') at depth 3 and records it
// as a Report or a Drop. It returns false only on a JSON syntax error.
func (d *decoder) report(idx int) bool {
	b := d.b
	d.i++
	var f [numFields]val
	var skip val
	var kb [keyBufLen]byte
	d.ws()
	if d.i >= len(b) {
		return false
	}
	if b[d.i] == '}' {
		d.i++
	} else {
		for {
			name, ok := d.key(kb[:])
			if !ok {
				return false
			}
			slot := &skip
			if k := reportField(name); k >= 0 {
				slot = &f[k]
			}
			if !d.value(4, slot) {
				return false
			}
			d.ws()
			if d.i >= len(b) {
				return false
			}
			if b[d.i] == ',' {
				d.i++
				d.ws()
				continue
			}
			if b[d.i] != '}' {
				return false
			}
			d.i++
			break
		}
	}
	// Evaluating straight into the slice slot, and taking it back on a drop,
	// saves copying a Report per report.
	m := d.m
	m.Reports = append(m.Reports, Report{})
	if reason := d.evalReport(&f, &m.Reports[len(m.Reports)-1]); reason != 0 {
		m.Reports = m.Reports[:len(m.Reports)-1]
		m.Drops = append(m.Drops, Drop{Reason: reason, Index: idx})
	}
	return true
}

// evalReport applies the report rules to the scanned fields, filling *r,
// which must be zero on entry.
func (d *decoder) evalReport(f *[numFields]val, r *Report) DropReason {
	var ok bool
	if r.MAC, ok = d.mac(f[fMAC]); !ok {
		return DropBadMAC
	}
	rssi, present, ok := d.optInt(f[fRSSI], -127, 0)
	if !ok || !present {
		return DropBadRSSI
	}
	r.RSSI = int8(rssi)

	// As the message ts: one that is no integer is not trusted, and the
	// report is kept.
	ts, present, ok := d.optInt(f[fTS], math.MinInt64, math.MaxInt64)
	if ok && present && withinSkew(ts, d.now) {
		r.TS = ts
		r.Has |= HasTS
	} else {
		r.Has |= hasTSFallback
	}

	switch d.kind {
	case KindAdv1, KindSData:
		if r.Temperature, present, ok = d.optFloat(f[fTemp], -60, 150); !ok {
			return DropBadValue
		} else if present {
			r.Has |= HasTemperature
		}
		if r.Humidity, present, ok = d.optFloat(f[fHum], 0, 100); !ok {
			return DropBadValue
		} else if present {
			r.Has |= HasHumidity
		}
		if d.kind == KindAdv1 {
			v, present, ok := d.optInt(f[fVBatt], 0, 5000)
			if !ok {
				return DropBadValue
			}
			if present {
				r.VBatt = int32(v)
				r.Has |= HasVBatt
			}
		} else {
			v, present, ok := d.optInt(f[fInterval], 1, 86400)
			if !ok {
				return DropBadValue
			}
			if present {
				r.Interval = int32(v)
				r.Has |= HasInterval
			}
		}
	case KindAdv4:
		switch f[fPushed].t {
		case vAbsent, vNull:
			return DropMissingField
		case vTrue:
			r.Pushed = true
		case vFalse:
		default:
			return DropBadValue
		}
		if r.Pushed {
			if r.Press = d.press(f[fPress]); r.Press == PressNone {
				return DropBadPress
			}
		}
		switch f[fMotion].t {
		case vAbsent, vNull:
		case vTrue:
			r.Motion = true
			r.Has |= HasMotion
		case vFalse:
			r.Has |= HasMotion
		default:
			return DropBadValue
		}
	case KindAdv8:
		v, present, ok := d.optInt(f[fVBatt], 0, 5000)
		if !ok {
			return DropBadValue
		}
		if !present {
			return DropMissingField
		}
		r.VBatt = int32(v)
		r.Has |= HasVBatt
	}
	return 0
}

func (d *decoder) status(ip, fw, uptime val) DropReason {
	m := d.m
	st := &m.Status
	st.TS = m.TS
	v, present, ok := d.optInt(uptime, 0, math.MaxInt64)
	if !ok {
		return DropBadStatus
	}
	if present {
		st.Uptime = v
	}
	switch ip.t {
	case vAbsent, vNull:
	case vString:
		var buf [maxIPLen + utf8.UTFMax]byte
		n, ok := unquote(buf[:], d.b[ip.s:ip.e])
		if !ok || n > maxIPLen {
			return DropBadStatus
		}
		// Comparing against the cached string does not allocate; only a new
		// address costs a string.
		if s := buf[:n]; m.lastIP != "" && string(s) == m.lastIP {
			st.IP = m.lastIP
		} else {
			str := string(s)
			if _, err := netip.ParseAddr(str); err != nil {
				return DropBadStatus
			}
			m.lastIP, st.IP = str, str
		}
	default:
		return DropBadStatus
	}
	switch fw.t {
	case vAbsent, vNull:
	case vString:
		var buf [maxFWLen + utf8.UTFMax]byte
		n, ok := unquote(buf[:], d.b[fw.s:fw.e])
		if !ok || n > maxFWLen {
			return DropBadStatus
		}
		if s := buf[:n]; string(s) == m.lastFW {
			st.FW = m.lastFW
		} else {
			m.lastFW = string(s)
			st.FW = m.lastFW
		}
	default:
		return DropBadStatus
	}
	return 0
}

// optInt interprets v as an optional integer in [lo, hi]. ok is false for a
// wrong type, a non-integer, or a value out of range.
func (d *decoder) optInt(v val, lo, hi int64) (x int64, present, ok bool) {
	switch v.t {
	case vAbsent, vNull:
		return 0, false, true
	case vNumber:
		x, ok := d.int(v)
		if !ok || x < lo || x > hi {
			return 0, false, false
		}
		return x, true, true
	}
	return 0, false, false
}

// optFloat interprets v as an optional number in [lo, hi] after rounding to
// float32.
func (d *decoder) optFloat(v val, lo, hi float64) (x float32, present, ok bool) {
	switch v.t {
	case vAbsent, vNull:
		return 0, false, true
	case vNumber:
		f, err := strconv.ParseFloat(string(d.b[v.s:v.e]), 32)
		if err != nil || !(f >= lo && f <= hi) {
			return 0, false, false
		}
		return float32(f), true, true
	}
	return 0, false, false
}

// int parses an integer number value; JSON syntax was already checked, so the
// text is an optional '-' and digits without leading zeros.
func (d *decoder) int(v val) (int64, bool) {
	if v.frac {
		return 0, false
	}
	s := d.b[v.s:v.e]
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	// 19 digits cannot overflow a uint64; more cannot fit an int64.
	if len(s) > 19 {
		return 0, false
	}
	var u uint64
	for _, c := range s {
		u = u*10 + uint64(c-'0')
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true // u == 1<<63 wraps to MinInt64, which is right
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

func (d *decoder) mac(v val) (MAC, bool) {
	if v.t != vString {
		return MAC{}, false
	}
	raw := d.b[v.s:v.e]
	if !v.esc {
		return parseMAC(raw)
	}
	var buf [17 + utf8.UTFMax]byte
	n, ok := unquote(buf[:], raw)
	if !ok {
		return MAC{}, false
	}
	return parseMAC(buf[:n])
}

// press returns PressNone for anything that is not one of the four names.
func (d *decoder) press(v val) Press {
	if v.t != vString {
		return PressNone
	}
	s := d.b[v.s:v.e]
	var buf [6 + utf8.UTFMax]byte
	if v.esc {
		n, ok := unquote(buf[:], s)
		if !ok {
			return PressNone
		}
		s = buf[:n]
	}
	switch string(s) {
	case "single":
		return PressSingle
	case "double":
		return PressDouble
	case "triple":
		return PressTriple
	case "long":
		return PressLong
	}
	return PressNone
}

// key scans `"name" :` plus following whitespace and returns the decoded
// name. A name that does not fit buf is returned as nil, which matches no
// known field.
func (d *decoder) key(buf []byte) ([]byte, bool) {
	b := d.b
	if d.i >= len(b) || b[d.i] != '"' {
		return nil, false
	}
	start := d.i + 1
	end, esc, ok := scanString(b, d.i)
	if !ok {
		return nil, false
	}
	d.i = end
	d.ws()
	if d.i >= len(b) || b[d.i] != ':' {
		return nil, false
	}
	d.i++
	d.ws()
	name := b[start : end-1]
	if esc {
		n, ok := unquote(buf, name)
		if !ok {
			return nil, true
		}
		name = buf[:n]
	}
	return name, true
}

func (d *decoder) ws() {
	d.i = skipWS(d.b, d.i)
}

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// value scans one JSON value starting at d.i into *v. depth is the nesting
// level an object or array starting here would have (the top-level object
// is 1).
func (d *decoder) value(depth int, v *val) bool {
	b, i := d.b, d.i
	if i >= len(b) {
		return false
	}
	switch c := b[i]; c {
	case '"':
		end, esc, ok := scanString(b, i)
		d.i = end
		*v = val{t: vString, s: int32(i + 1), e: int32(end - 1), esc: esc}
		return ok
	case '{', '[':
		*v = val{t: vCompound}
		return d.skipCompound(depth)
	case 't':
		d.i = i + 4
		*v = val{t: vTrue}
		return len(b)-i >= 4 && string(b[i:i+4]) == "true"
	case 'f':
		d.i = i + 5
		*v = val{t: vFalse}
		return len(b)-i >= 5 && string(b[i:i+5]) == "false"
	case 'n':
		d.i = i + 4
		*v = val{t: vNull}
		return len(b)-i >= 4 && string(b[i:i+4]) == "null"
	}
	end, frac, ok := scanNumber(b, i)
	d.i = end
	*v = val{t: vNumber, s: int32(i), e: int32(end), frac: frac}
	return ok
}

// strStop marks the bytes that end the fast path through a string: the
// closing quote, an escape, and the control characters JSON forbids raw.
var strStop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'] = true
	t['\\'] = true
	return t
}()

// scanString validates the string starting at the quote b[i] and returns the
// index just past its closing quote. Bytes >= 0x80 are not checked for UTF-8
// validity, matching encoding/json, which accepts them and decodes invalid
// sequences as U+FFFD.
func scanString(b []byte, i int) (end int, esc, ok bool) {
	i++
	for {
		for i < len(b) && !strStop[b[i]] {
			i++
		}
		if i >= len(b) {
			return i, esc, false
		}
		switch b[i] {
		case '"':
			return i + 1, esc, true
		case '\\':
			esc = true
			if i+1 >= len(b) {
				return i, esc, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return i, esc, false
				}
				if hexVal[b[i+2]]|hexVal[b[i+3]]|hexVal[b[i+4]]|hexVal[b[i+5]] > 0x0f {
					return i, esc, false
				}
				i += 6
			default:
				return i, esc, false
			}
		default: // control character
			return i, esc, false
		}
	}
}

func isDigit(c byte) bool { return c-'0' <= 9 }

// scanNumber validates the RFC 8259 number starting at b[i]. What follows it
// is checked by the caller, which expects a delimiter: that is what rejects
// "01" or "1x".
func scanNumber(b []byte, i int) (end int, frac, ok bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return i, false, false
	}
	switch c := b[i]; {
	case c == '0':
		i++
	case c >= '1' && c <= '9':
		i++
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return i, false, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		frac = true
		if i >= len(b) || !isDigit(b[i]) {
			return i, frac, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		frac = true
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return i, frac, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i, frac, true
}

// skipCompound validates the object or array starting at d.i, whose own
// nesting level is depth. It is iterative, with one bit per open container
// (object or array), so hostile nesting costs neither stack growth nor heap;
// the bit array is the only reason this is a separate function from value.
func (d *decoder) skipCompound(depth int) bool {
	const (
		sOpen  = iota // b[i] is '{' or '['
		sKey          // expect an object key at b[i]
		sValue        // expect a value at b[i]
		sAfter        // after a value: expect ',' or the closer
		sClose        // b[i] is the closer of the innermost container
	)
	var inObj [maxDepth/64 + 1]uint64
	b, i := d.b, d.i
	n := 0 // open containers
	st := sOpen
	for {
		switch st {
		case sOpen:
			if depth+n > maxDepth {
				return false
			}
			obj := b[i] == '{'
			if obj {
				inObj[n>>6] |= 1 << (n & 63)
			} else {
				inObj[n>>6] &^= 1 << (n & 63)
			}
			n++
			i = skipWS(b, i+1)
			switch {
			case i >= len(b):
				return false
			case obj && b[i] == '}', !obj && b[i] == ']':
				st = sClose
			case obj:
				st = sKey
			default:
				st = sValue
			}
		case sKey:
			if b[i] != '"' {
				return false
			}
			end, _, ok := scanString(b, i)
			if !ok {
				return false
			}
			i = skipWS(b, end)
			if i >= len(b) || b[i] != ':' {
				return false
			}
			i = skipWS(b, i+1)
			if i >= len(b) {
				return false
			}
			st = sValue
		case sValue:
			var ok bool
			switch b[i] {
			case '{', '[':
				st = sOpen
				continue
			case '"':
				i, _, ok = scanString(b, i)
			case 't':
				ok = len(b)-i >= 4 && string(b[i:i+4]) == "true"
				i += 4
			case 'f':
				ok = len(b)-i >= 5 && string(b[i:i+5]) == "false"
				i += 5
			case 'n':
				ok = len(b)-i >= 4 && string(b[i:i+4]) == "null"
				i += 4
			default:
				i, _, ok = scanNumber(b, i)
			}
			if !ok {
				return false
			}
			st = sAfter
		case sAfter:
			i = skipWS(b, i)
			if i >= len(b) {
				return false
			}
			obj := inObj[(n-1)>>6]&(1<<((n-1)&63)) != 0
			switch b[i] {
			case ',':
				i = skipWS(b, i+1)
				if i >= len(b) {
					return false
				}
				if obj {
					st = sKey
				} else {
					st = sValue
				}
			case '}':
				if !obj {
					return false
				}
				st = sClose
			case ']':
				if obj {
					return false
				}
				st = sClose
			default:
				return false
			}
		case sClose:
			i++
			n--
			if n == 0 {
				d.i = i
				return true
			}
			st = sAfter
		}
	}
}

// unquote decodes the body of a validated JSON string into dst exactly as
// encoding/json does (invalid UTF-8 and unpaired surrogates become U+FFFD),
// so that names and values compare the way the reference decoder sees them.
// It reports false when the result might not fit in dst; callers size dst
// utf8.UTFMax past their limit so that never rejects a value within it.
func unquote(dst, s []byte) (int, bool) {
	n := 0
	for r := 0; r < len(s); {
		if n+utf8.UTFMax > len(dst) {
			return n, false
		}
		c := s[r]
		switch {
		case c == '\\':
			switch s[r+1] {
			case 'b':
				dst[n] = '\b'
			case 'f':
				dst[n] = '\f'
			case 'n':
				dst[n] = '\n'
			case 'r':
				dst[n] = '\r'
			case 't':
				dst[n] = '\t'
			case 'u':
				rr := getu4(s[r:])
				r += 6
				if utf16.IsSurrogate(rr) {
					if dec := utf16.DecodeRune(rr, getu4(s[r:])); dec != unicode.ReplacementChar {
						r += 6
						rr = dec
					} else {
						rr = unicode.ReplacementChar
					}
				}
				n += utf8.EncodeRune(dst[n:], rr)
				continue
			default: // '"', '\\', '/'
				dst[n] = s[r+1]
			}
			n++
			r += 2
		case c < utf8.RuneSelf:
			dst[n] = c
			n++
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			r += size
			n += utf8.EncodeRune(dst[n:], rr)
		}
	}
	return n, true
}

// getu4 decodes a \uXXXX escape at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		v := hexVal[c]
		if v > 0x0f {
			return -1
		}
		r = r<<4 | rune(v)
	}
	return r
}

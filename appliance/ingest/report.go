// Package ingest decodes the gateway MQTT contract and runs the report
// pipeline. The contract is /work/shared/contracts/gateway-mqtt.md: gateways
// publish JSON report lists on gw/<GATEWAY_MAC>/<kind>, and Decode turns one
// publish into a Message of validated Reports plus the reasons anything was
// dropped.
//
// Decode runs inside the MQTT broker's per-client read loop, so it is built to
// be cheap (no allocations per message once a Message is reused), to keep no
// shared mutable state (safe for concurrent use with one Message per
// goroutine) and to never panic or loop on hostile input.
package ingest

// MAC is a 48-bit device address. It is stored as bytes so that every
// accepted spelling of an address compares equal without further
// normalisation.
type MAC [6]byte

// ParseMAC accepts exactly three spellings, in any letter case: 12 hex digits
// ("C30000000A01"), or six hex pairs separated throughout by ':' or by '-'
// ("C3:00:00:00:0A:01", "c3-00-00-00-0a-01"). Mixed or partial separators are
// refused because no firmware sends them and accepting them would widen what
// counts as the same device.
func ParseMAC(s string) (MAC, bool) { return parseMAC(s) }

// parseMAC is generic so the decoder can parse straight out of the payload
// bytes without converting to a string.
func parseMAC[T ~string | ~[]byte](s T) (MAC, bool) {
	var m MAC
	switch len(s) {
	case 12:
		for i := range 6 {
			hi, lo := hexVal[s[2*i]], hexVal[s[2*i+1]]
			if hi|lo > 0x0f {
				return MAC{}, false
			}
			m[i] = hi<<4 | lo
		}
		return m, true
	case 17:
		sep := s[2]
		if sep != ':' && sep != '-' {
			return MAC{}, false
		}
		for i := range 6 {
			if i > 0 && s[3*i-1] != sep {
				return MAC{}, false
			}
			hi, lo := hexVal[s[3*i]], hexVal[s[3*i+1]]
			if hi|lo > 0x0f {
				return MAC{}, false
			}
			m[i] = hi<<4 | lo
		}
		return m, true
	}
	return MAC{}, false
}

// hexVal maps an ASCII hex digit to its value and everything else to 0xff,
// so one OR of two lookups detects any bad digit.
var hexVal = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c - 'a' + 10)
		t[c-'a'+'A'] = byte(c - 'a' + 10)
	}
	return t
}()

const upperHex = "0123456789ABCDEF"

// String gives the canonical form used as client id and in topics: 12
// upper-case hex digits without separators.
func (m MAC) String() string {
	var b [12]byte
	return string(m.AppendHex(b[:0]))
}

// AppendHex appends the canonical 12-digit form to b, for callers that build
// keys or log lines without a per-call string allocation.
func (m MAC) AppendHex(b []byte) []byte {
	for _, x := range m {
		b = append(b, upperHex[x>>4], upperHex[x&0x0f])
	}
	return b
}

// Kind is the last topic segment: which report layout the payload carries.
type Kind uint8

const (
	KindUnknown Kind = iota
	KindAdv1
	KindSData
	KindAdv4
	KindAdv8
	KindStatus
)

// String returns the topic spelling, so it can be used directly as a metric
// label and round-trips through the topic.
func (k Kind) String() string {
	switch k {
	case KindAdv1:
		return "adv1"
	case KindSData:
		return "sData"
	case KindAdv4:
		return "adv4"
	case KindAdv8:
		return "adv8"
	case KindStatus:
		return "status"
	}
	return "unknown"
}

// parseKind is case-sensitive because the contract spells "sData" with a
// capital D and a gateway sending anything else is misconfigured.
func parseKind(s string) Kind {
	switch s {
	case "adv1":
		return KindAdv1
	case "sData":
		return KindSData
	case "adv4":
		return KindAdv4
	case "adv8":
		return KindAdv8
	case "status":
		return KindStatus
	}
	return KindUnknown
}

// Press is the button gesture of an adv4 frame.
type Press uint8

const (
	PressNone Press = iota
	PressSingle
	PressDouble
	PressTriple
	PressLong
)

// String returns the contract spelling ("single", ...), or "none".
func (p Press) String() string {
	switch p {
	case PressSingle:
		return "single"
	case PressDouble:
		return "double"
	case PressTriple:
		return "triple"
	case PressLong:
		return "long"
	}
	return "none"
}

// Field presence bits for Report.Has. Sensor values are optional on the wire
// and zero is a real reading (0 °C, 0 mV on a dead cell), so presence has to
// be carried separately.
const (
	HasTemperature uint8 = 1 << iota
	HasHumidity
	HasVBatt
	HasInterval
	HasMotion
	// HasTS marks a TS from the gateway's clock (the report's ts, else the
	// message's, inside the skew window), not the receive time.
	HasTS
)

// Report is one beacon heard by a gateway, validated against the contract and
// the plausibility ranges documented in decode.go. Only fields whose Has bit
// is set (or that the kind always carries: Pushed/Press for adv4) mean
// anything.
type Report struct {
	MAC         MAC
	RSSI        int8
	TS          int64   // Unix ms after the skew rule (report ts, else message ts, else receive time)
	Has         uint8   // presence bits
	Temperature float32 // °C
	Humidity    float32 // %RH
	VBatt       int32   // mV
	Interval    int32   // s (sData)
	Pushed      bool    // adv4 beacon_is_pushed
	Press       Press   // adv4, only when Pushed
	Motion      bool    // adv4
}

// GatewayStatus is the optional status heartbeat. IP and FW are empty when the
// gateway did not send them; Uptime is 0 when absent.
type GatewayStatus struct {
	TS     int64 // Unix ms after the skew rule
	IP     string
	FW     string
	Uptime int64 // s
}

// Message is one decoded MQTT publish. Reuse it across calls: Decode resets it
// but keeps the capacity of Reports and Drops, which is what makes decoding
// allocation-free in the steady state. A Message must not be shared between
// goroutines while Decode fills it.
type Message struct {
	Gateway MAC  // set whenever the topic carried a valid MAC, even if the message was dropped
	Kind    Kind // set whenever the topic carried a known kind
	IsTest  bool
	TS      int64         // Unix ms after the skew rule; the receive time when the message was dropped
	Reports []Report      // only the good reports
	Status  GatewayStatus // only for KindStatus
	Drops   []Drop        // why reports or the whole message were dropped

	// Status strings from the previous status message, kept across Reset so
	// that a gateway repeating the same ip/fw costs no allocation.
	lastIP, lastFW string
}

// Reset clears m for reuse, keeping slice capacity.
func (m *Message) Reset() {
	*m = Message{
		Reports: m.Reports[:0],
		Drops:   m.Drops[:0],
		lastIP:  m.lastIP,
		lastFW:  m.lastFW,
	}
}

// Dropped reports why the whole message was dropped, if it was.
func (m *Message) Dropped() (DropReason, bool) {
	if len(m.Drops) == 1 && m.Drops[0].Index == -1 {
		return m.Drops[0].Reason, true
	}
	return 0, false
}

// DropReason says why a report or a whole message was dropped. The String
// forms are metric label values: they are part of the status snapshot's
// schema, so never rename one.
type DropReason uint8

const (
	_ DropReason = iota

	// Whole-message reasons (Drop.Index == -1).
	DropBadTopic       // topic not of the form gw/<mac>/<kind>
	DropBadGatewayMAC  // topic MAC segment is not 12 hex digits
	DropUnknownKind    // gw/<mac>/<kind> with a kind the contract does not define
	DropTooLarge       // payload over 64 KiB
	DropNotJSON        // invalid JSON, trailing data, or not a JSON object
	DropNoReports      // reports missing, null or []
	DropTooManyReports // more than 500 reports
	DropBadStatus      // status message with a bad ip, fw or uptime

	// Reasons used for both levels. DropBadValue at message level means ts,
	// is_test or reports had the wrong JSON type.
	DropBadValue // wrong JSON type, non-integer where an integer is required, or outside the plausibility range

	// Report-level reasons (Drop.Index is the position in the reports array).
	DropBadReport    // array element is not a JSON object
	DropBadMAC       // mac missing, not a string, or not a MAC
	DropBadRSSI      // rssi missing, not an integer, or outside -127..0
	DropMissingField // a field the kind requires is absent or null (adv4 beacon_is_pushed, adv8 vbatt)
	DropBadPress     // adv4 pushed frame whose press is missing or not single/double/triple/long

	numDropReasons
)

var dropNames = [numDropReasons]string{
	DropBadTopic:       "bad_topic",
	DropBadGatewayMAC:  "bad_gateway_mac",
	DropUnknownKind:    "unknown_kind",
	DropTooLarge:       "too_large",
	DropNotJSON:        "not_json",
	DropNoReports:      "no_reports",
	DropTooManyReports: "too_many_reports",
	DropBadStatus:      "bad_status",
	DropBadValue:       "bad_value",
	DropBadReport:      "bad_report",
	DropBadMAC:         "bad_mac",
	DropBadRSSI:        "bad_rssi",
	DropMissingField:   "missing_field",
	DropBadPress:       "bad_press",
}

// String returns the stable snake_case metric label.
func (r DropReason) String() string {
	if r == 0 || r >= numDropReasons {
		return "invalid"
	}
	return dropNames[r]
}

// DropReasons lists every reason, so metrics can be registered (and shown as
// zero) before the first drop happens.
func DropReasons() []DropReason {
	rs := make([]DropReason, 0, numDropReasons-1)
	for r := DropReason(1); r < numDropReasons; r++ {
		rs = append(rs, r)
	}
	return rs
}

// Drop records one dropped report, or the whole message when Index is -1.
type Drop struct {
	Reason DropReason
	Index  int
}

package eink

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode"

	"beaconhub/appliance/apperr"
)

// Limits of a designer layout, so a saved layout cannot make every poll
// of a display expensive.
const (
	maxObjects     = 300
	maxTextLen     = 500
	maxDecimals    = 6
	maxLayoutBytes = 128 << 10
)

// sensorPrim is the in-memory primitive code of the designer's virtual
// sensor element (`"t": "sensor"` on the wire).
const sensorPrim = -1

// Prim is an object's primitive: 0-7 as in the device contract, or
// sensorPrim for a sensor element.
type Prim int

// UnmarshalJSON accepts a number or the string "sensor".
func (p *Prim) UnmarshalJSON(b []byte) error {
	if string(b) == `"sensor"` {
		*p = sensorPrim
		return nil
	}
	n, err := strconv.Atoi(string(b))
	if err != nil {
		return apperr.InvalidField("layout", "object t must be 0 to 7 or \"sensor\"")
	}
	*p = Prim(n)
	return nil
}

// MarshalJSON writes sensor elements back as "sensor".
func (p Prim) MarshalJSON() ([]byte, error) {
	if p == sensorPrim {
		return []byte(`"sensor"`), nil
	}
	return strconv.AppendInt(nil, int64(p), 10), nil
}

// Object is one designer object. Pointers keep "absent" apart from 0, so a
// stored layout round-trips exactly and the device gets only the keys the
// designer set.
type Object struct {
	T  Prim    `json:"t"`
	X  *int    `json:"x,omitempty"`
	Y  *int    `json:"y,omitempty"`
	X2 *int    `json:"x2,omitempty"`
	Y2 *int    `json:"y2,omitempty"`
	W  *int    `json:"w,omitempty"`
	H  *int    `json:"h,omitempty"`
	R  *int    `json:"r,omitempty"`
	F  *int    `json:"f,omitempty"`
	C  *int    `json:"c,omitempty"`
	S  *string `json:"s,omitempty"`

	// Sensor element fields.
	SensorUID string `json:"sensor_uid,omitempty"`
	SensorMAC string `json:"sensor_mac,omitempty"` // legacy; converted on save
	Metric    int    `json:"metric,omitempty"`
	Label     string `json:"label,omitempty"`
	Unit      string `json:"unit,omitempty"`
	Decimals  int    `json:"decimals,omitempty"`
}

// Layout is the designer JSON stored on a display or a template.
type Layout struct {
	// DecimalSeparator is "." (default) or ",".
	DecimalSeparator string   `json:"decimal_separator,omitempty"`
	Objects          []Object `json:"objects"`
}

// parseLayout decodes and validates designer JSON; an empty input is an
// empty layout.
func parseLayout(raw []byte) (*Layout, error) {
	l := &Layout{}
	if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
		return l, nil
	}
	if len(raw) > maxLayoutBytes {
		return nil, apperr.InvalidField("layout", "layout is larger than %d bytes", maxLayoutBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(l); err != nil {
		if e, ok := apperr.As(err); ok {
			return nil, e
		}
		return nil, apperr.InvalidField("layout", "layout is not valid designer JSON: %s", err.Error())
	}
	return l, l.validate()
}

func inRange(p *int, lo, hi int) bool { return p == nil || (*p >= lo && *p <= hi) }

func (l *Layout) validate() error {
	if l.DecimalSeparator != "" && l.DecimalSeparator != "." && l.DecimalSeparator != "," {
		return apperr.InvalidField("layout", "decimal_separator must be \".\" or \",\"")
	}
	if len(l.Objects) > maxObjects {
		return apperr.InvalidField("layout", "a layout has at most %d objects", maxObjects)
	}
	for i := range l.Objects {
		o := &l.Objects[i]
		bad := func(format string, args ...any) error {
			return apperr.InvalidField("layout", "object %d: "+format, append([]any{i}, args...)...)
		}
		switch {
		case o.T != sensorPrim && (o.T < 0 || o.T > 7):
			return bad("t must be 0 to 7 or \"sensor\"")
		case !inRange(o.C, 0, 3):
			return bad("c (colour) must be 0 to 3")
		case (o.T == 0 || o.T == sensorPrim) && !inRange(o.F, 0, 11):
			return bad("f (font) must be 0 to 11")
		case o.S != nil && len(*o.S) > maxTextLen, len(o.Label) > maxTextLen, len(o.Unit) > maxTextLen:
			return bad("text longer than %d bytes", maxTextLen)
		}
		for _, p := range []*int{o.X, o.Y, o.X2, o.Y2, o.W, o.H, o.R} {
			if !inRange(p, -10000, 10000) {
				return bad("coordinates and sizes must be within ±10000")
			}
		}
		if o.T != sensorPrim {
			if o.SensorUID != "" || o.SensorMAC != "" || o.Metric != 0 || o.Label != "" || o.Unit != "" || o.Decimals != 0 {
				return bad("sensor fields are only allowed on a \"sensor\" element")
			}
			continue
		}
		switch {
		case o.SensorUID == "" && o.SensorMAC == "":
			return bad("a sensor element needs sensor_uid")
		case o.Metric < 1 || o.Metric > 3:
			return bad("metric must be 1 (humidity), 2 (temperature) or 3 (battery)")
		case o.Decimals < 0 || o.Decimals > maxDecimals:
			return bad("decimals must be 0 to %d", maxDecimals)
		case o.S != nil:
			return bad("a sensor element has no s: its text is the reading")
		}
	}
	return nil
}

// shapes holds, per primitive, the device keys without which it cannot
// be drawn and those it may have besides (the contract's table): a text
// without s, a QR code without content or a rectangle without a size
// reached the display as saved, and keys of another primitive rode along
// (a black-box check). Position, font of a text and colour are left to
// the firmware's defaults when absent, as they always were.
var shapes = map[Prim]struct{ need, may string }{
	0:          {"s", "x y f c"},
	1:          {"x2 y2", "x y c"},
	2:          {"w h", "x y c"},
	3:          {"w h", "x y c"},
	4:          {"r", "x y c"},
	5:          {"r", "x y c"},
	6:          {"f", "x y c"},
	7:          {"s", "x y c"},
	sensorPrim: {"", "x y f c"},
}

// complete checks each object has its primitive's keys and no other
// device key, and that sizes are not negative. Like plainText it is
// checked where a layout is saved or applied, not where a stored one is
// read, so a layout saved before still renders.
func (l *Layout) complete(hasT func(i int) bool) error {
	for i := range l.Objects {
		o := &l.Objects[i]
		if !hasT(i) {
			return apperr.InvalidField("layout", "object %d: t is required (0 to 7 or \"sensor\")", i)
		}
		has := map[string]bool{"x": o.X != nil, "y": o.Y != nil, "x2": o.X2 != nil, "y2": o.Y2 != nil, "w": o.W != nil,
			"h": o.H != nil, "r": o.R != nil, "f": o.F != nil, "c": o.C != nil, "s": o.S != nil}
		if o.T == 7 && o.S != nil && *o.S == "" {
			has["s"] = false // a QR code of nothing
		}
		sh := shapes[o.T]
		for _, k := range strings.Fields(sh.need) {
			if !has[k] {
				return apperr.InvalidField("layout", "object %d (t %s): %s is required", i, primName(o.T), k)
			}
			delete(has, k)
		}
		for _, k := range strings.Fields(sh.may) {
			delete(has, k)
		}
		for _, k := range []string{"x", "y", "x2", "y2", "w", "h", "r", "f", "c", "s"} {
			if has[k] {
				return apperr.InvalidField("layout", "object %d (t %s): %s does not apply to it", i, primName(o.T), k)
			}
		}
		for _, p := range []*int{o.W, o.H, o.R} {
			if p != nil && *p < 0 {
				return apperr.InvalidField("layout", "object %d (t %s): w, h and r may not be negative", i, primName(o.T))
			}
		}
	}
	return nil
}

func primName(p Prim) string {
	if p == sensorPrim {
		return "sensor"
	}
	return strconv.Itoa(int(p))
}

// objectsWithT reports, per object of raw designer JSON, whether it
// names its primitive: a missing t decodes as 0, a text.
func objectsWithT(raw []byte) func(i int) bool {
	var probe struct {
		Objects []map[string]json.RawMessage `json:"objects"`
	}
	_ = json.Unmarshal(raw, &probe)
	return func(i int) bool {
		if i >= len(probe.Objects) {
			return true
		}
		_, ok := probe.Objects[i]["t"]
		return ok
	}
}

// plainText refuses text (s, label, unit) with control characters.
// Checked where a layout is saved or applied, not where it is read: a
// stored one with them still renders. The displays draw one line per
// text object and take no \u escapes, which is how JSON sends a newline
// or a tab (a review): as for names, refused.
func (l *Layout) plainText() error {
	for i := range l.Objects {
		o := &l.Objects[i]
		for _, txt := range []string{deref(o.S), o.Label, o.Unit} {
			if strings.IndexFunc(txt, unicode.IsControl) >= 0 {
				return apperr.InvalidField("layout", "object %d: text may not contain control characters (newlines, tabs, escapes): use one text object per line", i)
			}
		}
	}
	return nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// sensorUIDs returns the distinct sensor uids the layout references, in
// order of first use.
func (l *Layout) sensorUIDs() []string {
	var out []string
	seen := map[string]bool{}
	for _, o := range l.Objects {
		if o.T == sensorPrim && !seen[o.SensorUID] {
			seen[o.SensorUID] = true
			out = append(out, o.SensorUID)
		}
	}
	return out
}

func (l *Layout) marshal() (json.RawMessage, error) {
	if l.Objects == nil {
		l.Objects = []Object{}
	}
	return json.Marshal(l)
}

package nav

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"beaconhub/appliance/apperr"
	"beaconhub/store"
)

// Survey upload limits. A line is one scan; a phone hears at most a few
// hundred transmitters, so longer lines are not scans.
const (
	MaxSurveyLine     = 64 << 10
	MaxSurveyUpload   = 5000  // samples per request
	MaxSurveyPerFloor = 20000 // samples stored per floor
	MaxObservations   = 500   // per list (wifi, ble) per sample
	maxDeviceField    = 128
	maxSurveyCoord    = 1e6
	minRSSI, maxRSSI  = -127, 20
	// MaxSurveyBody is the request body limit of a survey upload.
	MaxSurveyBody = 16 << 20
)

// SurveyLine is one JSONL line of an upload or export.
type SurveyLine struct {
	FloorID uint64             `json:"floor_id,omitempty"`
	X       *float64           `json:"x"`
	Y       *float64           `json:"y"`
	T       int64              `json:"t,omitempty"`
	Device  store.SurveyDevice `json:"device"`
	WiFi    []store.SurveyObs  `json:"wifi"`
	BLE     []store.SurveyObs  `json:"ble"`
}

// lineErr is a 400 naming the 1-based line at fault.
func lineErr(line int, format string, args ...any) error {
	e := apperr.InvalidField("line", "line %d: %s", line, fmt.Sprintf(format, args...))
	e.Details = map[string]any{"line": line}
	return e
}

// ParseSurvey reads a JSONL survey for floor: every line is checked and
// the first bad one refuses the whole upload, so a half-imported survey
// never skews a model. Blank lines are skipped but counted.
func ParseSurvey(r io.Reader, floor uint64) ([]store.SurveySample, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxSurveyLine)
	var out []store.SurveySample
	line := 0
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		if len(out) == MaxSurveyUpload {
			return nil, apperr.TooLarge("at most %d samples per upload", MaxSurveyUpload)
		}
		s, err := parseSurveyLine(raw, line, floor)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, lineErr(line+1, "longer than %d bytes", MaxSurveyLine)
		}
		return nil, err
	}
	if len(out) == 0 {
		return nil, apperr.Invalid("the survey upload has no samples")
	}
	return out, nil
}

func parseSurveyLine(raw []byte, line int, floor uint64) (store.SurveySample, error) {
	var in SurveyLine
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return store.SurveySample{}, lineErr(line, "malformed JSON: %s", jsonText(err))
	}
	if dec.More() {
		return store.SurveySample{}, lineErr(line, "one JSON object per line")
	}
	if in.FloorID != 0 && in.FloorID != floor {
		return store.SurveySample{}, lineErr(line, "floor_id %d is not this floor (%d)", in.FloorID, floor)
	}
	if in.X == nil || in.Y == nil {
		return store.SurveySample{}, lineErr(line, "x and y are required")
	}
	for _, v := range []float64{*in.X, *in.Y} {
		if math.IsNaN(v) || v < 0 || v > maxSurveyCoord {
			return store.SurveySample{}, lineErr(line, "x and y must be map pixels between 0 and %g", maxSurveyCoord)
		}
	}
	if in.T < 0 {
		return store.SurveySample{}, lineErr(line, "t must be Unix milliseconds")
	}
	for _, f := range []string{in.Device.Model, in.Device.OS, in.Device.App, in.Device.DeviceID} {
		if utf8.RuneCountInString(f) > maxDeviceField {
			return store.SurveySample{}, lineErr(line, "device fields are at most %d characters", maxDeviceField)
		}
	}
	wifi, err := checkObs(in.WiFi, "wifi", line)
	if err != nil {
		return store.SurveySample{}, err
	}
	ble, err := checkObs(in.BLE, "ble", line)
	if err != nil {
		return store.SurveySample{}, err
	}
	if len(wifi)+len(ble) == 0 {
		return store.SurveySample{}, lineErr(line, "no wifi or ble observations")
	}
	return store.SurveySample{FloorID: floor, X: *in.X, Y: *in.Y, T: in.T, Device: in.Device, WiFi: wifi, BLE: ble}, nil
}

func checkObs(obs []store.SurveyObs, list string, line int) ([]store.SurveyObs, error) {
	if len(obs) > MaxObservations {
		return nil, lineErr(line, "%s has more than %d observations", list, MaxObservations)
	}
	out := make([]store.SurveyObs, 0, len(obs))
	for i, o := range obs {
		mac, ok := store.NormalizeMAC(o.MAC)
		if !ok {
			return nil, lineErr(line, "%s[%d].mac must be 12 hex digits", list, i)
		}
		if o.RSSI < minRSSI || o.RSSI > maxRSSI || o.RSSI == 0 {
			return nil, lineErr(line, "%s[%d].rssi must be a non-zero integer dBm between %d and %d", list, i, minRSSI, maxRSSI)
		}
		if o.T < 0 {
			return nil, lineErr(line, "%s[%d].t must be Unix milliseconds", list, i)
		}
		out = append(out, store.SurveyObs{MAC: mac, RSSI: o.RSSI, T: o.T})
	}
	return out, nil
}

// jsonText keeps decoder messages free of Go type names.
func jsonText(err error) string {
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		if ute.Field == "" { // the line itself: "field  has the wrong type" named nothing
			return "a line must be a JSON object, not " + ute.Value
		}
		return "field " + ute.Field + " has the wrong type"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// WriteSurvey writes samples as JSONL in the upload format, so an export
// can be uploaded again.
func WriteSurvey(w io.Writer, samples []store.SurveySample) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, s := range samples {
		x, y := s.X, s.Y
		if err := enc.Encode(SurveyLine{FloorID: s.FloorID, X: &x, Y: &y, T: s.T, Device: s.Device, WiFi: s.WiFi, BLE: s.BLE}); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// ScanOf turns a sample into model features: `wifi:<MAC>` and
// `ble:<MAC>` with MACs as 12 upper-case hex digits (the form BeaconHub
// uses everywhere). Repeated adverts of one transmitter in one scan (BLE
// is unfiltered) are averaged.
func ScanOf(s store.SurveySample) Scan {
	sum := map[string]float64{}
	n := map[string]int{}
	for _, o := range s.WiFi {
		sum["wifi:"+o.MAC] += float64(o.RSSI)
		n["wifi:"+o.MAC]++
	}
	for _, o := range s.BLE {
		sum["ble:"+o.MAC] += float64(o.RSSI)
		n["ble:"+o.MAC]++
	}
	for f := range sum {
		sum[f] /= float64(n[f])
	}
	return Scan{X: s.X, Y: s.Y, RSSI: sum}
}

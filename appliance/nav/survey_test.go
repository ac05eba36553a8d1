package nav

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"beaconhub/appliance/apperr"
	"beaconhub/store"
)

const goodLine = `{"x": 10, "y": 20.5, "t": 1700000000000, "device": {"model": "Pixel 8", "os": "Android 15"},` +
	` "wifi": [{"mac": "aa:bb:cc:dd:ee:01", "rssi": -61}], "ble": [{"mac": "AABBCCDDEE02", "rssi": -70, "t": 1700000000100}]}`

func TestParseSurveyAccepts(t *testing.T) {
	in := goodLine + "\n\n" + strings.Replace(goodLine, `"x": 10`, `"x": 11, "floor_id": 4`, 1) + "\n"
	got, err := ParseSurvey(strings.NewReader(in), 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d samples", len(got))
	}
	s := got[0]
	want := store.SurveySample{FloorID: 4, X: 10, Y: 20.5, T: 1700000000000,
		Device: store.SurveyDevice{Model: "Pixel 8", OS: "Android 15"},
		WiFi:   []store.SurveyObs{{MAC: "AABBCCDDEE01", RSSI: -61}},
		BLE:    []store.SurveyObs{{MAC: "AABBCCDDEE02", RSSI: -70, T: 1700000000100}}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("sample\n got %+v\nwant %+v", s, want)
	}
	// An export uploads again unchanged.
	var buf bytes.Buffer
	if err := WriteSurvey(&buf, got); err != nil {
		t.Fatal(err)
	}
	again, err := ParseSurvey(&buf, 4)
	if err != nil || !reflect.DeepEqual(again, got) {
		t.Fatalf("round trip: %v\n%+v\n%+v", err, again, got)
	}
}

func TestParseSurveyRefuses(t *testing.T) {
	repl := func(old, new string) string { return strings.Replace(goodLine, old, new, 1) }
	cases := []struct {
		name, line, want string
	}{
		{"not json", `{"x": 1,`, "malformed JSON"},
		{"unknown field", repl(`"t":`, `"colour": 1, "t":`), "unknown field"},
		{"two objects", goodLine + " {}", "one JSON object per line"},
		{"missing x", repl(`"x": 10,`, ``), "x and y are required"},
		{"negative y", repl(`"y": 20.5`, `"y": -1`), "map pixels"},
		{"huge x", repl(`"x": 10`, `"x": 1e9`), "map pixels"},
		{"other floor", repl(`"x": 10`, `"x": 10, "floor_id": 9`), "not this floor"},
		{"bad mac", repl(`aa:bb:cc:dd:ee:01`, `aa:bb:cc:dd:ee`), "wifi[0].mac"},
		{"rssi float", repl(`"rssi": -61`, `"rssi": -61.5`), "wrong type"},
		{"array line", `[{"x": 1}]`, "a line must be a JSON object, not array"},
		{"rssi range", repl(`"rssi": -70`, `"rssi": -200`), "ble[0].rssi"},
		{"rssi zero", repl(`"rssi": -70`, `"rssi": 0`), "ble[0].rssi"},
		{"negative t", repl(`"t": 1700000000000`, `"t": -5`), "t must be"},
		{"no observations", `{"x": 1, "y": 1, "wifi": [], "ble": []}`, "no wifi or ble"},
		{"device too long", repl(`"Pixel 8"`, `"`+strings.Repeat("p", 200)+`"`), "device fields"},
		{"too many obs", `{"x":1,"y":1,"ble":[` + strings.TrimSuffix(strings.Repeat(`{"mac":"AABBCCDDEEFF","rssi":-50},`, MaxObservations+1), ",") + `]}`, "more than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The bad line is the third: the error names it.
			in := goodLine + "\n" + goodLine + "\n" + c.line + "\n" + goodLine
			_, err := ParseSurvey(strings.NewReader(in), 4)
			e, ok := apperr.As(err)
			if !ok || e.Kind != apperr.KindInvalid {
				t.Fatalf("err %v", err)
			}
			if !strings.HasPrefix(e.Msg, "line 3: ") || !strings.Contains(e.Msg, c.want) || e.Details["line"] != 3 {
				t.Fatalf("message %q details %v, want line 3 and %q", e.Msg, e.Details, c.want)
			}
		})
	}
}

func TestParseSurveyLimits(t *testing.T) {
	if _, err := ParseSurvey(strings.NewReader("\n \n"), 1); apperr.KindOf(err) != apperr.KindInvalid {
		t.Fatalf("empty upload: %v", err)
	}
	long := `{"x":1,"y":1,"device":{"model":"` + strings.Repeat("m", MaxSurveyLine) + `"}}`
	_, err := ParseSurvey(strings.NewReader(goodLine+"\n"+long), 1)
	if e, ok := apperr.As(err); !ok || !strings.HasPrefix(e.Msg, "line 2: ") {
		t.Fatalf("long line: %v", err)
	}
	many := strings.Repeat(goodLine+"\n", MaxSurveyUpload+1)
	if _, err := ParseSurvey(strings.NewReader(many), 1); apperr.KindOf(err) != apperr.KindTooLarge {
		t.Fatalf("too many samples: %v", err)
	}
}

func TestScanOfAveragesRepeatedAdverts(t *testing.T) {
	s := ScanOf(store.SurveySample{X: 1, Y: 2,
		WiFi: []store.SurveyObs{{MAC: "AABBCCDDEEFF", RSSI: -50}},
		BLE:  []store.SurveyObs{{MAC: "AABBCCDDEEFF", RSSI: -60}, {MAC: "AABBCCDDEEFF", RSSI: -70}}})
	want := map[string]float64{"wifi:AABBCCDDEEFF": -50, "ble:AABBCCDDEEFF": -65}
	if !reflect.DeepEqual(s.RSSI, want) || s.X != 1 || s.Y != 2 {
		t.Fatalf("scan %+v", s)
	}
}

// FuzzParseSurvey: any input either fails with a client error naming a
// line, or parses into samples that survive an export/import round trip.
func FuzzParseSurvey(f *testing.F) {
	f.Add(goodLine)
	f.Add(goodLine + "\n" + `{"x":1,"y":2,"ble":[{"mac":"00:11:22:33:44:55","rssi":-90}]}`)
	f.Add(`{"x":1e400}`)
	f.Add("\n\n{\"x\":0,\"y\":0,\"wifi\":[{\"mac\":\"001122334455\",\"rssi\":20}]}")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseSurvey(strings.NewReader(in), 7)
		if err != nil {
			if _, ok := apperr.As(err); !ok {
				t.Fatalf("non-client error %v", err)
			}
			return
		}
		var buf bytes.Buffer
		if err := WriteSurvey(&buf, got); err != nil {
			t.Fatal(err)
		}
		again, err := ParseSurvey(&buf, 7)
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("round trip of %q: %v", in, err)
		}
		for _, s := range got {
			if s.FloorID != 7 || len(s.WiFi)+len(s.BLE) == 0 {
				t.Fatalf("sample %s", fmt.Sprint(s))
			}
		}
	})
}

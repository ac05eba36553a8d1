package eink

import (
	"encoding/json"
	"strings"
	"testing"

	"beaconhub/appliance/apperr"
)

// Text with control characters is refused when a layout is saved: the
// displays draw one line per text object and decode no \u escapes,
// which is how JSON carries a newline or a tab (a review saw
// "Room 12\u000aWard B" sent to a device).
func TestLayoutTextWithControlCharactersIsRefused(t *testing.T) {
	r := newRig(t)
	r.poll(mac1)
	id := r.idOf(mac1)
	for _, layout := range []string{
		`{"objects":[{"t":0,"x":1,"y":2,"s":"Room 12\nWard B"}]}`,
		`{"objects":[{"t":0,"x":1,"y":2,"s":"Room\t12"}]}`,
		`{"objects":[{"t":"sensor","sensor_uid":"SEN-K1-1","metric":2,"label":"T\u001b"}]}`,
	} {
		_, err := r.svc.Update(id, Input{Layout: json.RawMessage(layout)})
		if e, ok := apperr.As(err); !ok || e.Field != "layout" || !strings.Contains(e.Msg, "control characters") {
			t.Errorf("%s: %v", layout, err)
		}
	}
	if _, err := r.svc.Update(id, Input{Layout: json.RawMessage(`{"objects":[{"t":0,"x":1,"y":2,"s":"Room 12 – Ward B"}]}`)}); err != nil {
		t.Fatal(err)
	}
}

// Each primitive is saved only with what it needs to be drawn and the
// keys that apply to it: a QR code without content, a rectangle without
// a size, a negative radius or an object without t (read as a text)
// reached the display as saved (a black-box check).
func TestLayoutObjectsNeedTheirPrimitivesKeys(t *testing.T) {
	r := newRig(t)
	r.poll(mac1)
	id := r.idOf(mac1)
	for layout, want := range map[string]string{
		`{"objects":[{"t":7,"x":0,"y":0,"c":1}]}`:                                "s is required",
		`{"objects":[{"t":7,"x":0,"y":0,"s":""}]}`:                               "s is required",
		`{"objects":[{"t":0,"x":0,"y":0,"f":1,"c":1}]}`:                          "s is required",
		`{"objects":[{"t":3,"x":0,"y":0,"c":1}]}`:                                "w is required",
		`{"objects":[{"t":2,"x":0,"y":0,"w":-5,"h":3}]}`:                         "may not be negative",
		`{"objects":[{"t":4,"x":0,"y":0,"r":-5}]}`:                               "may not be negative",
		`{"objects":[{"t":1,"x":0,"y":0,"x2":5}]}`:                               "y2 is required",
		`{"objects":[{"t":6,"x":0,"y":0}]}`:                                      "f is required",
		`{"objects":[{"x":1,"y":2,"s":"no t"}]}`:                                 "t is required",
		`{"objects":[{"t":0,"x":0,"y":0,"s":"a","r":3}]}`:                        "r does not apply",
		`{"objects":[{"t":3,"x":0,"y":0,"w":5,"h":5,"s":"x"}]}`:                  "s does not apply",
		`{"objects":[{"t":"sensor","sensor_uid":"SEN-K1-1","metric":2,"x2":3}]}`: "x2 does not apply",
	} {
		_, err := r.svc.Update(id, Input{Layout: json.RawMessage(layout)})
		if e, ok := apperr.As(err); !ok || e.Field != "layout" || !strings.Contains(e.Msg, want) {
			t.Errorf("%s: %v, want %q", layout, err, want)
		}
	}
	good := `{"objects":[{"t":0,"x":1,"y":2,"f":3,"c":1,"s":"Ward"},{"t":1,"x":0,"y":0,"x2":9,"y2":9,"c":1},` +
		`{"t":3,"x":0,"y":0,"w":800,"h":30,"c":2},{"t":5,"x":9,"y":9,"r":4,"c":1},{"t":6,"x":1,"y":1,"f":2},` +
		`{"t":7,"x":1,"y":1,"c":1,"s":"https://example.org"}]}`
	if _, err := r.svc.Update(id, Input{Layout: json.RawMessage(good)}); err != nil {
		t.Fatal(err)
	}
}

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

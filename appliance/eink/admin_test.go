package eink

import (
	"encoding/json"
	"strings"
	"testing"

	"beaconhub/appliance/apperr"
	"beaconhub/store"
)

func kindOf(err error) apperr.Kind {
	if e, ok := apperr.As(err); ok {
		return e.Kind
	}
	return apperr.KindInternal
}

// TestStateTable walks the spec's e-ink rows of "States and transitions".
func TestStateTable(t *testing.T) {
	const (
		P = store.EInkPending
		A = store.EInkApproved
		B = store.EInkBlocked
	)
	for _, row := range []struct {
		from, to string
		ok       bool
		note     string
	}{
		{P, A, true, "pending -> approved: designer layout is served"},
		{P, B, true, "pending -> blocked"},
		{A, B, true, "approved -> blocked"},
		{P, P, true, "any -> pending"},
		{A, P, true, "any -> pending"},
		{B, P, true, "any -> pending"},
		{B, A, false, "blocked must go through pending"},
		{A, A, true, "same state: no-op"},
		{B, B, true, "same state: no-op"},
	} {
		t.Run(row.from+"->"+row.to, func(t *testing.T) {
			r := newRig(t)
			r.poll(mac1)
			id := r.idOf(mac1)
			switch row.from { // reach the starting state legally
			case A:
				_, _ = r.svc.SetState(id, A)
			case B:
				_, _ = r.svc.SetState(id, B)
			}
			if got := r.display(id).State; got != row.from {
				t.Fatalf("setup: state %s", got)
			}
			v, err := r.svc.SetState(id, row.to)
			if row.ok != (err == nil) {
				t.Fatalf("%s: err = %v", row.note, err)
			}
			if !row.ok {
				if kindOf(err) != apperr.KindConflict || r.display(id).State != row.from {
					t.Fatalf("refusal: %v, state %s", err, r.display(id).State)
				}
				return
			}
			if v.State != row.to || r.display(id).State != row.to {
				t.Fatalf("state = %s / %s", v.State, r.display(id).State)
			}
			rp := r.poll(mac1)
			neutral := len(rp.Objects) == 3 && rp.Validity != DefaultValidity
			if (row.to == A) == neutral {
				t.Errorf("%s: reply %+v", row.note, rp)
			}
		})
	}
	r := newRig(t)
	r.poll(mac1)
	if _, err := r.svc.SetState(r.idOf(mac1), "gone"); kindOf(err) != apperr.KindInvalid {
		t.Errorf("bad state: %v", err)
	}
	if _, err := r.svc.SetState(999, "pending"); kindOf(err) != apperr.KindNotFound {
		t.Errorf("unknown id: %v", err)
	}
}

func TestUpdateValidation(t *testing.T) {
	r := newRig(t)
	r.poll(mac1)
	id := r.idOf(mac1)
	for name, in := range map[string]Input{
		"rotation 4":      {Rotation: ptr(4)},
		"rotation -1":     {Rotation: ptr(-1)},
		"width 0":         {Width: ptr(0)},
		"validity 1":      {Validity: ptr(1)},
		"no location":     {LocationID: ptr(uint64(77))},
		"bad t":           {Layout: json.RawMessage(`{"objects":[{"t":9}]}`)},
		"bad colour":      {Layout: json.RawMessage(`{"objects":[{"t":0,"c":4}]}`)},
		"bad font":        {Layout: json.RawMessage(`{"objects":[{"t":0,"f":12}]}`)},
		"unknown field":   {Layout: json.RawMessage(`{"objects":[{"t":0,"zz":1}]}`)},
		"unknown sensor":  {Layout: json.RawMessage(`{"objects":[{"t":"sensor","sensor_uid":"SEN-X-1","metric":2}]}`)},
		"bad metric":      {Layout: json.RawMessage(`{"objects":[{"t":"sensor","sensor_uid":"SEN-X-1","metric":4}]}`)},
		"sensor field":    {Layout: json.RawMessage(`{"objects":[{"t":0,"metric":2}]}`)},
		"separator":       {Layout: json.RawMessage(`{"decimal_separator":";","objects":[]}`)},
		"unattached mac":  {Layout: json.RawMessage(`{"objects":[{"t":"sensor","sensor_mac":"010203040506","metric":2}]}`)},
		"name with space": {Name: ptr(" x")},
	} {
		if _, err := r.svc.Update(id, in); kindOf(err) != apperr.KindInvalid {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	v, err := r.svc.Update(id, Input{Name: ptr("Kitchen"), Width: ptr(400), Height: ptr(300), Rotation: ptr(3), Validity: ptr(120)})
	if err != nil || v.Name != "Kitchen" || v.Width != 400 || v.Height != 300 || v.Rotation != 3 || v.Validity != 120 {
		t.Fatalf("update = %+v, %v", v, err)
	}
}

func TestLegacySensorMACConverted(t *testing.T) {
	r := newRig(t)
	r.sensor("112233445566", "SEN-K1-1")
	r.poll(mac1)
	v, err := r.svc.Update(r.idOf(mac1), Input{Layout: json.RawMessage(`{"objects":[{"t":"sensor","sensor_mac":"11:22:33:44:55:66","metric":2}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	if s := string(v.Layout); !strings.Contains(s, `"sensor_uid":"SEN-K1-1"`) || strings.Contains(s, "sensor_mac") {
		t.Errorf("layout = %s", s)
	}
}

func TestRemintToEKWithCodedHomeLocation(t *testing.T) {
	r := newRig(t)
	r.poll(mac1)
	id := r.idOf(mac1)
	root := r.location("Hospital", "H1", 0)
	uncoded := r.location("Annex", "", root)
	v, err := r.svc.Update(id, Input{LocationID: ptr(uncoded)})
	if err != nil || v.AssetUID != "LEGACY-"+mac1 {
		t.Fatalf("uncoded location: %+v, %v", v.AssetUID, err)
	}
	ward := r.location("Ward 2", "W2", root)
	v, err = r.svc.Update(id, Input{LocationID: ptr(ward)})
	if err != nil || v.AssetUID != "EK-H1W2-1" || v.LocationName != "Ward 2" {
		t.Fatalf("coded location: uid %q name %q, %v", v.AssetUID, v.LocationName, err)
	}
	// The uid survives later moves and resolves both ways.
	if v, _ = r.svc.Update(id, Input{LocationID: ptr(root)}); v.AssetUID != "EK-H1W2-1" {
		t.Errorf("uid changed on a move: %s", v.AssetUID)
	}
	for _, key := range []string{"EK-H1W2-1", "LEGACY-" + mac1, "1"} {
		if got, err := r.svc.ResolveID(key); err != nil || got != id {
			t.Errorf("ResolveID(%q) = %d, %v", key, got, err)
		}
	}
	// Polling keeps working under the new uid.
	if rp := r.poll(mac1); rp.Version == 0 {
		t.Error("poll after remint")
	}
}

func TestReplaceDevice(t *testing.T) {
	r := newRig(t)
	id := r.approve(mac1, `{"objects":[{"t":0,"s":"hi"}]}`)
	uid := r.display(id).AssetUID
	r.poll("0000000000AA") // another pending display
	if _, err := r.svc.ReplaceDevice(id, "0000000000AA"); kindOf(err) != apperr.KindConflict {
		t.Errorf("MAC of another display: %v", err)
	}
	if _, err := r.svc.ReplaceDevice(id, "nope"); kindOf(err) != apperr.KindInvalid {
		t.Errorf("bad MAC: %v", err)
	}
	before := r.poll(mac1).Version
	v, err := r.svc.ReplaceDevice(id, "00:00:00:00:00:BB")
	if err != nil || v.MAC != "0000000000BB" || v.AssetUID != uid {
		t.Fatalf("replace = %+v, %v", v, err)
	}
	rp := r.poll("0000000000BB")
	if rp.Version == before || texts(rp)[0] != "hi" {
		t.Errorf("new device reply %+v (old version %d)", rp, before)
	}
	if r.idOf(mac1) != 0 {
		t.Error("old MAC still indexed")
	}
	_ = r.db.ViewAssets(func(tx *store.AssetTx) error {
		d, err := tx.Device(mac1)
		if err != nil || d.Status != store.DeviceAvailable || d.AssignmentID != 0 {
			t.Errorf("old device = %+v, %v", d, err)
		}
		return nil
	})
	// The old device polling again registers as a new pending display.
	r.poll(mac1)
	if nid := r.idOf(mac1); nid == 0 || nid == id {
		t.Errorf("old device re-registered as %d", nid)
	}
	if err := r.svc.Delete(12345); kindOf(err) != apperr.KindNotFound {
		t.Errorf("delete unknown: %v", err)
	}
}

// A sensor element's source must be a sensor beacon, on a display as in
// a template, as applying a template already required: a watch was taken
// and its display showed "--" for good (a black-box check).
func TestSensorElementOfANonSensorBeaconIsRefused(t *testing.T) {
	r := newRig(t)
	if err := r.db.CreateBeacon(&store.Beacon{MAC: "C3000000B001", AssetUID: "WCH-H1-1", Name: "Watch", Type: "watch", Active: true}); err != nil {
		t.Fatal(err)
	}
	r.poll(mac1)
	layout := json.RawMessage(`{"objects":[{"t":"sensor","sensor_uid":"WCH-H1-1","metric":2}]}`)
	if _, err := r.svc.Update(r.idOf(mac1), Input{Layout: layout}); kindOf(err) != apperr.KindInvalid || !strings.Contains(err.Error(), "not a sensor") {
		t.Errorf("display layout with a watch as sensor: %v", err)
	}
	byMAC := json.RawMessage(`{"objects":[{"t":"sensor","sensor_mac":"C3000000B001","metric":2}]}`)
	if _, err := r.svc.Update(r.idOf(mac1), Input{Layout: byMAC}); kindOf(err) != apperr.KindInvalid {
		t.Errorf("display layout with a watch's MAC as sensor: %v", err)
	}
}

// A layout template's faults name their field, as a display's do (they
// did not: a black-box check); its sensor elements must be sensors too.
func TestLayoutTemplateFaultsNameTheirField(t *testing.T) {
	r := newRig(t)
	if err := r.db.CreateBeacon(&store.Beacon{MAC: "C3000000B001", AssetUID: "WCH-H1-1", Name: "Watch", Type: "watch", Active: true}); err != nil {
		t.Fatal(err)
	}
	name := "T"
	for field, in := range map[string]TemplateInput{
		"rotation": {Name: &name, Rotation: ptr(5), Layout: json.RawMessage(`{"objects":[]}`)},
		"width":    {Name: &name, Width: ptr(0), Layout: json.RawMessage(`{"objects":[]}`)},
		"layout":   {Name: &name, Layout: json.RawMessage(`{"objects":[{"t":"sensor","sensor_uid":"WCH-H1-1","metric":2}]}`)},
	} {
		_, err := r.svc.SaveTemplate(0, in)
		if e, ok := apperr.As(err); !ok || e.Kind != apperr.KindInvalid || e.Field != field {
			t.Errorf("%s: %v, want a 400 naming %s", field, err, field)
		}
	}
}

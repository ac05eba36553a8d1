package eink

import (
	"bytes"
	"encoding/json"
	"testing"

	"beaconhub/appliance/apperr"
	"beaconhub/store"
)

func TestApplyTemplate(t *testing.T) {
	r := newRig(t)
	r.sensor("111111111111", "SEN-A-1")
	r.sensor("222222222222", "SEN-A-2")
	r.sensor("333333333333", "SEN-B-1")
	r.sensor("444444444444", "SEN-B-2")
	if err := r.db.CreateBeacon(&store.Beacon{MAC: "555555555555", AssetUID: "WCH-A-1", Type: "watch", Active: true}); err != nil {
		t.Fatal(err)
	}
	tp, err := r.svc.SaveTemplate(0, TemplateInput{Name: ptr("Fridge door"), Layout: json.RawMessage(`{"objects":[
		{"t":"sensor","sensor_uid":"SEN-A-1","metric":2,"decimals":1},
		{"t":"sensor","sensor_uid":"SEN-A-2","metric":1},
		{"t":"sensor","sensor_uid":"SEN-A-1","metric":3}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	snapshot := func() []byte {
		var raw []byte
		_ = r.db.ViewAssets(func(tx *store.AssetTx) error {
			x, err := tx.EInkTemplate(tp.ID)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ = json.Marshal(x)
			return nil
		})
		return raw
	}
	before := snapshot()
	r.poll(mac1)
	id := r.idOf(mac1)
	full := map[string]string{"SEN-A-1": "SEN-B-1", "SEN-A-2": "SEN-B-2"}
	for name, tc := range map[string]struct {
		in   ApplyInput
		kind apperr.Kind
	}{
		"missing sensor":  {ApplyInput{TemplateID: tp.ID, SensorMap: map[string]string{"SEN-A-1": "SEN-B-1"}}, apperr.KindInvalid},
		"extra sensor":    {ApplyInput{TemplateID: tp.ID, SensorMap: map[string]string{"SEN-A-1": "SEN-B-1", "SEN-A-2": "SEN-B-2", "SEN-Z": "SEN-B-2"}}, apperr.KindInvalid},
		"not a sensor":    {ApplyInput{TemplateID: tp.ID, SensorMap: map[string]string{"SEN-A-1": "WCH-A-1", "SEN-A-2": "SEN-B-2"}}, apperr.KindInvalid},
		"unknown target":  {ApplyInput{TemplateID: tp.ID, SensorMap: map[string]string{"SEN-A-1": "SEN-Q-9", "SEN-A-2": "SEN-B-2"}}, apperr.KindInvalid},
		"no template":     {ApplyInput{TemplateID: 99, SensorMap: full}, apperr.KindNotFound},
		"rotated display": {ApplyInput{TemplateID: tp.ID, SensorMap: full}, apperr.KindConflict},
	} {
		if name == "rotated display" {
			_, _ = r.svc.Update(id, Input{Rotation: ptr(1)})
		}
		if _, err := r.svc.ApplyTemplate(id, tc.in); kindOf(err) != tc.kind {
			t.Errorf("%s: err = %v", name, err)
		}
		if name == "rotated display" {
			_, _ = r.svc.Update(id, Input{Rotation: ptr(0), Width: ptr(640)})
			if _, err := r.svc.ApplyTemplate(id, tc.in); kindOf(err) != apperr.KindConflict {
				t.Errorf("other size: %v", err)
			}
			_, _ = r.svc.Update(id, Input{Width: ptr(800)})
		}
	}
	v, err := r.svc.ApplyTemplate(id, ApplyInput{TemplateID: tp.ID, SensorMap: full})
	if err != nil {
		t.Fatal(err)
	}
	var l Layout
	if err := json.Unmarshal(v.Layout, &l); err != nil {
		t.Fatal(err)
	}
	if got := l.sensorUIDs(); len(got) != 2 || got[0] != "SEN-B-1" || got[1] != "SEN-B-2" || len(l.Objects) != 3 {
		t.Errorf("applied layout = %s", v.Layout)
	}
	if after := snapshot(); !bytes.Equal(before, after) {
		t.Errorf("template changed:\n%s\n%s", before, after)
	}
	// Rename keeps the layout; delete removes it.
	if tp2, err := r.svc.SaveTemplate(tp.ID, TemplateInput{Name: ptr("Renamed")}); err != nil || tp2.Name != "Renamed" || !bytes.Equal(tp2.Layout, tp.Layout) {
		t.Errorf("rename: %+v, %v", tp2, err)
	}
	if err := r.svc.DeleteTemplate(tp.ID); err != nil {
		t.Fatal(err)
	}
	if ts, _ := r.svc.Templates(); len(ts) != 0 {
		t.Errorf("templates = %v", ts)
	}
}

func TestSensorsList(t *testing.T) {
	r := newRig(t)
	r.sensor("111111111111", "SEN-A-1")
	r.rd.set("SEN-A-1", 2, 4.5)
	ss, err := r.svc.Sensors()
	if err != nil || len(ss) != 1 || ss[0].AssetUID != "SEN-A-1" || ss[0].Temperature == nil || ss[0].Temperature.Value != 4.5 || ss[0].Humidity != nil {
		t.Fatalf("sensors = %+v, %v", ss, err)
	}
}

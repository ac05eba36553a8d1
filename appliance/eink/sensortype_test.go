package eink

import (
	"encoding/json"
	"strings"
	"testing"

	"beaconhub/store"
)

// An imported beacon (type "unknown", as importer.go and a first-seen
// beacon get) that reports readings is shown on a display: the recorder
// keeps readings whatever the type, and render shows them: a layout may
// name it (refused for a while with the watches: a review).
func TestUnknownTypeBeaconWithReadingsStillSavable(t *testing.T) {
	r := newRig(t)
	if err := r.db.CreateBeacon(&store.Beacon{MAC: "C3000000B002", AssetUID: "LEGACY-C3000000B002", Name: "old fridge", Type: "unknown", Active: true}); err != nil {
		t.Fatal(err)
	}
	r.rd.set("LEGACY-C3000000B002", 2, 21.5)
	r.poll(mac1)
	if _, err := r.svc.SetState(r.idOf(mac1), store.EInkApproved); err != nil {
		t.Fatal(err)
	}
	layout := json.RawMessage(`{"objects":[{"t":"sensor","sensor_uid":"LEGACY-C3000000B002","metric":2,"decimals":1,"x":1,"y":1}]}`)
	if _, err := r.svc.Update(r.idOf(mac1), Input{Layout: layout}); err != nil {
		t.Fatalf("layout naming a reporting type-unknown beacon: %v", err)
	}
	if got := strings.Join(texts(r.poll(mac1)), "|"); !strings.Contains(got, "21.5") {
		t.Errorf("render %q", got)
	}
}

// A stored layout/template naming a watch (saved before the check) can be
// renamed and polled, and the template applied.
func TestStoredWatchLayoutKeepsWorking(t *testing.T) {
	r := newRig(t)
	if err := r.db.CreateBeacon(&store.Beacon{MAC: "C3000000B001", AssetUID: "WCH-H1-1", Name: "Watch", Type: "watch", Active: true}); err != nil {
		t.Fatal(err)
	}
	uid := r.sensor("C3000000B003", "SEN-H1-1")
	r.rd.set(uid, 2, 4.25)
	r.poll(mac1)
	id := r.idOf(mac1)
	if _, err := r.svc.SetState(id, store.EInkApproved); err != nil {
		t.Fatal(err)
	}
	raw := json.RawMessage(`{"objects":[{"t":"sensor","sensor_uid":"WCH-H1-1","metric":2,"decimals":1,"x":1,"y":1}]}`)
	tp := &store.EInkTemplate{Name: "T", Width: DefaultWidth, Height: DefaultHeight, Layout: raw}
	if err := r.db.UpdateAssets(r.clock.Now(), func(t *store.AssetTx) error {
		d, err := t.EInk(id)
		if err != nil {
			return err
		}
		d.Layout = raw
		if err := t.PutEInk(d, d.MAC); err != nil {
			return err
		}
		return t.PutEInkTemplate(tp)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.Update(id, Input{Name: ptr("renamed")}); err != nil {
		t.Errorf("rename: %v", err)
	}
	if got := strings.Join(texts(r.poll(mac1)), "|"); !strings.Contains(got, "--") {
		t.Errorf("render %q", got)
	}
	if _, err := r.svc.SaveTemplate(tp.ID, TemplateInput{Name: ptr("T2")}); err != nil {
		t.Errorf("template rename: %v", err)
	}
	d := r.display(id)
	if _, err := r.svc.ApplyTemplate(id, ApplyInput{TemplateID: tp.ID, SensorMap: map[string]string{"WCH-H1-1": uid}}); err != nil {
		t.Errorf("apply (%dx%d r%d): %v", d.Width, d.Height, d.Rotation, err)
	}
	if got := strings.Join(texts(r.poll(mac1)), "|"); !strings.Contains(got, "4.3") {
		t.Errorf("render after apply %q", got)
	}
}

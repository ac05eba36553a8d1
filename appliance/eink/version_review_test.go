package eink

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"beaconhub/store"
)

const mac2Spare = "A0B1C2D3E4F6"

// A device whose row was deleted and that is then put on another row by
// replace-device (the usual way: delete the spare's pending row, then
// replace the broken display with it) goes on from the version it
// keeps, not the row's: here it last drew 3 (a patient's name) and the
// row it joins is at 2, and it was served 3 there and did not redraw (a
// review).
func TestReplaceOntoARowFollowsTheDevicesKeptVersion(t *testing.T) {
	r := newRig(t)
	// Row A (mac1): pending (1), approved with a layout (2).
	idA := r.approve(mac1, `{"objects":[{"t":0,"x":1,"y":2,"s":"Room 7"}]}`)
	if v := r.poll(mac1).Version; v != 2 {
		t.Fatalf("setup: row A version %d", v)
	}
	// Row B (mac2): pending (1), approved (2), patient name changed (3).
	idB := r.approve(mac2Spare, `{"objects":[{"t":0,"x":1,"y":2,"s":"Room 12 - patient A"}]}`)
	r.poll(mac2Spare)
	if _, err := r.svc.Update(idB, Input{Layout: json.RawMessage(`{"objects":[{"t":0,"x":1,"y":2,"s":"Room 12 - patient B"}]}`)}); err != nil {
		t.Fatal(err)
	}
	drawn := r.poll(mac2Spare).Version
	if drawn != 3 {
		t.Fatalf("setup: mac2 drew version %d", drawn)
	}
	r.remove(idB)
	kept := r.keptOf(mac2Spare)
	r.replace(idA, mac2Spare)
	next := r.poll(mac2Spare)
	t.Logf("mac2 drew %d (device record keeps %d); its first poll on row A is served %d with %q", drawn, kept, next.Version, texts(next))
	if next.Version == drawn {
		t.Errorf("first screen on the new row has version %d, the one the device last drew: it keeps showing %q", next.Version, "Room 12 - patient B")
	}
}

// At the pending cap the neutral screen is served and nothing is
// stored: past the version a deleted device keeps, or one that had last
// drawn version 1 kept its old screen (a review).
func TestAtThePendingCapADeletedDeviceDrawsTheNeutralScreen(t *testing.T) {
	r := newRig(t)
	id := r.approve(mac1, `{"objects":[{"t":0,"x":1,"y":2,"s":"Room 12 - patient A"}]}`)
	r.poll(mac1)
	st := r.svc.polls[id]
	st.mu.Lock()
	st.p.Version = 99
	st.mu.Unlock()
	if _, err := r.svc.Update(id, Input{Layout: json.RawMessage(`{"objects":[{"t":0,"x":1,"y":2,"s":"Room 12 - patient B"}]}`)}); err != nil {
		t.Fatal(err)
	}
	last := r.poll(mac1)
	if last.Version != 1 {
		t.Fatalf("setup: version %d", last.Version)
	}
	r.fillPending()
	r.remove(id)
	next := r.poll(mac1)
	t.Logf("device record keeps %d; at the cap served version %d, texts %q", r.keptOf(mac1), next.Version, texts(next))
	if next.Version == last.Version {
		t.Errorf("at the pending cap a deleted device is served version %d, the one it last drew: it keeps %q on the door", next.Version, "Room 12 - patient B")
	}
}

// A poll rendering while the display is deleted: Delete reads the
// version in memory before the poll bumps it and the poll serves the
// bumped one. The device keeps one past what it was served last, so the
// row it gets next does not serve the version that poll did (it did: a
// review).
func TestDeleteDuringAPollsRenderKeepsAVersionPastIt(t *testing.T) {
	r := newRig(t)
	r.sensor("112233445566", "SEN-K1-1")
	g := &gateReadings{v: 4}
	r.svc.rd = g
	id := r.approve(mac1, `{"objects":[{"t":0,"x":1,"y":2,"s":"Room 12 - patient A"},{"t":"sensor","sensor_uid":"SEN-K1-1","metric":2,"decimals":1}]}`)
	r.poll(mac1)
	g.set(5)
	g.arm()
	done := make(chan reply, 1)
	go func() { done <- r.poll(mac1) }()
	within(t, g.entered, "poll never rendered")
	delErr := make(chan error, 1)
	go func() { delErr <- r.svc.Delete(id) }()
	select {
	case err := <-delErr:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(g.release)
		t.Fatal("Delete waited for the poll")
	}
	close(g.release)
	drawn := <-done
	next := r.poll(mac1)
	t.Logf("in-flight poll served %d (%q); the new row's first poll served %d (%q)", drawn.Version, texts(drawn), next.Version, texts(next))
	// The poll under way is not served the deleted row (it goes to the
	// new one); either way a version the device shows must carry what it
	// shows.
	if next.Version == drawn.Version && strings.Join(texts(next), "|") != strings.Join(texts(drawn), "|") {
		t.Errorf("new row's first screen has version %d, the one the device drew last with other content: it is not drawn", next.Version)
	}
	if strings.Contains(strings.Join(texts(drawn), "|"), "patient A") {
		t.Errorf("the poll under way was served the deleted row: %q", texts(drawn))
	}
}

// A restart between the delete and the device's return: the kept version
// is on the stored device record, so it holds.
func TestKeptVersionSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	db, err := store.Open(filepath.Join(dir, "eink.db"), store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := store.NewWriter(db, store.WriterOptions{})
	r := &rig{t: t, db: db, w: w, clock: newRig(t).clock, rd: &fakeReadings{}}
	r.svc = New(Options{DB: db, Writer: w, Readings: r.rd, Clock: r.clock})
	id := r.approve(mac1, `{"objects":[{"t":0,"x":1,"y":2,"s":"Room 12"}]}`)
	drawn := r.poll(mac1).Version
	if err := r.svc.Delete(id); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	_ = db.Close()
	db, err = store.Open(filepath.Join(dir, "eink.db"), store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w = store.NewWriter(db, store.WriterOptions{})
	t.Cleanup(func() { _ = w.Close(); _ = db.Close() })
	r.db, r.w = db, w
	r.svc = New(Options{DB: db, Writer: w, Readings: r.rd, Clock: r.clock})
	if next := r.poll(mac1); next.Version == drawn {
		t.Errorf("after a restart: version %d, the one drawn last", next.Version)
	}
}

// A layout stored with a newline (saved by an older version) still
// renders and its display can still be renamed; a template stored with
// one is refused by apply as a save is (it was copied: a review).
func TestStoredControlCharactersRenderAndAreNotApplied(t *testing.T) {
	r := newRig(t)
	id := r.approve(mac1, `{"objects":[{"t":0,"x":1,"y":2,"s":"Room 12"}]}`)
	bad := `{"objects":[{"t":0,"x":1,"y":2,"s":"Room 12\nWard B"}]}`
	if err := r.db.UpdateAssets(r.clock.Now(), func(tx *store.AssetTx) error {
		d, err := tx.EInk(id)
		if err != nil {
			return err
		}
		d.Layout = json.RawMessage(bad)
		return tx.PutEInk(d, d.MAC)
	}); err != nil {
		t.Fatal(err)
	}
	r.svc.RenamesDone() // drop the cache (Rename alone does not)
	if got := texts(r.poll(mac1)); len(got) != 1 || !strings.Contains(got[0], "Ward B") {
		t.Errorf("stored layout with a newline renders %q", got)
	}
	name := "Door 12"
	if _, err := r.svc.Update(id, Input{Name: &name}); err != nil {
		t.Errorf("renaming a display whose stored layout has a newline: %v", err)
	}
	// A template stored by an older version.
	var tplID uint64
	if err := r.db.UpdateAssets(r.clock.Now(), func(tx *store.AssetTx) error {
		tp := &store.EInkTemplate{Name: "old", Width: DefaultWidth, Height: DefaultHeight, Layout: json.RawMessage(bad)}
		if err := tx.PutEInkTemplate(tp); err != nil {
			return err
		}
		tplID = tp.ID
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	v, err := r.svc.ApplyTemplate(id, ApplyInput{TemplateID: tplID, SensorMap: map[string]string{}})
	t.Logf("apply of a template with a newline: err %v, layout now %s", err, v.Layout)
	if err == nil && strings.Contains(string(v.Layout), `\n`) {
		t.Errorf("apply put a layout with a control character on a display (a save of the same layout is refused): %s", v.Layout)
	}
}

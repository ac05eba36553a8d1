package eink

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"beaconhub/store"
)

const mac1 = "A0B1C2D3E4F5"

func TestPollRegistersPendingWithNeutralScreen(t *testing.T) {
	r := newRig(t)
	rp := r.poll(mac1)
	if rp.Version != 1 || rp.Validity != pendingValidity || rp.Width != 800 || rp.Height != 480 {
		t.Fatalf("reply = %+v", rp)
	}
	if got := texts(rp); !slices.Contains(got, "BeaconHub") || !slices.Contains(got, "MAC "+mac1) {
		t.Errorf("neutral screen texts = %q", got)
	}
	id := r.idOf(mac1)
	if id == 0 {
		t.Fatal("no row registered")
	}
	d := r.display(id)
	if d.State != store.EInkPending || d.AssetUID != "LEGACY-"+mac1 {
		t.Errorf("row = %+v", d)
	}
	err := r.db.ViewAssets(func(tx *store.AssetTx) error {
		a, err := tx.OpenAssignmentOf(store.AssetRef{Kind: store.KindEInk, ID: id})
		if err != nil || a == nil || a.MAC != mac1 || a.EInkID != id {
			t.Errorf("open assignment = %+v, %v", a, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Same screen again: same version.
	if rp2 := r.poll(mac1); rp2.Version != 1 {
		t.Errorf("unchanged poll bumped version to %d", rp2.Version)
	}
}

func TestTrackingFieldsBatchedThroughWriter(t *testing.T) {
	r := newRig(t)
	for i := 0; i < 5; i++ {
		r.poll(mac1)
	}
	before := r.w.Stats().Commits
	if err := r.w.Flush(); err != nil {
		t.Fatal(err)
	}
	id := r.idOf(mac1)
	var p store.EInkPoll
	_ = r.db.ViewAssets(func(tx *store.AssetTx) error { p, _ = tx.EInkPollState(id); return nil })
	if p.PollCount != 5 || p.LastIP != "10.0.0.7" || p.LastVoltage == nil || *p.LastVoltage != 3.01 || p.FirstSeen == 0 || p.LastSeen == 0 || p.Version != 1 || p.RenderedHash == "" {
		t.Errorf("poll state = %+v", p)
	}
	// Five polls, at most five queued writes (usually fewer: one per
	// display is queued at a time).
	if c := r.w.Stats().Commits; c > before+5 {
		t.Errorf("commits = %d", c)
	}
}

func TestPendingCapUnderConcurrentPolls(t *testing.T) {
	r := newRig(t)
	var wg sync.WaitGroup
	for i := 0; i < 160; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			body, err := r.svc.Poll(nil, PollRequest{MAC: fmt.Sprintf("AABBCC%06X", i)})
			if err != nil {
				t.Error(err)
				return
			}
			if rp := decodeReply(t, body); rp.Validity != pendingValidity {
				t.Errorf("reply %+v", rp)
			}
		}(i)
	}
	wg.Wait()
	rows, pending := 0, 0
	_ = r.db.ViewAssets(func(tx *store.AssetTx) error {
		pending = tx.EInkPendingCount()
		return tx.EachEInk(func(*store.EInkDisplay) error { rows++; return nil })
	})
	if rows != MaxPending || pending != MaxPending {
		t.Fatalf("rows = %d, pending = %d; want exactly %d", rows, pending, MaxPending)
	}
	// At the cap a new MAC is served but stores nothing, not even a device.
	r.poll("FFFFFFFFFFFF")
	_ = r.db.ViewAssets(func(tx *store.AssetTx) error {
		if _, err := tx.Device("FFFFFFFFFFFF"); err == nil {
			t.Error("device stored at the cap")
		}
		return nil
	})
}

// approve sets a layout and approves the display of mac.
func (r *rig) approve(mac string, layout string) uint64 {
	r.t.Helper()
	r.poll(mac)
	id := r.idOf(mac)
	if _, err := r.svc.Update(id, Input{Layout: json.RawMessage(layout)}); err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.svc.SetState(id, store.EInkApproved); err != nil {
		r.t.Fatal(err)
	}
	return id
}

func TestApprovedLayoutWithSensorValues(t *testing.T) {
	r := newRig(t)
	uid := r.sensor("112233445566", "SEN-K1-1")
	r.approve(mac1, `{"decimal_separator":",","objects":[
		{"t":3,"x":0,"y":0,"w":800,"h":30,"c":2},
		{"t":"sensor","sensor_uid":"SEN-K1-1","metric":2,"label":"Teplota v kuchyni:","unit":"°C","decimals":1,"x":20,"y":80,"f":5,"c":1},
		{"t":"sensor","sensor_uid":"SEN-K1-1","metric":1,"label":"Vlhkost","unit":"%","decimals":0,"x":20,"y":140}]}`)
	rp := r.poll(mac1)
	if got := texts(rp); !slices.Equal(got, []string{"Teplota v kuchyni: -- °C", "Vlhkost -- %"}) {
		t.Errorf("no readings: texts = %q", got)
	}
	v1 := rp.Version
	r.rd.set(uid, 2, 4.55)
	r.rd.set(uid, 1, 61.5)
	rp = r.poll(mac1)
	if got := texts(rp); !slices.Equal(got, []string{"Teplota v kuchyni: 4,6 °C", "Vlhkost 62 %"}) {
		t.Errorf("texts = %q", got)
	}
	if rp.Version != v1+1 {
		t.Errorf("version %d after a value change, want %d", rp.Version, v1+1)
	}
	if o := rp.Objects[0]; o["t"].(float64) != 3 || o["w"].(float64) != 800 || o["c"].(float64) != 2 {
		t.Errorf("rectangle = %v", o)
	}
	if _, has := rp.Objects[0]["s"]; has {
		t.Error("rectangle got an s")
	}
	if rp2 := r.poll(mac1); rp2.Version != rp.Version {
		t.Errorf("unchanged layout bumped %d -> %d", rp.Version, rp2.Version)
	}
}

func TestVersionWraps99To1(t *testing.T) {
	r := newRig(t)
	uid := r.sensor("112233445566", "SEN-K1-1")
	id := r.approve(mac1, `{"objects":[{"t":"sensor","sensor_uid":"SEN-K1-1","metric":2,"decimals":1}]}`)
	r.poll(mac1)
	st := r.svc.polls[id]
	st.mu.Lock()
	st.p.Version = 98
	st.mu.Unlock()
	r.rd.set(uid, 2, 1)
	if v := r.poll(mac1).Version; v != 99 {
		t.Fatalf("version = %d, want 99", v)
	}
	r.rd.set(uid, 2, 2)
	if v := r.poll(mac1).Version; v != 1 {
		t.Fatalf("version after 99 = %d, want 1", v)
	}
	if err := r.w.Flush(); err != nil {
		t.Fatal(err)
	}
	_ = r.db.ViewAssets(func(tx *store.AssetTx) error {
		if p, _ := tx.EInkPollState(id); p.Version != 1 {
			t.Errorf("stored version = %d", p.Version)
		}
		return nil
	})
}

func TestDeletedDisplayComesBackPending(t *testing.T) {
	r := newRig(t)
	id := r.approve(mac1, `{"objects":[]}`)
	if err := r.svc.Delete(id); err != nil {
		t.Fatal(err)
	}
	if r.idOf(mac1) != 0 {
		t.Fatal("row still there")
	}
	rp := r.poll(mac1)
	nid := r.idOf(mac1)
	if nid == 0 || nid == id {
		t.Fatalf("re-registered id = %d (old %d)", nid, id)
	}
	if d := r.display(nid); d.State != store.EInkPending || d.AssetUID != "LEGACY-"+mac1 {
		t.Errorf("row = %+v", d)
	}
	if rp.Validity != pendingValidity {
		t.Errorf("reply = %+v", rp)
	}
}

func TestBlockedGetsNeutralScreenWithLongValidity(t *testing.T) {
	r := newRig(t)
	r.poll(mac1)
	id := r.idOf(mac1)
	if _, err := r.svc.SetState(id, store.EInkBlocked); err != nil {
		t.Fatal(err)
	}
	rp := r.poll(mac1)
	if rp.Validity != blockedValidity || !slices.Contains(texts(rp), "Blocked") || rp.Version != 2 {
		t.Errorf("blocked reply = %+v", rp)
	}
}

func TestReplyIsWindows1250(t *testing.T) {
	r := newRig(t)
	r.approve(mac1, `{"objects":[{"t":0,"x":1,"y":2,"s":"Łódź Žluťoučký kůň Größe \"q\" 🙂"}]}`)
	body, err := r.svc.Poll(nil, PollRequest{MAC: mac1})
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsRune(string(body), 0x1A) {
		t.Error("reply contains the encoder's 0x1A substitute")
	}
	rp := decodeReply(t, body)
	if got := texts(rp); len(got) != 1 || got[0] != `Łódź Žluťoučký kůň Größe "q" ?` {
		t.Errorf("text = %q", got)
	}
}

// A sensor reminted after the layout was saved keeps showing values: the
// cached layout is re-resolved through the alias table after cacheTTL.
func TestSensorRemintFollowedAtPoll(t *testing.T) {
	r := newRig(t)
	r.sensor("112233445566", "LEGACY-112233445566")
	id := r.approve(mac1, `{"objects":[{"t":"sensor","sensor_uid":"LEGACY-112233445566","metric":2,"decimals":1}]}`)
	r.poll(mac1)
	err := r.db.UpdateAssets(r.clock.Now(), func(tx *store.AssetTx) error {
		ref, _ := tx.UIDOwner("LEGACY-112233445566")
		if err := tx.ReleaseUID("LEGACY-112233445566"); err != nil {
			return err
		}
		if err := tx.ClaimUID("SEN-K1-1", ref); err != nil {
			return err
		}
		return tx.SetAlias("LEGACY-112233445566", "SEN-K1-1")
	})
	if err != nil {
		t.Fatal(err)
	}
	r.rd.set("SEN-K1-1", 2, 5)
	r.clock.Advance(cacheTTL + time.Second)
	if got := texts(r.poll(mac1)); len(got) != 1 || got[0] != "5.0" {
		t.Errorf("texts after remint = %q", got)
	}
	if d := r.display(id); !strings.Contains(string(d.Layout), "LEGACY-112233445566") {
		t.Errorf("stored layout rewritten by a poll: %s", d.Layout)
	}
}

// The display redraws only when its version changes. A device whose row
// is deleted, or replaced by another device, and that keeps polling gets
// a fresh row: it starts past the version the device last drew, which
// its device record keeps. Starting at 1, a device that had last drawn
// version 1 (every 99th change) kept its old screen, a patient's name
// on a door, under a pending display (a review).
func TestADisplayBackOnANewRowStartsPastItsVersion(t *testing.T) {
	r := newRig(t)
	uid := r.sensor("112233445566", "SEN-K1-1")
	id := r.approve(mac1, `{"objects":[{"t":0,"x":1,"y":2,"s":"Room 12 - patient A"},{"t":"sensor","sensor_uid":"SEN-K1-1","metric":2,"decimals":1}]}`)
	r.poll(mac1)
	st := r.svc.polls[id]
	st.mu.Lock()
	st.p.Version = 99
	st.mu.Unlock()
	r.rd.set(uid, 2, 1)
	last := r.poll(mac1) // 99 -> 1: what the device shows now, not yet committed
	if last.Version != 1 {
		t.Fatalf("setup: version = %d", last.Version)
	}
	if err := r.svc.Delete(id); err != nil {
		t.Fatal(err)
	}
	if next := r.poll(mac1); next.Version == last.Version {
		t.Fatalf("back after a delete: version %d, the one it drew last", next.Version)
	}
	// Replaced away: the old device polls on and gets a row of its own.
	id = r.idOf(mac1)
	drawn := r.poll(mac1).Version
	if _, err := r.svc.ReplaceDevice(id, "A0B1C2D3E4F9"); err != nil {
		t.Fatal(err)
	}
	if next := r.poll(mac1); next.Version == drawn {
		t.Fatalf("back after a replace: version %d, the one it drew last", next.Version)
	}
}

// A new version is durable before it is served: written after the
// reply, a crash before the commit (one group commit's window) handed
// the same number out again after the restart, for other content, and
// the device kept its stale screen (a review).
func TestANewVersionIsStoredBeforeItIsServed(t *testing.T) {
	r := newRig(t)
	uid := r.sensor("112233445566", "SEN-K1-1")
	id := r.approve(mac1, `{"objects":[{"t":"sensor","sensor_uid":"SEN-K1-1","metric":2,"decimals":1}]}`)
	for i := range 20 {
		r.rd.set(uid, 2, float64(i))
		served := r.poll(mac1).Version
		var stored store.EInkPoll
		if err := r.db.ViewAssets(func(t *store.AssetTx) error {
			var err error
			stored, err = t.EInkPollState(id)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if stored.Version != served {
			t.Fatalf("change %d: version %d served, %d stored", i, served, stored.Version)
		}
	}
}

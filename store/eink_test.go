package store

import (
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func TestEInkIndexesAndPollRecord(t *testing.T) {
	db := openTestDB(t)
	d := &EInkDisplay{MAC: "A0B1C2D3E4F5", AssetUID: "LEGACY-A0B1C2D3E4F5", State: EInkPending}
	update := func(fn func(tx *AssetTx) error) {
		t.Helper()
		if err := db.UpdateAssets(time.Now(), fn); err != nil {
			t.Fatal(err)
		}
	}
	update(func(tx *AssetTx) error {
		if err := tx.PutEInk(d, ""); err != nil {
			return err
		}
		if n := tx.EInkPendingCount(); n != 1 { // sees its own transaction's rows
			t.Errorf("pending in the same transaction = %d", n)
		}
		return nil
	})
	check := func(mac string, wantID uint64, wantPending int) {
		t.Helper()
		_ = db.ViewAssets(func(tx *AssetTx) error {
			if got := tx.EInkIDByMAC(mac); got != wantID {
				t.Errorf("EInkIDByMAC(%s) = %d, want %d", mac, got, wantID)
			}
			if got := tx.EInkPendingCount(); got != wantPending {
				t.Errorf("pending = %d, want %d", got, wantPending)
			}
			return nil
		})
	}
	check(d.MAC, d.ID, 1)
	// Approve and move to another MAC: the indexes follow.
	d.State, d.MAC = EInkApproved, "A0B1C2D3E4F6"
	update(func(tx *AssetTx) error { return tx.PutEInk(d, "A0B1C2D3E4F5") })
	check("A0B1C2D3E4F5", 0, 0)
	check("A0B1C2D3E4F6", d.ID, 0)
	// Poll record round trip, then delete everything.
	v := 3.1
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		return PutEInkPoll(tx, d.ID, &EInkPoll{Version: 7, PollCount: 3, LastVoltage: &v})
	}); err != nil {
		t.Fatal(err)
	}
	_ = db.ViewAssets(func(tx *AssetTx) error {
		p, err := tx.EInkPollState(d.ID)
		if err != nil || p.Version != 7 || p.PollCount != 3 || *p.LastVoltage != 3.1 {
			t.Errorf("poll = %+v, %v", p, err)
		}
		return nil
	})
	update(func(tx *AssetTx) error { return tx.DeleteEInk(d) })
	check("A0B1C2D3E4F6", 0, 0)
	// A late batched poll write for a deleted display stores nothing.
	if err := db.bolt.Update(func(tx *bolt.Tx) error { return PutEInkPoll(tx, d.ID, &EInkPoll{Version: 8}) }); err != nil {
		t.Fatal(err)
	}
	_ = db.ViewAssets(func(tx *AssetTx) error {
		if p, _ := tx.EInkPollState(d.ID); p.Version != 0 {
			t.Errorf("poll record resurrected: %+v", p)
		}
		return nil
	})
}

func TestEInkTemplates(t *testing.T) {
	db := openTestDB(t)
	tp := &EInkTemplate{Name: "Door", Width: 800, Height: 480, Layout: []byte(`{"objects":[]}`)}
	if err := db.UpdateAssets(time.Now(), func(tx *AssetTx) error { return tx.PutEInkTemplate(tp) }); err != nil {
		t.Fatal(err)
	}
	n := 0
	_ = db.ViewAssets(func(tx *AssetTx) error {
		return tx.EachEInkTemplate(func(*EInkTemplate) error { n++; return nil })
	})
	if n != 1 || tp.ID == 0 {
		t.Fatalf("templates = %d, id %d", n, tp.ID)
	}
	if err := db.UpdateAssets(time.Now(), func(tx *AssetTx) error { return tx.DeleteEInkTemplate(tp.ID) }); err != nil {
		t.Fatal(err)
	}
	_ = db.ViewAssets(func(tx *AssetTx) error {
		if _, err := tx.EInkTemplate(tp.ID); err != ErrNotFound {
			t.Errorf("after delete: %v", err)
		}
		return nil
	})
}

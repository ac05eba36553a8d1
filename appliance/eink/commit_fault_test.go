package eink

import (
	"errors"
	"slices"

	"beaconhub/store"
	"testing"
)

var errDiskFull = errors.New("write: no space left on device")

// A replace-device whose commit fails (a full disk) left the row's poll
// state in memory saying the new device, while the store kept the old
// one: the old device, still on the row, was answered 500 at every poll
// until a restart, and the admin was told the replace had failed.
func TestReplaceDeviceWhoseCommitFailsLeavesTheOldDeviceServed(t *testing.T) {
	r := newRig(t)
	id := r.approve(spareMacB, `{"objects":[{"t":0,"x":1,"y":2,"s":"Room 5 - patient Svoboda"}]}`)
	before := r.poll(spareMacB)

	r.db.SetAssetsFault(func() error { return errDiskFull })
	if _, err := r.svc.ReplaceDevice(id, spareMacX); !errors.Is(err, errDiskFull) {
		t.Fatalf("replace-device with a failing commit: err %v, want the commit's", err)
	}
	r.db.SetAssetsFault(nil)

	if got := r.display(id).MAC; got != spareMacB {
		t.Fatalf("the store says the row is %s's; want %s's (the commit failed)", got, spareMacB)
	}
	body, err := r.svc.Poll(nil, PollRequest{MAC: spareMacB, Voltage: 3.01, HasVoltage: true, IP: "10.0.0.7"})
	if err != nil {
		t.Fatalf("the row's own device, after a failed replace: %v", err)
	}
	after := decodeReply(r.t, body)
	if !slices.Equal(texts(after), texts(before)) {
		t.Errorf("the row's device is served %q, want its layout %q", texts(after), texts(before))
	}

	// The replace, tried again once the disk has room, goes through.
	if _, err := r.svc.ReplaceDevice(id, spareMacX); err != nil {
		t.Fatal(err)
	}
	if x := r.poll(spareMacX); !slices.Equal(texts(x), texts(before)) || x.Version == before.Version {
		t.Errorf("the new device is served %q v%d; want %q past v%d", texts(x), x.Version, texts(before), before.Version)
	}
}

// A delete whose commit fails keeps the display: its device is still
// served its row, not registered again as pending.
func TestDeleteWhoseCommitFailsKeepsTheDisplay(t *testing.T) {
	r := newRig(t)
	id := r.approve(spareMacB, `{"objects":[{"t":0,"x":1,"y":2,"s":"Room 5 - patient Svoboda"}]}`)
	before := r.poll(spareMacB)
	r.db.SetAssetsFault(func() error { return errDiskFull })
	if err := r.svc.Delete(id); !errors.Is(err, errDiskFull) {
		t.Fatalf("delete with a failing commit: err %v, want the commit's", err)
	}
	r.db.SetAssetsFault(nil)
	after := r.poll(spareMacB)
	if r.idOf(spareMacB) != id || !slices.Equal(texts(after), texts(before)) || after.Version != before.Version {
		t.Errorf("after a failed delete the device is on row %d, served %q v%d; want row %d, %q v%d",
			r.idOf(spareMacB), texts(after), after.Version, id, texts(before), before.Version)
	}
}

// A panic in the transaction (bbolt rolls back; the HTTP server recovers
// the handler) is a failed commit too: the replace's undo runs (it did
// not, and the old device was refused at every poll), and it does not
// stay queued for a later write whose commit fails (a review).
func TestReplaceDeviceThatPanicsLeavesTheOldDeviceServed(t *testing.T) {
	r := newRig(t)
	id := r.approve(spareMacB, `{"objects":[{"t":0,"x":1,"y":2,"s":"Room 5 - patient Svoboda"}]}`)
	before := r.poll(spareMacB)

	r.db.SetAssetsFault(func() error { panic("commit panicked") })
	func() {
		defer func() { _ = recover() }()
		_, _ = r.svc.ReplaceDevice(id, spareMacX)
	}()
	r.db.SetAssetsFault(nil)
	if got := r.display(id).MAC; got != spareMacB {
		t.Fatalf("the store says the row is %s's; want %s's (rolled back)", got, spareMacB)
	}
	body, err := r.svc.Poll(nil, PollRequest{MAC: spareMacB, Voltage: 3.01, HasVoltage: true, IP: "10.0.0.7"})
	if err != nil {
		t.Fatalf("the row's own device, after a replace that panicked: %v", err)
	}
	if after := decodeReply(r.t, body); !slices.Equal(texts(after), texts(before)) {
		t.Errorf("served %q, want %q", texts(after), texts(before))
	}

	stale := false
	func() {
		defer func() { _ = recover() }()
		_ = r.svc.adminWrite(func(*store.AssetTx) error {
			r.svc.onFail(func() { stale = true })
			panic("fn panicked")
		})
	}()
	stale = false // run once, by the write that panicked
	r.db.SetAssetsFault(func() error { return errDiskFull })
	if _, err := r.svc.SetState(id, store.EInkPending); !errors.Is(err, errDiskFull) {
		t.Fatalf("SetState with a failing commit: err %v, want the commit's", err)
	}
	r.db.SetAssetsFault(nil)
	if stale {
		t.Errorf("a failed SetState ran the undo registered by an earlier write that panicked")
	}
}

// An undo that panics does not stop the write's other undos, and does not
// stay queued for the next write whose commit fails (a review).
func TestUndoThatPanicsDoesNotOutliveItsWrite(t *testing.T) {
	r := newRig(t)
	id := r.approve(spareMacB, `{"objects":[{"t":0,"x":1,"y":2,"s":"Room 5"}]}`)
	r.poll(spareMacB)
	ran := 0
	if err := r.svc.adminWrite(func(*store.AssetTx) error {
		r.svc.onFail(func() { ran++ })
		r.svc.onFail(func() { panic("undo panicked") })
		return errDiskFull
	}); !errors.Is(err, errDiskFull) {
		t.Fatalf("err %v, want the write's", err)
	}
	if ran != 1 {
		t.Errorf("the write's other undo ran %d times, want 1", ran)
	}
	ran = 0
	r.db.SetAssetsFault(func() error { return errDiskFull })
	defer r.db.SetAssetsFault(nil)
	if _, err := r.svc.SetState(id, store.EInkPending); !errors.Is(err, errDiskFull) {
		t.Errorf("SetState: err %v, want the commit's", err)
	}
	if ran != 0 {
		t.Errorf("a later failed SetState ran an earlier write's undo %d times", ran)
	}
}

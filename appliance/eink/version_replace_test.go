package eink

import (
	"beaconhub/store"
	"fmt"
	"testing"
	"time"
)

const (
	spareMacX = "00112233AA01" // the spare
	spareMacB = "00112233AA02"
	spareMacC = "00112233AA03"
)

// The rows the spare X passes through: the one it draws first, the wrong
// one, and the one it ends on, each with a patient's name.
const (
	layoutRoom3 = `{"objects":[{"t":0,"x":1,"y":2,"s":"Room 3 - patient Novak"}]}`
	layoutRoom5 = `{"objects":[{"t":0,"x":1,"y":2,"s":"Room 5 - patient Svoboda"}]}`
	layoutRoom9 = `{"objects":[{"t":0,"x":1,"y":2,"s":"Room 9 - patient Dvorak"}]}`
)

func vNext(v int) int { return v%99 + 1 }
func vPrev(v int) int { return (v+97)%99 + 1 }

func (r *rig) setVersion(id uint64, v int) {
	r.t.Helper()
	if err := r.db.UpdateAssets(r.clock.Now(), func(tx *store.AssetTx) error {
		return tx.PutEInkPollState(id, &store.EInkPoll{Version: v})
	}); err != nil {
		r.t.Fatal(err)
	}
	delete(r.svc.polls, id)
}

// replace puts mac on row id (replace-device), which must succeed.
func (r *rig) replace(id uint64, mac string) {
	r.t.Helper()
	if _, err := r.svc.ReplaceDevice(id, mac); err != nil {
		r.t.Fatal(err)
	}
}

// remove deletes row id, which must succeed.
func (r *rig) remove(id uint64) {
	r.t.Helper()
	if err := r.svc.Delete(id); err != nil {
		r.t.Fatal(err)
	}
}

// fillPending polls MaxPending new displays: the pending rows are at the
// cap (a roll-out of displays not yet approved, or a flood).
func (r *rig) fillPending() {
	r.t.Helper()
	for i := 0; i < MaxPending; i++ {
		r.poll(fmt.Sprintf("AABBCC%06X", i))
	}
}

// keptOf is the version mac's device record keeps from a row it left (0:
// none).
func (r *rig) keptOf(mac string) int {
	var kept int
	_ = r.db.ViewAssets(func(tx *store.AssetTx) error {
		if d, err := tx.Device(mac); err == nil {
			kept = d.EInkVersion
		}
		return nil
	})
	return kept
}

// within waits for ch, failing with msg after 10 s.
func within(t testing.TB, ch <-chan struct{}, msg string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal(msg)
	}
}

// spareDrewRoom3 approves the spare X on a row with a patient's name,
// lets X draw it and deletes the row: X keeps a version. It returns what
// X shows.
func (r *rig) spareDrewRoom3() reply {
	r.t.Helper()
	r1 := r.approve(spareMacX, layoutRoom3)
	shown := r.poll(spareMacX) // X draws this and keeps it
	r.remove(r1)
	return shown
}

// firstOnRow3 approves row 3 (spare C, another patient) at version v,
// replaces its device with X and returns X's first screen there.
func (r *rig) firstOnRow3(v int) reply {
	r.t.Helper()
	r3 := r.approve(spareMacC, layoutRoom9)
	r.setVersion(r3, v)
	r.replace(r3, spareMacX)
	return r.poll(spareMacX)
}

// An admin replaces the wrong row's device with the spare X, notices, and
// puts the row's own device back before X polled there. X keeps what it
// kept from its first row (the row it never polled on says nothing of
// what it shows), so the next replace-device does not hand it the number
// it shows with another room's layout. Overwritten, it did (a review).
func TestReplaceOntoWrongRowThenCorrectedKeepsWhatTheSpareShows(t *testing.T) {
	r := newRig(t)
	shown := r.spareDrewRoom3()
	s := shown.Version
	r2 := r.approve(spareMacB, layoutRoom5)
	r.setVersion(r2, (s+40-1)%99+1)
	r.replace(r2, spareMacX) // the wrong row
	r.replace(r2, spareMacB) // corrected before X polled
	first := r.firstOnRow3(vPrev(s))
	t.Logf("X shows version %d %q; on row 3 it is served %d %q", s, texts(shown), first.Version, texts(first))
	if first.Version == s {
		t.Errorf("X's first screen on row 3 has version %d, the number it already shows: the door keeps %q instead of %q",
			s, texts(shown), texts(first))
	}
}

// Same, through delete: X replaced onto a row it never polled on, the row
// deleted, X registers again as pending: its first pending screen must
// not carry the number X drew on its first row (it did, and the door
// kept the patient's name instead of "Waiting for approval": a review).
func TestReplaceNeverPolledThenDeleteRegistersPastTheShownVersion(t *testing.T) {
	r := newRig(t)
	shown := r.spareDrewRoom3()
	s := shown.Version
	r2 := r.approve(spareMacB, layoutRoom5)
	r.setVersion(r2, vPrev(vPrev(s)))
	r.replace(r2, spareMacX)
	r.remove(r2) // before X polled there
	first := r.poll(spareMacX)
	t.Logf("X shows version %d %q; registered again it is served %d %q", s, texts(shown), first.Version, texts(first))
	if first.Version == s {
		t.Errorf("X's first pending screen has version %d, the number it already shows: the door keeps %q instead of %q",
			s, texts(shown), texts(first))
	}
}

// replacedStart, exhaustively: terminates, and the next served version is
// none of those to avoid.
func TestReplacedStartExhaustive(t *testing.T) {
	for cur := 0; cur <= 99; cur++ {
		for kept := 0; kept <= 99; kept++ {
			st := replacedStart(cur, kept)
			v := vNext(st)
			if st < 1 || st > 99 {
				t.Fatalf("replacedStart(%d,%d) = %d", cur, kept, st)
			}
			if v == cur && cur != 0 {
				t.Errorf("cur %d kept %d: serves the row's last", cur, kept)
			}
			if kept == 0 && v == 1 {
				t.Errorf("cur %d kept 0: serves 1", cur)
			}
			if kept > 0 && (v == vPrev(kept) || v == kept || v == vNext(kept)) {
				t.Errorf("cur %d kept %d: serves %d", cur, kept, v)
			}
		}
	}
}

// A brand-new spare at the pending cap draws the cap screen, version 1.
// Replaced onto the wrong row and back before it polled, it is then
// replaced onto a row at 99 (the commit's own case): its first screen
// there must not be 1.
func TestCapSpareWrongRowThenRowAt99(t *testing.T) {
	r := newRig(t)
	r2 := r.approve(spareMacB, `{"objects":[{"t":0,"x":1,"y":2,"s":"Room 5"}]}`)
	r3 := r.approve(spareMacC, layoutRoom9)
	r.fillPending()
	capScreen := r.poll(spareMacX)
	r.setVersion(r2, 40)
	r.replace(r2, spareMacX)
	r.replace(r2, spareMacB)
	r.setVersion(r3, 99)
	r.replace(r3, spareMacX)
	first := r.poll(spareMacX)
	t.Logf("cap screen %d %q; first on row 3: %d %q", capScreen.Version, texts(capScreen), first.Version, texts(first))
	if first.Version == capScreen.Version {
		t.Errorf("first screen on row 3 has version %d, the cap screen's: the door keeps %q", first.Version, texts(capScreen))
	}
}

// Two content changes in a row while the writer is held, plus a retry:
// every poll returns once the writer goes on, each with a committed
// version, and committing is cleared.
func TestTwoBumpsAndARetryDuringHeldCommits(t *testing.T) {
	r := newRig(t)
	uid := r.sensor("112233445566", "SEN-K1-1")
	r.rd.set(uid, 2, 4.0)
	id := r.approve(mac1, `{"objects":[{"t":"sensor","sensor_uid":"SEN-K1-1","metric":2,"decimals":1}]}`)
	r.poll(mac1)
	g := &gateWriter{w: r.w, closed: true, in: make(chan struct{}, 4)}
	r.svc.w = g
	out := make(chan reply, 3)
	r.rd.set(uid, 2, 4.5)
	go func() { out <- r.poll(mac1) }()
	<-g.in
	r.rd.set(uid, 2, 5.5)
	go func() { out <- r.poll(mac1) }()
	<-g.in
	go func() { out <- r.poll(mac1) }()
	select {
	case rp := <-out:
		t.Fatalf("a poll returned version %d before any commit", rp.Version)
	case <-time.After(200 * time.Millisecond):
	}
	g.open()
	deadline := time.After(10 * time.Second)
	for i := 0; i < 3; i++ {
		select {
		case rp := <-out:
			if sv := storedVersion(t, r.db, id); rp.Version > sv {
				t.Errorf("served %d, stored %d", rp.Version, sv)
			}
		case <-deadline:
			t.Fatal("a poll never returned")
		}
	}
	st := r.svc.polls[id]
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.committing != nil {
		t.Errorf("committing left set")
	}
}

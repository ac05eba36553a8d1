package push

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// seqs lists the record seq of every message posted so far.
func (r *rig) seqs() []uint64 {
	var out []uint64
	for _, m := range r.msgs("") {
		rec, err := ParseRecord(m.Message)
		if err != nil {
			r.t.Fatalf("message without a record: %q", m.Message)
		}
		out = append(out, rec.Seq)
	}
	return out
}

// A burst runs seq ahead of the clock (one per message, several in one
// millisecond); a restart within it used to start again from the clock,
// so an app keeping the highest seq per subject kept the older word.
func TestSeqKeepsIncreasingAcrossARestartWithinABurst(t *testing.T) {
	r := newRig(t, true)
	for i := range 5 {
		r.sensor(sensorRec("range", fmt.Sprintf("F%d", i), "active", "temperature 11.00 °C outside 2..8", r.clk.Now()))
	}
	r.svc.Idle()
	before := r.seqs()
	if len(before) != 5 {
		t.Fatalf("posted %d messages, want 5", len(before))
	}
	var top uint64
	for _, s := range before {
		top = max(top, s)
	}
	if top <= uint64(r.clk.Now().UnixMilli()) {
		t.Fatalf("the burst did not run ahead of the clock (top %d); the test proves nothing", top)
	}

	r.crashRestart() // the clock has not moved: the same millisecond
	r.sensor(sensorRec("range", "F0", "resolved", "temperature 5.00 °C within 2..8", r.clk.Now()))
	r.svc.Idle()
	after := r.seqs()
	if len(after) != 6 {
		t.Fatalf("posted %d messages after the restart, want 6", len(after))
	}
	if got := after[5]; got <= top {
		t.Fatalf("seq after restart %d, not above %d issued before it", got, top)
	}
}

// After a restart seq runs ahead of the clock (it starts at the saved
// floor). When the floor's renewal then fails (a full disk) the numbers
// still go out; the floor reserved at start covers them, so the next
// restart does not issue one again (it did: a review).
func TestSeqIsNotRepeatedAfterAFailedFloorSaveAndARestart(t *testing.T) {
	r := newRig(t, true)
	r.sensor(sensorRec("range", "F0", "active", "temperature 11.00 °C outside 2..8", r.clk.Now()))
	r.svc.Idle()

	r.crashRestart()
	r.failSeqSaves()
	r.pub.mu.Lock()
	r.pub.seqLimit = 0 // renewal due at the next number
	r.pub.mu.Unlock()
	r.advance(time.Second)
	r.sensor(sensorRec("range", "F1", "active", "temperature 12.00 °C outside 2..8", r.clk.Now()))
	r.svc.Idle()
	r.waitSeqSaved()
	seqs := r.seqs()
	issued := seqs[len(seqs)-1]

	r.restart() // its saves still failing: as a crash
	r.advance(time.Second)
	r.sensor(sensorRec("range", "F0", "resolved", "temperature 5.00 °C within 2..8", r.clk.Now()))
	r.svc.Idle()
	seqs = r.seqs()
	if got := seqs[len(seqs)-1]; got <= issued {
		t.Fatalf("seq after the restart %d, not above %d issued before it (all: %v)", got, issued, seqs)
	}
}

// crashRestart restarts as a crash would for the sequence: the stop's
// lowering of the floor fails, so the next start finds the reserve.
func (r *rig) crashRestart() {
	r.failSeqSaves()
	r.restart()
}

// waitSeqSaved waits, with a deadline, for the floor's renewal in flight.
func (r *rig) waitSeqSaved() {
	r.t.Helper()
	r.pub.mu.Lock()
	done := r.pub.seqSaving
	r.pub.mu.Unlock()
	if done == nil {
		return
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second): // a deadline, not a wait for time to pass
		r.t.Fatal("the sequence floor's save did not finish")
	}
}

// failSeqSaves makes the floor's saves fail (a full disk) until the
// returned function puts them back.
func (r *rig) failSeqSaves() (restore func()) {
	r.pub.mu.Lock()
	defer r.pub.mu.Unlock()
	save := r.pub.saveSeq
	r.pub.saveSeq = func(uint64) error { return errors.New("write: no space left on device") }
	return func() {
		r.pub.mu.Lock()
		r.pub.saveSeq = save
		r.pub.mu.Unlock()
	}
}

// burstAfterQuiet lets the site go quiet for longer than the reserve
// taken at start, then sends a burst of n in one millisecond (fail: the
// floor's saves fail meanwhile), and returns the highest seq posted.
func (r *rig) burstAfterQuiet(n int, fail bool) uint64 {
	r.t.Helper()
	r.advance(11 * time.Minute)
	r.waitSeqSaved()
	if fail {
		defer r.failSeqSaves()()
	}
	for i := range n {
		r.sensor(sensorRec("range", fmt.Sprintf("F%d", i), "active", "temperature 11.00 °C outside 2..8", r.clk.Now()))
	}
	r.svc.Idle()
	r.waitSeqSaved()
	var top uint64
	for _, s := range r.seqs() {
		top = max(top, s)
	}
	return top
}

// lastSeqAbove sends one more message and checks its seq is above top.
func (r *rig) lastSeqAbove(top uint64) {
	r.t.Helper()
	r.sensor(sensorRec("range", "F0", "resolved", "temperature 5.00 °C within 2..8", r.clk.Now()))
	r.svc.Idle()
	seqs := r.seqs()
	if got := seqs[len(seqs)-1]; got <= top {
		r.t.Fatalf("seq after the restart %d, not above %d issued before it (all %v)", got, top, seqs)
	}
}

// After a quiet spell longer than the reserve taken at start the numbers
// follow the clock; the floor renewed only by numbers was then behind
// them, and a renewal failing for a moment (or a crash before it landed)
// let a restart with the clock where it was issue them again (a review).
// The minute tick keeps the floor ahead of the clock.
func TestSeqAfterAQuietSpellIsNotRepeated(t *testing.T) {
	r := newRig(t, true)
	top := r.burstAfterQuiet(5, true)
	r.crashRestart() // the same millisecond: as well a clock set back
	r.lastSeqAbove(top)
}

// A shutdown waits for a renewal in flight: Done closed first, the store
// closed under it and the floor was never written (a review).
func TestShutdownWaitsForTheSeqFloorsRenewal(t *testing.T) {
	r := newRig(t, true)
	gate := make(chan struct{})
	r.pub.mu.Lock()
	save := r.pub.saveSeq
	r.pub.saveSeq = func(v uint64) error { <-gate; return save(v) }
	r.pub.seqLimit = 0 // a renewal due at the next tick
	r.pub.mu.Unlock()
	r.advance(time.Minute)
	r.pub.mu.Lock()
	inFlight := r.pub.seqSaving != nil
	r.pub.mu.Unlock()
	if !inFlight {
		t.Fatal("no renewal in flight; the test proves nothing")
	}
	r.stop()
	close(gate)
	<-r.svc.Done()
	var floor uint64
	if _, err := r.db.PushState(seqName, &floor); err != nil {
		t.Fatal(err)
	}
	if want := uint64(r.clk.Now().UnixMilli()) + seqReserve; floor < want {
		t.Fatalf("after Done the floor on disk is %d, want the renewal's %d", floor, want)
	}
}

// A press is not held behind a store write: the floor's renewal, due at
// the first message after ten quiet minutes, used to be written before
// the post, and an SOS waited for whatever transaction held bbolt's lock
// (a group commit, a retention sweep, a merge's rewrite: a review).
func TestPressIsNotHeldBehindAStoreWrite(t *testing.T) {
	r := newRig(t, true)
	r.advance(11 * time.Minute) // a quiet site: the reserve has run out
	release, holding := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- r.db.Update(func(*bolt.Tx) error { close(holding); <-release; return nil })
	}()
	<-holding
	r.svc.OnEvent(store.Event{ID: 7, Status: "alert", AssetUID: "P1", MAC: "AABBCCDDEE01", BeaconName: "Panic 1", BeaconType: "panic", CreatedAt: r.clk.Now().UnixMilli()})
	deadline := time.Now().Add(10 * time.Second) // a post over loopback, not the fake clock
	posted := false
	for time.Now().Before(deadline) && !posted {
		posted = len(r.msgs("")) > 0
		runtime.Gosched()
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r.svc.Idle()
	r.waitSeqSaved()
	if !posted {
		t.Fatal("the SOS was not posted while another store write held bbolt's lock")
	}
}

// A clean stop brings the floor down to just past the last number, so a
// restart goes on from there (or from the clock), not from a block ten
// minutes ahead: four restarts had seq 45 minutes past the clock (a
// black-box check). A crash keeps the reserve (the tests above).
func TestSeqAfterACleanRestartFollowsTheLastNumber(t *testing.T) {
	r := newRig(t, true)
	r.sensor(sensorRec("range", "F0", "active", "temperature 11.00 °C outside 2..8", r.clk.Now()))
	r.svc.Idle()
	last := r.seqs()[0]
	for range 4 {
		r.restart() // clean: Done waits for closeSeq
	}
	r.sensor(sensorRec("range", "F0", "resolved", "temperature 5.00 °C within 2..8", r.clk.Now()))
	r.svc.Idle()
	seqs := r.seqs()
	if got := seqs[len(seqs)-1]; got != last+1 {
		t.Fatalf("seq after four clean restarts %d, want %d (the last + 1; the clock has not moved)", got, last+1)
	}
}

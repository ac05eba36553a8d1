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

	r.restart() // the clock has not moved: the same millisecond
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

	r.restart()
	r.pub.mu.Lock()
	save := r.pub.saveSeq
	r.pub.saveSeq = func(uint64) error { return errors.New("write: no space left on device") }
	r.pub.seqLimit = 0 // renewal due at the next number
	r.pub.mu.Unlock()
	r.advance(time.Second)
	r.sensor(sensorRec("range", "F1", "active", "temperature 12.00 °C outside 2..8", r.clk.Now()))
	r.svc.Idle()
	r.waitSeqSaved()
	r.pub.mu.Lock()
	r.pub.saveSeq = save
	r.pub.mu.Unlock()
	seqs := r.seqs()
	issued := seqs[len(seqs)-1]

	r.restart()
	r.advance(time.Second)
	r.sensor(sensorRec("range", "F0", "resolved", "temperature 5.00 °C within 2..8", r.clk.Now()))
	r.svc.Idle()
	seqs = r.seqs()
	if got := seqs[len(seqs)-1]; got <= issued {
		t.Fatalf("seq after the restart %d, not above %d issued before it (all: %v)", got, issued, seqs)
	}
}

// waitSeqSaved waits, with a deadline, for the floor's renewal in flight.
func (r *rig) waitSeqSaved() {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.pub.mu.Lock()
		saving := r.pub.seqSaving
		r.pub.mu.Unlock()
		if !saving {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatal("the sequence floor's save did not finish")
		}
		runtime.Gosched()
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

package push

import (
	"fmt"
	"testing"
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

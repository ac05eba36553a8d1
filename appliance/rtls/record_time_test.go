package rtls

import (
	"testing"
	"time"
)

// TestSurveyWindowsCarryTheirTime: each survey sample records when its
// window began (the first report's receive time), and the store keeps it
// as recorded_at: a survey stores its windows when it stops, and which
// device was on which gateway is read at the window's time, not the
// stop's (appliance.heardBy; a review: devices swapped during a survey).
func TestSurveyWindowsCarryTheirTime(t *testing.T) {
	h := newHarness(t, Options{})
	h.e.SetSite(gridSite(2, 1, true))
	h.e.Record("WAT-9", 1)
	start := h.clk.Now().UnixMilli()
	for range 6 {
		h.sight("WAT-9", gwMAC(1), -60)
		h.clk.Advance(time.Second)
	}
	ss := h.e.StopRecording("WAT-9")
	if len(ss) < 2 {
		t.Fatalf("%d samples", len(ss))
	}
	for i, s := range ss {
		if want := start + int64(i)*2000; s.At != want {
			t.Fatalf("sample %d began at %d, want %d", i, s.At, want)
		}
		if st := SampleToStore("WAT-9", s); st.RecordedAt != s.At {
			t.Fatalf("stored recorded_at %d, want %d", st.RecordedAt, s.At)
		}
	}
}

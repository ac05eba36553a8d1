package auth

import (
	"testing"
	"time"

	"beaconhub/appliance/clock"
)

func TestLimiterSchedule(t *testing.T) {
	clk := clock.NewFake(t0)
	l := NewLimiter(clk)
	if l.SlowAfter != 3 || l.LockAfter != 10 || l.Lockout != 15*time.Minute || l.Window != 15*time.Minute {
		t.Errorf("production thresholds changed: %+v", l)
	}
	for i := 1; i < l.SlowAfter; i++ {
		l.Fail("k")
		if _, locked := l.Check("k"); locked {
			t.Fatalf("blocked after %d failures", i)
		}
	}
	// Delays grow 1s, 2s, 4s ... then the lockout.
	want := time.Second
	for fails := l.SlowAfter; fails < l.LockAfter; fails++ {
		l.Fail("k")
		d, locked := l.Check("k")
		if !locked || d != want {
			t.Fatalf("after %d failures: %v %v, want %v", fails, d, locked, want)
		}
		clk.Advance(d)
		if _, locked := l.Check("k"); locked {
			t.Fatalf("still blocked after waiting %v", d)
		}
		want *= 2
	}
	l.Fail("k")
	if d, locked := l.Check("k"); !locked || d != l.Lockout {
		t.Fatalf("after %d failures: %v %v, want lockout", l.LockAfter, d, locked)
	}
	// Other keys are independent; Check reports the worst of several.
	if _, locked := l.Check("other"); locked {
		t.Error("unrelated key blocked")
	}
	if d, _ := l.Check("other", "k"); d != l.Lockout {
		t.Errorf("Check(other, k) = %v", d)
	}
	l.Success("k")
	if _, locked := l.Check("k"); locked {
		t.Error("Success did not clear the key")
	}
}

func TestLimiterWindowForgets(t *testing.T) {
	clk := clock.NewFake(t0)
	l := NewLimiter(clk)
	for i := 1; i < l.SlowAfter; i++ {
		l.Fail("k")
	}
	clk.Advance(l.Window + time.Second)
	l.Fail("k")
	if _, locked := l.Check("k"); locked {
		t.Error("failures older than the window still count")
	}
}

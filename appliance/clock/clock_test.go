package clock

import (
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestFakeRunsTimersInOrder(t *testing.T) {
	c := NewFake(t0)
	var order []string
	var at []time.Duration
	add := func(name string, d time.Duration) Timer {
		return c.AfterFunc(d, func() {
			order = append(order, name)
			at = append(at, c.Now().Sub(t0))
		})
	}
	add("c", 3*time.Second)
	add("a", time.Second)
	stopped := add("x", 2*time.Second)
	add("b", 2*time.Second)
	if !stopped.Stop() {
		t.Error("Stop of a pending timer returned false")
	}
	if stopped.Stop() {
		t.Error("second Stop returned true")
	}
	c.Advance(2500 * time.Millisecond)
	if strings.Join(order, "") != "ab" {
		t.Errorf("fired %v after 2.5s, want a b", order)
	}
	if len(at) != 2 || at[0] != time.Second || at[1] != 2*time.Second {
		t.Errorf("callbacks saw times %v, want 1s 2s", at)
	}
	if c.Now() != t0.Add(2500*time.Millisecond) {
		t.Errorf("Now = %v", c.Now())
	}
	c.Advance(time.Second)
	if strings.Join(order, "") != "abc" {
		t.Errorf("fired %v, want a b c", order)
	}
}

func TestFakeTimerScheduledFromCallback(t *testing.T) {
	c := NewFake(t0)
	n := 0
	var tick func()
	tick = func() {
		n++
		c.AfterFunc(time.Minute, tick)
	}
	c.AfterFunc(time.Minute, tick)
	c.Advance(10*time.Minute + 30*time.Second)
	if n != 10 {
		t.Errorf("periodic callback ran %d times in 10.5 minutes, want 10", n)
	}
}

func TestFakeStopFromAnotherGoroutine(t *testing.T) {
	c := NewFake(t0)
	fired := false
	tm := c.AfterFunc(time.Second, func() { fired = true })
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); tm.Stop() }()
	wg.Wait()
	c.Advance(time.Hour)
	if fired {
		t.Error("stopped timer fired")
	}
}

func TestRealClock(t *testing.T) {
	var c Clock = Real{}
	if d := time.Since(c.Now()); d < 0 || d > time.Minute {
		t.Errorf("Real.Now off by %v", d)
	}
	done := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { close(done) })
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Real.AfterFunc never fired")
	}
	tm := c.AfterFunc(time.Hour, func() {})
	if !tm.Stop() {
		t.Error("Stop of a pending real timer returned false")
	}
}

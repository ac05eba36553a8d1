package rtls

import (
	"sync"
	"testing"
)

// TestResetKeepsTheDownCountTrue races resets against judgements and
// reports: the count of gateways down (isDown's shortcut) must match
// the flags after. When reset stored 0 while a report's decrement was
// under way, the count went to -1 and the next judgement left it at 0
// with a gateway down: isDown said no and a dead gateway's silence
// counted again.
func TestResetKeepsTheDownCountTrue(t *testing.T) {
	const ng = 4
	for round := range 2000 {
		lv := newLiveness(ng, 1)
		var wg sync.WaitGroup
		for g := range ng {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 20 {
					lv.judge(g, int64(i), 0)
					lv.heard(g, int64(i))
				}
				lv.judge(g, 100, 0)
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				lv.reset()
			}
		}()
		wg.Wait()
		n := 0
		for g := range ng {
			if lv.down[g].Load() {
				n++
			}
		}
		if got := lv.nDown.Load(); int(got) != n {
			t.Fatalf("round %d: %d gateways down, the count says %d", round, n, got)
		}
	}
}

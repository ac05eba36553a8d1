// Regression tests from a review of the last words push owes subjects
// across uid changes and mode switches: each comment tells what went
// wrong before the fix (past behaviour in the present tense).

package push

import (
	"testing"
	"time"
)

// A remint apply of 200 legacy fridges that are out of range (each
// announced): Rename posts two separate messages per asset (400 posts at
// once). Behind ntfy's default rate limit most get 429 and wait in the
// staff retry queue; a new fridge going out of range a minute later
// waits behind all of them.
func TestARemintOfManyAssetsDoesNotDelayAFreshAlert(t *testing.T) {
	r, b := rateLimitedRig(t)
	const n = 200
	old, nu := r.fleetOutOfRange(n)
	b.arm(r.clk.Now())
	before := len(r.msgs("TST000-sensors"))
	for i := range old {
		mergeInStore(t, r, old[i], nu[i])
		r.svc.Rename(old[i], nu[i])
	}
	r.svc.RenamesDone()
	r.svc.Idle()
	r.advance(time.Minute)
	r.outOfRange("G1", "14.00")
	out := r.clk.Now()
	var delivered time.Duration = -1
	for i := 0; i < 60*6 && delivered < 0; i++ { // 10 s steps, up to 1 h
		r.advance(10 * time.Second)
		if _, _, ok := lastFor(t, r.msgs("TST000-sensors"), "range:G1"); ok {
			delivered = r.clk.Now().Sub(out)
		}
	}
	t.Logf("remint of %d announced fridges: %d messages delivered so far for it, %d waiting for retry; fresh alert for G1 delivered after %v",
		n, len(r.msgs("TST000-sensors"))-before, r.svc.RetryQueued(), delivered)
	if delivered < 0 || delivered > 2*time.Minute {
		t.Fatalf("a fridge out of range 1 min after a remint of %d assets was delivered after %v (-1: not within 1 h)", n, delivered)
	}
}

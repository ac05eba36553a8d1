// Regression tests from a second review of the last words push owes
// across uid changes: each comment tells what went wrong before the fix
// (past behaviour in the present tense); Test...Check ones checked
// behaviour that was right and must stay so.

package push

import (
	"testing"
	"time"

	"beaconhub/appliance/config"
)

// Bulk batteries: X's battery goes low and is replaced within one bucket
// (no digest ever named X; staff never heard of it). The operator then
// switches batteries to individual: toIndividual takes X's pending
// "resolved" change for a uid change's old subject and sends it as a
// last word, in a message titled "Asset ids changed: 1 conditions":
// noise about a subject staff never heard of, under a title that is
// false (no asset id changed).
func TestASwitchToIndividualSaysNothingOfSubjectsNeverTold(t *testing.T) {
	r := newRigWith(t, false, func(c *config.Config) { c.PushBatteriesMode, c.PushBatteriesIntervalSeconds = "bulk", 3600 })
	for i := 0; i < 65; i++ { // past the first (empty) bucket
		r.advance(time.Minute)
	}
	r.sensor(sensorRec("battery", "X", "active", "battery 2400 mV", r.clk.Now()))
	r.svc.Idle()
	r.advance(5 * time.Minute)
	r.sensor(sensorRec("battery", "X", "resolved", "battery 3000 mV", r.clk.Now()))
	r.svc.Idle()
	r.advance(5 * time.Minute)
	r.patch(map[string]any{"server_push_batteries_mode": "individual"})
	r.svc.Idle()
	r.advance(time.Minute)
	var got []string
	for _, m := range r.msgs("TST000-batteries") {
		got = append(got, m.Title)
	}
	if len(got) > 0 {
		t.Fatalf("a switch to individual mode with no uid change, staff never told of X: batteries topic %q", got)
	}
}

// Regression tests from a second review of the last words push owes
// across uid changes: each comment tells what went wrong before the fix
// (past behaviour in the present tense); Test...Check ones checked
// behaviour that was right and must stay so.

package push

import (
	"testing"
	"time"

	"beaconhub/appliance/config"
	"beaconhub/store"
)

// Checks (expected to pass): merges of two open keys, chains.

// TestMergeOfTwoOpenKeys (was TestMergeOfTwoOpenKeysBulk and
// TestMergeOfTwoOpenKeysIndividual): A and B are both low; A is merged
// into B. A's last word is resolved, B's active, in either batteries
// mode.
func TestMergeOfTwoOpenKeys(t *testing.T) {
	for _, c := range []struct {
		mode  string
		step  time.Duration // the merge comes steps*step after both went low
		steps int
	}{
		{"bulk", time.Minute, 65}, // after the first digest listed them
		{"individual", 10 * time.Minute, 1},
	} {
		t.Run(c.mode, func(t *testing.T) {
			r := newRigWith(t, false, batteries(c.mode, 3600))
			r.sensor(sensorRec("battery", "A", "active", "battery 2400 mV", r.clk.Now()))
			r.sensor(sensorRec("battery", "B", "active", "battery 2300 mV", r.clk.Now()))
			r.svc.Idle()
			for i := 0; i < c.steps; i++ {
				r.advance(c.step)
			}
			r.rename("A", "B", true)
			r.minutes(65)
			wA, _ := said(t, r.msgs("TST000-batteries"), "battery:A")
			wB, _ := said(t, r.msgs("TST000-batteries"), "battery:B")
			if wA != PhaseResolved || wB != PhaseActive {
				t.Fatalf("A merged into B, both low (%s): last word for battery:A %q (want resolved), for battery:B %q (want active)", c.mode, wA, wB)
			}
		})
	}
}

func TestRenameChainInOneBatch(t *testing.T) {
	r := newRig(t, false)
	r.outOfRange("A", "12.00")
	r.advance(10 * time.Minute)
	mergeInStore(t, r, "A", "B")
	mergeInStore(t, r, "B", "C")
	r.svc.PrepareRename("A", "B")
	r.svc.PrepareRename("B", "C")
	back := sensorRec("range", "A", "resolved", "back", r.clk.Now())
	back.Since = t0.UnixMilli() // the condition's start, as the monitor's recoveries carry
	r.sensor(back)
	r.svc.Rename("A", "B")
	r.svc.Rename("B", "C")
	r.svc.RenamesDone()
	r.svc.Idle()
	r.minutes(65)
	for _, s := range []string{"range:A", "range:B", "range:C"} {
		if w, _ := said(t, r.msgs("TST000-sensors"), s); w == PhaseActive {
			t.Error("active", s)
		}
	}
}

func TestAnOrdinaryRestartSaysNothing(t *testing.T) {
	r := newRigWith(t, false, func(c *config.Config) {
		c.PushBatteriesMode, c.PushBatteriesIntervalSeconds = "individual", 3600
		c.PushFleetHealthMode, c.PushFleetHealthIntervalSeconds = "individual", 3600
		c.PushSensorNotseenMode = "individual"
		c.PushCalibrationMode = "individual"
	})
	now := func() int64 { return r.clk.Now().UnixMilli() }
	r.sensor(sensorRec("battery", "A", "active", "battery 2400 mV", r.clk.Now()))
	r.sensor(sensorRec("notseen", "P1", "active", "Not seen", r.clk.Now()))
	r.sensor(sensorRec("notseen", "S1", "active", "Not seen", r.clk.Now()))
	r.health(store.HealthRecord{Key: "fleet:stale:G1", Phase: store.HealthActive, At: now(), Since: now(), Message: "stale"})
	r.health(store.HealthRecord{Key: "mqtt_down", Phase: store.HealthActive, At: now(), Since: now(), Message: "mqtt down"})
	flapHeld(r, "battery", "B")
	r.svc.Idle()
	r.advance(10 * time.Minute)
	r.rename("A", "A2", true)
	r.advance(time.Minute)
	before := len(r.msgs(""))
	r.restart()
	r.advance(time.Minute)
	if got := r.msgs(""); len(got) != before {
		for _, m := range got[before:] {
			t.Logf("%s %s", m.Topic, m.Title)
		}
		t.Fatal("restart said something")
	}
}

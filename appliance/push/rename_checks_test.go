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
func TestMergeOfTwoOpenKeysBulk(t *testing.T) {
	r := newRigWith(t, false, func(c *config.Config) { c.PushBatteriesMode, c.PushBatteriesIntervalSeconds = "bulk", 3600 })
	r.sensor(sensorRec("battery", "A", "active", "battery 2400 mV", r.clk.Now()))
	r.sensor(sensorRec("battery", "B", "active", "battery 2300 mV", r.clk.Now()))
	r.svc.Idle()
	for i := 0; i < 65; i++ {
		r.advance(time.Minute)
	}
	mergeInStore(t, r, "A", "B")
	r.svc.PrepareRename("A", "B")
	r.svc.Rename("A", "B")
	r.svc.RenamesDone()
	r.svc.Idle()
	for i := 0; i < 65; i++ {
		r.advance(time.Minute)
	}
	wA, lA := lastWordOf(r.msgs("TST000-batteries"), "battery:A")
	wB, lB := lastWordOf(r.msgs("TST000-batteries"), "battery:B")
	t.Logf("A %q\nB %q", lA, lB)
	if wA != PhaseResolved || wB != PhaseActive {
		t.Fatal("bad")
	}
}

func TestMergeOfTwoOpenKeysIndividual(t *testing.T) {
	r := newRigWith(t, false, func(c *config.Config) { c.PushBatteriesMode, c.PushBatteriesIntervalSeconds = "individual", 3600 })
	r.sensor(sensorRec("battery", "A", "active", "battery 2400 mV", r.clk.Now()))
	r.sensor(sensorRec("battery", "B", "active", "battery 2300 mV", r.clk.Now()))
	r.svc.Idle()
	r.advance(10 * time.Minute)
	mergeInStore(t, r, "A", "B")
	r.svc.PrepareRename("A", "B")
	r.svc.Rename("A", "B")
	r.svc.RenamesDone()
	r.svc.Idle()
	for i := 0; i < 65; i++ {
		r.advance(time.Minute)
	}
	wA, lA := lastWordOf(r.msgs("TST000-batteries"), "battery:A")
	wB, lB := lastWordOf(r.msgs("TST000-batteries"), "battery:B")
	t.Logf("A %q\nB %q", lA, lB)
	if wA != PhaseResolved || wB != PhaseActive {
		t.Fatal("bad")
	}
}

func TestRenameChainInOneBatch(t *testing.T) {
	r := newRig(t, false)
	r.sensor(sensorRec("range", "A", "active", "temperature 12.00 °C outside 2..8", r.clk.Now()))
	r.svc.Idle()
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
	for i := 0; i < 65; i++ {
		r.advance(time.Minute)
	}
	for _, s := range []string{"range:A", "range:B", "range:C"} {
		w, l := lastWordOf(r.msgs("TST000-sensors"), s)
		t.Logf("%s %s %q", s, w, l)
		if w == PhaseActive {
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
	mergeInStore(t, r, "A", "A2")
	r.svc.PrepareRename("A", "A2")
	r.svc.Rename("A", "A2")
	r.svc.RenamesDone()
	r.svc.Idle()
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

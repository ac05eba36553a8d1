package push

import (
	"path/filepath"
	"testing"
	"time"

	"beaconhub/appliance/push/ntfytest"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// TestAStartHandlesTransitionsACrashKeptFromPush: push hears condition
// transitions live only. Committed ones a crash kept from it are handled
// at the next start, from the store's active conditions: an activation
// announced, a recovery sent; one already announced is not announced
// again. A review killed the appliance with 20 fridges out of range
// committed and 18 were never announced.
func TestAStartHandlesTransitionsACrashKeptFromPush(t *testing.T) {
	r := newRig(t, false)
	// Announced before the crash, and still active: not again.
	r.sensor(sensorRec("range", "F1", "active", "temperature 9 °C outside 2..8", r.clk.Now()))
	// Announced, and its recovery committed but never handled.
	r.sensor(sensorRec("range", "F2", "active", "temperature 10 °C outside 2..8", r.clk.Now()))
	r.health(store.HealthRecord{Key: "mqtt_down", Phase: "active", At: r.clk.Now().UnixMilli(), Since: r.clk.Now().UnixMilli(), Message: "MQTT down"})
	r.svc.Idle()
	r.advance(time.Minute)
	r.close()
	// What the previous run committed and did not hand to push.
	at := r.clk.Now()
	db, err := store.Open(filepath.Join(r.dir, "service.db"), store.OpenOptions{LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		return store.ApplySensorConditions(tx, []store.SensorConditionRecord{
			sensorRec("range", "F2", "resolved", "back in range", at),
			sensorRec("range", "F3", "active", "temperature 12 °C outside 2..8", at),
			sensorRec("notseen", "P1", "active", "Not seen for more than 30 minutes", at),
		})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ApplyHealth([]store.HealthRecord{
		{Key: "mqtt_down", Phase: "resolved", At: at.UnixMilli(), Since: at.UnixMilli()},
		{Key: "alertsys_down", Phase: "active", At: at.UnixMilli(), Since: at.UnixMilli(), Message: "alertsys down"},
	}); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	r.open()
	r.svc.Idle()
	if got := subjectsPhases(t, r.msgs("TST000-sensors")); got != "range:F1 active, range:F2 active, range:F3 active, range:F2 resolved" {
		t.Fatalf("sensors: %s", got)
	}
	if got := subjectsPhases(t, r.msgs("TST000-notseen")); got != "notseen:P1 active" {
		t.Fatalf("notseen: %s", got)
	}
	if got := subjectsPhases(t, r.msgs("TST000-health")); got != "mqtt_down active, alertsys_down active, mqtt_down resolved" {
		t.Fatalf("health: %s", got)
	}
	// A second start has nothing left to do.
	r.restart()
	r.svc.Idle()
	if n := len(r.msgs("TST000-sensors")) + len(r.msgs("TST000-health")) + len(r.msgs("TST000-notseen")); n != 8 {
		t.Fatalf("a second start sent more: %d messages in all", n)
	}
}

func subjectsPhases(t *testing.T, msgs []ntfytest.Message) string {
	t.Helper()
	out := ""
	for i, m := range msgs {
		rec, err := ParseRecord(m.Message)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			out += ", "
		}
		out += rec.Subject + " " + rec.Phase
	}
	return out
}

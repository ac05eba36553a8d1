package push

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"beaconhub/appliance/push/ntfytest"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

func TestSensorCooldownPerAssetAndQuietRecovery(t *testing.T) {
	r := newRig(t, false)
	on := func(msg string) {
		r.svc.OnSensor(sensorRec("range", "F1", "active", msg, r.clk.Now()))
		r.svc.Idle()
	}
	off := func() {
		r.svc.OnSensor(sensorRec("range", "F1", "resolved", "back in range", r.clk.Now()))
		r.svc.Idle()
	}
	on("temperature 9 °C outside 2..8")
	off()
	got := r.msgs("TST000-sensors")
	if len(got) != 2 || got[0].Priority != 5 || got[1].Priority != 1 || got[1].Title != "Back in range" {
		t.Fatalf("want alert + quiet recovery, got %+v", got)
	}
	r.advance(time.Hour)
	// Out again within the cooldown, humidity this time (one condition
	// per asset): staff last heard it recovered, so they hear it again;
	// its recovery waits for the cooldown's end.
	on("humidity 90 % outside 20..80")
	off()
	got = r.msgs("TST000-sensors")
	if len(got) != 3 || got[2].Priority != 5 || phases(t, got) != "active resolved active" {
		t.Fatalf("want a second alert and no recovery yet, got %s", phases(t, got))
	}
	r.advance(5*time.Hour - time.Minute) // the cooldown (21600 s) from the first alert not yet over
	if n := len(r.msgs("TST000-sensors")); n != 3 {
		t.Fatalf("the held recovery went early: %d messages", n)
	}
	r.advance(2 * time.Minute)
	got = r.msgs("TST000-sensors")
	if len(got) != 4 || got[3].Priority != 1 || phases(t, got) != "active resolved active resolved" {
		t.Fatalf("at the cooldown's end want the held recovery, got %s", phases(t, got))
	}
	on("temperature 10 °C outside 2..8")
	if n := len(r.msgs("TST000-sensors")); n != 5 {
		t.Fatalf("after cooldown want a new alert, have %d", n)
	}
}

// phases lists the record phases of msgs in order.
func phases(t *testing.T, msgs []ntfytest.Message) string {
	t.Helper()
	var out []string
	for _, m := range msgs {
		rec, err := ParseRecord(m.Message)
		if err != nil {
			t.Fatalf("%q: %v", m.Message, err)
		}
		out = append(out, rec.Phase)
	}
	return strings.Join(out, " ")
}

// TestBurstOfExcursions: 1,000 flapping excursions of 10 fridges in one
// minute produce, per fridge, an alert, a quiet recovery and a second
// alert (it was heard recovered), and the recovery that ends the burst
// once the cooldown has passed: the last message for each is true.
func TestBurstOfExcursions(t *testing.T) {
	r := newRig(t, false)
	for i := 0; i < 1000; i++ {
		subj := fmt.Sprintf("F%d", i%10)
		phase := "active"
		if (i/10)%2 == 1 {
			phase = "resolved"
		}
		r.clk.Advance(60 * time.Millisecond)
		r.svc.OnSensor(sensorRec("range", subj, phase, "temperature 9 °C outside 2..8", r.clk.Now()))
	}
	r.svc.Idle()
	if n := len(r.msgs("TST000-sensors")); n > 30 {
		t.Fatalf("burst produced %d messages, cadence allows 30", n)
	}
	r.advance(6 * time.Hour)
	last := map[string]string{}
	got := r.msgs("TST000-sensors")
	for _, m := range got {
		rec, err := ParseRecord(m.Message)
		if err != nil {
			t.Fatal(err)
		}
		last[rec.Subject] = rec.Phase
	}
	if len(got) > 40 || len(last) != 10 {
		t.Fatalf("%d messages about %d fridges", len(got), len(last))
	}
	for subj, ph := range last {
		if ph != PhaseResolved {
			t.Errorf("%s: staff last heard %s, it is back in range", subj, ph)
		}
	}
}

// TestCriticalCooldownPanicNotSeenAndHealth: under the critical cooldown
// (panic/watch not-seen, infrastructure health) "first activation and
// recovery are immediate" (spec): five flaps a minute apart are told
// flap by flap, every recovery at once, never held for the cooldown (a
// black-box check saw a second alertsys outage's recovery held 6 h while
// the dashboard was green). What the cooldown limits is the repeat of a
// condition still active.
func TestCriticalCooldownPanicNotSeenAndHealth(t *testing.T) {
	r := newRig(t, false)
	for i := 0; i < 5; i++ {
		r.svc.OnSensor(sensorRec("notseen", "P1", "active", "Not seen for more than 60 minutes", r.clk.Now()))
		r.svc.OnSensor(sensorRec("notseen", "P1", "resolved", "seen again", r.clk.Now()))
		r.svc.OnHealth(store.HealthRecord{Key: "mqtt_down", Phase: "active", At: r.clk.Now().UnixMilli(), Message: "MQTT down"})
		r.svc.OnHealth(store.HealthRecord{Key: "mqtt_down", Phase: "resolved", At: r.clk.Now().UnixMilli()})
		r.advance(time.Minute)
	}
	five := strings.TrimSpace(strings.Repeat("active resolved ", 5))
	if got := phases(t, r.msgs("TST000-notseen")); got != five {
		t.Fatalf("panic not-seen: %s", got)
	}
	if got := phases(t, r.msgs("TST000-health")); got != five {
		t.Fatalf("mqtt_down: %s", got)
	}
	// Active for good: reminded once per cooldown, not per minute.
	r.svc.OnHealth(store.HealthRecord{Key: "mqtt_down", Phase: "active", At: r.clk.Now().UnixMilli(), Message: "MQTT down"})
	r.svc.Idle()
	for i := 0; i < 60; i++ {
		r.advance(time.Minute)
	}
	if got := phases(t, r.msgs("TST000-health")); got != five+" active" {
		t.Fatalf("an hour active: %s", got)
	}
	r.advance(6 * time.Hour)
	if got := phases(t, r.msgs("TST000-health")); got != five+" active active" {
		t.Fatalf("after the critical cooldown, one reminder: %s", got)
	}
}

// TestModeSwitchAppliedLive: batteries start bulk (no immediate message,
// a digest at the next 09:00 Prague), then switch to individual.
func TestModeSwitchAppliedLive(t *testing.T) {
	r := newRig(t, false) // t0 = 10:00 UTC = 11:00 Prague
	r.svc.OnSensor(sensorRec("battery", "F1", "active", "battery 2600 mV", r.clk.Now()))
	r.svc.Idle()
	if n := len(r.msgs("TST000-batteries")); n != 0 {
		t.Fatalf("bulk mode sent %d immediately", n)
	}
	// The night of 28/29 March 2026 is the spring-forward change: the next
	// 09:00 Prague (CEST) is 07:00 UTC, 21 h later, not 22 h.
	r.advance(21*time.Hour - time.Second)
	if n := len(r.msgs("TST000-batteries")); n != 0 {
		t.Fatalf("digest before the boundary: %d", n)
	}
	r.advance(time.Second)
	d := r.msgs("TST000-batteries")
	if len(d) != 1 || d[0].Title != "Low battery: 1 device" {
		t.Fatalf("digest: %+v", d)
	}
	rec, err := ParseRecord(d[0].Message)
	if err != nil || rec.Intent != IntentDigest || len(rec.Items) != 2 {
		t.Fatalf("digest record %+v %v", rec, err)
	}
	r.patch(map[string]any{"server_push_batteries_mode": "individual"})
	r.svc.OnSensor(sensorRec("battery", "F2", "active", "battery 2500 mV", r.clk.Now()))
	r.svc.Idle()
	if d := r.msgs("TST000-batteries"); len(d) != 2 || d[1].Title != "Low battery 2.50 V" {
		t.Fatalf("individual after live switch: %+v", d)
	}
}

func TestButtonPressesAreOnePerEvent(t *testing.T) {
	r := newRig(t, false)
	// Alerting merged five gateway reports into event 3; it reports the
	// insert once, so push publishes once. Motion warnings are not pushed.
	r.svc.OnEvent(store.Event{ID: 3, Status: "alert", BeaconType: "panic", AlertsysMessage: "Help in room 12"})
	r.svc.OnEvent(store.Event{ID: 4, Status: "warning", BeaconType: "panic"})
	// A test send's motion is a warning too: no "Test: Panic button
	// pushed" for it; a test send's press is a test message.
	r.svc.OnEvent(store.Event{ID: 5, Status: "warning", Type: "motion", Test: true, BeaconType: "panic"})
	r.svc.OnEvent(store.Event{ID: 6, Status: "alert", Type: "single", Test: true, BeaconType: "watch"})
	r.svc.Idle()
	if m := r.msgs("TST000-sos"); len(m) != 1 || m[0].Title != "Help in room 12" {
		t.Fatalf("%+v", m)
	}
	if m := r.msgs("TST000-test"); len(m) != 1 || m[0].Title != "Test: Watch button pushed" {
		t.Fatalf("test topic: %+v", m)
	}
}

// TestDailyQuietSnapshotOfSensors: active ranges are listed once a day at
// the anchor at minimum priority; a QR snapshot in between does not move
// the bucket.
func TestDailyQuietSnapshotOfSensors(t *testing.T) {
	r := newRig(t, false)
	r.svc.OnSensor(sensorRec("range", "F1", "active", "temperature 9 °C outside 2..8", r.clk.Now()))
	r.svc.Idle()
	if n := r.svc.Snapshot([]string{CatSensors, CatSOS}); n != 1 {
		t.Fatalf("snapshots %d", n)
	}
	r.advance(21 * time.Hour) // 09:00 Prague (CEST) next day
	var got []ntfytest.Message
	for _, m := range r.msgs("TST000-sensors") {
		if m.Priority == 1 {
			got = append(got, m)
		}
	}
	// The QR snapshot and the daily one (the still-active alert also got
	// its repeat after the sensors cooldown, at priority urgent).
	if len(got) != 2 || got[1].Title != "Sensors: 1 out of range" {
		t.Fatalf("%+v", got)
	}
	rec, _ := ParseRecord(got[1].Message)
	if rec.Intent != IntentSnapshot || len(rec.Items) != 1 || rec.Items[0].Subject != "range:F1" {
		t.Fatalf("%+v", rec)
	}
}

func TestStillActiveCriticalConditionRepeatsAfterCooldown(t *testing.T) {
	r := newRig(t, false)
	r.svc.OnHealth(store.HealthRecord{Key: "alertsys_down", Phase: "active", At: r.clk.Now().UnixMilli(), Message: "alertsys unreachable"})
	r.svc.Idle()
	for i := 0; i < 6*60-1; i++ {
		r.advance(time.Minute)
	}
	if n := len(r.msgs("TST000-health")); n != 1 {
		t.Fatalf("repeat before the critical cooldown: %d", n)
	}
	r.advance(time.Minute)
	got := r.msgs("TST000-health")
	if len(got) != 2 || got[1].Title != "alertsys unreachable" || got[1].Priority != 4 {
		t.Fatalf("%+v", got)
	}
}

// A recovery held for a flapping sensor range survives a restart and
// goes when the cooldown ends; an activation after the restart cancels
// another's. (Critical conditions hold none: their recovery is
// immediate.)
func TestAHeldRecoveryOutlivesARestart(t *testing.T) {
	r := newRig(t, false)
	flap := func(subject string) {
		for _, ph := range []string{"active", "resolved", "active", "resolved"} {
			r.sensor(sensorRec("range", subject, ph, "temperature 9 °C outside 2..8", r.clk.Now()))
			r.svc.Idle()
			r.advance(time.Minute)
		}
	}
	flap("F1")
	flap("F2")
	r.restart()
	r.sensor(sensorRec("range", "F2", "active", "temperature 9 °C outside 2..8", r.clk.Now()))
	r.svc.Idle()
	if got := phasesOf(phaseLog(r.msgs("TST000-sensors"), "range:F1")); got != "active resolved active" {
		t.Fatalf("F1 before the cooldown's end: %v", got)
	}
	r.advance(6 * time.Hour)
	if got := phasesOf(phaseLog(r.msgs("TST000-sensors"), "range:F1")); got != "active resolved active resolved" {
		t.Fatalf("F1 after it: %v", got)
	}
	if got := phasesOf(phaseLog(r.msgs("TST000-sensors"), "range:F2")); strings.HasSuffix(got, PhaseResolved) {
		t.Fatalf("F2, active again after the restart, last told %v", got)
	}
}

// TestADigestBoundaryMissedWhileDownIsCaughtUpAtStart: a boundary that
// passed while the appliance was stopped waited for the next one, a day
// later by default (a black-box check); the start runs it at once, one
// digest for the buckets skipped.
func TestADigestBoundaryMissedWhileDownIsCaughtUpAtStart(t *testing.T) {
	r := newRig(t, false) // t0 = 11:00 Prague; the next 09:00 Prague is 07:00 UTC, 21 h on
	r.sensor(sensorRec("battery", "F1", "active", "battery 2600 mV", r.clk.Now()))
	r.svc.Idle()
	r.close()
	r.clk.Advance(21*time.Hour + 5*time.Minute) // down over the boundary
	r.open()
	r.svc.Idle()
	if d := r.msgs("TST000-batteries"); len(d) != 1 || d[0].Title != "Low battery: 1 device" {
		t.Fatalf("at the start after a missed boundary: %+v", d)
	}
	// Caught up: the next comes at the next boundary, not again now.
	r.restart()
	r.advance(time.Hour)
	if d := r.msgs("TST000-batteries"); len(d) != 1 {
		t.Fatalf("a second digest for the same bucket: %+v", d)
	}
}

// TestTheFleetDigestListsFleetConditionsOnly: infrastructure conditions
// (mqtt_down, push_down...) go on their own at once; the "Fleet health"
// digest counted and listed them as fleet exceptions too (a black-box
// check).
func TestTheFleetDigestListsFleetConditionsOnly(t *testing.T) {
	r := newRig(t, false)
	now := r.clk.Now().UnixMilli()
	r.health(store.HealthRecord{Key: "mqtt_down", Phase: store.HealthActive, At: now, Since: now, Message: "MQTT broker connection lost"})
	r.health(store.HealthRecord{Key: "fleet:stale:GW-A1-1", Phase: store.HealthActive, At: now, Since: now, Message: "gateway GW-A1-1 not heard for more than 10 minutes"})
	r.svc.Idle()
	r.advance(21 * time.Hour) // the next 09:00 Prague
	var digest []ntfytest.Message
	for _, m := range r.msgs("TST000-health") {
		if strings.HasPrefix(m.Title, "Fleet health") {
			digest = append(digest, m)
		}
	}
	if len(digest) != 1 || digest[0].Title != "Fleet health: 1 exception" || strings.Contains(digest[0].Message, "mqtt_down") {
		t.Fatalf("fleet digest: %+v", digest)
	}
	// The companion snapshot is the category's whole state, infrastructure
	// included, and says so (it read "Fleet health: 2 exceptions": a
	// review).
	if n := r.svc.Snapshot([]string{CatHealth}); n != 1 {
		t.Fatalf("%d snapshot parts", n)
	}
	all := r.msgs("TST000-health")
	if last := all[len(all)-1]; last.Title != "Health: 2 active conditions" || !strings.Contains(last.Message, "mqtt_down") {
		t.Fatalf("health snapshot: %+v", last)
	}
}

// TestACalibrationDigestItemCarriesTheCheckersText: the spec's body has
// uid, MAC, type, last calibrated and interval; a digest item gave the
// title alone (a black-box check).
func TestACalibrationDigestItemCarriesTheCheckersText(t *testing.T) {
	r := newRig(t, false) // calibration is bulk by default
	text := "Calibration expired: SEN-A1-4 (MAC C30000000A04, type sensor; last calibrated 2025-01-01, interval 365 days)"
	r.sensor(sensorRec("calibration", "SEN-A1-4", "active", text, r.clk.Now()))
	r.advance(21 * time.Hour)
	d := r.msgs("TST000-calibration")
	if len(d) != 1 || !strings.Contains(d[0].Message, text) {
		t.Fatalf("calibration digest: %+v", d)
	}
}

// TestACalibrationDigestItemFollowsARemint: the item text names the asset;
// after a remint it went on naming the former uid in every digest for as
// long as the condition lasted (a review).
func TestACalibrationDigestItemFollowsARemint(t *testing.T) {
	r := newRig(t, false)
	r.sensor(sensorRec("calibration", "LEGACY-C30000000A04", "active", "Calibration expired: LEGACY-C30000000A04 (MAC C30000000A04, type sensor)", r.clk.Now()))
	r.svc.Idle()
	r.svc.Rename("LEGACY-C30000000A04", "SEN-A1-4")
	r.advance(21 * time.Hour)
	d := r.msgs("TST000-calibration")
	// The active item ("•") names the asset as it is now; the changes
	// ("Δ") keep what happened under the former uid.
	if len(d) != 1 || !strings.Contains(d[0].Message, "• calibration:SEN-A1-4: Calibration expired: SEN-A1-4 (MAC") {
		t.Fatalf("calibration digest after the remint: %+v", d)
	}
}

// TestARestartAfterAScheduleChangeSendsNoSecondDigest: the running box
// waits for the next boundary under a changed digest time; a restart took
// the changed schedule's boundary (passed before the change) for one
// missed while down and sent a second digest (a review).
func TestARestartAfterAScheduleChangeSendsNoSecondDigest(t *testing.T) {
	r := newRig(t, false)
	r.sensor(sensorRec("battery", "F1", "active", "battery 2600 mV", r.clk.Now()))
	r.svc.Idle()
	r.advance(21*time.Hour + 5*time.Minute) // 09:05 Prague: the day's digest
	r.advance(15 * time.Minute)
	r.patch(map[string]any{"server_push_digest_time": "09:10"})
	r.svc.Idle()
	r.advance(time.Minute)
	r.restart()
	r.svc.Idle()
	if d := r.msgs("TST000-batteries"); len(d) != 1 {
		t.Fatalf("%d digests, want the one of 09:00", len(d))
	}
}

// TestTheFirstRunsBucketMarksAreSaved: the first start marks the current
// bucket delivered; the marks waited for the next save, a stop before it
// lost them, and the next start's catch-up, seeing none, skipped the
// boundary it had missed (a review).
func TestTheFirstRunsBucketMarksAreSaved(t *testing.T) {
	r := newRig(t, false) // 11:00 Prague, nothing to do
	r.svc.Idle()
	r.close()
	// A low battery committed while push was stopped, then a start after
	// the 09:00 boundary.
	rec := sensorRec("battery", "F1", "active", "battery 2600 mV", r.clk.Now())
	db, err := store.Open(filepath.Join(r.dir, "service.db"), store.OpenOptions{LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return store.ApplySensorConditions(tx, []store.SensorConditionRecord{rec}) }); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	r.clk.Advance(21*time.Hour + 5*time.Minute)
	r.open()
	r.svc.Idle()
	if d := r.msgs("TST000-batteries"); len(d) != 1 {
		t.Fatalf("%d digests at the start after the missed boundary: %+v", len(d), d)
	}
}

// TestASwitchToIndividualTellsARecoveryAtItsOwnTime: a recovery made in
// bulk mode and not yet in a digest is told at the switch, with the time
// it happened; it carried the switch's (a black-box check).
func TestASwitchToIndividualTellsARecoveryAtItsOwnTime(t *testing.T) {
	r := newRig(t, false)
	r.sensor(sensorRec("battery", "F1", "active", "battery 2600 mV", r.clk.Now()))
	r.advance(21 * time.Hour) // the digest lists it: staff heard "low"
	recovered := r.clk.Now()
	r.sensor(sensorRec("battery", "F1", "resolved", "battery ok", recovered))
	r.advance(2 * time.Minute)
	r.patch(map[string]any{"server_push_batteries_mode": "individual"})
	r.svc.Idle()
	d := r.msgs("TST000-batteries")
	last := d[len(d)-1]
	rec, err := ParseRecord(last.Message)
	if err != nil || last.Title != "Battery ok" || rec.At != recovered.UnixMilli() {
		t.Fatalf("the recovery told at the switch: %q at %d, want at %d (%v)", last.Title, rec.At, recovered.UnixMilli(), err)
	}
}

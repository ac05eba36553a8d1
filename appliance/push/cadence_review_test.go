package push

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"beaconhub/appliance/push/ntfytest"
	"beaconhub/store"
)

// lastFor is the last message (not a daily snapshot) whose record names
// subject, on topic; ok false when none.
func lastFor(t *testing.T, msgs []ntfytest.Message, subject string) (Record, ntfytest.Message, bool) {
	t.Helper()
	var rec Record
	var msg ntfytest.Message
	ok := false
	for _, m := range msgs {
		for _, r := range words(m) {
			if r.Subject == subject {
				rec, msg, ok = r, m, true
			}
		}
	}
	return rec, msg, ok
}

// words are the subjects' words a message carries: its record, or, for
// a message of last words (Service.Told), one record per item. Daily
// snapshots and digests say none.
func words(m ntfytest.Message) []Record {
	r, err := ParseRecord(m.Message)
	if err != nil || r.Intent == IntentSnapshot || r.Intent == IntentDigest {
		return nil
	}
	if !strings.HasPrefix(r.Subject, "changes:") {
		return []Record{r}
	}
	var out []Record
	for _, it := range r.Items {
		w := r
		w.Subject, w.Phase, w.At, w.Items = it.Subject, it.Phase, it.At, nil
		out = append(out, w)
	}
	return out
}

// a fridge flaps once early on (out, back, out again within the
// sensors cooldown), then stays out for longer than the cooldown: the
// reminder at the cooldown's end says "still active". It then truly comes
// back in range, 1 h after that reminder, 7 h after its first alert. The
// cooldown counted from its first activation ended an hour ago, so the
// recovery is due at once (docs/push.md: "that condition's next recovery
// then waits for the end of the cooldown counted from its first
// activation"). Flap survives the reminder (remind moves Alerted, not
// Flap), so the recovery is held until the end of the *next* cooldown:
// staff are told the fridge is out of range for 5 more hours.
func TestRecoveryAfterReminderOfAFlappedFridgeIsNotHeldAnotherCooldown(t *testing.T) {
	r := newRig(t, false)
	r.sensor(sensorRec("range", "F1", "active", "temperature 9.00 °C outside 2..8", r.clk.Now()))
	r.svc.Idle()
	r.advance(5 * time.Minute)
	r.sensor(sensorRec("range", "F1", "resolved", "back in range", r.clk.Now()))
	r.svc.Idle()
	r.advance(10 * time.Minute)
	r.sensor(sensorRec("range", "F1", "active", "temperature 12.00 °C outside 2..8", r.clk.Now()))
	r.svc.Idle()
	// 7 h pass (6 h cooldown): one "Still active" reminder at ~6 h.
	for i := 0; i < 7*60-15; i++ {
		r.advance(time.Minute)
	}
	r.sensor(sensorRec("range", "F1", "resolved", "back in range", r.clk.Now()))
	r.svc.Idle()
	r.advance(2 * time.Minute) // a reminder tick or two
	rec, m, ok := lastFor(t, r.msgs("TST000-sensors"), "range:F1")
	if !ok || rec.Phase != PhaseResolved {
		t.Fatalf("fridge back in range for 2 min, 7 h after its first alert (cooldown 6 h): last message staff have is %q phase %s", m.Title, rec.Phase)
	}
}

// the same for alertsys_down (critical cooldown 6 h): an outage that
// flapped once at its start and then lasted 7 h ends; staff are not told it
// ended for another 5 h.
func TestAlertsysRecoveryAfterReminderIsNotHeldAnotherCooldown(t *testing.T) {
	r := newRig(t, false)
	h := func(phase string) {
		now := r.clk.Now().UnixMilli()
		r.health(store.HealthRecord{Key: "alertsys_down", Phase: phase, At: now, Since: now, Message: "alertsys unreachable"})
		r.svc.Idle()
	}
	h("active")
	r.advance(time.Minute)
	h("resolved")
	r.advance(time.Minute)
	h("active")
	for i := 0; i < 7*60; i++ {
		r.advance(time.Minute)
	}
	h("resolved")
	r.advance(2 * time.Minute)
	rec, m, ok := lastFor(t, r.msgs("TST000-health"), "alertsys_down")
	if !ok || rec.Phase != PhaseResolved {
		t.Fatalf("alertsys back for 2 min after a 7 h outage: last health message staff have is %q phase %s", m.Title, rec.Phase)
	}
	// The vendor ops topic likewise.
	rec, m, ok = lastFor(t, r.msgs("beaconhub-ops"), "alertsys_down")
	if !ok || rec.Phase != PhaseResolved {
		t.Fatalf("ops: last message %q phase %s", m.Title, rec.Phase)
	}
}

// batteries in individual mode flap (low, ok, low again, ok: the
// last recovery is held). An operator switches batteries to bulk (the
// spec default) and the battery goes low again. The held "Battery ok"
// must not go out while the battery is low; bulkOrIndividual returns
// before announce, so the hold is never cancelled and remind sends it.
func TestHeldRecoveryNotSentAfterModeSwitchWhileActive(t *testing.T) {
	r := newRig(t, false)
	r.patch(map[string]any{"server_push_batteries_mode": "individual", "server_push_batteries_interval_seconds": 3600})
	b := func(phase, msg string) {
		r.sensor(sensorRec("battery", "F1", phase, msg, r.clk.Now()))
		r.svc.Idle()
		r.advance(time.Minute)
	}
	b("active", "battery 2700 mV")
	b("resolved", "battery 2900 mV")
	b("active", "battery 2700 mV")
	b("resolved", "battery 2900 mV") // held till t0+1h
	r.patch(map[string]any{"server_push_batteries_mode": "bulk"})
	b("active", "battery 2600 mV") // low again, for good
	for i := 0; i < 70; i++ {
		r.advance(time.Minute)
	}
	rec, m, ok := lastFor(t, r.msgs("TST000-batteries"), "battery:F1")
	conds, _ := r.db.ActiveSensorConditions()
	if ok && rec.Phase == PhaseResolved && len(conds) == 1 {
		t.Fatalf("battery low (active in the store: %s) and the last batteries message for it is %q (phase %s), sent %v",
			conds[0].Key, m.Title, rec.Phase, time.Unix(m.Time, 0).UTC())
	}
}

// a panic button not seen is announced critical (urgent, repeated).
// It is then deleted; the sensor monitor resolves its not-seen condition
// ("No longer monitored"). Push identifies the subject afresh, finds no
// type (deleted) and takes the bulk sensor rule: no recovery goes, though
// the activation went immediately; Critical and Open stay set for good.
func TestDeletedPanicNotSeenRecoveryGoesAsItsAlertDid(t *testing.T) {
	r := newRig(t, false)
	r.sensor(sensorRec("notseen", "P1", "active", "Not seen for more than 30 minutes", r.clk.Now()))
	r.svc.Idle()
	if n := len(r.msgs("TST000-notseen")); n != 1 {
		t.Fatalf("panic not-seen: %d messages", n)
	}
	r.advance(time.Minute)
	// Deleted: the identity list no longer has it.
	r.svc.Identify = func(subject string) Device { return Device{} }
	r.sensor(sensorRec("notseen", "P1", "resolved", store.ConditionUnmonitored, r.clk.Now()))
	r.svc.Idle()
	r.advance(time.Minute)
	rec, m, _ := lastFor(t, r.msgs("TST000-notseen"), "notseen:P1")
	r.svc.mu.Lock()
	crit, open := r.svc.st.Critical["notseen:P1"], r.svc.st.Open["notseen:P1"]
	r.svc.mu.Unlock()
	if rec.Phase != PhaseResolved {
		t.Fatalf("panic not-seen resolved (deleted): last notseen message staff have is %q phase %s; Critical=%v Open=%v", m.Title, rec.Phase, crit, open)
	}
}

func reopenForCrash(t *testing.T, r *rig) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(r.dir, "service.db"), store.OpenOptions{LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// the first start of this version over a state saved by the previous
// one (no "critical" key): a panic not seen since before the upgrade is
// known (reconcile leaves it) but not marked critical, so its critical
// repeat never comes: the restart-survival the commit promises does not
// hold across the upgrade itself.
func TestPanicNotSeenRepeatSurvivesTheUpgradeRestart(t *testing.T) {
	r := newRig(t, false)
	r.sensor(sensorRec("notseen", "P1", "active", "Not seen for more than 30 minutes", r.clk.Now()))
	r.svc.Idle()
	r.advance(time.Minute)
	// As the previous version saved it: no Critical/Flap/Held.
	r.svc.mu.Lock()
	r.svc.st.Critical = nil
	r.svc.mu.Unlock()
	r.svc.save()
	r.restart()
	for i := 0; i < 6*60+5; i++ {
		r.advance(time.Minute)
	}
	repeats := 0
	for _, m := range r.msgs("TST000-notseen") {
		if rec, err := ParseRecord(m.Message); err == nil && rec.Phase == PhaseActive {
			repeats++
		}
	}
	if repeats < 2 {
		t.Fatalf("panic not seen for 6 h across the upgrade restart: %d notseen alert(s) in all, want the first and a critical repeat", repeats)
	}
}

// a remint commits (the store's range condition moves from
// LEGACY-… to SEN-…) and the process dies before the followers ran
// (push.Rename never called). At the next start reconcile finds
// range:SEN-… unknown (announced again) and range:LEGACY-… gone from the
// store, which it takes for a recovery: staff get "Back in range" for a
// fridge still at 12 °C, as the last message about the old uid.
func TestRemintCrashWindowDoesNotSayBackInRange(t *testing.T) {
	r := newRig(t, false)
	r.sensor(sensorRec("range", "LEGACY-C3000000000D", "active", "temperature 12.00 °C outside 2..8", r.clk.Now()))
	r.svc.Idle()
	r.advance(time.Minute)
	r.close()
	db := reopenForCrash(t, r)
	if err := db.UpdateAssets(r.clk.Now(), func(tx *store.AssetTx) error {
		if err := tx.SetAlias("LEGACY-C3000000000D", "SEN-H1-1"); err != nil { // as a remint does
			return err
		}
		_, err := tx.RenameUID("LEGACY-C3000000000D", "SEN-H1-1")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	r.open()
	r.svc.Idle()
	var got []string
	for _, m := range r.msgs("TST000-sensors") {
		rec, _ := ParseRecord(m.Message)
		got = append(got, rec.Subject+" "+rec.Phase+" "+m.Title)
	}
	for _, m := range r.msgs("TST000-sensors") {
		if rec, _ := ParseRecord(m.Message); rec.Phase == PhaseResolved && (rec.Subject != "range:LEGACY-C3000000000D" || m.Title != "LEGACY-C3000000000D continues as SEN-H1-1") {
			t.Fatalf("fridge still out of range, reminted before a crash: sensors topic %q", got)
		}
	}
	// The old subject's last word is that it continues under the new
	// uid; the new one's that it is out of range.
	if rec, _, ok := lastFor(t, r.msgs("TST000-sensors"), "range:SEN-H1-1"); !ok || rec.Phase != PhaseActive {
		t.Fatalf("reminted fridge still out of range: sensors topic %q", got)
	}
	if rec, _, ok := lastFor(t, r.msgs("TST000-sensors"), "range:LEGACY-C3000000000D"); !ok || rec.Phase != PhaseResolved {
		t.Fatalf("the old uid's alert was never closed: sensors topic %q", got)
	}
}

// Regression tests from a randomized model check of push with uid
// changes, server failures and crashes: each comment tells what went
// wrong before the fix (past behaviour in the present tense).

package push

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"beaconhub/appliance/push/ntfytest"
	"beaconhub/store"
)

// lastHeard is lastWordOf over the staff topics (not the ops copies),
// with the message that said it.
func lastHeard(r *rig, subject string) (phase, via string) {
	var staff []ntfytest.Message
	for _, m := range r.msgs("") {
		if strings.HasPrefix(m.Topic, "TST000-") {
			staff = append(staff, m)
		}
	}
	phase, log := lastWordOf(staff, subject)
	if len(log) > 0 {
		via = log[len(log)-1]
	}
	return phase, via
}

// A merge F3 -> F1 (neither out of range). Between the commit and the
// sensor monitor following the rename, the monitor decides "out of
// range" under the old uid F3. Push moves it to range:F1 (announced,
// right), but the store keeps it under range:F3, a key no one will ever
// resolve; the monitor holds it as range:F1. At the next start push
// reconciles: range:F1 is not in the store, so it is taken for a
// recovery and staff read "Back in range" for a fridge still out.
func TestALateActivationUnderAFormerUIDSurvivesARestart(t *testing.T) {
	r := newRig(t, false)
	r.svc.PrepareRename("F3", "F1")
	mergeInStore(t, r, "F3", "F1")
	r.sensor(sensorRec("range", "F3", "active", "temperature 11.00 °C outside 2..8", r.clk.Now())) // decided under the old uid
	r.svc.Rename("F3", "F1")
	r.svc.RenamesDone()
	r.svc.Idle()
	if p, _ := lastHeard(r, "range:F1"); p != PhaseActive {
		t.Fatalf("range:F1 after the late activation: %q", p)
	}
	conds, _ := r.db.ActiveSensorConditions()
	var keys []string
	for _, c := range conds {
		keys = append(keys, c.Key)
	}
	r.advance(17 * time.Minute)
	r.restart()
	p, _ := lastHeard(r, "range:F1")
	t.Logf("store active conditions after the late activation: %v; range:F1 last word after a restart: %s", keys, p)
	if len(keys) != 1 || keys[0] != "range:F1" {
		t.Errorf("store holds %v active, want [range:F1] (the condition under the asset's current uid)", keys)
	}
	if p != PhaseActive {
		t.Errorf("range:F1 still out of range; after a restart staff read %q", p)
	}
}

// Fleet health in bulk mode (the default): its digest lists the
// infrastructure keys active. The push server is down across a digest
// boundary: the digest (mqtt_down active) waits in the outbox, mqtt_down
// recovers and its "resolved" waits in the retry queue. The server is
// back: push_down resolves and the retry queue goes at once (retryNow),
// but the outbox waits for its own doubling timer, so the stale digest
// arrives after the recovery and staff's last word is "active".
func TestADigestMadeDuringAnOutageDoesNotOvertakeTheRecovery(t *testing.T) {
	r := newRig(t, false)
	r.patch(map[string]any{"server_push_fleet_health_mode": "bulk", "server_push_fleet_health_interval_seconds": 3600})
	r.svc.Idle()
	r.ntfy.Set(func(s *ntfytest.Server) { s.FailStatus, s.FailN = 503, 1<<30 })
	r.health(store.HealthRecord{Key: keyPushDown, Phase: store.HealthActive, At: r.clk.Now().UnixMilli(), Since: r.clk.Now().UnixMilli(), Message: "push server unreachable"})
	r.health(store.HealthRecord{Key: "mqtt_down", Phase: store.HealthActive, At: r.clk.Now().UnixMilli(), Since: r.clk.Now().UnixMilli(), Message: "mqtt down"})
	r.svc.Idle()
	for i := 0; i < 70; i++ { // past an hourly digest boundary: the digest waits in the outbox
		r.advance(time.Minute)
	}
	r.health(store.HealthRecord{Key: "mqtt_down", Phase: store.HealthResolved, At: r.clk.Now().UnixMilli()})
	r.svc.Idle()
	r.advance(20 * time.Minute)
	r.ntfy.Set(func(s *ntfytest.Server) { s.FailN = 0 })
	r.health(store.HealthRecord{Key: keyPushDown, Phase: store.HealthResolved, At: r.clk.Now().UnixMilli()})
	r.svc.Idle()
	for i := 0; i < 10; i++ {
		r.advance(time.Minute)
	}
	for _, key := range []string{"mqtt_down", keyPushDown} {
		if p, via := lastHeard(r, key); p != PhaseResolved {
			t.Errorf("%s resolved before the server came back; 10 min later staff's last word is %q (from %s)", key, p, via)
		}
	}
}

// The push server's publish endpoint answers 503 for a few minutes while
// its health endpoint stays fine (push_down never goes active, so it
// never resolves and retryNow never runs). A fridge's alert failed and
// waits in the staff queue on the doubling delay. The server publishes
// again; a press arriving now is queued behind the fridge without an
// attempt of its own and waits for the retry timer, up to 2 min.
func TestAPressDoesNotWaitForTheRetryTimer(t *testing.T) {
	r := newRig(t, false)
	r.ntfy.Set(func(s *ntfytest.Server) { s.FailStatus, s.FailN = 503, 1<<30 })
	r.sensor(sensorRec("range", "F1", "active", "temperature 11.00 °C outside 2..8", r.clk.Now()))
	r.svc.Idle()
	for i := 0; i < 130; i++ { // 130 s of 5xx: the last retry at 126 s, the next due at 246 s
		r.advance(time.Second)
	}
	r.ntfy.Set(func(s *ntfytest.Server) { s.FailN = 0 }) // the server publishes again
	r.advance(time.Second)
	e := store.Event{ID: 1, Status: store.EventAlert, Type: "single", AssetUID: "P1", BeaconType: "panic", BeaconName: "Panic 1", CreatedAt: r.clk.Now().UnixMilli()}
	handed := r.clk.Now()
	r.svc.OnEvent(e)
	r.svc.Idle()
	var took time.Duration = -1
	for i := 0; i < 180 && took < 0; i++ {
		if len(r.msgs("TST000-sos")) > 0 {
			took = r.clk.Now().Sub(handed)
			break
		}
		r.advance(time.Second)
	}
	t.Logf("SOS handed with the server up, behind %d queued condition message(s), delivered after %v", 1, took)
	if took < 0 || took > 5*time.Second {
		t.Fatalf("SOS delivered after %v (-1: not within 3 min) with the server up", took)
	}
}

// A long push outage with many fridges out and a short sensors cooldown
// (10 min): every reminder joins the staff retry queue; at its cap of
// 1000 the oldest non-press message is dropped, first what was decided
// at the start of the outage. F00, announced out of range before the
// outage, came back in range early in it: its "Back in range" is
// dropped in favour of other fridges' reminders, and after the outage
// staff's last word about F00 is "active", for good.
func TestRemindersDoNotEvictARecoveryInALongOutage(t *testing.T) {
	r := newRig(t, false)
	r.patch(map[string]any{"server_push_sensors_cooldown_seconds": 600})
	r.svc.Idle()
	for i := 0; i < 20; i++ {
		r.sensor(sensorRec("range", fmt.Sprintf("F%02d", i), "active", "temperature 11.00 °C outside 2..8", r.clk.Now()))
	}
	r.svc.Idle()
	r.ntfy.Set(func(s *ntfytest.Server) { s.FailStatus, s.FailN = 503, 1<<30 })
	r.health(store.HealthRecord{Key: keyPushDown, Phase: store.HealthActive, At: r.clk.Now().UnixMilli(), Since: r.clk.Now().UnixMilli(), Message: "push server unreachable"})
	r.advance(5 * time.Minute)
	r.sensor(sensorRec("range", "F00", "resolved", "back in range", r.clk.Now()))
	r.svc.Idle()
	for i := 0; i < 9*60; i++ {
		r.advance(time.Minute)
	}
	queued := r.svc.RetryQueued()
	r.ntfy.Set(func(s *ntfytest.Server) { s.FailN = 0 })
	r.health(store.HealthRecord{Key: keyPushDown, Phase: store.HealthResolved, At: r.clk.Now().UnixMilli()})
	r.svc.Idle()
	for i := 0; i < 5; i++ {
		r.advance(time.Minute)
	}
	p, _ := lastHeard(r, "range:F00")
	t.Logf("queued at the end of the 9 h outage: %d; range:F00 last word %q", queued, p)
	if p != PhaseResolved {
		t.Errorf("F00 back in range 5 min into a 9 h outage; afterwards staff's last word is %q", p)
	}
}

// F2 and F3 go out of range in the same millisecond (one sweep, one
// reading time). F2 is merged into F3: the store keeps F3's own
// condition. The sensor monitor then decides F2's recovery under its old
// uid (before it follows the rename), with F2's start. The store took
// the survivor's condition for F2's moved one (same start) and ended it;
// push rightly drops the recovery (absorbed). At the next start push
// found range:F3 gone from the store and said "Back in range" of a
// fridge still out.
func TestALateRecoveryOfAMergeSourceKeepsTheSurvivorsSameStartCondition(t *testing.T) {
	r := newRig(t, false)
	now := r.clk.Now()
	r.sensor(sensorRec("range", "F3", "active", "temperature 11.00 °C outside 2..8", now))
	r.sensor(sensorRec("range", "F2", "active", "temperature 12.00 °C outside 2..8", now))
	r.svc.Idle()
	r.svc.PrepareRename("F2", "F3")
	mergeInStore(t, r, "F2", "F3")
	rec := sensorRec("range", "F2", "resolved", "back in range", now) // Since: F2's start
	rec.At = r.clk.Now().Add(time.Second).UnixMilli()
	r.sensor(rec)
	r.svc.Rename("F2", "F3")
	r.svc.RenamesDone()
	r.svc.Idle()
	conds, _ := r.db.ActiveSensorConditions()
	r.advance(10 * time.Minute)
	r.restart()
	p, _ := lastHeard(r, "range:F3")
	if len(conds) != 1 {
		t.Errorf("F3's own condition (still out) was ended in the store by F2's recovery")
	}
	if p != PhaseActive {
		t.Errorf("range:F3 still out of range; after a restart staff read %q", p)
	}
}

// Regression tests from a review of the last words push owes subjects
// across uid changes and mode switches: each comment tells what went
// wrong before the fix (past behaviour in the present tense).

package push

import (
	"testing"
	"time"

	"beaconhub/appliance/config"
	"beaconhub/appliance/push/ntfytest"
)

// crashCopy snapshots the store as a crash now would leave it and
// returns a rig over the copy with its own ntfy and settings cfg.
func crashCopy(t *testing.T, r *rig, cfg *config.Config) *rig {
	t.Helper()
	dir2 := crashSnapshot(t, r)
	n2 := ntfytest.New()
	t.Cleanup(n2.Close)
	n2.Set(func(s *ntfytest.Server) { s.Tokens = map[string]bool{"tk_publish": true} })
	cfg = cfg.Clone()
	cfg.PushServerURL, cfg.PushOpsServerURL = n2.URL, n2.URL
	return &rig{t: t, dir: dir2, clk: r.clk, ntfy: n2, live: config.NewLive(cfg, nil, ""), tr: r.tr}
}

// Bulk batteries, F1 low and not yet in a digest. The operator switches
// batteries to individual (the setting is persisted at once); the
// process dies before the worker ran toIndividual (busy posting, or
// just unlucky). After the restart nothing brings the category in line:
// reconcile knows battery:F1 (Active) and raises nothing, individual
// mode sends no digest, and reminders skip a key not Open. The low
// battery is never announced.
func TestACrashBeforeTheSwitchFollowUpStillAnnounces(t *testing.T) {
	r := newRigWith(t, false, batteries("bulk", 3600))
	r.batteryLow("F1", 2400)
	r.advance(10 * time.Minute)
	release := blockWorker(r)
	r.patch(map[string]any{"server_push_batteries_mode": "individual"})
	r2 := crashCopy(t, r, r.live.Get())
	release()
	r.close()
	r2.open()
	r2.svc.Idle()
	r2.minutes(6 * 60)
	if w, _ := said(t, r2.msgs(""), "battery:F1"); w != PhaseActive {
		t.Fatalf("battery low since t0, batteries individual since t0+10m: 6 h after the restart staff have no word of it (%q)", w)
	}
}

// Batteries announced one by one (F1 low at t0, interval 6 h), switched
// to bulk; the digest at t0+4h lists F1; switched back to individual
// at t0+5h10m. docs/push.md: "the conditions it lists active are then
// announced (repeats in individual mode count from it)". The repeat
// comes at t0+6h, 2 h after the digest listed it (digestedLocked moves
// Alerted only for keys not already Open).
func TestRepeatCountsFromTheDigestAsDocumented(t *testing.T) {
	r := newRigWith(t, false, batteries("individual", 6*3600))
	r.batteryLow("F1", 2400)
	r.advance(time.Hour)
	r.patch(map[string]any{"server_push_batteries_mode": "bulk"})
	r.minutes(4*60 + 10) // to 15:10, past the digest at t0+4h
	r.patch(map[string]any{"server_push_batteries_mode": "individual"})
	r.svc.Idle()
	r.minutes(2 * 60)
	log := batteryLog(r)
	t.Logf("battery:F1: %q", log)
	for _, l := range log {
		if l == "6h0m0s active (Low battery 2.40 V)" || (len(l) > 6 && l[:6] == "6h0m0s") {
			t.Fatalf("repeat 2 h after the digest that listed it, not an interval from it: %q", log)
		}
	}
}

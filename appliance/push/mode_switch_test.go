package push

import (
	"strings"
	"testing"
	"time"
)

// batteryLog is every batteries message about battery:F1, immediate or
// as a digest item, in order.
func batteryLog(r *rig) []string {
	var out []string
	for _, m := range r.msgs("TST000-batteries") {
		rec, err := ParseRecord(m.Message)
		if err != nil {
			continue
		}
		if rec.Subject == "battery:F1" {
			out = append(out, time.UnixMilli(rec.At).Sub(t0).String()+" "+rec.Phase+" ("+strings.SplitN(m.Message, "\n", 2)[0]+")")
		}
		for _, it := range rec.Items {
			if it.Subject == "battery:F1" {
				out = append(out, "digest@"+time.UnixMilli(rec.At).Sub(t0).String()+" item "+it.Phase)
			}
		}
	}
	return out
}

// replacedInBulk: F1's battery is announced low one by one (individual,
// 1 h interval); 5 min later the operator switches batteries to bulk and
// the battery is replaced. Returns at t0+5m, the recovery pending for
// the digest.
func replacedInBulk(t *testing.T) *rig {
	t.Helper()
	r := newRigWith(t, false, batteries("individual", 3600))
	r.batteryLow("F1", 2400)
	r.advance(5 * time.Minute)
	r.patch(map[string]any{"server_push_batteries_mode": "bulk"})
	r.batteryReplaced("F1", 3000)
	return r
}

// Batteries in individual mode: "Low battery" goes (Open). The operator
// switches to bulk; the battery is replaced (recovery: digest only, Open
// stays true); the digest says resolved. Switched back to individual, the
// battery goes low again within the interval: announce finds Open set
// (stale) and suppresses it, and no digest carries it either, so staff's
// last word (the digest) stays "resolved" while it is low.
func TestDigestedRecoveryThenIndividualLowAgainIsAnnounced(t *testing.T) {
	r := replacedInBulk(t)
	r.minutes(60) // the hourly digest bucket passes: it says resolved
	// back to individual, with a longer repeat interval
	r.patch(map[string]any{"server_push_batteries_mode": "individual", "server_push_batteries_interval_seconds": 6 * 3600})
	r.advance(time.Minute)
	r.batteryLow("F1", 2300)
	lowAgain := r.clk.Now()
	r.minutes(30)
	log := batteryLog(r)
	t.Logf("battery:F1 messages: %q", log)
	last := log[len(log)-1]
	if !strings.Contains(last, "active") {
		t.Fatalf("battery low again at t0+%v (individual mode); 30 min later staff's last word about it is %q", lowAgain.Sub(t0), last)
	}
}

// Bulk then individual: the digest lists the low battery as active; the
// operator switches to individual; the battery is replaced. The recovery
// is not announced (never Open) and no digest carries it (not bulk), so
// the last word staff have stays "active" indefinitely.
func TestBulkToIndividualAnnouncesARecoveryTheDigestOwed(t *testing.T) {
	r := newRigWith(t, false, batteries("bulk", 3600))
	r.batteryLow("F1", 2400)
	r.minutes(2 * 60)
	r.patch(map[string]any{"server_push_batteries_mode": "individual"})
	r.batteryReplaced("F1", 3000)
	back := r.clk.Now()
	r.minutes(12 * 60)
	log := batteryLog(r)
	t.Logf("battery:F1 messages: %q", log)
	if len(log) > 0 && !strings.Contains(log[len(log)-1], "resolved") {
		t.Fatalf("battery replaced at t0+%v; 12 h later staff's last word about it is %q", back.Sub(t0), log[len(log)-1])
	}
}

// The batteries digest interval changed at run time (not a restart
// setting) from the default 24 h to 1 h: the digest timer armed with the
// old interval is not re-armed, so no hourly digest comes for hours.
func TestDigestIntervalChangeAppliesAtOnce(t *testing.T) {
	r := newRig(t, false) // bulk, 24 h
	r.patch(map[string]any{"server_push_batteries_interval_seconds": 3600})
	r.batteryLow("F1", 2400)
	r.minutes(3 * 60)
	log := batteryLog(r)
	t.Logf("battery:F1 messages after 3 h: %q", log)
	if len(log) == 0 {
		t.Fatalf("interval set to 1 h at t0; after 3 h no batteries digest went out")
	}
}

// Announced low one by one, switched to bulk, replaced, and switched back
// before any digest: the recovery waited for a digest that individual
// mode does not send. The switch announces it.
func TestSwitchBackBeforeTheDigestAnnouncesThePendingRecovery(t *testing.T) {
	r := replacedInBulk(t)
	r.advance(5 * time.Minute)
	r.patch(map[string]any{"server_push_batteries_mode": "individual"})
	r.svc.Idle()
	log := batteryLog(r)
	if len(log) == 0 || !strings.Contains(log[len(log)-1], "resolved") {
		t.Fatalf("battery replaced in bulk mode, switched back to individual before the digest: staff's messages %q", log)
	}
	r.minutes(3 * 60)
	if n := len(batteryLog(r)); n != 2 {
		t.Fatalf("want the alert and one recovery, got %q", batteryLog(r))
	}
}

// Low in bulk mode and switched to individual before any digest listed
// it: individual mode would have announced it, so the switch does.
func TestBulkToIndividualAnnouncesWhatNoDigestListed(t *testing.T) {
	r := newRig(t, false) // bulk, 24 h
	r.batteryLow("F1", 2400)
	r.advance(10 * time.Minute)
	r.patch(map[string]any{"server_push_batteries_mode": "individual"})
	r.svc.Idle()
	log := batteryLog(r)
	if len(log) != 1 || !strings.Contains(log[0], " active ") {
		t.Fatalf("low battery, switched to individual: staff's messages %q", log)
	}
	// Its repeat comes an interval after that announcement, not at once.
	r.minutes(60)
	if n := len(batteryLog(r)); n != 1 {
		t.Fatalf("repeated within the interval: %q", batteryLog(r))
	}
}

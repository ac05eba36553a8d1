package push

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"beaconhub/appliance/push/ntfytest"
)

// activeOfAfter returns the sensors-topic messages whose record is an
// active (alert) phase for subject, sent after index from.
func activeOf(msgs []ntfytest.Message, subject string) []ntfytest.Message {
	var out []ntfytest.Message
	for _, m := range msgs {
		rec, err := ParseRecord(m.Message)
		if err == nil && rec.Subject == subject && rec.Phase == PhaseActive {
			out = append(out, m)
		}
	}
	return out
}

// A fridge flaps once (out, back in) and then goes out again within the
// sensors cooldown and stays out. Staff last heard "Back in range", so
// the new excursion is announced at once, and reminded of after the
// cooldown. It used to be suppressed by the cooldown and, never
// announced, never reminded of either: "Back in range" stayed the last
// word for good (a review).
func TestAFridgeOutAgainAfterARecoveryIsAnnounced(t *testing.T) {
	r := newRig(t, false)
	r.svc.OnSensor(sensorRec("range", "F1", "active", "temperature 9.00 °C outside 2..8", r.clk.Now()))
	r.svc.Idle()
	r.advance(5 * time.Minute)
	r.svc.OnSensor(sensorRec("range", "F1", "resolved", "back in range", r.clk.Now()))
	r.svc.Idle()
	r.advance(10 * time.Minute)
	r.svc.OnSensor(sensorRec("range", "F1", "active", "temperature 12.00 °C outside 2..8", r.clk.Now()))
	r.svc.Idle()
	before := len(activeOf(r.msgs("TST000-sensors"), "range:F1"))
	if before != 2 {
		t.Fatalf("want the first alert and the one after the recovery, got %d", before)
	}
	// 24 h later the fridge is still out of range (no transition since).
	for i := 0; i < 24*60; i++ {
		r.advance(time.Minute)
	}
	all := r.msgs("TST000-sensors")
	after := activeOf(all, "range:F1")
	// Exclude the daily quiet snapshot (intent snapshot): only alerts count.
	n := 0
	for _, m := range after {
		if rec, _ := ParseRecord(m.Message); rec.Intent == IntentAlert {
			n++
		}
	}
	last := all[len(all)-1]
	for i := len(all) - 1; i >= 0; i-- {
		if rec, _ := ParseRecord(all[i].Message); rec.Intent != IntentSnapshot {
			last = all[i]
			break
		}
	}
	if n < 3 || last.Priority != 5 {
		t.Fatalf("fridge out of range for 24 h after one flap: only %d alert(s) ever; last non-snapshot message staff got: %q (prio %d)",
			n, last.Title, last.Priority)
	}
}

// Panic/watch not-seen repeats on the critical cooldown, across a
// restart too (spec rule 2: schedules survive restarts). Which keys are
// critical was kept in memory only: after a restart the reminder took
// the bulk sensor rule and the repeat never came (a review).
func TestPanicNotSeenRepeatSurvivesRestart(t *testing.T) {
	for _, restart := range []bool{false, true} {
		name := "no-restart"
		if restart {
			name = "restart"
		}
		t.Run(name, func(t *testing.T) {
			r := newRig(t, false)
			r.sensor(sensorRec("notseen", "P1", "active", "Not seen for more than 30 minutes", r.clk.Now()))
			r.svc.Idle()
			if n := len(r.msgs("TST000-notseen")); n != 1 {
				t.Fatalf("panic not-seen: want 1 immediate, got %d", n)
			}
			if restart {
				r.advance(time.Minute)
				r.restart()
			}
			for i := 0; i < 6*60+5; i++ {
				r.advance(time.Minute)
			}
			var repeats int
			for _, m := range r.msgs("TST000-notseen") {
				if strings.HasPrefix(m.Message, "Still active since") || strings.Contains(m.Message, "\nStill active since") {
					repeats++
				}
			}
			if repeats != 1 {
				t.Fatalf("panic not-seen still active 6 h later: want 1 critical repeat, got %d (messages %d)", repeats, len(r.msgs("TST000-notseen")))
			}
		})
	}
}

// 500 fridges go silent together (bulk sensor not-seen, the default):
// the next digest lists every one of them, split into parts that each
// fit the push server's 4 KiB, all accepted by the (fake) ntfy.
func TestDigestOf500NotSeenListsEveryFridge(t *testing.T) {
	r := newRig(t, false)
	for i := 0; i < 500; i++ {
		r.svc.OnSensor(sensorRec("notseen", fmt.Sprintf("SEN-W%03d", i), "active", "Not seen for more than 10 minutes", r.clk.Now()))
	}
	r.svc.Idle()
	if n := len(r.msgs("TST000-notseen")); n != 0 {
		t.Fatalf("bulk sent %d at once", n)
	}
	r.advance(21 * time.Hour) // next 09:00 Prague
	seen := map[string]bool{}
	parts := r.msgs("TST000-notseen")
	for _, m := range parts {
		if len(m.Message) > ntfytest.MessageLimit {
			t.Fatalf("part of %d bytes", len(m.Message))
		}
		rec, err := ParseRecord(m.Message)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range rec.Items {
			if it.Phase == PhaseActive {
				seen[it.Subject] = true
			}
		}
	}
	if len(seen) != 500 {
		t.Fatalf("digest of %d parts names %d of 500 silent fridges", len(parts), len(seen))
	}
}

package push

import (
	"strings"
	"time"

	"beaconhub/appliance/config"
)

// reminderEvery is how often still-active conditions are checked for a
// due repeat.
const reminderEvery = time.Minute

// armReminder re-arms itself from the timer callback, so the fake clock
// sees the next tick while it advances.
func (s *Service) armReminder() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.remTimer = s.clk.AfterFunc(reminderEvery, func() {
		s.do(s.remind)
		s.pub.keepSeqAhead()
		s.armReminder()
	})
}

// cooldownFor is key's repeat cooldown in category cat, with s.mu held:
// the sensors cooldown for sensors, the critical one for panic/watch
// not-seen and infrastructure health, the category's interval in
// individual mode; false in bulk mode (its digest repeats it).
func (s *Service) cooldownFor(cfg *config.Config, cat, key string) (time.Duration, bool) {
	switch {
	case cat == CatSensors:
		return secs(cfg.PushSensorsCooldownSeconds), true
	case cat == CatHealth && !isFleetKey(key):
		return secs(cfg.PushCriticalCooldownSeconds), true
	case cat == CatNotSeen && s.st.Critical[key]:
		return secs(cfg.PushCriticalCooldownSeconds), true
	}
	if bulk, iv := s.mode(cat); !bulk {
		return iv, true
	}
	return 0, false
}

// remind repeats announced conditions that are still active once their
// repeat interval passed: sensors after the sensors cooldown, panic/watch
// not-seen and infrastructure health after the critical cooldown, and
// individual-mode categories after their interval. Bulk categories repeat
// through their digest instead. It also sends the recoveries held for a
// flapping condition whose cooldown ended (announce).
func (s *Service) remind() {
	cfg := s.live.Get()
	now := s.clk.Now().UnixMilli()
	var due []Message
	s.mu.Lock()
	// While staff messages wait for the server, a repeat only queues
	// behind the alert it repeats; over a long outage repeats filled the
	// queue to its cap and pushed out a recovery (a review). Skipped, not
	// deferred: the next comes a cooldown on.
	outage := len(s.retry[laneStaff].items) > 0
	for cat, items := range s.st.Active {
		for key, it := range items {
			if !s.st.Open[key] {
				continue
			}
			every, ok := s.cooldownFor(cfg, cat, key)
			if !ok {
				continue // bulk: repeated through its digest
			}
			if every <= 0 || now-s.st.Alerted[key] < every.Milliseconds() {
				continue
			}
			s.st.Alerted[key] = now
			if outage {
				continue
			}
			due = append(due, s.stillActiveLocked(cat, key, it, now, ""))
		}
	}
	held := s.dueRecoveriesLocked(now)
	s.mu.Unlock()
	for _, m := range due {
		s.immediate(m)
	}
	for _, h := range held {
		s.immediate(h.Msg)
		if h.Ops {
			s.ops(h.Msg)
		}
	}
	if len(due) > 0 || len(held) > 0 {
		s.save()
	}
}

// stillActiveLocked is a repeat of an active condition (a reminder, or
// its continuation under a new uid: note), with s.mu held.
func (s *Service) stillActiveLocked(cat, key string, it Item, now int64, note string) Message {
	tags := categoryTags(cat)
	prio := PrioUrgent
	switch {
	case cat == CatHealth:
		prio = PrioHigh
	case cat == CatNotSeen && s.st.Critical[key]:
		tags = tagsButton
	case cat == CatCalibration:
		prio = PrioDefault
	}
	var dev Device
	if i := strings.Index(key, ":"); i > 0 && cat != CatHealth {
		dev = s.identify(key[i+1:]) // Identify takes no service lock
	}
	body := "Still active since " + time.UnixMilli(it.Since).UTC().Format(time.RFC3339)
	if note != "" {
		body += "\n" + note
	}
	return Message{Category: cat, Title: it.Text, Body: body,
		Tags: tags, Priority: prio, Record: Record{Category: cat, Kind: KindCondition, Phase: PhaseActive, Intent: IntentAlert, Subject: key, Device: dev, At: now}}
}

package push

import (
	"strings"
	"time"
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
		s.armReminder()
	})
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
	for cat, items := range s.st.Active {
		for key, it := range items {
			if !s.st.Open[key] {
				continue
			}
			var every time.Duration
			tags := categoryTags(cat)
			prio := PrioUrgent
			switch {
			case cat == CatSensors:
				every = secs(cfg.PushSensorsCooldownSeconds)
			case cat == CatHealth && !strings.HasPrefix(key, "fleet:"):
				every, prio = secs(cfg.PushCriticalCooldownSeconds), PrioHigh
			case cat == CatNotSeen && s.st.Critical[key]:
				every, tags = secs(cfg.PushCriticalCooldownSeconds), tagsButton
			default:
				bulk, iv := s.mode(cat)
				if bulk {
					continue
				}
				every = iv
				if cat == CatHealth {
					prio = PrioHigh
				} else if cat == CatCalibration {
					prio = PrioDefault
				}
			}
			if every <= 0 || now-s.st.Alerted[key] < every.Milliseconds() {
				continue
			}
			s.st.Alerted[key] = now
			var dev Device
			if i := strings.Index(key, ":"); i > 0 && cat != CatHealth {
				dev = s.identify(key[i+1:]) // Identify takes no service lock
			}
			due = append(due, Message{Category: cat, Title: it.Text, Body: "Still active since " + time.UnixMilli(it.Since).UTC().Format(time.RFC3339),
				Tags: tags, Priority: prio, Record: Record{Category: cat, Kind: KindCondition, Phase: PhaseActive, Intent: IntentAlert, Subject: key, Device: dev, At: now}})
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

package push

import (
	"time"

	"beaconhub/appliance/config"
)

// armDigest schedules the next digest run at the earliest next boundary
// of any digest category. Boundaries are recomputed on every run, so a
// changed timezone, anchor or interval applies from the next bucket.
func (s *Service) armDigest() { s.armDigestMarking(false) }

// armDigestMarking is armDigest; with current set, the bucket now under
// way counts as delivered (a settings change: a running box waits for the
// next boundary under the new settings, and a restart must not take the
// changed schedule's last boundary for one missed while down and send a
// second digest: a review). First marks and these are saved at once: left
// to the next save, a stop before it lost them, and the next start's
// catch-up saw no bucket to catch up from (a review).
func (s *Service) armDigestMarking(current bool) {
	cfg := s.live.Get()
	loc := s.siteZone()
	now := s.clk.Now()
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	marked := false
	next := time.Time{}
	for _, cat := range digestCategories {
		_, iv := s.mode(cat)
		b := Boundary(now, cfg.PushDigestTime, loc, iv).UnixMilli()
		if last := s.st.LastBucket[cat]; last == 0 || (current && b > last) {
			// First run ever (or a changed schedule): the current bucket
			// counts as delivered, so the first digest comes at the next
			// boundary.
			s.st.LastBucket[cat] = b
			marked = true
		}
		if n := NextBoundary(now, cfg.PushDigestTime, loc, iv); next.IsZero() || n.Before(next) {
			next = n
		}
	}
	if s.digTimer != nil {
		s.digTimer.Stop()
	}
	s.digTimer = s.clk.AfterFunc(next.Sub(now), func() { s.do(s.runDigest) })
	s.mu.Unlock()
	if marked {
		s.save()
	}
}

// catchUpDigest is armDigest at start: a boundary that passed while the
// appliance was down is run at once (one digest covers the buckets
// skipped), not left to the next boundary, a day later by default (a
// black-box check: docs/push.md promised it). On the staff worker.
func (s *Service) catchUpDigest() {
	cfg := s.live.Get()
	loc := s.siteZone()
	now := s.clk.Now()
	missed := false
	s.mu.Lock()
	for _, cat := range digestCategories {
		_, iv := s.mode(cat)
		if last := s.st.LastBucket[cat]; last != 0 && Boundary(now, cfg.PushDigestTime, loc, iv).UnixMilli() > last {
			missed = true
		}
	}
	s.mu.Unlock()
	if missed {
		s.runDigest() // re-arms
		return
	}
	s.armDigest()
}

// settingsChanged follows a change of the live settings: the digest
// timer re-armed for a changed interval, anchor or time zone (armed for
// the old one, an interval cut from a day to an hour waited for the old
// day's boundary: a review), and a category switched from bulk to
// individual brought in line at once.
func (s *Service) settingsChanged(old, cur *config.Config) {
	s.mu.Lock()
	stopped := s.stopped
	s.mu.Unlock()
	if stopped {
		return
	}
	if old.PushDigestTime != cur.PushDigestTime || old.PushDigestTimezone != cur.PushDigestTimezone ||
		old.PushBatteriesIntervalSeconds != cur.PushBatteriesIntervalSeconds ||
		old.PushSensorNotseenIntervalSeconds != cur.PushSensorNotseenIntervalSeconds ||
		old.PushCalibrationIntervalSeconds != cur.PushCalibrationIntervalSeconds ||
		old.PushFleetHealthIntervalSeconds != cur.PushFleetHealthIntervalSeconds {
		s.do(func() { s.armDigestMarking(true) })
	}
	for _, m := range []struct{ cat, was, now string }{
		{CatBatteries, old.PushBatteriesMode, cur.PushBatteriesMode},
		{CatNotSeen, old.PushSensorNotseenMode, cur.PushSensorNotseenMode},
		{CatCalibration, old.PushCalibrationMode, cur.PushCalibrationMode},
		{CatHealth, old.PushFleetHealthMode, cur.PushFleetHealthMode},
	} {
		if m.was != "individual" && m.now == "individual" {
			cat := m.cat
			s.do(func() { s.toIndividual(cat) })
		}
	}
}

// runDigest emits one digest per category whose bucket closed since its
// last digest (once, however many boundaries a downtime skipped), puts
// the messages in the durable outbox together with the new bucket marks,
// and re-arms.
func (s *Service) runDigest() {
	cfg := s.live.Get()
	loc := s.siteZone()
	now := s.clk.Now()
	var msgs []Message
	s.mu.Lock()
	for _, cat := range digestCategories {
		bulk, iv := s.mode(cat)
		b := Boundary(now, cfg.PushDigestTime, loc, iv).UnixMilli()
		if b <= s.st.LastBucket[cat] {
			continue
		}
		s.st.LastBucket[cat] = b
		changes := s.st.Changes[cat]
		delete(s.st.Changes, cat)
		if !bulk {
			continue
		}
		var active []Item
		for key, it := range s.st.Active[cat] {
			if cat == CatHealth && !isFleetKey(key) {
				// Infrastructure (mqtt_down, push_down...) goes on its
				// own, at once: listed in "Fleet health: N exceptions" it
				// was counted as one (a black-box check). The companion
				// snapshot still shows it: it is the category's state.
				continue
			}
			active = append(active, it)
		}
		msgs = append(msgs, Digest(cat, active, changes, now.UnixMilli(), cat == CatSensors)...)
		if cat != CatSensors { // its daily snapshot is quiet; range alerts go one by one
			s.digestedLocked(cat, changes, now.UnixMilli())
		}
	}
	s.mu.Unlock()
	// The rows and the new bucket marks commit in one transaction: a
	// crash before it re-runs the bucket, after it re-sends only rows.
	s.enqueueDurable(msgs)
	s.armDigest()
}

// digestedLocked records what a bulk category's digest told staff, as
// an announcement does: its active conditions are open (heard active),
// the resolved changes not active now are not. Staff's last word is the
// digest's, and a switch to individual mode goes on from it: the
// recovery of a battery a digest listed low was never announced, and a
// battery recovered by digest and low again was suppressed as still open
// (a review). Its repeats after a switch to individual mode count from
// the digest. A condition announced on its own stays as it was (its
// repeats count from its own announcement).
func (s *Service) digestedLocked(cat string, changes []Item, now int64) {
	cfg := s.live.Get()
	for key := range s.st.Active[cat] {
		if _, own := s.cooldownFor(cfg, cat, key); own {
			continue // announced on its own: a critical not-seen, an infrastructure key
		}
		if !s.st.Open[key] {
			s.st.Open[key] = true
			s.st.Window[key] = now
		}
		s.st.Alerted[key] = now
	}
	for _, it := range changes {
		if _, on := s.st.Active[cat][it.Subject]; on || it.Phase != PhaseResolved || s.st.Critical[it.Subject] {
			continue
		}
		if _, held := s.st.Held[it.Subject]; held {
			continue
		}
		delete(s.st.Open, it.Subject)
		delete(s.st.Flap, it.Subject)
	}
}

// Snapshot publishes one silent current-state message per included
// stateful category (QR minting, rule 8). It bypasses the digest
// schedule and changes no bucket mark, so it never counts as delivery of
// the scheduled digest.
func (s *Service) Snapshot(categories []string) int {
	s.mu.Lock()
	stopped := s.stopped
	s.mu.Unlock()
	if stopped {
		return 0
	}
	n := 0
	done := make(chan struct{})
	s.do(func() {
		defer close(done)
		for _, cat := range categories {
			if !stateful(cat) {
				continue
			}
			s.mu.Lock()
			active := make([]Item, 0, len(s.st.Active[cat]))
			for _, it := range s.st.Active[cat] {
				active = append(active, it)
			}
			s.mu.Unlock()
			parts := Digest(cat, active, nil, s.clk.Now().UnixMilli(), true)
			if len(parts) == 0 {
				parts = []Message{{Category: cat, Title: snapshotTitle(cat, 0), Body: "No active conditions.", Tags: categoryTags(cat), Priority: PrioMin,
					Record: Record{Category: cat, Kind: KindCondition, Phase: PhaseSnapshot, Subject: "digest:" + cat, At: s.clk.Now().UnixMilli()}}}
			}
			for _, p := range parts {
				p.Record.Intent = IntentSnapshot
				s.immediate(p)
				n++
			}
		}
	})
	<-done
	return n
}

func stateful(cat string) bool {
	switch cat {
	case CatSensors, CatBatteries, CatNotSeen, CatCalibration, CatHealth:
		return true
	}
	return false
}

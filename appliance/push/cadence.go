package push

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	"beaconhub/store"
)

// Condition kinds of the sensor monitor (appliance/sensors), repeated here
// so push does not import the ingest-side package.
const (
	condRange       = "range"
	condBattery     = "battery"
	condNotSeen     = "notseen"
	condCalibration = "calibration"
	// keyPushDown is status.KeyPushDown: the push server's reachability.
	keyPushDown = "push_down"
)

// OnSensor receives a sensor condition transition (sensors.Conditions
// Subscribe). It only hands off.
func (s *Service) OnSensor(r store.SensorConditionRecord) { s.do(func() { s.sensor(r) }) }

// OnHealth receives a health transition (status.Conditions Subscribe).
func (s *Service) OnHealth(h store.HealthRecord) { s.do(func() { s.health(h) }) }

// OnEvent receives a committed alerting event (alerting OnCommitted). The
// alerting service merges the reports of one press within the button
// dedup window into one event and calls this once per inserted event, so
// push shares that dedup instead of keeping a second window.
func (s *Service) OnEvent(e store.Event) {
	if !pushed(e) {
		return
	}
	s.do(func() { s.button(e) })
}

// pushed reports whether an event is announced: presses on panic buttons
// and watches, and test sends of them. Motion (a warning) never is, a
// test send's included: its push would read "Test: Panic button pushed".
func pushed(e store.Event) bool {
	if e.BeaconType != "panic" && e.BeaconType != "watch" {
		return false
	}
	return e.Status != store.EventWarning && (e.Status == store.EventAlert || e.Test)
}

// button publishes a press (or queues it for retry, durably) and then
// records that its event was handled, for the replay at start.
func (s *Service) button(e store.Event) {
	if m, ok := ButtonPress(e); ok {
		s.immediate(m)
	}
	s.mu.Lock()
	if s.st.LastEvent == nil || *s.st.LastEvent < e.ID {
		id := e.ID
		s.st.LastEvent = &id
	}
	s.mu.Unlock()
	s.save()
}

// EventReplayWindow is how far back the start looks for presses that were
// committed but never handed to the push server (a crash while they
// waited for the push worker): as far as alertsys recovery looks.
const EventReplayWindow = 5 * time.Minute

// replayEvents hands the presses committed after the last one handled,
// within EventReplayWindow, to the worker again. A crash between a post
// and the record of it repeats that push once: a repeat is better than a
// lost SOS. Test sends are not replayed. Runs before ingest starts.
func (s *Service) replayEvents() {
	s.mu.Lock()
	last := s.st.LastEvent
	s.mu.Unlock()
	recent, err := s.db.RecentEvents(s.clk.Now().Add(-EventReplayWindow).UnixMilli())
	if err != nil {
		s.log.Error("push: recent events for the replay", "err", err)
		return
	}
	if last == nil {
		// First start with this record (a fresh install or an upgrade):
		// what was committed before was announced by the previous run.
		var top uint64
		for _, e := range recent {
			top = max(top, e.ID)
		}
		s.mu.Lock()
		s.st.LastEvent = &top
		s.mu.Unlock()
		s.save()
		return
	}
	// In id order, the order they committed in: the record only ever
	// moves up, so a crash during the replay must not skip a lower id.
	slices.SortFunc(recent, func(a, b store.Event) int { return cmp.Compare(a.ID, b.ID) })
	for _, e := range recent {
		if e.ID > *last && pushed(e) && !e.Test {
			s.log.Warn("push: announcing a press the previous run had not handed to the push server", "event_id", e.ID)
			s.do(func() { s.button(e) })
		}
	}
}

// sensorCats are the categories whose Active set is keyed by sensor
// condition keys (store.SensorCondition.Key).
var sensorCats = []string{CatSensors, CatNotSeen, CatBatteries, CatCalibration}

// reconcile brings the cadence state in line with the conditions the
// store holds, at start: push hears transitions live only, so those a
// crash kept from it (committed, not yet handled) were never announced,
// nor their recoveries, nor reminded of: a review killed the process
// with 20 fridges out of range committed and 18 were never announced.
// A condition active in the store and unknown here is handled as an
// activation; one active here and not in the store as a recovery. The
// cadence rules apply as to any transition (a condition already
// announced is not announced again).
func (s *Service) reconcile() {
	conds, err := s.db.ActiveSensorConditions()
	if err != nil {
		s.log.Error("push: active sensor conditions for the start", "err", err)
		return
	}
	health, err := s.db.ActiveHealth()
	if err != nil {
		s.log.Error("push: active health conditions for the start", "err", err)
		return
	}
	inStore := make(map[string]bool, len(conds)+len(health))
	for _, c := range conds {
		inStore[c.Key] = true
	}
	for _, h := range health {
		inStore[h.Key] = true
	}
	s.mu.Lock()
	s.deferSave = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.deferSave, s.sentUnsaved = false, false
		s.mu.Unlock()
		s.save()
	}()
	s.followRenames(inStore) // after deferSave: a save per rename was quadratic too (a review)
	now := s.clk.Now().UnixMilli()
	s.mu.Lock()
	known := func(cat, key string) bool { _, ok := s.st.Active[cat][key]; return ok }
	var raise []store.SensorConditionRecord
	for _, c := range conds {
		if !known(catOf(c.Kind), c.Key) {
			raise = append(raise, activation(c))
		}
	}
	var raiseH []store.HealthRecord
	for _, h := range health {
		if !known(CatHealth, h.Key) {
			raiseH = append(raiseH, healthActivation(h))
		}
	}
	var clear []store.SensorConditionRecord
	for _, cat := range sensorCats {
		for key, it := range s.st.Active[cat] {
			if strings.Contains(key, ":") && !inStore[key] {
				clear = append(clear, recovery(key, it.Since, now))
			}
		}
	}
	var clearH []store.HealthRecord
	for key, it := range s.st.Active[CatHealth] {
		if !inStore[key] {
			clearH = append(clearH, healthRecovery(key, it.Since, now))
		}
	}
	// Panic/watch not-seen conditions active before an upgrade to a
	// state that records them (Critical) repeat on the critical
	// cooldown from now on (they stopped: a review).
	var notSeen []string
	for key := range s.st.Active[CatNotSeen] {
		if !s.st.Critical[key] {
			notSeen = append(notSeen, key)
		}
	}
	s.mu.Unlock()
	for _, key := range notSeen {
		if _, subject, ok := strings.Cut(key, ":"); ok {
			if t := s.identify(subject).Type; t == "panic" || t == "watch" {
				s.mu.Lock()
				s.st.Critical[key] = true
				s.mu.Unlock()
			}
		}
	}
	slices.SortFunc(clear, func(a, b store.SensorConditionRecord) int { return cmp.Compare(a.Key, b.Key) })
	slices.SortFunc(clearH, func(a, b store.HealthRecord) int { return cmp.Compare(a.Key, b.Key) })
	for _, r := range append(raise, clear...) {
		s.log.Warn("push: a condition transition the previous run had not handled", "key", r.Key, "phase", r.Phase)
		s.sensor(r)
	}
	for _, h := range append(raiseH, clearH...) {
		s.log.Warn("push: a health transition the previous run had not handled", "key", h.Key, "phase", h.Phase)
		s.health(h)
	}
}

// toIndividual brings a category just switched from bulk to individual
// mode in line with what staff were told: its conditions active and not
// open (no digest told them yet) are announced, and those open and no
// longer active recover: their change waited for a digest that
// individual mode does not send (a review saw a replaced battery left
// "low" for good). The cadence rules apply as to any transition.
func (s *Service) toIndividual(cat string) {
	if bulk, _ := s.mode(cat); bulk {
		return // switched back meanwhile
	}
	now := s.clk.Now().UnixMilli()
	s.mu.Lock()
	raise := map[string]bool{}
	for key := range s.st.Active[cat] {
		if !s.st.Open[key] {
			raise[key] = true
		}
	}
	var clear []string
	for key, on := range s.st.Open {
		_, active := s.st.Active[cat][key]
		_, held := s.st.Held[key]
		if on && !active && !held && catOfKey(key) == cat {
			clear = append(clear, key)
		}
	}
	// Changes waiting for a digest about subjects nothing above speaks of
	// (not active, not open: a uid change's old subject) get their last
	// word now: deleted with the digest's changes, a reminted battery's
	// old subject stayed "low" (a review).
	last := map[string]Item{}
	for _, it := range s.st.Changes[cat] {
		last[it.Subject] = it
	}
	for _, subj := range slices.Sorted(maps.Keys(last)) {
		_, active := s.st.Active[cat][subj]
		if it := last[subj]; it.Phase == PhaseResolved && !active && !s.st.Open[subj] && strings.Contains(it.Text, " continues as ") {
			s.st.Told[cat] = append(s.st.Told[cat], it)
		}
	}
	// A recovery the digest has not told yet carries its own time, not
	// the switch's (`at` is the transition's: a black-box check).
	clearAt := map[string]int64{}
	for _, key := range clear {
		clearAt[key] = now
		if it, ok := last[key]; ok && it.Phase == PhaseResolved && it.At != 0 {
			clearAt[key] = it.At
		}
	}
	delete(s.st.Changes, cat) // told one by one from now on
	s.mu.Unlock()
	s.tellPending()
	slices.Sort(clear)
	if cat == CatHealth {
		health, err := s.db.ActiveHealth()
		if err != nil {
			s.log.Error("push: active health conditions for a mode switch", "err", err)
			return
		}
		_, iv := s.mode(cat)
		for _, h := range health {
			if raise[h.Key] {
				if m := HealthAlert(healthActivation(h)); s.announce(h.Key, true, iv, m, false, false) {
					s.immediate(m) // the vendor heard it when it happened
				}
			}
		}
		for _, key := range clear {
			if m := HealthAlert(healthRecovery(key, 0, clearAt[key])); s.announce(key, false, iv, m, false, false) {
				s.immediate(m)
			}
		}
		s.save()
		return
	}
	conds, err := s.db.ActiveSensorConditions()
	if err != nil {
		s.log.Error("push: active sensor conditions for a mode switch", "err", err)
		return
	}
	for _, c := range conds {
		if raise[c.Key] {
			s.sensor(activation(c))
		}
	}
	for _, key := range clear {
		s.sensor(recovery(key, 0, clearAt[key]))
	}
}

// activation is the transition that made c active, for a condition
// push has to hear of again (reconcile, toIndividual).
func activation(c store.SensorCondition) store.SensorConditionRecord {
	return store.SensorConditionRecord{Key: c.Key, Kind: c.Kind, Subject: c.Subject, Phase: store.HealthActive, At: c.At, Since: c.Since, Message: c.Message}
}

// recovery is a resolved transition of sensor condition key at at.
func recovery(key string, since, at int64) store.SensorConditionRecord {
	kind, subject, _ := strings.Cut(key, ":")
	return store.SensorConditionRecord{Key: key, Kind: kind, Subject: subject, Phase: store.HealthResolved, At: at, Since: since}
}

// healthActivation and healthRecovery are the same for health keys.
func healthActivation(h store.HealthCondition) store.HealthRecord {
	return store.HealthRecord{Key: h.Key, Phase: store.HealthActive, At: h.UpdatedAt, Since: h.Since, Message: h.Message}
}

func healthRecovery(key string, since, at int64) store.HealthRecord {
	return store.HealthRecord{Key: key, Phase: store.HealthResolved, At: at, Since: since}
}

// followRenames moves the cadence state of keys whose subject is a
// former uid (Alias) to the current uid when the store holds the
// condition under it: a crash between a remint's commit and push's
// Rename left them, and reconcile announced the new key again and said
// "Back in range" for the old one, of a fridge still out (a review).
func (s *Service) followRenames(inStore map[string]bool) {
	if s.Alias == nil {
		return
	}
	s.mu.Lock()
	var stale []string
	for _, cat := range append(slices.Clone(sensorCats), CatHealth) {
		for key := range s.st.Active[cat] {
			if !inStore[key] {
				stale = append(stale, key)
			}
		}
	}
	s.mu.Unlock()
	moved := map[string]bool{}
	for _, key := range stale {
		i := strings.LastIndexByte(key, ':')
		if i < 0 {
			continue
		}
		old := key[i+1:]
		if moved[old] {
			continue
		}
		if cur := s.Alias(old); cur != "" && cur != old && inStore[key[:i+1]+cur] {
			s.rename(old, cur)
			moved[old] = true
		}
	}
	if len(moved) > 0 {
		s.tellPending()
	}
}

// catOf is the category a sensor condition kind is tracked under.
func catOf(kind string) string {
	switch kind {
	case condRange:
		return CatSensors
	case condBattery:
		return CatBatteries
	case condCalibration:
		return CatCalibration
	}
	return CatNotSeen
}

func (s *Service) identify(subject string) Device {
	if s.Identify != nil {
		if d := s.Identify(subject); d != (Device{}) {
			return d
		}
	}
	if len(subject) == 12 && !strings.Contains(subject, "-") {
		return Device{MAC: subject}
	}
	return Device{AssetUID: subject}
}

func secs(n int) time.Duration { return time.Duration(n) * time.Second }

// mode returns a bulk category's delivery mode and interval, read live
// so a settings change applies to the next transition.
func (s *Service) mode(cat string) (bulk bool, interval time.Duration) {
	cfg := s.live.Get()
	switch cat {
	case CatBatteries:
		return cfg.PushBatteriesMode != "individual", secs(cfg.PushBatteriesIntervalSeconds)
	case CatNotSeen:
		return cfg.PushSensorNotseenMode != "individual", secs(cfg.PushSensorNotseenIntervalSeconds)
	case CatCalibration:
		return cfg.PushCalibrationMode != "individual", secs(cfg.PushCalibrationIntervalSeconds)
	case CatHealth:
		return cfg.PushFleetHealthMode != "individual", secs(cfg.PushFleetHealthIntervalSeconds)
	case CatSensors:
		return true, 24 * time.Hour // the daily quiet snapshot
	}
	return false, 0
}

// announce applies a repeat cooldown to one condition key and says
// whether m, the activation or recovery, goes now. An activation is
// announced unless one was less than cooldown ago and staff have not
// heard it recover since. A recovery is announced when its activation
// was, at once the first time in a cooldown; a condition announced
// active again within that cooldown (Flap) has its next recovery held
// until the cooldown ends (Held, sent by remind if nothing re-activated
// it). So a flapping device costs at most two alerts and two recoveries
// per cooldown, and the last message staff have is never "resolved"
// while it is active: the activation after an announced recovery used
// to fall within the cooldown and go unsent, and a review saw staff
// told "Resolved: alertsys_down" for the rest of an outage. ops says m
// also goes to the vendor ops topic when a held recovery is sent.
//
// critical: the spec's critical cooldown (infrastructure health,
// panic/watch not-seen), whose "recovery is immediate": never held, so
// staff never read "alertsys unreachable" for hours under a green
// dashboard (a black-box check saw a second outage's recovery held 6 h).
// Such a flapping condition costs two messages per flap.
func (s *Service) announce(key string, active bool, cooldown time.Duration, m Message, ops, critical bool) bool {
	now := s.clk.Now().UnixMilli()
	s.mu.Lock()
	defer s.mu.Unlock()
	// The cooldown window starts at the activation that began it
	// (Window), not at a reminder, which moves Alerted: anchored there, a
	// flap after a reminder held its recovery a whole cooldown from the
	// reminder (a review). A state from before Window has Alerted only.
	last, announced := s.st.Window[key]
	if !announced {
		last, announced = s.st.Alerted[key]
	}
	within := announced && now-last < cooldown.Milliseconds()
	if !active {
		if !s.st.Open[key] {
			return false
		}
		// Held until the cooldown from the first activation ends: not
		// from Alerted, which a reminder moves (a review saw a recovery
		// held 5 h past the fridge's return).
		// The window ends with the shorter of the cooldown then and now:
		// fixed at the flap, a cooldown lowered since still held it the
		// old length, and measured by the cooldown now alone, one raised
		// since held a flap whose window had ended (reviews).
		if f, flapped := s.st.Flap[key]; flapped && !critical {
			if end := f.end(cooldown); now < end {
				s.st.Held[key] = heldRecovery{Due: end, Msg: m, Ops: ops, Window: f}
				return false
			}
		}
		delete(s.st.Open, key)
		delete(s.st.Flap, key)
		delete(s.st.Held, key)
		return true
	}
	if s.st.Open[key] {
		// Staff last heard it active: true again, whether or not a
		// recovery was waiting.
		delete(s.st.Held, key)
		if within {
			return false
		}
	} else if within {
		// Heard recovered within the cooldown: say it is back, and hold
		// its next recovery.
		s.st.Flap[key] = flapWindow{Start: last, Cooldown: cooldown.Milliseconds()}
		s.st.Open[key] = true
		return true
	}
	s.st.Alerted[key] = now
	s.st.Window[key] = now
	s.st.Open[key] = true
	delete(s.st.Flap, key)
	return true
}

// heldRecovery is a flapping condition's recovery waiting for its
// cooldown to end (announce).
type heldRecovery struct {
	Due    int64      `json:"due"` // Unix ms, with the cooldown when it was held
	Msg    Message    `json:"msg"`
	Ops    bool       `json:"ops,omitempty"`
	Window flapWindow `json:"window"`
}

// flapWindow is a flapping condition's cooldown window: when it began
// and the cooldown then (ms).
type flapWindow struct {
	Start    int64 `json:"start"`
	Cooldown int64 `json:"cooldown_ms"`
}

// end is when the window ends, by the shorter of its cooldown and now's.
func (f flapWindow) end(now time.Duration) int64 {
	return f.Start + min(f.Cooldown, now.Milliseconds())
}

// criticalKey says whether key is under the spec's critical cooldown:
// infrastructure health, or a panic/watch not-seen; with s.mu held.
func (s *Service) criticalKey(cat, key string) bool {
	return cat == CatHealth && !isFleetKey(key) || cat == CatNotSeen && s.st.Critical[key]
}

// dueRecoveries takes the held recoveries whose cooldown ended, with
// s.mu held.
func (s *Service) dueRecoveriesLocked(now int64) []heldRecovery {
	cfg := s.live.Get()
	var due []heldRecovery
	for key, h := range s.st.Held {
		// A cooldown lowered since it was held ends the hold sooner (a
		// review: held to the old 6 h after a change to 10 min).
		end := h.Due
		if cd, ok := s.cooldownFor(cfg, h.Msg.Category, key); ok && h.Window.Start > 0 {
			end = min(end, h.Window.end(cd))
		}
		if s.criticalKey(h.Msg.Category, key) {
			// Held by an older release, whose state this is: critical
			// recoveries are no longer held (announce), so it goes now,
			// not at the old due time up to 6 h on.
			end = now
		}
		if now < end {
			continue
		}
		due = append(due, h)
		delete(s.st.Held, key)
		delete(s.st.Open, key)
		delete(s.st.Flap, key)
		delete(s.st.Critical, key)
	}
	return due
}

// track keeps a stateful category's active set (for digests and QR
// snapshots) and, in bulk mode, its changes since the last bucket.
func (s *Service) track(cat, subject, phase, text string, since, at int64, bulk bool) {
	it := Item{Subject: subject, Phase: phase, Since: since, At: at, Text: text}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.Active[cat] == nil {
		s.st.Active[cat] = map[string]Item{}
	}
	if phase == PhaseActive {
		s.st.Active[cat][subject] = it
		// Active again: a recovery held for it must not go, whatever
		// path the activation takes (in bulk mode it does not reach
		// announce: a review saw "Battery ok" sent while low).
		delete(s.st.Held, subject)
	} else {
		delete(s.st.Active[cat], subject)
	}
	if bulk {
		s.st.Changes[cat] = append(s.st.Changes[cat], it)
	}
}

func phaseOf(p string) string {
	if p == store.HealthResolved {
		return PhaseResolved
	}
	return PhaseActive
}

func (s *Service) sensor(r store.SensorConditionRecord) {
	key, ok := s.currentKey(r.Key, r.Since)
	if !ok {
		return
	}
	r.Key, r.Subject = key, key[strings.LastIndexByte(key, ':')+1:]
	d := s.identify(r.Subject)
	active := r.Phase != store.HealthResolved
	cfg := s.live.Get()
	var msg Message
	send := false
	switch r.Kind {
	case condRange:
		// Individual with a per-asset cooldown (the key covers temperature
		// and humidity); the range set also feeds the daily snapshot.
		s.track(CatSensors, r.Key, phaseOf(r.Phase), r.Message, r.Since, r.At, false)
		if active {
			msg = SensorAlert(r, d)
		} else {
			msg = SensorRecovery(r, d)
		}
		send = s.announce(r.Key, active, secs(cfg.PushSensorsCooldownSeconds), msg, false, false)
	case condNotSeen:
		s.mu.Lock()
		wasCritical := s.st.Critical[r.Key]
		s.mu.Unlock()
		// A panic or watch; or one that was, now deleted (it identifies
		// with no type, and its recovery took the bulk sensor path: a
		// review).
		if d.Type == "panic" || d.Type == "watch" || wasCritical {
			s.mu.Lock()
			if active {
				s.st.Critical[r.Key] = true
			}
			s.mu.Unlock()
			s.track(CatNotSeen, r.Key, phaseOf(r.Phase), r.Message, r.Since, r.At, false)
			msg = NotSeenAlert(r, d)
			send = s.announce(r.Key, active, secs(cfg.PushCriticalCooldownSeconds), msg, false, true)
			if !active {
				// Critical until its recovery goes: a held one is re-checked
				// against the critical cooldown, not the sensor not-seen
				// interval (a review saw it go 5.5 h early).
				s.mu.Lock()
				if _, held := s.st.Held[r.Key]; !held {
					delete(s.st.Critical, r.Key)
				}
				s.mu.Unlock()
			}
			break
		}
		send, msg = s.bulkOrIndividual(CatNotSeen, r, NotSeenAlert(r, d))
	case condBattery:
		send, msg = s.bulkOrIndividual(CatBatteries, r, BatteryAlert(r, d))
	case condCalibration:
		send, msg = s.bulkOrIndividual(CatCalibration, r, CalibrationAlert(r, d))
	default:
		return
	}
	if send {
		s.immediate(msg)
	}
	s.save()
}

// currentKey is key ("<kind>:<uid>", sensor or fleet) under its uid's
// current uid when push knows nothing of it and the uid is a former one:
// a transition the sensor monitor decided under the old uid after push
// moved the state (it follows renames after push's PrepareRename)
// belongs to the new key; a recovery under the old one found nothing and
// was dropped, the new key reminded of for good (a review). False: drop
// the transition. since is the transition's condition start: a key that
// became active again under the current uid with another start holds the
// survivor's own condition (begun after the merge, before the monitor
// followed it), which a late recovery of the source's must not end (a
// review: "Back in range" for a fridge still out).
func (s *Service) currentKey(key string, since int64) (string, bool) {
	i := strings.LastIndexByte(key, ':')
	if s.Alias == nil || i < 0 {
		return key, true
	}
	s.mu.Lock()
	_, active := s.st.Active[catOfKey(key)][key]
	_, held := s.st.Held[key]
	known := active || held || s.st.Open[key]
	absorbed := s.absorbed[key]
	s.mu.Unlock()
	switch {
	case known:
		return key, true
	case absorbed:
		// A merge's source whose survivor had the same condition: the
		// survivor's is the one staff follow; a late "back in range" of
		// the source said so of the survivor, still out (a review).
		return key, false
	}
	if cur := s.Alias(key[i+1:]); cur != "" && cur != key[i+1:] {
		nk := key[:i+1] + cur
		s.mu.Lock()
		it, active := s.st.Active[catOfKey(nk)][nk]
		s.mu.Unlock()
		if active && since != 0 && it.Since != 0 && it.Since != since {
			return key, false
		}
		return nk, true
	}
	return key, true
}

func (s *Service) bulkOrIndividual(cat string, r store.SensorConditionRecord, m Message) (bool, Message) {
	bulk, iv := s.mode(cat)
	text := m.Title
	if cat == CatCalibration && r.Phase != store.HealthResolved && r.Message != "" {
		// The checker's text (uid, MAC, type, last calibrated,
		// interval), as the spec's body; a digest item gave the title
		// alone (a black-box check).
		text = r.Message
	}
	s.track(cat, r.Key, phaseOf(r.Phase), text, r.Since, r.At, bulk)
	if bulk {
		return false, m
	}
	return s.announce(r.Key, r.Phase != store.HealthResolved, iv, m, false, false), m
}

func (s *Service) health(h store.HealthRecord) {
	if isFleetKey(h.Key) {
		key, ok := s.currentKey(h.Key, h.Since) // a fleet transition under a former uid (a review)
		if !ok {
			return
		}
		h.Key = key
	}
	m := HealthAlert(h)
	if uid := m.Record.Device.AssetUID; uid != "" {
		// A fleet condition's device as the registry knows it (name,
		// MAC, type), as a sensor's record has it; the uid alone was
		// given though the rest was known (a black-box check).
		if d := s.identify(uid); d.AssetUID == uid {
			m.Record.Device = d
		}
	}
	active := h.Phase != store.HealthResolved
	if h.Key == keyPushDown && !active {
		// The server answers its health check again: what waits goes
		// now, the SOS at the head first, not when the doubling delay
		// (up to 2 min) next comes round. A review saw the ops copies
		// delivered 22 s before the SOS that had waited longest. Digests
		// made meanwhile go before the queued transitions, unless a press
		// waits: a digest is a snapshot of its moment, and sent after
		// them on its own timer it told staff "active" of a condition
		// whose recovery had just gone (a review).
		if !s.pressWaiting() {
			s.flushOutbox()
		}
		s.retryNow()
	}
	if isFleetKey(h.Key) {
		bulk, iv := s.mode(CatHealth)
		s.track(CatHealth, h.Key, phaseOf(h.Phase), m.Title, h.Since, h.At, bulk)
		if !bulk && s.announce(h.Key, active, iv, m, false, false) { // ops hears every fleet change below
			s.immediate(m)
		}
		s.ops(m) // the vendor sees every fleet change
		s.save()
		return
	}
	// Infrastructure: immediate with the critical repeat cooldown.
	s.track(CatHealth, h.Key, phaseOf(h.Phase), m.Title, h.Since, h.At, false)
	if s.announce(h.Key, active, secs(s.live.Get().PushCriticalCooldownSeconds), m, true, true) {
		s.immediate(m)
		s.ops(m)
	}
	s.save()
}

// activeLocked says whether key is active in any category's set.
func (s *Service) activeLocked(key string) bool {
	for _, items := range s.st.Active {
		if _, ok := items[key]; ok {
			return true
		}
	}
	return false
}

// moveKeys moves m's keys that move renames, merging a value with the
// one already under the new key (merge(moved, there)); it reports whether
// any moved.
func moveKeys[V any](m map[string]V, move func(string) (string, bool), merge func(moved, there V) V) bool {
	changed := false
	for k, v := range m {
		if nk, ok := move(k); ok {
			delete(m, k)
			if there, taken := m[nk]; taken {
				v = merge(v, there)
			}
			m[nk] = v
			changed = true
		}
	}
	return changed
}

// PrepareRename (assets.PreRenamer) is told of a uid change before the
// registry reload makes the device's transitions come under the new
// uid: the move is handed to the worker then, so it runs after every
// transition already handed under the old uid and before any under the
// new one. Moved on the caller's goroutine after the reload, a recovery
// already queued under the old uid found nothing and was dropped, and
// one under the new uid went before the move (a review).
func (s *Service) PrepareRename(oldUID, newUID string) {
	s.do(func() { s.rename(oldUID, newUID) })
}

// Rename (assets.Renamer) is told after the reload; the move was made at
// PrepareRename, and this finds nothing left to move, but for a rename
// that was not prepared.
func (s *Service) Rename(oldUID, newUID string) {
	s.do(func() { s.rename(oldUID, newUID) })
}

// RenamesDone (assets.BatchRenamer): the batch's last words go, one quiet
// message per category (a remint of 200 fridges posted 400 messages one
// by one, and fresh alerts waited behind ntfy's rate limit for half an
// hour: a review).
func (s *Service) RenamesDone() { s.do(s.tellPending) }

// Saved once per batch, at RenamesDone (tellPending): a save per rename,
// twice (PrepareRename and Rename), wrote the whole state 422 times for a
// remint of 200 assets and held the worker, SOS presses included, for
// seconds (a review). A crash before it finds the former uids at the next
// start (followRenames), which moves them again.

// rename moves the cadence state of condition keys ending in oldUID to
// newUID (remint, merge), on the worker, so an alert announced under the
// old uid is not announced again under the new one and its recovery is
// still sent. Staff's app keeps each subject's last word, so a subject
// announced active gets one: the old one that it continues under the
// new uid; the new one, unless staff last heard it active, that it is
// active (a merge's survivor last heard "resolved" read so while the
// merged condition went on, and the old subject read "active" for good:
// a review). In bulk mode the next digest says both. The new subject is
// open only when staff hear of it: a held recovery moved onto a subject
// they never heard of suppressed its next alert for a cooldown.
func (s *Service) rename(oldUID, newUID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	move := func(key string) (string, bool) {
		head, ok := strings.CutSuffix(key, ":"+oldUID)
		if !ok {
			return "", false
		}
		return head + ":" + newUID, true
	}
	type told struct {
		old, nu      string
		survivorOpen bool
	}
	var open []told
	for key, on := range s.st.Open {
		if nu, ok := move(key); ok && on {
			open = append(open, told{key, nu, s.st.Open[nu]})
		}
	}
	slices.SortFunc(open, func(a, b told) int { return strings.Compare(a.old, b.old) })
	later := func(a, b int64) int64 { return max(a, b) }
	moveKeys(s.st.Alerted, move, later)
	moveKeys(s.st.Window, move, later)
	moveKeys(s.st.Flap, move, func(a, b flapWindow) flapWindow {
		if a.Start > b.Start {
			return a
		}
		return b
	})
	moveKeys(s.st.Critical, move, func(moved, _ bool) bool { return moved })
	moveKeys(s.st.Held, move, func(_, survivor heldRecovery) heldRecovery { return survivor })
	for _, items := range s.st.Active {
		for subj, it := range items {
			if nk, ok := move(subj); ok {
				delete(items, subj)
				if _, taken := items[nk]; !taken {
					it.Subject = nk
					// A text naming the asset (calibration's) names it as
					// it is now: digests repeated the former uid for as
					// long as the condition lasted (a review).
					it.Text = strings.ReplaceAll(it.Text, oldUID, newUID)
					items[nk] = it
				} else {
					// The survivor has its own: a late transition of the
					// source's is not the survivor's (current).
					s.absorbed[subj] = true
				}
			}
		}
	}
	// After the active sets moved: a recovery held for either subject
	// must not go while the merged key is active (the survivor's, or the
	// merged-away one's condition moved onto it). Sent, it closed an
	// alert that was still on and stopped its reminders (two reviews).
	// The flap window stays: it bounds the survivor's next recovery.
	for key := range s.st.Held {
		if strings.HasSuffix(key, ":"+newUID) && s.activeLocked(key) {
			delete(s.st.Held, key)
		}
	}
	cfg := s.live.Get()
	now := s.clk.Now().UnixMilli()
	said := map[string]bool{}
	for _, o := range open {
		delete(s.st.Open, o.old)
		said[o.old] = true
		cat := catOfKey(o.old)
		last := Item{Subject: o.old, Phase: PhaseResolved, At: now, Text: continuesAs(oldUID, newUID)}
		it, active := s.st.Active[cat][o.nu]
		if _, individual := s.cooldownFor(cfg, cat, o.nu); !individual {
			// The next digest lists the new subject active (and opens it).
			s.st.Changes[cat] = append(s.st.Changes[cat], last)
			if !o.survivorOpen {
				delete(s.st.Held, o.nu)
			}
			continue
		}
		s.st.Told[cat] = append(s.st.Told[cat], last)
		switch {
		case o.survivorOpen:
		case active:
			s.st.Told[cat] = append(s.st.Told[cat], Item{Subject: o.nu, Phase: PhaseActive, Since: it.Since, At: now, Text: it.Text})
			s.st.Open[o.nu] = true
			s.st.Alerted[o.nu] = now // a repeat: the next one a cooldown on
		default:
			// Not active and never heard of: nothing open, no recovery owed.
			delete(s.st.Held, o.nu)
		}
	}
	// A change of an old subject waiting for its digest (heard of by no
	// one yet) is followed by its last word, or the digest left it
	// "active" (a review).
	for cat, changes := range s.st.Changes {
		var last map[string]Item
		for _, it := range changes {
			if _, ok := move(it.Subject); ok && !said[it.Subject] {
				if last == nil {
					last = map[string]Item{}
				}
				last[it.Subject] = it
			}
		}
		for _, subj := range slices.Sorted(maps.Keys(last)) {
			if last[subj].Phase != PhaseResolved {
				s.st.Changes[cat] = append(s.st.Changes[cat], Item{Subject: subj, Phase: PhaseResolved, At: now, Text: continuesAs(oldUID, newUID)})
			}
		}
	}
}

// tellPending sends the last words owed (Told), one quiet message per
// category, in the outbox with the state that no longer owes them.
func (s *Service) tellPending() {
	now := s.clk.Now().UnixMilli()
	s.mu.Lock()
	var msgs []Message
	for _, cat := range Categories {
		if items := s.st.Told[cat]; len(items) > 0 {
			msgs = append(msgs, lastWords(cat, items, now)...)
		}
	}
	clear(s.st.Told)
	s.mu.Unlock()
	// In the staff lane, in order with what follows (through the outbox,
	// a newer "Back in range" posted while they waited for its timer
	// went first, and the last word was wrong: a review). Told is saved
	// empty only after: a crash before repeats them, which is harmless.
	for _, m := range msgs {
		s.immediate(m)
	}
	s.save()
}

// continuesAs says that an asset's uid changed (remint or merge).
func continuesAs(oldUID, newUID string) string { return oldUID + " continues as " + newUID }

// catOfKey is the category a condition key is tracked under: a sensor
// condition's by its kind, else health (infrastructure and fleet keys).
func catOfKey(key string) string {
	switch kind, _, _ := strings.Cut(key, ":"); kind {
	case condRange, condBattery, condNotSeen, condCalibration:
		return catOf(kind)
	}
	return CatHealth
}

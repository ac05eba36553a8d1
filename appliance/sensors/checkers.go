package sensors

import (
	"fmt"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/store"
)

// Start arms the not-seen checker (every NotSeenEvery) and the
// calibration checker (CalibrationBootDelay after start, then every
// CalibrationEvery). Timers re-arm themselves, so virtual-time tests drive
// them with the fake clock.
func (m *Monitor) Start() {
	m.tmu.Lock()
	defer m.tmu.Unlock()
	m.stopped = false
	m.timers = append(m.timers[:0],
		m.clk.AfterFunc(NotSeenEvery, m.notSeenTick),
		m.clk.AfterFunc(CalibrationBootDelay, m.calibrationTick))
}

// Stop cancels the checkers and waits for a check under way. The writer
// its transitions go to closes after the monitor stops: a check still
// running then would change memory and tell listeners of transitions the
// store never gets, to be decided and pushed again after a restart.
func (m *Monitor) Stop() {
	m.tmu.Lock()
	m.stopped = true
	for _, t := range m.timers {
		t.Stop()
	}
	m.timers = nil
	m.tmu.Unlock()
	m.ticks.Wait()
}

// enterTick reports whether a timer's check may run, counting it for Stop.
func (m *Monitor) enterTick() bool {
	m.tmu.Lock()
	defer m.tmu.Unlock()
	if m.stopped {
		return false
	}
	m.ticks.Add(1)
	return true
}

func (m *Monitor) rearm(d time.Duration, f func()) {
	m.tmu.Lock()
	defer m.tmu.Unlock()
	if !m.stopped {
		m.timers = append(m.timers, m.clk.AfterFunc(d, f))
	}
}

func (m *Monitor) notSeenTick() {
	if !m.enterTick() {
		return
	}
	defer m.ticks.Done()
	if err := m.Reload(); err != nil {
		m.log.Warn("sensors: reload beacons", "err", err)
	}
	if err := m.CheckNotSeen(); err != nil {
		m.log.Warn("sensors: not-seen check", "err", err)
	}
	m.rearm(NotSeenEvery, m.notSeenTick)
}

func (m *Monitor) calibrationTick() {
	if !m.enterTick() {
		return
	}
	defer m.ticks.Done()
	if err := m.CheckCalibration(); err != nil {
		m.log.Warn("sensors: calibration check", "err", err)
	}
	m.rearm(CalibrationEvery, m.calibrationTick)
}

// Timeout returns the inactivity timeout of a beacon type, given the
// sData update interval (s, 0 unknown); 0 means the type is not watched.
func Timeout(typ string, interval uint32) time.Duration {
	switch typ {
	case "panic":
		return NotSeenPanic
	case "watch":
		return NotSeenWatch
	case TypeSensor:
		if interval > 0 {
			return max(FridgeMinTimeout, 2*time.Duration(interval)*time.Second)
		}
		return NotSeenSensor
	}
	return 0
}

// CheckNotSeen opens not-seen for watched beacons silent past their
// timeout. A beacon never heard has no inactivity to report. Seeing the
// device resolves on the ingest path; this also resolves when another
// source (LastSeen) shows it was heard.
func (m *Monitor) CheckNotSeen() error {
	now := m.clk.Now().UnixMilli()
	bs := m.beacons.Load()
	if bs == nil {
		return nil
	}
	cw := &checkWrites{m: m}
	bs.Range(func(uid string, b *beaconInfo) {
		sh := m.state.OfUID(uid)
		sh.Lock()
		if r, ok := m.checkNotSeen(st(sh, uid), uid, b.typ, now); ok {
			cw.hand([]store.SensorConditionRecord{r})
		}
		sh.Unlock()
	})
	m.resolveUnmonitored(bs, now, cw)
	return cw.wait()
}

// resolveUnmonitored resolves the reading-path conditions (range,
// not-seen, battery) of assets the snapshot no longer has: deleted or
// retired, no reading can resolve them, and push reminded staff of a
// deleted fridge every cooldown for good (a review). Their state goes
// too.
func (m *Monitor) resolveUnmonitored(bs *assets.UIDMap[beaconInfo], now int64, cw *checkWrites) {
	var gone []store.SensorCondition
	for _, c := range m.Conds.Active() {
		if kindBit(c.Kind) != 0 && bs.Get(assets.UIDHash(c.Subject), c.Subject) == nil {
			gone = append(gone, c)
		}
	}
	if len(gone) == 0 {
		return
	}
	// A former uid (a remint or merge committed, its rename not yet
	// followed here) is not gone: the rename moves its conditions. A
	// review ran this check in that window and ended a live fridge's
	// alarm, leaving the renamed condition active in the store for good.
	renamed := map[string]bool{}
	if err := m.db.ViewAssets(func(t *store.AssetTx) error {
		for _, c := range gone {
			if t.Alias(c.Subject) != "" {
				renamed[c.Subject] = true
			}
		}
		return nil
	}); err != nil {
		m.log.Warn("sensors: reading aliases", "err", err)
		return
	}
	for _, c := range gone {
		bit := kindBit(c.Kind)
		if renamed[c.Subject] {
			continue
		}
		sh := m.state.OfUID(c.Subject)
		sh.Lock()
		if s := sh.V.Get(assets.UIDHash(c.Subject), c.Subject); s != nil {
			m.mark(s, c.Subject, bit, false)
			if s.active == 0 {
				sh.V.Delete(assets.UIDHash(c.Subject), c.Subject)
			}
		}
		if r, ok := m.Conds.decide(c.Kind, c.Subject, false, store.ConditionUnmonitored, now); ok {
			cw.hand([]store.SensorConditionRecord{r})
		}
		sh.Unlock()
	}
}

// checkNotSeen decides not-seen for one beacon; call with its shard lock.
func (m *Monitor) checkNotSeen(st *assetState, uid, typ string, now int64) (store.SensorConditionRecord, bool) {
	to := Timeout(typ, st.interval)
	if to == 0 {
		return store.SensorConditionRecord{}, false
	}
	seen := st.seen
	if m.LastSeen != nil {
		seen = max(seen, m.LastSeen(uid))
	}
	if seen == 0 {
		return store.SensorConditionRecord{}, false
	}
	late := now-seen > to.Milliseconds()
	msg := func() string { return fmt.Sprintf("Not seen for more than %d minutes", int(to.Minutes())) }
	return m.set(st, CondNotSeen, uid, late, msg, now)
}

// CheckCalibration opens calibration-expired for assigned sensors and for
// untyped devices (unassigned, or on a beacon of type unknown) past their
// calibration interval, and resolves those calibrated since.
func (m *Monitor) CheckCalibration() error {
	// Only this checker decides calibration; calMu keeps two runs (the
	// timer's and a test's) from interleaving, from the read of the
	// devices on: a run that read them earlier must not reopen what a
	// later one resolved.
	m.calMu.Lock()
	defer m.calMu.Unlock()
	now := m.clk.Now().UnixMilli()
	expired := map[string]string{}
	err := m.db.ViewAssets(func(t *store.AssetTx) error {
		byMAC := map[string]*store.Beacon{}
		if err := t.EachBeacon(func(b *store.Beacon) error {
			if b.MAC != "" && (b.Status == "" || b.Status == store.AssetActive) {
				c := *b
				byMAC[b.MAC] = &c
			}
			return nil
		}); err != nil {
			return err
		}
		return t.EachDevice(func(d *store.Device) error {
			if d.Kind != store.KindBeacon || d.LastCalibratedAt == 0 || d.CalibrationIntervalDays <= 0 {
				return nil
			}
			if now < d.LastCalibratedAt+int64(d.CalibrationIntervalDays)*86400e3 {
				return nil
			}
			// The spec's body: uid, MAC, type, last calibrated and
			// interval (the MAC alone was given: a black-box check).
			msg := func(uid, typ string) string {
				return fmt.Sprintf("Calibration expired: %s (MAC %s, %s; last calibrated %s, interval %d days)", uid, d.MAC, typ,
					time.UnixMilli(d.LastCalibratedAt).UTC().Format(time.DateOnly), d.CalibrationIntervalDays)
			}
			switch b := byMAC[d.MAC]; {
			case b != nil && b.Type == TypeSensor:
				expired[b.AssetUID] = msg(b.AssetUID, "type sensor")
			case b != nil && b.Type == "unknown":
				expired[d.MAC] = msg(b.AssetUID, "type unknown")
			case b == nil && d.AssignmentID == 0:
				expired[d.MAC] = msg("no asset", "an unassigned device")
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	var recs []store.SensorConditionRecord
	for subject, msg := range expired {
		if r, ok := m.Conds.decide(CondCalibration, subject, true, msg, now); ok {
			recs = append(recs, r)
		}
	}
	for _, c := range m.Conds.Active() {
		if _, still := expired[c.Subject]; c.Kind == CondCalibration && !still {
			if r, ok := m.Conds.decide(CondCalibration, c.Subject, false, "calibrated", now); ok {
				recs = append(recs, r)
			}
		}
	}
	cw := &checkWrites{m: m}
	cw.hand(recs)
	return cw.wait()
}

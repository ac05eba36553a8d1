package sensors

import (
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/ingest"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// LowBatteryMV is the low-battery threshold (spec "Limits"); only adv8
// battery reports are judged, adv1 carries a coarser voltage.
const LowBatteryMV = 2800

// Not-seen timeouts. The spec names the timers but not their lengths for
// panic, watch and plain sensors: panic buttons and watches are worn by
// people and checked in minutes, room sensors advertise every minute or
// so. A fridge (a sensor reporting sData with its update interval) times
// out after max(FridgeMinTimeout, 2 x interval).
const (
	NotSeenPanic     = 30 * time.Minute
	NotSeenWatch     = 30 * time.Minute
	NotSeenSensor    = 60 * time.Minute
	FridgeMinTimeout = 10 * time.Minute
)

// Checker periods: not-seen is judged every minute; calibration hourly and
// CalibrationBootDelay after start (not at once: the box has just booted
// and ingest is catching up).
const (
	NotSeenEvery         = time.Minute
	CalibrationEvery     = time.Hour
	CalibrationBootDelay = 2 * time.Minute
)

type beaconInfo struct {
	uid, name, mac, typ string
	hum, temp           *store.Range
}

type assetState struct {
	humOut, tempOut bool
	seen            int64
	interval        uint32 // sData update interval (s), 0 unknown
	// active mirrors which of the ingest-path conditions (not seen, range,
	// battery) are active in Conds, so the common case — a report that
	// changes nothing — costs no lock, key string or map lookup there.
	// Only the Monitor decides these kinds, under the asset's shard lock,
	// so it stays exact.
	active uint8
	// judgedAt is the estimated time (server clock, ms) of the newest
	// temperature/humidity reading judged (lateness.go).
	judgedAt int64
}

const (
	bitNotSeen uint8 = 1 << iota
	bitRange
	bitBattery
)

func kindBit(kind string) uint8 {
	switch kind {
	case CondNotSeen:
		return bitNotSeen
	case CondRange:
		return bitRange
	case CondBattery:
		return bitBattery
	}
	return 0
}

// set decides one ingest-path condition; msg is only built on a
// transition. Call with the asset's shard lock held.
func (m *Monitor) set(st *assetState, kind, uid string, on bool, msg func() string, at int64) (store.SensorConditionRecord, bool) {
	if !m.mark(st, uid, kindBit(kind), on) {
		return store.SensorConditionRecord{}, false
	}
	return m.Conds.decide(kind, uid, on, msg(), at)
}

// mark sets or clears one condition bit of uid's state st and keeps the
// set of missing assets in step; it reports whether the bit changed. Call
// with the asset's shard lock held.
func (m *Monitor) mark(st *assetState, uid string, bit uint8, on bool) bool {
	if (st.active&bit != 0) == on {
		return false
	}
	if on {
		st.active |= bit
	} else {
		st.active &^= bit
	}
	if bit == bitNotSeen {
		m.setMissing(uid, on)
	}
	return true
}

// setMissing adds uid to the missing set or takes it out. The set is
// replaced, never changed in place: heartbeats read it without a lock, and
// it changes only when a beacon goes silent or comes back.
func (m *Monitor) setMissing(uid string, on bool) {
	m.missMu.Lock()
	defer m.missMu.Unlock()
	old := *m.missing.Load()
	next := make(missingSet, len(old)+1)
	for h, uids := range old {
		next[h] = slices.Clone(uids)
	}
	h := assets.UIDHash(uid)
	switch has := next.has(h, uid); {
	case on && !has:
		next[h] = append(next[h], uid)
	case !on && has:
		if next[h] = slices.DeleteFunc(next[h], func(u string) bool { return u == uid }); len(next[h]) == 0 {
			delete(next, h)
		}
	}
	m.missing.Store(&next)
}

// missingSet holds uids by assets.UIDHash: a heartbeat looks its asset's
// precomputed hash up and compares a uid only on a match. (Keyed by uid,
// the set hashed every heartbeat's uid bytes, a cache miss each on 10,000
// beacons: half of the monitor's cost with one beacon silent.)
type missingSet map[uint32][]string

func (s missingSet) has(h uint32, uid string) bool { return slices.Contains(s[h], uid) }

// len is how many uids the set holds.
func (s missingSet) len() int {
	n := 0
	for _, uids := range s {
		n += len(uids)
	}
	return n
}

// Monitor evaluates the sensor conditions: range and battery on the ingest
// path (it is an ingest subscriber), not seen and calibration on timers.
type Monitor struct {
	db    *store.DB
	clk   clock.Clock
	log   *slog.Logger
	Conds *Conditions
	// LastSeen, when set, supplies last-heard times kept elsewhere (the
	// ingest pipeline's), so not-seen is judged right after a restart.
	LastSeen func(uid string) int64
	// Writer, when set, is the group-commit writer the ingest path hands
	// to: the checkers queue their transitions on it too, so that one
	// asset's reach the store in the order they were decided (see
	// checkWrites). Without it they commit directly, under the lock.
	Writer ingest.Writer
	calMu  sync.Mutex // one calibration check at a time

	// beacons is replaced whole by Reload and only read after: read by
	// every sensor report, it is keyed by the asset's hash like the state.
	beacons atomic.Pointer[assets.UIDMap[beaconInfo]]
	// missing holds the uids with an active not-seen condition. With
	// LastSeen wired, a heartbeat (adv4, nine tenths of the traffic) can
	// only resolve one of those: the others' reports skip the lock and the
	// per-asset lookups (10% of the appliance's CPU at QoS 0 when every
	// heartbeat took them), and while nobody is missing a heartbeat batch
	// is not looked at at all.
	missing atomic.Pointer[missingSet]
	missMu  sync.Mutex // serialises replacing missing
	// state is per asset, sharded: with not-seen active (a site nearly
	// always has a silent beacon somewhere) every heartbeat batch is
	// decided here, in all gateways' read loops at once.
	state   assets.Shards[assets.UIDMap[assetState]]
	tmu     sync.Mutex // guards the timers and stopped
	timers  []clock.Timer
	stopped bool
	ticks   sync.WaitGroup // checks under way on the timers
	// reloadMu makes each Reload's read and store one step: a checker's
	// reload that read before a remint must not replace the snapshot the
	// remint's RenamesDone stored after it.
	reloadMu sync.Mutex
	// clocks estimates each gateway's clock offset, to tell a late
	// reading from a gateway's clock (lateness.go).
	clocks gwClocks
}

// NewMonitor loads the active conditions, recorded intervals and beacons.
func NewMonitor(db *store.DB, clk clock.Clock, log *slog.Logger) (*Monitor, error) {
	if log == nil {
		log = slog.Default()
	}
	conds, err := NewConditions(db)
	if err != nil {
		return nil, err
	}
	m := &Monitor{db: db, clk: clk, log: log, Conds: conds}
	m.missing.Store(&missingSet{})
	iv, err := db.SensorIntervals()
	if err != nil {
		return nil, err
	}
	for uid, s := range iv {
		m.st(uid).interval = s
	}
	kept, err := db.GatewayClocks(clk.Now().UnixMilli() - keptFor)
	if err != nil {
		return nil, err
	}
	m.clocks.seed(kept)
	if err := m.Reload(); err != nil {
		return nil, err
	}
	ranged := map[string]bool{}
	for _, c := range conds.Active() {
		if bit := kindBit(c.Kind); bit != 0 {
			m.mark(m.st(c.Subject), c.Subject, bit, true)
		}
		if c.Kind == CondRange {
			ranged[c.Subject] = true
		}
	}
	rs, err := db.LatestReadings()
	if err != nil {
		return nil, err
	}
	m.restoreJudged(rs, clk.Now().UnixMilli())
	m.restoreRanges(ranged, rs)
	return m, nil
}

// restoreJudged starts each sensor's last judged reading time (late
// readings, lateness.go) at its latest stored reading, from no gateway in
// particular (any is "another"), and never past now (a gateway's clock
// may have been ahead): at zero, a stalled reading a gateway flushed
// after a restart, older than what was judged before it, paged (a
// review).
func (m *Monitor) restoreJudged(rs []store.Reading, now int64) {
	for _, r := range rs {
		if r.Metric != store.MetricHumidity && r.Metric != store.MetricTemperature {
			continue
		}
		if st := m.st(r.UID); r.TS > st.judgedAt {
			st.judgedAt = min(r.TS, now)
		}
	}
}

// restoreRanges gives each sensor with an active range condition its
// metrics' out-of-range state back from its latest stored readings,
// judged against today's ranges: the state itself is not stored, and the
// condition stays active until a reading decides it. Both metrics
// restarted as out, and a sensor that reports one metric only (sData:
// temperature) never saw the other back in range: its condition never
// resolved, reminded "still active" for ever and hid new excursions (a
// review).
func (m *Monitor) restoreRanges(ranged map[string]bool, rs []store.Reading) {
	if len(ranged) == 0 {
		return
	}
	bs := m.beacons.Load()
	for _, r := range rs {
		if !ranged[r.UID] {
			continue
		}
		info := bs.Get(assets.UIDHash(r.UID), r.UID)
		if info == nil {
			continue
		}
		st, v := m.st(r.UID), math.Round(r.Value*100)/100
		switch r.Metric {
		case store.MetricHumidity:
			st.humOut = outside(info.hum, v)
		case store.MetricTemperature:
			st.tempOut = outside(info.temp, v)
		}
	}
}

// st returns uid's state in its shard, adding it; call with the shard's
// lock held (or before the monitor is shared).
func st(sh *assets.Shard[assets.UIDMap[assetState]], uid string) *assetState {
	return sh.V.Add(assets.UIDHash(uid), uid)
}

// st is uid's state while the monitor is built, before anything else can
// reach it.
func (m *Monitor) st(uid string) *assetState { return st(m.state.OfUID(uid), uid) }

// Reload refreshes the beacon snapshot (ranges, types) from the registry.
// The checkers call it each minute, so a changed range applies within one.
func (m *Monitor) Reload() error {
	m.reloadMu.Lock()
	defer m.reloadMu.Unlock()
	bs := &assets.UIDMap[beaconInfo]{}
	err := m.db.ViewAssets(func(t *store.AssetTx) error {
		return t.EachBeacon(func(b *store.Beacon) error {
			if b.Status == "" || b.Status == store.AssetActive {
				*bs.Add(assets.UIDHash(b.AssetUID), b.AssetUID) = beaconInfo{b.AssetUID, b.Name, b.MAC, b.Type, b.HumidityRange, b.TemperatureRange}
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	m.beacons.Store(bs)
	return nil
}

func (m *Monitor) beacon(a *assets.Asset) (beaconInfo, bool) {
	bs := m.beacons.Load()
	if bs == nil {
		return beaconInfo{}, false
	}
	if b := bs.Get(a.Hash(), a.UID); b != nil {
		return *b, true
	}
	return beaconInfo{}, false
}

func seenAgain() string { return "seen again" }

func outside(r *store.Range, v float64) bool { return r != nil && (v < r.Min || v > r.Max) }

// Observe implements ingest.Subscriber. Test sends are skipped: a test
// message must not open or close a real condition.
func (m *Monitor) Observe(b *ingest.Batch, w *ingest.Writes) {
	if b.IsTest {
		return
	}
	// Only not-seen is decided for heartbeats, and the checker reads
	// last-heard times from LastSeen: only the missing assets' matter.
	var onlyMissing missingSet
	if b.Kind == ingest.KindAdv4 && m.LastSeen != nil {
		if onlyMissing = *m.missing.Load(); len(onlyMissing) == 0 {
			return
		}
	}
	var clk estimate
	if b.Kind == ingest.KindAdv1 || b.Kind == ingest.KindSData {
		if clk = m.clocks.offset(b); clk.shouldKeep {
			gw, c := b.Gateway, store.GatewayClock{Off: clk.keep, At: b.Received}
			w.AddOp(func(tx *bolt.Tx) error { return store.PutGatewayClock(tx, gw, c) }, true)
			w.Hand()
		}
	}
	var recs []store.SensorConditionRecord
	add := func(r store.SensorConditionRecord, ok bool) {
		if ok {
			recs = append(recs, r)
		}
	}
	for i := range b.Obs {
		o := &b.Obs[i]
		if onlyMissing != nil && (o.Asset == nil || !onlyMissing.has(o.Asset.Hash(), o.Asset.UID)) {
			continue
		}
		if o.Asset == nil || o.Asset.Kind != store.KindBeacon {
			continue
		}
		uid := o.Asset.UID
		sh := m.state.Of(o.Asset)
		sh.Lock()
		st := sh.V.Of(o.Asset)
		st.seen = max(st.seen, o.TS, b.Received)
		add(m.set(st, CondNotSeen, uid, false, seenAgain, b.Received))
		switch b.Kind {
		case ingest.KindAdv1, ingest.KindSData:
			// A late reading from a slow gateway is recorded, not judged:
			// its ts corrected by the gateway's estimated clock offset
			// (lateness.go) is older than what another gateway delivered.
			if o.Has&(ingest.HasHumidity|ingest.HasTemperature) != 0 && !st.late(estimated(o, b.Received, clk.off, clk.ok), b.Received) {
				info, _ := m.beacon(o.Asset)
				msg := ""
				if o.Has&ingest.HasHumidity != 0 {
					v := round2(o.Humidity)
					if st.humOut = outside(info.hum, v); st.humOut {
						msg = fmt.Sprintf("humidity %.2f %% outside %g..%g", v, info.hum.Min, info.hum.Max)
					}
				}
				if o.Has&ingest.HasTemperature != 0 {
					v := round2(o.Temperature)
					if st.tempOut = outside(info.temp, v); st.tempOut {
						msg = fmt.Sprintf("temperature %.2f °C outside %g..%g", v, info.temp.Min, info.temp.Max)
					}
				}
				switch {
				case msg == "" && (st.humOut || st.tempOut):
					msg = "still out of range"
				case msg == "":
					msg = "back in range"
				}
				add(m.set(st, CondRange, uid, st.humOut || st.tempOut, func() string { return msg }, o.TS))
			}
			if b.Kind == ingest.KindSData && o.Has&ingest.HasInterval != 0 && o.Interval > 0 && uint32(o.Interval) != st.interval {
				st.interval = uint32(o.Interval)
				iv := st.interval
				w.AddOp(func(tx *bolt.Tx) error { return store.PutSensorInterval(tx, uid, iv) }, false)
			}
		case ingest.KindAdv8:
			if o.Has&ingest.HasVBatt != 0 {
				low := o.VBatt < LowBatteryMV
				mv := o.VBatt
				add(m.set(st, CondBattery, uid, low, func() string { return fmt.Sprintf("battery %d mV", mv) }, o.TS))
			}
		}
		// Under the shard lock, so an asset's transitions reach the writer
		// and the listeners in the order they were decided (active before
		// resolved). recs is the writer's now: the next asset starts with
		// a fresh slice.
		if len(recs) > 0 {
			w.AddOp(op(recs), false)
			m.Conds.notify(recs)
			recs = nil
		}
		w.Hand()
		sh.Unlock()
	}
}

// Rename moves an asset's condition state to its new uid (remint, merge);
// the survivor's state wins where both exist.
func (m *Monitor) Rename(oldUID, newUID string) {
	from, to, unlock := m.state.LockPair(oldUID, newUID)
	defer unlock()
	s, had := from.V.Delete(assets.UIDHash(oldUID), oldUID)
	if had {
		m.mark(&s, oldUID, bitNotSeen, false)
	}
	// Under the shard locks, so no reading of either uid is judged
	// between the conditions' move and the state's.
	m.Conds.Rename(oldUID, newUID)
	if !had {
		return
	}
	nh := assets.UIDHash(newUID)
	d := to.V.Get(nh, newUID)
	switch {
	case d == nil:
		d = to.V.Add(nh, newUID)
		*d = s
	case *d == (assetState{}):
		// Made blank by the minute's check, which found the new uid in
		// the registry before this rename came: not a survivor's state.
		// Kept, it stood for both and dropped the old one's condition
		// bits while the conditions moved, and the fridge's alarm could
		// not end any more (a review).
		*d = s
	} // else the survivor's state stands for both
	// The bits follow the conditions the rename kept (the survivor's
	// where both had one).
	for _, k := range []string{CondNotSeen, CondRange, CondBattery} {
		m.mark(d, newUID, kindBit(k), m.Conds.IsActive(k, newUID))
	}
	if d.active&bitRange != 0 && !d.humOut && !d.tempOut {
		d.humOut, d.tempOut = s.humOut, s.tempOut
	}
}

// RegistryReloaded (assets.ReloadFollower) reloads the beacon snapshot
// after every registry write, so a sensor created, or given a new range,
// is judged from its next reading. Only the minute's not-seen check
// reloaded it, and a new sensor's readings in its first minute were
// never judged: no alert, and missing from /sensors/alerts for good (a
// review).
func (m *Monitor) RegistryReloaded() {
	if err := m.Reload(); err != nil {
		m.log.Warn("sensor monitor reload after a registry write failed", "err", err)
	}
}

// RenamesDone reloads the beacon snapshot (ranges, names) after a batch of
// renames: it is keyed by uid too, and without the reload the next reading
// would find no range and resolve the alert. Once per batch, not per
// rename: a remint apply renames every legacy asset.
func (m *Monitor) RenamesDone() {
	if err := m.Reload(); err != nil {
		m.log.Warn("sensor monitor reload after renames failed", "err", err)
	}
}

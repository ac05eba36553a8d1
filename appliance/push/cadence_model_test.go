package push

import (
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"beaconhub/store"
)

// A randomized model check of the whole cadence: conditions toggle,
// time passes, settings change, the process restarts, assets merge (also
// with a crash before push hears of it); after each step the last
// message about every subject must match the truth, and the flap bound,
// repeat spacing and no-duplicate rules must hold. CADENCE_MODEL_SEEDS,
// _STEPS, _FEATURES (b batteries, h health, r restarts, c cooldown
// changes, m merges, x crash merges, w batteries and fleet health
// switched between bulk and individual) and _SEED widen or pin a run;
// digest items and last-word messages count as words. The suite runs a
// few seeds.

type modelTruth struct {
	active  bool
	changed time.Time
	since   time.Time // the active condition's start, as the monitor keeps it
}

type modelSent struct {
	at       time.Time
	subj     string
	phase    string
	reminder bool
	cd       time.Duration
	idx      int
	digest   bool
}

type cadenceModel struct {
	t        *testing.T
	r        *rig
	rng      *rand.Rand
	truth    map[string]*modelTruth // canonical key -> truth
	alias    map[string]string      // old key -> new key
	live     []string               // live fridge uids
	next     int
	seen     int
	sent     []modelSent
	cd       map[string]time.Duration // setting -> value
	log      []string
	merged   map[string]bool // raw subjects touched by a merge
	mergedAt map[string]int
	cdAt     time.Time
	bulk     map[string]bool // category -> bulk now
	modeAt   map[string]time.Time
}

func (m *cadenceModel) logf(f string, a ...any) {
	m.log = append(m.log, fmt.Sprintf("[%v] ", m.r.clk.Now().Sub(t0))+fmt.Sprintf(f, a...))
}

// cooldownOf is the repeat cooldown of key now.
func (m *cadenceModel) cooldownOf(key string) time.Duration {
	switch {
	case strings.HasPrefix(key, "range:"):
		return m.cd["server_push_sensors_cooldown_seconds"]
	case strings.HasPrefix(key, "battery:"):
		return m.cd["server_push_batteries_interval_seconds"]
	case strings.HasPrefix(key, "fleet:"):
		return m.cd["server_push_fleet_health_interval_seconds"]
	}
	return m.cd["server_push_critical_cooldown_seconds"]
}

// critical says whether key is under the critical cooldown, whose
// recoveries are never held (spec): no flap bound, and its last message
// is right at once, not a cooldown later.
func critical(key string) bool {
	return strings.HasPrefix(key, "notseen:") || key == "mqtt_down" || key == "alertsys_down"
}

func (m *cadenceModel) collect() {
	all := m.r.msgs("")
	for i := m.seen; i < len(all); i++ {
		msg := all[i]
		if !strings.HasPrefix(msg.Topic, "TST000-") {
			continue
		}
		rec, err := ParseRecord(msg.Message)
		if err == nil && (rec.Intent == IntentDigest || strings.HasPrefix(rec.Subject, "changes:")) {
			for _, it := range rec.Items {
				m.sent = append(m.sent, modelSent{at: m.r.clk.Now(), subj: it.Subject, phase: it.Phase, digest: true, idx: len(m.sent)})
				m.logf("  DIGEST item %s %s", it.Subject, it.Phase)
			}
			continue
		}
		if err != nil || rec.Intent == IntentSnapshot || rec.Intent == IntentDigest || strings.HasPrefix(rec.Subject, "digest:") {
			continue
		}
		if rec.Phase != PhaseActive && rec.Phase != PhaseResolved {
			continue
		}
		s := modelSent{at: m.r.clk.Now(), subj: rec.Subject, phase: rec.Phase, reminder: strings.Contains(msg.Message, "Still active since"), cd: m.cooldownOf(rec.Subject), idx: len(m.sent)}
		m.sent = append(m.sent, s)
		kind := "alert"
		if s.reminder {
			kind = "reminder"
		}
		m.logf("  SENT %s %s (%s)", rec.Subject, rec.Phase, kind)
	}
	m.seen = len(all)
}

func (m *cadenceModel) advance(d time.Duration) {
	m.logf("advance %v", d)
	for d > 0 {
		step := min(d, time.Minute)
		m.r.advance(step)
		d -= step
		m.collect()
	}
}

func (m *cadenceModel) toggle(key string) {
	tr := m.truth[key]
	if tr == nil {
		tr = &modelTruth{}
		m.truth[key] = tr
	}
	tr.active = !tr.active
	tr.changed = m.r.clk.Now()
	phase := "resolved"
	if tr.active {
		phase = "active"
	}
	m.logf("%s -> %s", key, phase)
	now := m.r.clk.Now()
	if tr.active {
		tr.since = now
	}
	// A recovery carries its condition's start, as the monitor's do.
	since := tr.since.UnixMilli()
	rec := func(kind, subj, msg string) store.SensorConditionRecord {
		r := sensorRec(kind, subj, phase, msg, now)
		r.Since = since
		return r
	}
	kind, subj, _ := strings.Cut(key, ":")
	switch kind {
	case "range":
		m.r.sensor(rec("range", subj, "temperature 11.00 °C outside 2..8"))
	case "battery":
		m.r.sensor(rec("battery", subj, "battery 2400 mV"))
	case "notseen":
		m.r.sensor(rec("notseen", subj, "Not seen for 10 min"))
	default:
		m.r.health(store.HealthRecord{Key: key, Phase: phase, At: now.UnixMilli(), Since: since, Message: key + " is down"})
	}
	m.r.svc.Idle()
	m.collect()
}

// merge moves old's conditions onto survivor, in the store and in push.
func (m *cadenceModel) merge(old, nu string, crash bool) {
	m.logf("merge %s -> %s (crash=%v)", old, nu, crash)
	do := func(db *store.DB) {
		if err := db.UpdateAssets(m.r.clk.Now(), func(tx *store.AssetTx) error {
			if err := tx.SetAlias(old, nu); err != nil {
				return err
			}
			_, err := tx.RenameUID(old, nu)
			return err
		}); err != nil {
			m.t.Fatal(err)
		}
	}
	if crash {
		m.r.close()
		db := reopenForCrash(m.t, m.r)
		do(db)
		_ = db.Close()
		m.r.open()
		m.r.svc.Idle()
	} else {
		do(m.r.db)
		m.r.svc.Rename(old, nu)
		m.r.svc.RenamesDone()
		m.r.svc.Idle()
	}
	for _, kind := range []string{"range", "battery"} {
		ok, nk := kind+":"+old, kind+":"+nu
		m.merged[ok], m.merged[nk] = true, true
		a, b := m.truth[ok], m.truth[nk]
		m.alias[ok] = nk
		m.mergedAt[nk] = len(m.sent)
		delete(m.truth, ok)
		switch {
		case a == nil:
		case b == nil:
			m.truth[nk] = a
		default:
			// The survivor's condition wins; the source's moves only
			// onto a survivor without one.
			nt := &modelTruth{active: a.active || b.active, changed: m.r.clk.Now(), since: b.since}
			if !b.active {
				nt.since = a.since
			}
			if !nt.active {
				nt.changed = a.changed
				if b.changed.After(nt.changed) {
					nt.changed = b.changed
				}
			}
			m.truth[nk] = nt
		}
	}
	m.collect()
}

// checkA: the last message about each subject matches its truth: a live
// key's its state, a merged-away subject's that it is no longer active.
func (m *cadenceModel) checkA() {
	last := map[string]modelSent{}
	for _, s := range m.sent {
		last[s.subj] = s
	}
	now := m.r.clk.Now()
	for key, tr := range m.truth {
		if c := modelCatOf(key); c != "" && (m.bulk[c] || now.Sub(m.modeAt[c]) < 2*time.Minute) {
			continue
		}
		l, ok := last[key]
		if !ok {
			if tr.active && now.Sub(tr.changed) > 2*time.Minute {
				m.fail("(a) %s active since %v and never announced", key, tr.changed.Sub(t0))
			}
			continue
		}
		if tr.active && l.phase == PhaseResolved {
			m.fail("(a) %s active since %v but the last message (at %v, subj %s) says resolved", key, tr.changed.Sub(t0), l.at.Sub(t0), l.subj)
		}
		settle := m.cooldownOf(key)
		if critical(key) {
			settle = 0 // told at once (the minute's check at most)
		}
		if !tr.active && l.phase == PhaseActive && now.Sub(tr.changed) > settle+2*time.Minute && now.Sub(m.cdAt) > 2*time.Minute {
			m.fail("(a) %s resolved at %v, now %v, last message (at %v, subj %s, reminder %v) still says active (cooldown %v)", key, tr.changed.Sub(t0), now.Sub(t0), l.at.Sub(t0), l.subj, l.reminder, m.cooldownOf(key))
		}
	}
	for old := range m.alias {
		if c := modelCatOf(old); c != "" && (m.bulk[c] || now.Sub(m.modeAt[c]) < 2*time.Minute) {
			continue
		}
		if l, ok := last[old]; ok && l.phase == PhaseActive {
			m.fail("(a) %s merged away, but the last message about it (at %v) says active", old, l.at.Sub(t0))
		}
	}
}

var modelFlapMax = func() int {
	if v, _ := strconv.Atoi(os.Getenv("CADENCE_MODEL_FLAP_MAX")); v > 0 {
		return v
	}
	return 3
}()

var modelSkipB = os.Getenv("CADENCE_MODEL_SKIP_B") != ""

// checkB: flap bound and duplicates per raw subject.
func (m *cadenceModel) checkB() {
	if modelSkipB {
		return
	}
	by := map[string][]modelSent{}
	for _, s := range m.sent {
		if s.digest {
			continue
		}
		by[s.subj] = append(by[s.subj], s)
	}
	for subj, list := range by {
		if m.merged[subj] {
			continue
		}
		var nr []modelSent
		var lastRem *modelSent
		for i := range list {
			s := list[i]
			if s.reminder {
				if lastRem != nil && s.at.Sub(lastRem.at) < s.cd-time.Minute {
					m.fail("(b) %s reminders at %v and %v, less than a cooldown %v apart", subj, lastRem.at.Sub(t0), s.at.Sub(t0), s.cd)
				}
				lastRem = &list[i]
				continue
			}
			nr = append(nr, s)
		}
		for i, s := range nr {
			na, nrc := 0, 0
			for _, u := range nr[i:] {
				if u.at.Sub(s.at) >= s.cd {
					break
				}
				if u.phase == PhaseActive {
					na++
				} else {
					nrc++
				}
			}
			if (na > modelFlapMax || nrc > modelFlapMax) && !critical(subj) {
				m.fail("(b) %s: %d alerts and %d recoveries within the cooldown %v from %v", subj, na, nrc, s.cd, s.at.Sub(t0))
			}
			if i > 0 {
				p := nr[i-1]
				if p.phase == s.phase && (s.phase == PhaseResolved || s.at.Sub(p.at) < s.cd) {
					m.fail("(c) %s announced %s twice: at %v and %v", subj, s.phase, p.at.Sub(t0), s.at.Sub(t0))
				}
			}
		}
	}
}

type modelFail struct{ msg string }

func (m *cadenceModel) fail(f string, a ...any) { panic(modelFail{fmt.Sprintf(f, a...)}) }

func (m *cadenceModel) setCd(k string, d time.Duration) {
	m.logf("set %s = %v", k, d)
	m.cd[k] = d
	m.cdAt = m.r.clk.Now()
	m.r.patch(map[string]any{k: int(d / time.Second)})
	m.r.svc.Idle()
}

func modelRun(t *testing.T, seed int64, steps int, features string) (failure string, log []string) {
	r := newRig(t, false)
	m := &cadenceModel{t: t, r: r, rng: rand.New(rand.NewSource(seed)), truth: map[string]*modelTruth{}, alias: map[string]string{},
		live: []string{"F1", "F2", "F3"}, next: 4, cd: map[string]time.Duration{}, merged: map[string]bool{}, mergedAt: map[string]int{},
		bulk: map[string]bool{}, modeAt: map[string]time.Time{}}
	m.setCd("server_push_sensors_cooldown_seconds", 6*time.Hour)
	m.setCd("server_push_critical_cooldown_seconds", 6*time.Hour)
	m.setCd("server_push_batteries_interval_seconds", 6*time.Hour)
	m.setCd("server_push_fleet_health_interval_seconds", 6*time.Hour)
	r.patch(map[string]any{"server_push_batteries_mode": "individual", "server_push_fleet_health_mode": "individual"})
	defer func() {
		if x := recover(); x != nil {
			if f, ok := x.(modelFail); ok {
				failure, log = f.msg, m.log
				return
			}
			panic(x)
		}
	}()
	cds := []time.Duration{10 * time.Minute, time.Hour, 6 * time.Hour}
	for i := 0; i < steps; i++ {
		p := m.rng.Intn(100)
		switch {
		case p < 45:
			var keys []string
			for _, f := range m.live {
				keys = append(keys, "range:"+f)
				if strings.Contains(features, "b") {
					keys = append(keys, "battery:"+f)
				}
			}
			if strings.Contains(features, "h") {
				keys = append(keys, "notseen:P1", "mqtt_down", "alertsys_down", "fleet:stale:G1")
			}
			m.toggle(keys[m.rng.Intn(len(keys))])
		case p < 80:
			var d time.Duration
			switch m.rng.Intn(3) {
			case 0:
				d = time.Duration(1+m.rng.Intn(20)) * time.Minute
			case 1:
				d = time.Duration(30+m.rng.Intn(150)) * time.Minute
			default:
				d = time.Duration(300+m.rng.Intn(180)) * time.Minute
			}
			m.advance(d)
		case p < 86:
			if strings.Contains(features, "r") {
				m.logf("restart")
				r.restart()
				m.collect()
			}
		case p < 89 && strings.Contains(features, "w"):
			cats := []string{CatBatteries, CatHealth}
			c := cats[m.rng.Intn(2)]
			k := map[string]string{CatBatteries: "server_push_batteries_mode", CatHealth: "server_push_fleet_health_mode"}[c]
			m.bulk[c] = !m.bulk[c]
			m.modeAt[c] = m.r.clk.Now()
			v := "individual"
			if m.bulk[c] {
				v = "bulk"
			}
			m.logf("set %s = %s", k, v)
			m.r.patch(map[string]any{k: v})
			m.r.svc.Idle()
			m.collect()
		case p < 93:
			if strings.Contains(features, "c") {
				keys := []string{"server_push_sensors_cooldown_seconds", "server_push_critical_cooldown_seconds", "server_push_batteries_interval_seconds", "server_push_fleet_health_interval_seconds"}
				m.setCd(keys[m.rng.Intn(len(keys))], cds[m.rng.Intn(len(cds))])
			}
		default:
			if strings.Contains(features, "m") && len(m.live) >= 2 {
				a := m.rng.Intn(len(m.live))
				b := (a + 1 + m.rng.Intn(len(m.live)-1)) % len(m.live)
				old, nu := m.live[a], m.live[b]
				m.merge(old, nu, strings.Contains(features, "x") && m.rng.Intn(3) == 0)
				m.live = append(m.live[:a:a], m.live[a+1:]...)
				m.live = append(m.live, "F"+strconv.Itoa(m.next))
				m.next++
			}
		}
		m.checkA()
		m.checkB()
	}
	return "", nil
}

func TestCadenceModelRandom(t *testing.T) {
	features := os.Getenv("CADENCE_MODEL_FEATURES")
	if features == "" {
		features = "bhrcmxw" // w: batteries/fleet health mode switches (digest items count as words)
	}
	n, _ := strconv.Atoi(os.Getenv("CADENCE_MODEL_SEEDS"))
	if n == 0 {
		n = 4
	}
	steps, _ := strconv.Atoi(os.Getenv("CADENCE_MODEL_STEPS"))
	if steps == 0 {
		steps = 120
	}
	fails := map[string][]int64{}
	var firstLog = map[string][]string{}
	total := 0
	from := int64(1)
	if v, _ := strconv.Atoi(os.Getenv("CADENCE_MODEL_SEED")); v > 0 {
		from, n = int64(v), v
	}
	for seed := from; seed <= int64(n); seed++ {
		var f string
		var lg []string
		t.Run(fmt.Sprint(seed), func(t *testing.T) { f, lg = modelRun(t, seed, steps, features) })
		total++
		if f != "" {
			k, _, _ := strings.Cut(strings.Fields(f)[1], ":")
			cls := f[:3] + " " + k + " " + strings.Fields(f)[2]
			fails[cls] = append(fails[cls], seed)
			if _, ok := firstLog[cls]; !ok || len(lg) < len(firstLog[cls]) {
				firstLog[cls] = append(lg, "FAIL: "+f)
			}
		}
	}
	var cls []string
	for c := range fails {
		cls = append(cls, c)
	}
	sort.Strings(cls)
	for _, c := range cls {
		t.Logf("class %s: seeds %v", c, fails[c])
		lg := firstLog[c]
		if len(lg) > 2000 {
			lg = lg[len(lg)-2000:]
		}
		t.Logf("shortest log:\n%s", strings.Join(lg, "\n"))
	}
	t.Logf("%d sequences, %d failing", total, func() int {
		s := 0
		for _, v := range fails {
			s += len(v)
		}
		return s
	}())
	if len(fails) > 0 {
		t.Fail()
	}
}

func modelCatOf(key string) string {
	switch {
	case strings.HasPrefix(key, "battery:"):
		return CatBatteries
	case strings.HasPrefix(key, "fleet:"):
		return CatHealth
	}
	return ""
}

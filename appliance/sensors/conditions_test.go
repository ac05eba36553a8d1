package sensors

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/ingest"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

type condRig struct {
	t     testing.TB
	db    *store.DB
	clk   *clock.Fake
	m     *Monitor
	mu    sync.Mutex
	recs  []store.SensorConditionRecord
	uids  map[string]string // name -> asset_uid
	types map[string]string
	// seen stands in for the ingest pipeline's persisted last-seen times.
	seen sync.Map
}

// assetsWithLocation builds the asset service over db with one location
// (Hospital, H1) and returns it with a function that creates a beacon
// there from JSON-shaped fields, as the API takes them.
func assetsWithLocation(t testing.TB, db *store.DB, clk clock.Clock) (*assets.Service, func(fields map[string]any) assets.BeaconView) {
	t.Helper()
	svc, err := assets.NewService(assets.Options{DB: db, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	var loc assets.LocationInput
	_ = json.Unmarshal([]byte(`{"name":"Hospital","code":"H1","parent_id":0}`), &loc)
	lv, _, err := svc.SaveLocation(loc)
	if err != nil {
		t.Fatal(err)
	}
	return svc, func(fields map[string]any) assets.BeaconView {
		t.Helper()
		fields["location_id"] = lv.ID
		data, _ := json.Marshal(fields)
		var in assets.BeaconInput
		if err := json.Unmarshal(data, &in); err != nil {
			t.Fatal(err)
		}
		v, err := svc.CreateBeacon(in)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func newCondRig(t testing.TB) *condRig {
	r := &condRig{t: t, db: openDB(t), clk: clock.NewFake(time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)),
		uids: map[string]string{}, types: map[string]string{}}
	_, create := assetsWithLocation(t, r.db, r.clk)
	now := r.clk.Now().UnixMilli()
	for _, b := range []map[string]any{
		{"mac": "C3000000000A", "name": "Fridge", "type": "sensor", "temperature_range": map[string]any{"min": 2, "max": 8},
			"humidity_range": map[string]any{"min": 20, "max": 60}},
		{"mac": "C3000000000B", "name": "Room", "type": "sensor", "calibrated_at": now - 364*86400e3, "calibration_interval_days": 365},
		{"mac": "C3000000000C", "name": "Panic", "type": "panic"},
	} {
		v := create(b)
		r.uids[v.Name], r.types[v.Name] = v.AssetUID, v.Type
	}
	r.start()
	return r
}

// start builds a monitor over the store, as a (re)start of the service.
func (r *condRig) start() {
	if r.m != nil {
		r.m.Stop()
	}
	m, err := NewMonitor(r.db, r.clk, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	m.Conds.Subscribe(func(rec store.SensorConditionRecord) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.recs = append(r.recs, rec)
	})
	m.LastSeen = func(uid string) int64 {
		v, _ := r.seen.Load(uid)
		ts, _ := v.(int64)
		return ts
	}
	m.Start()
	r.m = m
}

// feed runs one ingest batch through Observe and commits its ops the way
// the group-commit writer does.
func (r *condRig) feed(kind ingest.Kind, name string, rep ingest.Report) {
	r.t.Helper()
	now := r.clk.Now().UnixMilli()
	rep.TS = now
	r.seen.Store(r.uids[name], now)
	b := &ingest.Batch{Kind: kind, Received: now, Obs: []ingest.Observation{{Report: rep,
		Asset: &assets.Asset{UID: r.uids[name], Kind: store.KindBeacon, Type: r.types[name], Name: name}}}}
	var w ingest.Writes
	r.m.Observe(b, &w)
	for _, op := range w.Ops {
		if err := r.db.Update(op); err != nil {
			r.t.Fatal(err)
		}
	}
}

func temp(v float32) ingest.Report { return ingest.Report{Has: ingest.HasTemperature, Temperature: v} }

// expect checks the transitions since the last call.
func (r *condRig) expect(want ...string) {
	r.t.Helper()
	r.mu.Lock()
	got := r.recs
	r.recs = nil
	r.mu.Unlock()
	var g []string
	for _, x := range got {
		g = append(g, x.Key+" "+x.Phase)
	}
	if len(g) != len(want) {
		r.t.Fatalf("transitions %v, want %v", g, want)
	}
	for i := range want {
		if g[i] != want[i] {
			r.t.Fatalf("transitions %v, want %v", g, want)
		}
	}
}

func (r *condRig) key(kind, name string) string { return kind + ":" + r.uids[name] }

func TestRangeAndBatteryConditions(t *testing.T) {
	r := newCondRig(t)
	rng := r.key(CondRange, "Fridge")
	r.feed(ingest.KindAdv1, "Fridge", temp(5))
	r.expect()
	r.feed(ingest.KindAdv1, "Fridge", temp(9.5))
	r.expect(rng + " active")
	// Humidity out while temperature comes back: the shared condition stays.
	r.feed(ingest.KindAdv1, "Fridge", ingest.Report{Has: ingest.HasTemperature | ingest.HasHumidity, Temperature: 5, Humidity: 75})
	r.feed(ingest.KindAdv1, "Fridge", temp(4))
	r.expect()
	r.feed(ingest.KindAdv1, "Fridge", ingest.Report{Has: ingest.HasHumidity, Humidity: 40})
	r.expect(rng + " resolved")

	// Battery: adv1 voltage is never judged, adv8 below 2800 mV is.
	bat := r.key(CondBattery, "Fridge")
	r.feed(ingest.KindAdv1, "Fridge", ingest.Report{Has: ingest.HasVBatt, VBatt: 2000})
	r.expect()
	r.feed(ingest.KindAdv8, "Fridge", ingest.Report{Has: ingest.HasVBatt, VBatt: 2800})
	r.expect()
	r.feed(ingest.KindAdv8, "Fridge", ingest.Report{Has: ingest.HasVBatt, VBatt: 2799})
	r.expect(bat + " active")
	r.feed(ingest.KindAdv8, "Fridge", ingest.Report{Has: ingest.HasVBatt, VBatt: 3000})
	r.expect(bat + " resolved")

	// Restart mid-condition: still active, not re-announced, resolved by
	// the first reading back in range, with its original start.
	r.feed(ingest.KindSData, "Fridge", temp(12))
	r.expect(rng + " active")
	since := r.clk.Now().UnixMilli()
	r.stored("Fridge", store.MetricHumidity, since-1000, 40) // as the recorder kept them
	r.stored("Fridge", store.MetricTemperature, since, 12)
	r.clk.Advance(30 * time.Second)
	r.start()
	if !r.m.Conds.IsActive(CondRange, r.uids["Fridge"]) {
		t.Fatal("range condition lost on restart")
	}
	r.feed(ingest.KindSData, "Fridge", ingest.Report{Has: ingest.HasHumidity, Humidity: 30})
	r.expect() // humidity fine, temperature not yet seen in range
	r.feed(ingest.KindSData, "Fridge", temp(6))
	r.expect(rng + " resolved")
	recs, err := r.m.Conds.Records("", 100)
	if err != nil || len(recs) != 6 || recs[5].Since != since || recs[5].Phase != store.HealthResolved {
		t.Fatalf("stored records %+v %v", recs, err)
	}

	// A sensor that reports temperature only (sData) never reports its
	// humidity back in range: restarted as out on both metrics, its
	// condition never resolved (a review). Each metric restarts as its
	// latest stored reading says.
	r.feed(ingest.KindSData, "Fridge", temp(12))
	r.expect(rng + " active")
	r.stored("Fridge", store.MetricTemperature, r.clk.Now().UnixMilli(), 12)
	r.clk.Advance(30 * time.Second)
	r.start()
	r.feed(ingest.KindSData, "Fridge", temp(5))
	r.expect(rng + " resolved")
}

// stored writes a reading to the history, as the recorder does.
func (r *condRig) stored(name string, metric uint8, ts int64, v float64) {
	r.t.Helper()
	rs := []store.Reading{{UID: r.uids[name], Metric: metric, TS: ts, Value: v}}
	if err := r.db.Update(func(tx *bolt.Tx) error { _, err := store.PutReadings(tx, rs); return err }); err != nil {
		r.t.Fatal(err)
	}
}

func TestNotSeenConditions(t *testing.T) {
	r := newCondRig(t)
	ns := func(n string) string { return r.key(CondNotSeen, n) }
	// The fridge reports a 10-minute update interval: timeout 20 min. The
	// room sensor has none: 60 min. The panic button: 30 min.
	r.feed(ingest.KindSData, "Fridge", ingest.Report{Has: ingest.HasTemperature | ingest.HasInterval, Temperature: 4, Interval: 600})
	r.feed(ingest.KindAdv1, "Room", temp(21))
	r.feed(ingest.KindAdv4, "Panic", ingest.Report{})
	r.clk.Advance(19 * time.Minute)
	r.expect()
	r.clk.Advance(2 * time.Minute)
	r.expect(ns("Fridge") + " active")
	r.clk.Advance(10 * time.Minute)
	r.expect(ns("Panic") + " active")

	// Restart mid-condition: the interval and active set come back.
	r.start()
	r.clk.Advance(30 * time.Minute)
	r.expect(ns("Room") + " active")
	r.feed(ingest.KindAdv4, "Panic", ingest.Report{})
	r.expect(ns("Panic") + " resolved")
	r.clk.Advance(5 * time.Minute)
	r.expect()

	// A short interval still gets the 10-minute floor.
	r.feed(ingest.KindSData, "Fridge", ingest.Report{Has: ingest.HasTemperature | ingest.HasInterval, Temperature: 4, Interval: 60})
	r.expect(ns("Fridge") + " resolved")
	r.clk.Advance(9 * time.Minute)
	r.expect()
	r.clk.Advance(2 * time.Minute)
	r.expect(ns("Fridge") + " active")
	if Timeout("watch", 0) != NotSeenWatch || Timeout("navigation", 0) != 0 {
		t.Fatal("timeouts")
	}
	// The count behind the heartbeat fast path matches the states: Room
	// and Fridge are missing.
	n := 0
	for i := range r.m.state {
		sh := &r.m.state[i]
		sh.Lock()
		sh.V.Range(func(_ string, st *assetState) {
			if st.active&bitNotSeen != 0 {
				n++
			}
		})
		sh.Unlock()
	}
	if got := r.m.missing.Load().len(); got != 2 || n != 2 {
		t.Fatalf("not-seen count %d, states %d, want 2", got, n)
	}
}

func TestCalibrationConditions(t *testing.T) {
	r := newCondRig(t)
	cal := r.key(CondCalibration, "Room")
	// One day before expiry: the boot check finds nothing.
	r.clk.Advance(CalibrationBootDelay)
	r.expect()
	r.clk.Advance(23 * time.Hour)
	r.expect()
	r.clk.Advance(2 * time.Hour)
	r.expect(cal + " active")
	// The spec's body: uid, MAC, type, last calibrated, interval (the MAC
	// alone was given: a black-box check).
	if msg := r.m.Conds.Active()[0].Message; !strings.Contains(msg, r.uids["Room"]) || !strings.Contains(msg, "MAC C3000000000B") ||
		!strings.Contains(msg, "type sensor") || !strings.Contains(msg, "last calibrated 2025-05-02") || !strings.Contains(msg, "interval 365 days") {
		t.Fatalf("calibration message %q", msg)
	}
	// Restart: the boot check does not announce it again.
	r.start()
	r.clk.Advance(CalibrationBootDelay + 3*time.Hour)
	r.expect()
	if len(r.m.Conds.Active()) != 1 || r.m.Conds.Active()[0].Kind != CondCalibration {
		t.Fatalf("active %+v", r.m.Conds.Active())
	}
	// Recalibrated: resolved at the next hourly check.
	err := r.db.UpdateAssets(r.clk.Now(), func(tx *store.AssetTx) error {
		d, err := tx.Device("C3000000000B")
		if err != nil {
			return err
		}
		d.LastCalibratedAt = r.clk.Now().UnixMilli()
		return tx.PutDevice(d)
	})
	if err != nil {
		t.Fatal(err)
	}
	r.clk.Advance(time.Hour)
	r.expect(cal + " resolved")
}

// TestHeartbeatsOfMissingAssetsOnly: with LastSeen wired, a heartbeat can
// only resolve not-seen, so only the missing assets' reports are decided,
// looked up in the missing set without a lock. The set must follow a
// rename, or the renamed asset's heartbeat would be skipped and the
// condition never resolve.
func TestHeartbeatsOfMissingAssetsOnly(t *testing.T) {
	r := newCondRig(t)
	r.feed(ingest.KindAdv4, "Panic", ingest.Report{})
	r.clk.Advance(NotSeenPanic + NotSeenEvery)
	r.expect(r.key(CondNotSeen, "Panic") + " active")

	// A heartbeat of an asset that is not missing changes nothing.
	r.feed(ingest.KindAdv4, "Room", ingest.Report{})
	r.expect()

	renamed := "PAN-RENAMED-1"
	r.m.Rename(r.uids["Panic"], renamed)
	r.uids["Panic"] = renamed
	if got := *r.m.missing.Load(); got.len() != 1 || !got.has(assets.UIDHash(renamed), renamed) {
		t.Fatalf("missing after the rename: %v, want only %s", got, renamed)
	}
	r.feed(ingest.KindAdv4, "Panic", ingest.Report{})
	r.expect(r.key(CondNotSeen, "Panic") + " resolved")
	if got := *r.m.missing.Load(); got.len() != 0 {
		t.Fatalf("missing after the heartbeat: %v, want none", got)
	}
}

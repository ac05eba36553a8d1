package assets

import (
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/clock"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

var testStart = time.Date(2026, 4, 5, 6, 7, 8, 0, time.UTC)

// fakeMem stands in for the pipeline's last-seen table and the sensor
// recorder: it records renames.
type fakeMem struct {
	mu      sync.Mutex
	seen    map[string]int64
	renames [][2]string
}

func (f *fakeMem) Rename(o, n string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.renames = append(f.renames, [2]string{o, n})
	if ts, ok := f.seen[o]; ok {
		delete(f.seen, o)
		f.seen[n] = max(f.seen[n], ts)
	}
}

func (f *fakeMem) MergeLatest(o, n string, _ int64) { f.Rename(o, n) }

func (f *fakeMem) Asset(uid string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[uid]
}

type fakeDiscovery struct {
	mu   sync.Mutex
	list []store.DiscoveredDevice
}

func (f *fakeDiscovery) List() []store.DiscoveredDevice {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]store.DiscoveredDevice(nil), f.list...)
}

func (f *fakeDiscovery) Forget(mac string, gw bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, d := range f.list {
		if d.MAC == mac && d.IsGateway == gw {
			f.list = append(f.list[:i], f.list[i+1:]...)
			return
		}
	}
}

type env struct {
	t     *testing.T
	path  string
	db    *store.DB
	clock *clock.Fake
	svc   *Service
	mem   *fakeMem
	disc  *fakeDiscovery
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, path: filepath.Join(t.TempDir(), "service.db"), clock: clock.NewFake(testStart)}
	e.open()
	return e
}

// open (re)opens the database and builds a fresh service, as a restart does.
func (e *env) open() {
	e.t.Helper()
	db, err := store.Open(e.path, store.OpenOptions{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = db.Close() })
	e.db = db
	e.svc, err = NewService(Options{DB: db, Clock: e.clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		e.t.Fatal(err)
	}
	e.mem = &fakeMem{seen: map[string]int64{}}
	e.disc = &fakeDiscovery{}
	e.svc.Connect(IngestHooks{LastSeen: e.mem, Recorder: e.mem, Discovery: e.disc})
}

func (e *env) restart() {
	e.t.Helper()
	_ = e.db.Close()
	e.open()
}

func sp(s string) *string                { return &s }
func up(v uint64) *uint64                { return &v }
func ip(v int64) *int64                  { return &v }
func bp(v bool) *bool                    { return &v }
func intp(v int) *int                    { return &v }
func (e *env) now() int64                { return e.clock.Now().UnixMilli() }
func (e *env) ago(d time.Duration) int64 { return e.clock.Now().Add(-d).UnixMilli() }

// loc creates a location and returns its id.
func (e *env) loc(name, code string, parent uint64) uint64 {
	e.t.Helper()
	in := LocationInput{Name: sp(name), ParentID: up(parent)}
	if code != "" {
		in.Code = sp(code)
	}
	v, _, err := e.svc.SaveLocation(in)
	if err != nil {
		e.t.Fatalf("location %s: %v", name, err)
	}
	return v.ID
}

func (e *env) beacon(in BeaconInput) BeaconView {
	e.t.Helper()
	v, err := e.svc.CreateBeacon(in)
	if err != nil {
		e.t.Fatalf("create beacon: %v", err)
	}
	return v
}

// readings stores one temperature reading per timestamp under uid.
func (e *env) readings(uid string, ts ...int64) {
	e.t.Helper()
	var rs []store.Reading
	for _, x := range ts {
		rs = append(rs, store.Reading{UID: uid, Metric: store.MetricTemperature, TS: x, Value: float64(x%1000) / 10})
	}
	if err := e.db.Update(func(tx *bolt.Tx) error { _, err := store.PutReadings(tx, rs); return err }); err != nil {
		e.t.Fatal(err)
	}
}

// history returns the temperature timestamps of uid.
func (e *env) history(uid string) []int64 {
	e.t.Helper()
	var out []int64
	if err := e.db.QueryHistory(uid, store.MetricTemperature, 0, math.MaxInt64, func(ts int64, _ float64) bool {
		out = append(out, ts)
		return true
	}); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// wantField fails unless err is a 400 naming field.
func wantField(t *testing.T, err error, field string) {
	t.Helper()
	e, ok := apperr.As(err)
	if !ok || e.Kind != apperr.KindInvalid || e.Field != field {
		t.Fatalf("error = %v, want a 400 naming %s", err, field)
	}
}

// resolves checks the MAC -> asset cache.
func (e *env) resolves(mac, wantUID string) {
	e.t.Helper()
	m, _ := ParseMAC(mac)
	a, ok := e.svc.Registry().Beacon(m)
	switch {
	case wantUID == "" && ok:
		e.t.Errorf("%s resolves to %s, want nothing", mac, a.UID)
	case wantUID != "" && (!ok || a.UID != wantUID):
		e.t.Errorf("%s resolves to %+v, want %s", mac, a, wantUID)
	}
}

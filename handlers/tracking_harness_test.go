package handlers

import (
	"sync"
	"testing"
	"time"

	"beaconhub/appliance/rtls"
	"beaconhub/store"
	"beaconhub/web"
)

// fakeTracker stands in for the engine in handler tests: the handlers'
// job is shapes, validation, scope and fan-out, not prediction (the
// engine has its own tests; the appliance end-to-end tests use the real
// one).
type fakeTracker struct {
	mu        sync.Mutex
	current   string
	locs      map[string]rtls.Location
	lastSeen  map[string]int64
	listeners map[int]fakeListener
	next      int
	recording map[string][]uint64 // the zones each recording went through
	reloads   int
	db        *store.DB // where StopSurvey stores, as the engine's writer does
	over      int       // windows past the bound the next stop reports
}

type fakeListener struct {
	l     rtls.Listener
	debug func(string) bool
}

func newFakeTracker() *fakeTracker {
	return &fakeTracker{locs: map[string]rtls.Location{}, lastSeen: map[string]int64{}, listeners: map[int]fakeListener{},
		recording: map[string][]uint64{}}
}

func (f *fakeTracker) Algorithms() []rtls.AlgorithmInfo {
	return []rtls.AlgorithmInfo{{Name: "strongest", Description: "strongest gateway", Params: map[string]any{"margin_db": 6}, Ready: true}}
}

func (f *fakeTracker) Start(name string) error {
	if name != "strongest" {
		return rtls.ErrUnknownAlgorithm
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.current = name
	return nil
}

func (f *fakeTracker) Stop() { f.mu.Lock(); f.current = ""; f.mu.Unlock() }

func (f *fakeTracker) Status() rtls.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := rtls.Status{Running: f.current != "", Algorithm: f.current, Beacons: len(f.locs), Surveys: []rtls.SurveyStatus{}}
	for uid, zones := range f.recording {
		// Two windows a zone, as StopRecording returns.
		st.Surveys = append(st.Surveys, rtls.SurveyStatus{AssetUID: uid, Zone: zones[len(zones)-1], Windows: 2 * len(zones)})
	}
	return st
}

func (f *fakeTracker) Current() string { f.mu.Lock(); defer f.mu.Unlock(); return f.current }

func (f *fakeTracker) Location(uid string) (rtls.Location, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.locs[uid]
	return l, ok
}

func (f *fakeTracker) Locations() []rtls.Location {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []rtls.Location{}
	for _, l := range f.locs {
		out = append(out, l)
	}
	return out
}

func (f *fakeTracker) Listen(l rtls.Listener, debug func(uid string) bool) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.next
	f.next++
	f.listeners[id] = fakeListener{l, debug}
	return func() { f.mu.Lock(); delete(f.listeners, id); f.mu.Unlock() }
}

func (f *fakeTracker) Record(uid string, zone uint64) {
	f.mu.Lock()
	f.recording[uid] = append(f.recording[uid], zone)
	f.mu.Unlock()
}

func (f *fakeTracker) StopSurvey(uid string, now time.Time) (store.ZoneSurveyStored, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	zones, ok := f.recording[uid]
	if !ok {
		return store.ZoneSurveyStored{}, rtls.ErrNotRecording
	}
	delete(f.recording, uid)
	gw := [6]byte{0xAC, 0x23, 0x3F, 0, 0, 1}
	var ss []store.ZoneSample
	for _, zone := range zones {
		ss = append(ss,
			rtls.SampleToStore(uid, rtls.Sample{Zone: zone, RSSI: map[[6]byte]float64{gw: -61.5}, N: map[[6]byte]int{gw: 2}, SD: map[[6]byte]float64{gw: 2.12}}),
			rtls.SampleToStore(uid, rtls.Sample{Zone: zone, RSSI: map[[6]byte]float64{gw: -63}, N: map[[6]byte]int{gw: 1}}))
	}
	st := store.ZoneSurveyStored{AssetUID: uid, Over: f.over}
	err := f.db.Update(store.StoreZoneSurvey(ss, now, nil, &st))
	return st, err
}

func (f *fakeTracker) LastSeen(uid string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastSeen[uid]
}

func (f *fakeTracker) Reload() error { f.mu.Lock(); f.reloads++; f.mu.Unlock(); return nil }

// set places a beacon (zone 0 = seen but unknown).
func (f *fakeTracker) set(l rtls.Location) { f.mu.Lock(); f.locs[l.AssetUID] = l; f.mu.Unlock() }

// emit delivers an event the way the engine does: debug events only to
// listeners whose filter asks for that beacon.
func (f *fakeTracker) emit(ev rtls.Event) {
	f.mu.Lock()
	ls := make([]fakeListener, 0, len(f.listeners))
	for _, l := range f.listeners {
		ls = append(ls, l)
	}
	f.mu.Unlock()
	for _, l := range ls {
		if ev.Debug && (l.debug == nil || !l.debug(ev.AssetUID)) {
			continue
		}
		l.l(ev)
	}
}

// rtlsHarness is the asset harness with a fake engine behind the RTLS
// routes.
type rtlsHarness struct {
	*assetHarness
	fake *fakeTracker
}

func newRTLSHarness(t *testing.T, ws WSOptions) *rtlsHarness {
	t.Helper()
	ah := newAssetHarness(t)
	fake := newFakeTracker()
	fake.db = ah.db
	ah.srv = New(Deps{Live: ah.live, DB: ah.db, Auth: ah.auth, AppLog: ah.applog, Logger: ah.logger, Static: web.FS(),
		Assets: ah.reg, RTLS: fake, WS: ws})
	t.Cleanup(ah.srv.Close)
	return &rtlsHarness{assetHarness: ah, fake: fake}
}

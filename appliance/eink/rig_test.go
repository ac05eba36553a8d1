package eink

import (
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"beaconhub/appliance/clock"
	"beaconhub/appliance/sensors"
	"beaconhub/store"

	"golang.org/x/text/encoding/charmap"
)

// fakeReadings is a settable Readings.
type fakeReadings struct {
	mu sync.Mutex
	v  map[string]float64
}

func (f *fakeReadings) set(uid string, metric uint8, v float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.v == nil {
		f.v = map[string]float64{}
	}
	f.v[uid+"|"+string(rune('0'+metric))] = v
}

func (f *fakeReadings) Latest(uid string, metric uint8) (sensors.Latest, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.v[uid+"|"+string(rune('0'+metric))]
	return sensors.Latest{TS: 1, Value: v}, ok
}

type rig struct {
	t     testing.TB
	db    *store.DB
	w     *store.Writer
	clock *clock.Fake
	rd    *fakeReadings
	svc   *Service
}

func newRig(t testing.TB) *rig {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "eink.db"), store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := store.NewWriter(db, store.WriterOptions{})
	t.Cleanup(func() { _ = w.Close(); _ = db.Close() })
	r := &rig{t: t, db: db, w: w, clock: clock.NewFake(time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)), rd: &fakeReadings{}}
	r.svc = New(Options{DB: db, Writer: w, Readings: r.rd, Clock: r.clock})
	return r
}

// reply is a decoded device reply.
type reply struct {
	Version  int              `json:"version"`
	Validity int              `json:"validity"`
	Rotation int              `json:"rotation"`
	Width    int              `json:"width"`
	Height   int              `json:"height"`
	Objects  []map[string]any `json:"objects"`
}

func decodeReply(t testing.TB, body []byte) reply {
	t.Helper()
	utf, err := charmap.Windows1250.NewDecoder().Bytes(body)
	if err != nil {
		t.Fatal(err)
	}
	var r reply
	if err := json.Unmarshal(utf, &r); err != nil {
		t.Fatalf("reply %q: %v", utf, err)
	}
	return r
}

func (r *rig) poll(mac string) reply {
	r.t.Helper()
	body, err := r.svc.Poll(nil, PollRequest{MAC: mac, Voltage: 3.01, HasVoltage: true, IP: "10.0.0.7"})
	if err != nil {
		r.t.Fatal(err)
	}
	return decodeReply(r.t, body)
}

// idOf returns the display id of mac (0 = no row).
func (r *rig) idOf(mac string) uint64 {
	var id uint64
	_ = r.db.ViewAssets(func(t *store.AssetTx) error { id = t.EInkIDByMAC(mac); return nil })
	return id
}

func (r *rig) display(id uint64) store.EInkDisplay {
	r.t.Helper()
	var d store.EInkDisplay
	if err := r.db.ViewAssets(func(t *store.AssetTx) error {
		x, err := t.EInk(id)
		if err == nil {
			d = *x
		}
		return err
	}); err != nil {
		r.t.Fatal(err)
	}
	return d
}

// location stores a location and returns its id.
func (r *rig) location(name, code string, parent uint64) uint64 {
	r.t.Helper()
	l := &store.Location{Name: name, Code: code, ParentID: parent}
	if err := r.db.UpdateAssets(r.clock.Now(), func(t *store.AssetTx) error { return t.PutLocation(l) }); err != nil {
		r.t.Fatal(err)
	}
	return l.ID
}

// sensor stores an active sensor beacon and returns its uid.
func (r *rig) sensor(mac, uid string) string {
	r.t.Helper()
	if err := r.db.CreateBeacon(&store.Beacon{MAC: mac, AssetUID: uid, Name: "Fridge " + mac, Type: "sensor", Active: true}); err != nil {
		r.t.Fatal(err)
	}
	return uid
}

func ptr[T any](v T) *T { return &v }

func texts(rp reply) []string {
	var out []string
	for _, o := range rp.Objects {
		if s, ok := o["s"].(string); ok {
			out = append(out, s)
		}
	}
	return out
}

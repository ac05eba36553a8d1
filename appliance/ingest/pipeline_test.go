package ingest_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/ingest"
	"beaconhub/appliance/sensors"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

type rig struct {
	db    *store.DB
	w     *store.Writer
	reg   *assets.Registry
	p     *ingest.Pipeline
	rec   *sensors.Recorder
	clock *clock.Fake
}

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func newRig(t *testing.T, start bool) *rig {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "t.db"), store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{db: db, clock: clock.NewFake(t0)}
	r.w = store.NewWriter(db, store.WriterOptions{})
	if err := db.CreateBeacon(&store.Beacon{AssetUID: "SEN-A1-1", MAC: "C30000000A01", Name: "Fridge", Type: "sensor", Active: true}); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateGateway(&store.Gateway{AssetUID: "GW-A1-1", MAC: "AC233FA0B1C2", Name: "gw"}); err != nil {
		t.Fatal(err)
	}
	r.reg, err = assets.NewRegistry(db)
	if err != nil {
		t.Fatal(err)
	}
	r.p = ingest.New(ingest.Options{Registry: r.reg, Writer: r.w, Clock: r.clock, AckWait: 5 * time.Second})
	r.rec = sensors.NewRecorder()
	r.p.AddSubscriber(r.rec)
	if start {
		r.p.Start()
	}
	t.Cleanup(func() {
		_ = r.p.Close()
		_ = r.w.Close()
		_ = db.Close()
	})
	return r
}

func history(t *testing.T, db *store.DB, uid string, metric uint8) []float64 {
	t.Helper()
	var out []float64
	if err := db.QueryHistory(uid, metric, 0, 1<<62, func(ts int64, v float64) bool {
		out = append(out, v)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func adv1(mac string, temp float64) []byte {
	return []byte(fmt.Sprintf(`{"reports":[{"mac":%q,"rssi":-70,"temperature":%.2f,"humidity":61.2,"vbatt":2950}]}`, mac, temp))
}

func TestQoS1ReturnsOnlyWhenDurable(t *testing.T) {
	r := newRig(t, true)
	if err := r.p.HandlePublish("AC233FA0B1C2", "gw/AC233FA0B1C2/adv1", adv1("C3:00:00:00:0A:01", 4.6), 1); err != nil {
		t.Fatal(err)
	}
	// No Flush: the QoS 1 return itself promises durability.
	if got := history(t, r.db, "SEN-A1-1", store.MetricTemperature); len(got) != 1 || got[0] != 4.6 {
		t.Fatalf("temperature history = %v, want [4.6]", got)
	}
	if got := history(t, r.db, "SEN-A1-1", store.MetricBattery); len(got) != 1 || got[0] != 2950 {
		t.Fatalf("battery history = %v", got)
	}
	if l, ok := r.rec.Latest("SEN-A1-1", store.MetricHumidity); !ok || l.Value != 61.2 {
		t.Fatalf("latest humidity = %v %v", l, ok)
	}
}

func TestBadReportsDroppedGoodOnesFlow(t *testing.T) {
	r := newRig(t, true)
	payload := []byte(`{"reports":[{"mac":"nope","rssi":-70},{"mac":"C30000000A01","rssi":-70,"temperature":5.5},{"mac":"C30000000A01","rssi":9}]}`)
	if err := r.p.HandlePublish("AC233FA0B1C2", "gw/AC233FA0B1C2/adv1", payload, 1); err != nil {
		t.Fatal(err)
	}
	if err := r.p.HandlePublish("AC233FA0B1C2", "gw/AC233FA0B1C2/adv1", []byte(`not json`), 1); err != nil {
		t.Fatalf("a malformed QoS 1 message must still be acknowledged: %v", err)
	}
	if got := history(t, r.db, "SEN-A1-1", store.MetricTemperature); len(got) != 1 || got[0] != 5.5 {
		t.Fatalf("history = %v", got)
	}
	snap := r.p.Stats.Snapshot()
	if snap.Drops["bad_mac"] != 1 || snap.Drops["bad_rssi"] != 1 || snap.Drops["not_json"] != 1 {
		t.Fatalf("drops = %v", snap.Drops)
	}
	if len(snap.Gateways) != 1 || snap.Gateways[0].Drops["not_json"] != 1 || snap.Gateways[0].Messages != 2 {
		t.Fatalf("per-gateway = %+v", snap.Gateways)
	}
}

func TestSameAdvertisementFromSeveralGatewaysIsOneReading(t *testing.T) {
	r := newRig(t, true)
	for i, gw := range []string{"AC233FA0B1C2", "AC233FA0B1C3", "AC233FA0B1C4"} {
		r.clock.Advance(time.Duration(i) * 300 * time.Millisecond)
		if err := r.p.HandlePublish(gw, "gw/"+gw+"/adv1", adv1("C30000000A01", 4.6), 1); err != nil {
			t.Fatal(err)
		}
	}
	if got := history(t, r.db, "SEN-A1-1", store.MetricTemperature); len(got) != 1 {
		t.Fatalf("3 gateways hearing one advertisement stored %d readings", len(got))
	}
	r.clock.Advance(2100 * time.Millisecond)
	if err := r.p.HandlePublish("AC233FA0B1C2", "gw/AC233FA0B1C2/adv1", adv1("C30000000A01", 4.6), 1); err != nil {
		t.Fatal(err)
	}
	if got := history(t, r.db, "SEN-A1-1", store.MetricTemperature); len(got) != 2 {
		t.Fatalf("a new advertisement after the window: %d readings, want 2", len(got))
	}
	// Unregistered gateways are listed for import.
	var gws int
	for _, d := range r.p.Discovery().List() {
		if d.IsGateway {
			gws++
		}
	}
	if gws != 2 {
		t.Fatalf("discovered gateways = %d, want 2", gws)
	}
}

func TestTestSendsAndUnregisteredMACsStayOutOfHistory(t *testing.T) {
	r := newRig(t, true)
	test := []byte(`{"is_test":true,"reports":[{"mac":"C30000000A01","rssi":-70,"temperature":9}]}`)
	if err := r.p.HandlePublish("AC233FA0B1C2", "gw/AC233FA0B1C2/adv1", test, 1); err != nil {
		t.Fatal(err)
	}
	if err := r.p.HandlePublish("AC233FA0B1C2", "gw/AC233FA0B1C2/adv1", adv1("C3000000FFFF", 3), 1); err != nil {
		t.Fatal(err)
	}
	if got := history(t, r.db, "SEN-A1-1", store.MetricTemperature); len(got) != 0 {
		t.Fatalf("test send stored: %v", got)
	}
	ds := r.p.Discovery().List()
	if len(ds) != 1 || ds[0].MAC != "C3000000FFFF" || ds[0].Kinds[0] != "adv1" || ds[0].LastRSSI != -70 {
		t.Fatalf("discovery = %+v", ds)
	}
}

func TestRegistryChangeAppliesAtOnce(t *testing.T) {
	r := newRig(t, true)
	_ = r.p.HandlePublish("AC233FA0B1C2", "gw/AC233FA0B1C2/adv1", adv1("C30000000B02", 3), 1)
	if err := r.db.CreateBeacon(&store.Beacon{AssetUID: "SEN-A1-2", MAC: "C30000000B02", Type: "sensor", Active: true}); err != nil {
		t.Fatal(err)
	}
	if err := r.reg.Reload(); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(time.Minute)
	_ = r.p.HandlePublish("AC233FA0B1C2", "gw/AC233FA0B1C2/adv1", adv1("C30000000B02", 3.5), 1)
	if got := history(t, r.db, "SEN-A1-2", store.MetricTemperature); len(got) != 1 || got[0] != 3.5 {
		t.Fatalf("history after registering = %v", got)
	}
	if r.p.LastSeen().Asset("SEN-A1-2") != t0.Add(time.Minute).UnixMilli() {
		t.Fatal("last seen not updated")
	}
}

// stallWriter never completes anything: a disk that hangs.
type stallWriter struct{}

func (stallWriter) AppendReadings([]store.Reading, func(error))       {}
func (stallWriter) AppendReadingsLazily([]store.Reading, func(error)) {}
func (stallWriter) Do(func(*bolt.Tx) error, func(error))              {}
func (stallWriter) DoLazily(func(*bolt.Tx) error, func(error))        {}

func TestQoS1WithoutDurabilityIsNotAcknowledged(t *testing.T) {
	r := newRig(t, false)
	p := ingest.New(ingest.Options{Registry: r.reg, Writer: stallWriter{}, Clock: r.clock, AckWait: 50 * time.Millisecond})
	err := p.HandlePublish("AC233FA0B1C2", "gw/AC233FA0B1C2/adv1", adv1("C30000000A01", 3), 1)
	if err != ingest.ErrAckTimeout {
		t.Fatalf("err = %v, want ErrAckTimeout", err)
	}
	if got := p.Stats.Totals().AckTimeouts; got != 1 {
		t.Fatalf("ack timeouts = %d", got)
	}
	// QoS 0 never waits.
	if err := p.HandlePublish("AC233FA0B1C2", "gw/AC233FA0B1C2/adv1", adv1("C30000000A01", 4), 0); err != nil {
		t.Fatal(err)
	}
}

func TestPublishAfterCloseIsRefused(t *testing.T) {
	r := newRig(t, true)
	if err := r.p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.p.HandlePublish("AC233FA0B1C2", "gw/AC233FA0B1C2/adv1", adv1("C30000000A01", 3), 1); err != ingest.ErrClosed {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
}

func TestCloseFlushesStateAndRestoreBringsItBack(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.db")
	db, err := store.Open(path, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.CreateBeacon(&store.Beacon{AssetUID: "SEN-A1-1", MAC: "C30000000A01", Type: "sensor", Active: true})
	reg, _ := assets.NewRegistry(db)
	w := store.NewWriter(db, store.WriterOptions{})
	fc := clock.NewFake(t0)
	p := ingest.New(ingest.Options{Registry: reg, Writer: w, Clock: fc})
	p.Start()
	_ = p.HandlePublish("AC233FA0B1C2", "gw/AC233FA0B1C2/adv4", []byte(`{"reports":[{"mac":"C30000000A01","rssi":-60,"beacon_is_pushed":false},{"mac":"C300000000EE","rssi":-61,"beacon_is_pushed":false}]}`), 0)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	_ = db.Close()

	db, err = store.Open(path, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	w = store.NewWriter(db, store.WriterOptions{})
	defer w.Close()
	reg2, err := assets.NewRegistry(db) // fresh: nothing carried over in memory
	if err != nil {
		t.Fatal(err)
	}
	p2 := ingest.New(ingest.Options{Registry: reg2, Writer: w, Clock: fc})
	if err := p2.Restore(db); err != nil {
		t.Fatal(err)
	}
	if p2.LastSeen().Asset("SEN-A1-1") != t0.UnixMilli() {
		t.Fatalf("last seen not restored: %d", p2.LastSeen().Asset("SEN-A1-1"))
	}
	if len(p2.Discovery().List()) != 2 { // one beacon, one gateway
		t.Fatalf("discovery not restored: %+v", p2.Discovery().List())
	}
}

// Publishes are processed in each publisher's goroutine: many gateways at
// once must neither race nor lose an acknowledged reading.
func TestConcurrentGatewaysLoseNothing(t *testing.T) {
	r := newRig(t, true)
	const gws, each = 8, 100
	errs := make(chan error, gws)
	for g := 0; g < gws; g++ {
		go func(g int) {
			var err error
			for i := 0; i < each && err == nil; i++ {
				k := g*each + i
				payload := fmt.Sprintf(`{"reports":[{"mac":"C30000000A01","rssi":-70,"ts":%d,"temperature":%.2f}]}`,
					t0.UnixMilli()-int64(k)*300, float64(k)/100)
				gw := fmt.Sprintf("AC233FA0B1%02X", g)
				err = r.p.HandlePublish(gw, "gw/"+gw+"/adv1", []byte(payload), byte(k%2))
			}
			errs <- err
		}(g)
	}
	for g := 0; g < gws; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := r.w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := len(history(t, r.db, "SEN-A1-1", store.MetricTemperature)); got != gws*each {
		t.Fatalf("stored %d readings, want %d", got, gws*each)
	}
}

// recordingWriter notes which writer call each op and readings took.
type recordingWriter struct {
	mu    sync.Mutex
	calls []string
}

func (w *recordingWriter) note(s string, done func(error)) {
	w.mu.Lock()
	w.calls = append(w.calls, s)
	w.mu.Unlock()
	if done != nil {
		done(nil)
	}
}
func (w *recordingWriter) AppendReadings(_ []store.Reading, done func(error)) {
	w.note("readings", done)
}
func (w *recordingWriter) AppendReadingsLazily(_ []store.Reading, done func(error)) {
	w.note("readings-lazily", done)
}
func (w *recordingWriter) Do(fn func(*bolt.Tx) error, done func(error)) { w.note("do", done) }
func (w *recordingWriter) DoLazily(fn func(*bolt.Tx) error, done func(error)) {
	w.note("do-lazily", done)
}

// opsSub appends an urgent, a lazy and an urgent op for every batch.
type opsSub struct{}

func (opsSub) Observe(_ *ingest.Batch, w *ingest.Writes) {
	nop := func(*bolt.Tx) error { return nil }
	w.Ops = append(w.Ops, nop)
	w.AddOp(nop, true)
	w.Ops = append(w.Ops, nop)
}

// TestLazyOpsKeepOrderAndQoS1Hurries: ops marked lazy go to the writer's
// lazy door in their place among the others; a QoS 0 publish's readings
// go lazily, a QoS 1 publish's readings (its PUBACK waits) do not.
func TestLazyOpsKeepOrderAndQoS1Hurries(t *testing.T) {
	r := newRig(t, false)
	w := &recordingWriter{}
	p := ingest.New(ingest.Options{Registry: r.reg, Writer: w, Clock: r.clock, AckWait: 5 * time.Second})
	p.AddSubscriber(sensors.NewRecorder())
	p.AddSubscriber(opsSub{})
	for _, qos := range []byte{0, 1} {
		w.calls = nil
		r.clock.Advance(time.Minute) // a new advertisement, not a copy
		if err := p.HandlePublish("AC233FA0B1C2", "gw/AC233FA0B1C2/adv1", adv1("C30000000A01", 3), qos); err != nil {
			t.Fatal(err)
		}
		// The recorder hands its readings first, then opsSub its ops; a
		// QoS 1 publish's readings are urgent and its barrier comes last.
		want := "readings-lazily do do-lazily do"
		if qos == 1 {
			want = "readings do do-lazily do readings"
		}
		if got := strings.Join(w.calls, " "); got != want {
			t.Fatalf("QoS %d: writer calls %q, want %q", qos, got, want)
		}
	}
}

// refusingWriter refuses every batch of readings and commits everything
// else (a barrier is an empty batch of readings).
type refusingWriter struct{ recordingWriter }

func (w *refusingWriter) AppendReadings(rs []store.Reading, done func(error)) {
	if len(rs) > 0 && done != nil {
		done(store.ErrInvalidReading)
		return
	}
	w.recordingWriter.AppendReadings(rs, done)
}

// TestQoS1RefusedReadingsGetNoAck: the PUBACK waits for a barrier queued
// after the subscribers' writes; when the publish's own readings are
// refused, the barrier's success must not acknowledge it.
func TestQoS1RefusedReadingsGetNoAck(t *testing.T) {
	r := newRig(t, false)
	w := &refusingWriter{}
	p := ingest.New(ingest.Options{Registry: r.reg, Writer: w, Clock: r.clock, AckWait: 5 * time.Second})
	p.AddSubscriber(sensors.NewRecorder())
	err := p.HandlePublish("AC233FA0B1C2", "gw/AC233FA0B1C2/adv1", adv1("C30000000A01", 3), 1)
	if !errors.Is(err, store.ErrInvalidReading) {
		t.Fatalf("QoS 1 with refused readings: %v, want the refusal (no PUBACK)", err)
	}
	// A publish with nothing to store is acknowledged by its barrier alone.
	if err := p.HandlePublish("AC233FA0B1C2", "gw/AC233FA0B1C2/adv4", []byte(`{"reports":[{"mac":"C30000000A01","rssi":-60,"beacon_is_pushed":false}]}`), 1); err != nil {
		t.Fatalf("QoS 1 heartbeat: %v", err)
	}
}

// TestGatewayMessagesAreCounted: LastSeen counts what a gateway sent
// since the start that decoded (a heartbeat, a report list, one with a
// bad report), however the clock stood when it came: the tracking
// engine reads talk from it, as a last word's time from before a
// restart may lie in the clock's future. What did not decode (an unknown
// kind, a body that is not JSON: a broker's will, say) is not talk. A
// flood of random gateway topics does not stop the count (the status
// table's cap made a real gateway's count 0: a review).
func TestGatewayMessagesAreCounted(t *testing.T) {
	r := newRig(t, true)
	gw, _ := ingest.ParseMAC("AC233FA0B1C2")
	other, _ := ingest.ParseMAC("AC233FA0B1C3")
	for i := range 20000 {
		_ = r.p.HandlePublish("flood", fmt.Sprintf("gw/02%010X/adv1", i), []byte(`{"reports":[{"mac":"C3:00:00:00:0B:09","rssi":-70}]}`), 0)
	}
	if n := r.p.LastSeen().GatewayMessages(gw); n != 0 {
		t.Fatalf("before any message: %d", n)
	}
	for _, pub := range []struct{ kind, body string }{
		{"status", `{"ip":"192.0.2.10","fw":"1.4.2","uptime":86400}`},
		{"adv1", `{"reports":[{"mac":"C3:00:00:00:0B:01","rssi":-58}]}`},
		{"adv1", `{"reports":[{"mac":"not a mac","rssi":-58}]}`},
		{"lwt", `{"online":false}`},
		{"status", `offline`},
	} {
		_ = r.p.HandlePublish("gw-lobby", "gw/AC233FA0B1C2/"+pub.kind, []byte(pub.body), 0)
		r.clock.Advance(-time.Hour) // later messages, in a clock stepped back
	}
	if n := r.p.LastSeen().GatewayMessages(gw); n != 3 {
		t.Fatalf("after three messages that decoded and two that did not: %d", n)
	}
	if n := r.p.LastSeen().GatewayMessages(other); n != 0 {
		t.Fatalf("another gateway: %d", n)
	}
	// An unregistered gateway is noted while the table has room (the
	// flood's first) and not past it: a flood of random topics does not
	// grow it, or the stored times, without end.
	first, _ := ingest.ParseMAC("020000000000")
	if n := r.p.LastSeen().GatewayMessages(first); n != 1 {
		t.Fatalf("the flood's first gateway: %d", n)
	}
	_ = r.p.HandlePublish("flood", "gw/AC233FA0B1C3/status", []byte(`{"uptime":5}`), 0)
	if n, ts := r.p.LastSeen().GatewayMessages(other), r.p.LastSeen().Gateway(other); n != 0 || ts != 0 {
		t.Fatalf("an unregistered gateway past the table's room: %d messages, last seen %d", n, ts)
	}
}

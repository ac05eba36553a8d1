package alerting_test

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"beaconhub/appliance/alerting"
	"beaconhub/appliance/assets"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/config"
	"beaconhub/appliance/ingest"
	"beaconhub/store"
)

// rig is the real ingest path below the broker: store, group-commit
// writer, registry, pipeline and the alerting service, driven by a fake
// clock through Pipeline.HandlePublish (QoS 1, so each call returns once
// its writes committed).
type rig struct {
	t      testing.TB
	dir    string
	clk    *clock.Fake
	live   *config.Live
	db     *store.DB
	writer *store.Writer
	reg    *assets.Registry
	pipe   *ingest.Pipeline
	svc    *alerting.Service
	enq    *recorder
}

// recorder is an alertsys Enqueuer that only records.
type recorder struct {
	mu  sync.Mutex
	evs []store.Event
}

func (r *recorder) Configured() bool { return true }
func (r *recorder) Enqueue(e store.Event) {
	r.mu.Lock()
	r.evs = append(r.evs, e)
	r.mu.Unlock()
}
func (r *recorder) events() []store.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]store.Event(nil), r.evs...)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// Registered assets of the rig.
const (
	panicMAC  = "C3000000B001"
	panicUID  = "PAN-A1-1"
	watchMAC  = "C3000000B002"
	navMAC    = "C3000000B003"
	sensorMAC = "C3000000B004"
)

func gatewayMAC(i int) string { return fmt.Sprintf("AC233FA0B1C%d", i) }

func seed(t testing.TB, db *store.DB) {
	t.Helper()
	for _, b := range []store.Beacon{
		{AssetUID: panicUID, MAC: panicMAC, Name: "Room 12, bed 2", Type: "panic", Active: true},
		{AssetUID: "WAT-A1-1", MAC: watchMAC, Name: "Nurse watch", Type: "watch", Active: true},
		{AssetUID: "NAV-A1-1", MAC: navMAC, Name: "Lift", Type: "navigation", Active: true},
		{AssetUID: "SEN-A1-1", MAC: sensorMAC, Name: "Fridge", Type: "sensor", Active: true},
	} {
		if err := db.CreateBeacon(&b); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 5; i++ {
		if err := db.CreateGateway(&store.Gateway{AssetUID: fmt.Sprintf("GW-A1-%d", i), MAC: gatewayMAC(i), Name: fmt.Sprintf("Gateway %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
}

// newRig opens (or reopens) the store in dir; live may be shared across a
// restart so a changed window survives it.
func newRig(t testing.TB, dir string, clk *clock.Fake, live *config.Live) *rig {
	t.Helper()
	return newRigWith(t, dir, clk, live, nil)
}

// newRigWith hands alert events to q instead of the rig's recorder.
func newRigWith(t testing.TB, dir string, clk *clock.Fake, live *config.Live, q alerting.Enqueuer) *rig {
	t.Helper()
	fresh := dir == ""
	if fresh {
		dir = t.TempDir()
	}
	db, err := store.Open(filepath.Join(dir, "service.db"), store.OpenOptions{LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if fresh {
		seed(t, db)
	}
	r := &rig{t: t, dir: dir, clk: clk, live: live, db: db, enq: &recorder{}}
	// Lazier than the appliance's writer: anything the tests wait for must
	// hurry its own commit.
	r.writer = store.NewWriter(db, store.WriterOptions{Logger: quiet, LazyDelay: time.Hour})
	reg, err := assets.NewRegistry(db)
	if err != nil {
		t.Fatal(err)
	}
	r.reg = reg
	r.pipe = ingest.New(ingest.Options{Registry: reg, Writer: r.writer, Clock: clk, Logger: quiet})
	var enq alerting.Enqueuer = r.enq
	if q != nil {
		enq = q
	}
	r.svc = alerting.New(alerting.Options{DB: db, Live: live, Clock: clk, Logger: quiet, Alertsys: enq})
	if err := r.svc.Restore(); err != nil {
		t.Fatal(err)
	}
	r.pipe.AddSubscriber(r.svc)
	r.pipe.Start()
	t.Cleanup(r.close)
	return r
}

func (r *rig) close() {
	if r.db == nil {
		return
	}
	_ = r.pipe.Close()
	_ = r.writer.Close()
	_ = r.db.Close()
	r.db = nil
}

// publish sends one adv4 message from gateway gw at QoS 1 and waits for
// its commit, as a gateway waits for its PUBACK.
func (r *rig) publish(gw int, isTest bool, reports ...string) {
	r.t.Helper()
	r.publishQoS(gw, isTest, 1, reports...)
}

func (r *rig) publishQoS(gw int, isTest bool, qos byte, reports ...string) {
	r.t.Helper()
	body := fmt.Sprintf(`{"is_test":%t,"reports":[`, isTest)
	for i, rep := range reports {
		if i > 0 {
			body += ","
		}
		body += rep
	}
	body += "]}"
	if err := r.pipe.HandlePublish(gatewayMAC(gw), "gw/"+gatewayMAC(gw)+"/adv4", []byte(body), qos); err != nil {
		r.t.Fatalf("publish: %v", err)
	}
}

func press(mac, kind string, rssi int) string {
	return fmt.Sprintf(`{"mac":%q,"rssi":%d,"beacon_is_pushed":true,"press":%q}`, mac, rssi, kind)
}

func heartbeat(mac string, motion bool) string {
	return fmt.Sprintf(`{"mac":%q,"rssi":-70,"beacon_is_pushed":false,"motion":%t}`, mac, motion)
}

// events lists every stored event, oldest first.
func (r *rig) events() []store.Event {
	r.t.Helper()
	evs, _, err := r.db.EventsAfter(store.EventFilter{}, 0, 10000, 0)
	if err != nil {
		r.t.Fatal(err)
	}
	return evs
}

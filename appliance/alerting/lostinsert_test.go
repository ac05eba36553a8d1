package alerting_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"beaconhub/appliance/clock"
	"beaconhub/appliance/ingest"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// failOnce is the rig's writer, except that the next op submitted while
// armed fails as a commit that hit a disk error would.
type failOnce struct {
	*store.Writer
	armed atomic.Bool
}

var errDisk = errors.New("injected: fsync failed")

func (f *failOnce) Do(fn func(tx *bolt.Tx) error, done func(error)) {
	if f.armed.CompareAndSwap(true, false) {
		if done != nil {
			done(errDisk)
		}
		return
	}
	f.Writer.Do(fn, done)
}

// TestPressWhoseInsertFailedIsNotAcknowledgedAndItsResendCounts: a press
// at QoS 1 whose event insert does not commit must get no PUBACK, and the
// gateway's resend, inside the dedup window of the event that exists only
// in memory, must store an event and reach alertsys. Before, the failed
// insert's publish was acknowledged (only failed readings withheld the
// PUBACK), and the resend merged into the missing event, was acknowledged
// too, and stored nothing: the press was lost.
func TestPressWhoseInsertFailedIsNotAcknowledgedAndItsResendCounts(t *testing.T) {
	clk := clock.NewFake(t0)
	r := newRig(t, "", clk, liveConfig(t, ""))
	_ = r.pipe.Close()
	w := &failOnce{Writer: r.writer}
	r.pipe = ingest.New(ingest.Options{Registry: r.reg, Writer: w, Clock: clk, Logger: quiet})
	r.pipe.AddSubscriber(r.svc)

	payload := []byte(`{"reports":[` + press(panicMAC, "single", -55) + `]}`)
	w.armed.Store(true)
	if err := r.pipe.HandlePublish(gatewayMAC(1), "gw/"+gatewayMAC(1)+"/adv4", payload, 1); err == nil {
		t.Fatal("the publish whose event was not stored was acknowledged")
	}
	if evs := r.events(); len(evs) != 0 {
		t.Fatalf("events after the failed insert: %+v", evs)
	}
	clk.Advance(2 * time.Second) // the gateway resends
	if err := r.pipe.HandlePublish(gatewayMAC(1), "gw/"+gatewayMAC(1)+"/adv4", payload, 1); err != nil {
		t.Fatalf("resend: %v", err)
	}
	evs := r.events()
	if len(evs) != 1 || evs[0].AssetUID != panicUID || evs[0].Status != store.EventAlert {
		t.Fatalf("events after the resend: %+v", evs)
	}
	if got := r.enq.events(); len(got) != 1 || got[0].ID != evs[0].ID {
		t.Fatalf("alertsys got %+v, want event %d", got, evs[0].ID)
	}
	// Another gateway's copy of the same press now merges into it.
	if err := r.pipe.HandlePublish(gatewayMAC(2), "gw/"+gatewayMAC(2)+"/adv4", []byte(`{"reports":[`+press(panicMAC, "single", -60)+`]}`), 1); err != nil {
		t.Fatalf("second gateway: %v", err)
	}
	if evs := r.events(); len(evs) != 1 || evs[0].Reports != 2 {
		t.Fatalf("events after the second gateway: %+v", evs)
	}
}

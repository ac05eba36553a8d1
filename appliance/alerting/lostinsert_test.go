package alerting_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"beaconhub/appliance/alerting"
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

// TestResendAfterTheWindowIsTheSamePress: a gateway that got no PUBACK
// (the appliance lost power right after the commit) resends the same
// message once it reconnects, here 90 s later across a restart, past the
// 40 s dedup window. The same gateway timestamp makes it the same press:
// no second event, no second alertsys convene. A new press with its own
// timestamp after the window is a new event.
func TestResendAfterTheWindowIsTheSamePress(t *testing.T) {
	clk := clock.NewFake(t0)
	live := liveConfig(t, "")
	r := newRig(t, "", clk, live)
	sent := clk.Now().UnixMilli()
	msg := func(ts int64) []byte {
		return []byte(fmt.Sprintf(`{"ts":%d,"reports":[%s]}`, ts, press(panicMAC, "single", -55)))
	}
	pub := func(r *rig, gw int, body []byte) {
		t.Helper()
		if err := r.pipe.HandlePublish(gatewayMAC(gw), "gw/"+gatewayMAC(gw)+"/adv4", body, 1); err != nil {
			t.Fatal(err)
		}
	}
	pub(r, 1, msg(sent))
	pub(r, 2, msg(sent+250)) // another gateway's copy, its own clock
	r.close()

	clk.Advance(90 * time.Second)
	r2 := newRig(t, r.dir, clk, live)
	pub(r2, 1, msg(sent))     // the resends: same bytes, same gateway timestamps,
	pub(r2, 2, msg(sent+250)) // whichever gateway's PUBACK was lost
	evs := r2.events()
	if len(evs) != 1 || evs[0].Reports != 4 {
		t.Fatalf("events after the resends: %+v", evs)
	}
	if n := len(r.enq.events()) + len(r2.enq.events()); n != 1 {
		t.Fatalf("alertsys convened %d times, want 1", n)
	}
	// A new press, with its own timestamp, is a new event.
	pub(r2, 1, msg(clk.Now().UnixMilli()))
	if evs := r2.events(); len(evs) != 2 {
		t.Fatalf("a new press after the window: %+v", evs)
	}
	// Past ResendHoldMS a resend is no longer recognised: the server
	// replaces a gateway timestamp that old with its receive time, and
	// the sweep has forgotten the event.
	clk.Advance(time.Duration(alerting.ResendHoldMS+60_000) * time.Millisecond)
	pub(r2, 1, msg(sent))
	if evs := r2.events(); len(evs) != 3 {
		t.Fatalf("after the hold: %+v", evs)
	}
}

// TestResendFromAnyOfManyGateways: a press heard by more gateways than
// the event's ring of last timestamps holds (each with its own clock,
// some reporting twice) is still one press when the first of them
// resends after the window, live and across a restart. The ring held
// the last four timestamps only: the first gateway's resend made a
// second event and a second convene (a review).
func TestResendFromAnyOfManyGateways(t *testing.T) {
	clk := clock.NewFake(t0)
	live := liveConfig(t, "")
	r := newRig(t, "", clk, live)
	sent := clk.Now().UnixMilli()
	msg := func(ts int64) []byte {
		return []byte(fmt.Sprintf(`{"ts":%d,"reports":[%s]}`, ts, press(panicMAC, "single", -55)))
	}
	pub := func(r *rig, gw int, body []byte) {
		t.Helper()
		if err := r.pipe.HandlePublish(gatewayMAC(gw), "gw/"+gatewayMAC(gw)+"/adv4", body, 1); err != nil {
			t.Fatal(err)
		}
	}
	const gateways = 6
	for gw := 1; gw <= gateways; gw++ {
		own := sent + int64(gw)*137 // each gateway's clock
		pub(r, gw, msg(own))
		pub(r, gw, msg(own+900)) // the button repeats its press
	}
	clk.Advance(50 * time.Second) // past the 40 s window
	pub(r, 1, msg(sent+137))      // gateway 1 got no PUBACK for its first
	pub(r, 2, msg(sent+2*137+900))
	if evs := r.events(); len(evs) != 1 {
		t.Fatalf("live resends: %d events", len(evs))
	}
	r.close()
	clk.Advance(20 * time.Second)
	r2 := newRig(t, r.dir, clk, live)
	pub(r2, 1, msg(sent+137))
	pub(r2, 3, msg(sent+3*137+900)) // its second report
	evs := r2.events()
	if len(evs) != 1 || evs[0].Reports != 2*gateways+4 {
		t.Fatalf("events after the resends across a restart: %+v", evs)
	}
	if n := len(r.enq.events()) + len(r2.enq.events()); n != 1 {
		t.Fatalf("alertsys convened %d times, want 1", n)
	}
	// A new press from gateway 1, with a later timestamp of its clock,
	// is a new event.
	pub(r2, 1, msg(sent+137+70_000))
	if evs := r2.events(); len(evs) != 2 {
		t.Fatalf("a new press after the window: %d events", len(evs))
	}
}

// TestANewPressAfterAClockStepBackIsNotAResend: a gateway whose clock ran
// two minutes ahead is set right (NTP) between two presses; the second
// press carries a timestamp between two of the first's. It is a new
// press: only an exact timestamp marks a resend (a span of each
// gateway's timestamps merged it away: a review).
func TestANewPressAfterAClockStepBackIsNotAResend(t *testing.T) {
	clk := clock.NewFake(t0)
	r := newRig(t, "", clk, liveConfig(t, ""))
	msg := func(ts int64) []byte {
		return []byte(fmt.Sprintf(`{"ts":%d,"reports":[%s]}`, ts, press(panicMAC, "single", -55)))
	}
	pub := func(b []byte) {
		t.Helper()
		if err := r.pipe.HandlePublish(gatewayMAC(1), "gw/"+gatewayMAC(1)+"/adv4", b, 1); err != nil {
			t.Fatal(err)
		}
	}
	real0 := clk.Now().UnixMilli()
	pub(msg(real0 + 120_000)) // two minutes ahead
	clk.Advance(2 * time.Second)
	pub(msg(real0 + 122_000))
	clk.Advance(119 * time.Second) // the gateway's clock set right
	pub(msg(clk.Now().UnixMilli()))
	if n, c := len(r.events()), len(r.enq.events()); n != 2 || c != 2 {
		t.Fatalf("%d events, %d convened: the second press was taken for a resend", n, c)
	}
}

package sensors

import (
	"testing"
	"time"

	"beaconhub/appliance/ingest"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// A cache upload, newest first (as TestAnOlderReportInAFresherBatchIsLate),
// but the corridor's newest report is 1 s newer than the kitchen's last
// judged one: it made the corridor the last judged gateway, and its own
// 2-min-old 12 °C in the same batch was judged (a review).
func TestACacheUploadNewestFirstPagesNobody(t *testing.T) {
	r := newCondRig(t)
	warmBoth(r, 0, 0)
	r.clk.Advance(2 * time.Minute)
	r.wire(gwKitchen, wireMsg(ms(r.clk.Now()), 5))
	r.clk.Advance(time.Second)
	c, a, b := temp(5), temp(5), temp(12)
	c.TS = ms(r.clk.Now())
	a.TS = ms(r.clk.Now().Add(-20 * time.Second))
	b.TS = ms(r.clk.Now().Add(-2 * time.Minute))
	r.batchOf(gwCorridor, []ingest.Report{c, a, b})
	r.expect() // the fridge is at 5 °C: no page
}

// The same over two messages (QoS 1 redelivery over an overlapping
// reconnect): the corridor's own fresh reading, 1 s newer than the
// kitchen's, then its 2-min-old 12 °C.
func TestARedeliveredOldReadingPagesNobody(t *testing.T) {
	r := newCondRig(t)
	warmBoth(r, 0, 0)
	r.clk.Advance(2 * time.Minute)
	r.wire(gwKitchen, wireMsg(ms(r.clk.Now()), 5))
	r.clk.Advance(time.Second)
	r.wire(gwCorridor, wireMsg(ms(r.clk.Now()), 5))
	r.wire(gwCorridor, wireMsg(ms(r.clk.Now().Add(-2*time.Minute)), 12))
	r.expect()
}

// Estimates were never forgotten (a gateway deleted, an id used once),
// and the store's were seeded first at start: once 20,000 gateway ids
// had ever sent readings, a gateway added later was never estimated and
// its late reading paged (a review). Estimates not renewed for 30 days
// are dropped at start.
func TestOldGatewayClocksDoNotFillTheTable(t *testing.T) {
	r := newCondRig(t)
	if err := r.db.Update(func(tx *bolt.Tx) error {
		for i := 0; i < maxGateways; i++ {
			if err := store.PutGatewayClock(tx, [6]byte{0xEE, 0, 0, byte(i >> 16), byte(i >> 8), byte(i)}, store.GatewayClock{At: r.clk.Now().Add(-31 * 24 * time.Hour).UnixMilli()}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	r.start()
	rng := r.key(CondRange, "Fridge")
	warmBoth(r, 0, 0)
	r.clk.Advance(2 * time.Minute)
	r.wire(gwKitchen, wireMsg(ms(r.clk.Now()), 5))
	r.wire(gwCorridor, wireMsg(ms(r.clk.Now().Add(-2*time.Minute)), 12))
	r.expect() // as TestALateReadingFromASlowGatewayIsNotJudged
	_ = rng
	if kept, err := r.db.GatewayClocks(0); err != nil || len(kept) > 10 {
		t.Fatalf("stale estimates left in the store: %d %v", len(kept), err)
	}
}

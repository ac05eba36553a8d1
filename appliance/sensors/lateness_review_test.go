package sensors

import (
	"fmt"
	"testing"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/ingest"
	"beaconhub/store"
)

// wire decodes payload as the pipeline does (topic gw/<gw>/adv1, now =
// the rig's clock) and feeds the Fridge's reports to Observe as one batch.
func (r *condRig) wire(gw ingest.MAC, payload string) {
	r.t.Helper()
	now := r.clk.Now().UnixMilli()
	var m ingest.Message
	if !ingest.Decode("gw/"+fmt.Sprintf("%X", gw[:])+"/adv1", []byte(payload), now, &m) {
		r.t.Fatalf("dropped: %+v", m.Drops)
	}
	b := &ingest.Batch{Gateway: gw, Kind: ingest.KindAdv1, Received: now}
	for _, rep := range m.Reports {
		b.Obs = append(b.Obs, ingest.Observation{Report: rep,
			Asset: &assets.Asset{UID: r.uids["Fridge"], Kind: store.KindBeacon, Type: "sensor", Name: "Fridge"}})
	}
	var w ingest.Writes
	r.m.Observe(b, &w)
	for _, op := range w.Ops {
		if err := r.db.Update(op); err != nil {
			r.t.Fatal(err)
		}
	}
}

func wireMsg(ts int64, temp float64) string {
	return fmt.Sprintf(`{"ts":%d,"reports":[{"mac":"C3000000000A","rssi":-60,"temperature":%g}]}`, ts, temp)
}

// batchOf feeds several reports of the Fridge from gw as one batch, each
// with its own gateway ts.
func (r *condRig) batchOf(gw ingest.MAC, reps []ingest.Report) {
	r.t.Helper()
	now := r.clk.Now().UnixMilli()
	b := &ingest.Batch{Gateway: gw, Kind: ingest.KindAdv1, Received: now}
	for _, rep := range reps {
		rep.Has |= ingest.HasTS
		b.Obs = append(b.Obs, ingest.Observation{Report: rep,
			Asset: &assets.Asset{UID: r.uids["Fridge"], Kind: store.KindBeacon, Type: "sensor", Name: "Fridge"}})
	}
	var w ingest.Writes
	r.m.Observe(b, &w)
	for _, op := range w.Ops {
		if err := r.db.Update(op); err != nil {
			r.t.Fatal(err)
		}
	}
}

func warmBoth(r *condRig, kitchenSkew, corridorSkew time.Duration) {
	for i := 0; i < 3; i++ {
		r.wire(gwKitchen, wireMsg(ms(r.clk.Now().Add(kitchenSkew)), 5))
		r.wire(gwCorridor, wireMsg(ms(r.clk.Now().Add(corridorSkew)), 5))
		r.clk.Advance(20 * time.Second)
	}
	r.expect()
}

// The appliance restarts; the corridor gateway's first message after it
// is what it queued 2 minutes ago (12 °C), after the kitchen's fresh
// 5 °C. With the estimates in memory only, the flush set the corridor's
// own and looked on time: staff were paged right after a restart, when
// every gateway flushes (a review). The estimates are kept in the store.
func TestARestartKeepsTheGatewayClocks(t *testing.T) {
	r := newCondRig(t)
	warmBoth(r, 0, 0)
	r.start() // restart
	r.clk.Advance(2 * time.Minute)
	r.wire(gwKitchen, wireMsg(ms(r.clk.Now()), 5))
	r.wire(gwCorridor, wireMsg(ms(r.clk.Now().Add(-2*time.Minute)), 12)) // queued 2 min ago
	r.wire(gwCorridor, wireMsg(ms(r.clk.Now().Add(-90*time.Second)), 12))
	r.expect() // a fridge at 5 °C: no page
}

// One corridor message carries two reports of the fridge, newest
// first (a cache upload): 5 °C heard 20 s ago, 12 °C heard 2 min ago. The
// 12 °C one alone is late (the kitchen judged 5 °C just now); after the
// first report it was judged, because the last judged gateway became the
// corridor while the last judged time stayed the kitchen's (a review).
func TestAnOlderReportInAFresherBatchIsLate(t *testing.T) {
	r := newCondRig(t)
	warmBoth(r, 0, 0)
	r.clk.Advance(2 * time.Minute)
	r.wire(gwKitchen, wireMsg(ms(r.clk.Now()), 5))
	a, b := temp(5), temp(12)
	a.TS, b.TS = ms(r.clk.Now().Add(-20*time.Second)), ms(r.clk.Now().Add(-2*time.Minute))
	// the freshest report also sets the batch's delay: not a slow batch
	c := temp(5)
	c.TS = ms(r.clk.Now())
	r.batchOf(gwCorridor, []ingest.Report{c, a, b})
	r.expect()
}

// The same over two messages: the corridor's own fresh reading,
// 20 s behind the kitchen's (so not late), then its 2-min-old 12 °C
// (redelivered over an overlapping reconnect). Without the first one the
// second is late; with it, it pages.
func TestAGatewaysOwnFresherReadingDoesNotPassItsLateOne(t *testing.T) {
	for _, withOwn := range []bool{false, true} {
		t.Run(fmt.Sprint(withOwn), func(t *testing.T) {
			r := newCondRig(t)
			warmBoth(r, 0, 0)
			r.clk.Advance(2 * time.Minute)
			r.wire(gwKitchen, wireMsg(ms(r.clk.Now()), 5))
			r.clk.Advance(time.Second)
			if withOwn {
				r.wire(gwCorridor, wireMsg(ms(r.clk.Now().Add(-21*time.Second)), 5))
			}
			r.wire(gwCorridor, wireMsg(ms(r.clk.Now().Add(-2*time.Minute)), 12))
			r.expect()
		})
	}
}

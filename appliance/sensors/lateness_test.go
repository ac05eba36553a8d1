package sensors

import (
	"testing"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/ingest"
	"beaconhub/store"
)

var (
	gwKitchen  = ingest.MAC{0xAC, 0x23, 0x3F, 0xA0, 0xB1, 0xC2}
	gwCorridor = ingest.MAC{0xAC, 0x23, 0x3F, 0xA0, 0xB1, 0xC3}
)

// feedVia is feed from gateway gw, with the reading's ts given (the
// gateway's clock) and received now.
func (r *condRig) feedVia(gw ingest.MAC, name string, rep ingest.Report, ts int64) {
	r.t.Helper()
	rep.TS, rep.Has = ts, rep.Has|ingest.HasTS
	r.feedRaw(gw, name, rep)
}

// feedRaw is feedVia with the report's TS and Has as given (a report
// without HasTS has the receive time, as the decoder gives it).
func (r *condRig) feedRaw(gw ingest.MAC, name string, rep ingest.Report) {
	r.t.Helper()
	now := r.clk.Now().UnixMilli()
	if rep.Has&ingest.HasTS == 0 {
		rep.TS = now
	}
	b := &ingest.Batch{Gateway: gw, Kind: ingest.KindAdv1, Received: now, Obs: []ingest.Observation{{Report: rep,
		Asset: &assets.Asset{UID: r.uids[name], Kind: store.KindBeacon, Type: r.types[name], Name: name}}}}
	var w ingest.Writes
	r.m.Observe(b, &w)
	for _, op := range w.Ops {
		if err := r.db.Update(op); err != nil {
			r.t.Fatal(err)
		}
	}
}

func ms(t time.Time) int64 { return t.UnixMilli() }

// The corridor gateway delivers, after a 2-minute stall, a reading of
// 12 °C taken before the fridge was back at 5 °C (the kitchen gateway's
// reading, delivered on time). Judged in arrival order it paged "out of
// range" for a fridge that is fine. Its fresh readings are judged.
func TestALateReadingFromASlowGatewayIsNotJudged(t *testing.T) {
	r := newCondRig(t)
	rng := r.key(CondRange, "Fridge")
	for i := 0; i < 3; i++ { // both deliver on time: their offsets are known
		r.feedVia(gwKitchen, "Fridge", temp(5), ms(r.clk.Now()))
		r.feedVia(gwCorridor, "Fridge", temp(5), ms(r.clk.Now()))
		r.clk.Advance(20 * time.Second)
	}
	r.expect()
	r.clk.Advance(2 * time.Minute)
	r.feedVia(gwKitchen, "Fridge", temp(5), ms(r.clk.Now()))
	r.feedVia(gwCorridor, "Fridge", temp(12), ms(r.clk.Now().Add(-2*time.Minute))) // the stalled one
	r.expect()
	r.clk.Advance(10 * time.Second)
	r.feedVia(gwCorridor, "Fridge", temp(12), ms(r.clk.Now())) // now it is warm
	r.expect(rng + " active")
}

// Gateways' clocks 4 minutes off the server's either way (inside the
// contract's 5-minute window) hide none of their genuine readings: the
// kitchen runs ahead, the corridor behind, and each one's reading after
// the other's is judged.
func TestGatewayClocksOffHideNoReadings(t *testing.T) {
	for _, skew := range []time.Duration{4 * time.Minute, -4 * time.Minute} {
		r := newCondRig(t)
		rng := r.key(CondRange, "Fridge")
		kitchen := func(v float32) { r.feedVia(gwKitchen, "Fridge", temp(v), ms(r.clk.Now().Add(skew))) }
		corridor := func(v float32) { r.feedVia(gwCorridor, "Fridge", temp(v), ms(r.clk.Now().Add(-skew))) }
		kitchen(5)
		corridor(5)
		r.clk.Advance(time.Minute)
		kitchen(5)
		r.clk.Advance(time.Second)
		corridor(12)
		r.expect(rng + " active")
		r.clk.Advance(time.Second)
		kitchen(5)
		r.expect(rng + " resolved")
		r.clk.Advance(time.Second)
		corridor(12)
		r.expect(rng + " active")
	}
}

// A gateway whose clock steps back 3 min, alone hearing the fridge:
// its readings look 3 min old on its estimate, older than the last
// judged, and wait; once they are newer than it (about 3 min), judging
// goes on, before the estimate follows. The price of not exempting one
// gateway's own readings (a cache upload newest first paged).
func TestAGatewayClockStepBackDelaysJudgingByTheStep(t *testing.T) {
	r := newCondRig(t)
	rng := r.key(CondRange, "Fridge")
	step := -3 * time.Minute
	r.feedVia(gwKitchen, "Fridge", temp(5), ms(r.clk.Now()))
	var judged time.Duration
	for i := 1; i <= 10 && judged == 0; i++ {
		r.clk.Advance(time.Minute)
		r.feedVia(gwKitchen, "Fridge", temp(12), ms(r.clk.Now().Add(step)))
		r.mu.Lock()
		n := len(r.recs)
		r.mu.Unlock()
		if n > 0 {
			judged = time.Duration(i) * time.Minute
		}
	}
	r.expect(rng + " active")
	if judged > 4*time.Minute {
		t.Fatalf("a gateway clock stepped back 3 min: its 12 °C judged after %v", judged)
	}
}

// Readings without a ts of their own (the receive time) are judged as
// they come, whichever gateway delivers them.
func TestReadingsWithoutTimestampsAreJudgedAsTheyCome(t *testing.T) {
	r := newCondRig(t)
	rng := r.key(CondRange, "Fridge")
	r.feedVia(gwKitchen, "Fridge", temp(5), ms(r.clk.Now().Add(-time.Minute))) // an estimate for the kitchen
	r.clk.Advance(time.Minute)
	r.feedVia(gwKitchen, "Fridge", temp(5), ms(r.clk.Now()))
	r.clk.Advance(-2 * time.Minute) // the server's clock steps back
	r.feedRaw(gwCorridor, "Fridge", temp(12))
	r.expect(rng + " active")
	r.clk.Advance(time.Second)
	r.feedRaw(gwKitchen, "Fridge", temp(5))
	r.expect(rng + " resolved")
}

// The server's clock steps back 2 minutes (the gateways' clocks do not):
// each gateway's estimate follows at its next reading, so none of their
// fresh readings looks late against the ones judged before the step.
func TestAServerClockStepBackHidesNoReadings(t *testing.T) {
	r := newCondRig(t)
	rng := r.key(CondRange, "Fridge")
	real := r.clk.Now()
	r.feedVia(gwKitchen, "Fridge", temp(5), ms(real))
	r.feedVia(gwCorridor, "Fridge", temp(5), ms(real))
	r.clk.Advance(-2 * time.Minute)
	r.clk.Advance(time.Second)
	r.feedVia(gwCorridor, "Fridge", temp(12), ms(real.Add(time.Second)))
	r.expect(rng + " active")
	r.clk.Advance(time.Second)
	r.feedVia(gwKitchen, "Fridge", temp(5), ms(real.Add(2*time.Second)))
	r.expect(rng + " resolved")
}

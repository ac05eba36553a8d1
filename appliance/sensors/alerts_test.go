package sensors

import (
	"testing"
	"time"

	"beaconhub/appliance/ingest"
	"beaconhub/store"
)

// With the condition log, the alert list reads only the out-of-range
// episodes and finds the same readings as a scan of the whole history.
func TestAlertsFromEpisodesMatchFullScan(t *testing.T) {
	r := newCondRig(t)
	uid := r.uids["Fridge"]
	for _, v := range []float32{5, 9, 10, 11, 4, 5, 1, 0.5, 3, 12, 13, 14, 15, 16, 17, 18, 19, 6} {
		r.clk.Advance(time.Minute)
		r.feed(ingest.KindAdv1, "Fridge", temp(v))
		put(t, r.db, []store.Reading{{UID: uid, Metric: Temperature, TS: r.clk.Now().UnixMilli(), Value: float64(v)}})
	}
	now := r.clk.Now().UnixMilli()
	full, err := (&Service{DB: r.db}).Alerts(now)
	if err != nil {
		t.Fatal(err)
	}
	fast, err := (&Service{DB: r.db, Conds: r.m.Conds}).Alerts(now)
	if err != nil {
		t.Fatal(err)
	}
	if len(full) != AlertLimit || len(fast) != AlertLimit {
		t.Fatalf("full %d fast %d alerts", len(full), len(fast))
	}
	for i := range full {
		a, b := full[i], fast[i]
		if a.TS != b.TS || a.Value != b.Value || a.Metric != b.Metric || a.AssetUID != b.AssetUID || *a.Range != *b.Range {
			t.Fatalf("alert %d: %+v vs %+v", i, full[i], fast[i])
		}
	}
	if full[0].Value != 19 || full[9].Value != 1 {
		t.Fatalf("alerts %+v", full)
	}
}

// A reading without a gateway ts (the receive time) starts the episode;
// another gateway's backlog, with ts 20 s before it and not late, ends
// it: the recovery's time is earlier than the start. The episode read
// was empty and the 12 °C that raised the alert left the list (a
// black-box check); the spans are widened by the gateways' allowed clock
// skew, and merged, so no reading is listed twice.
func TestAlertsKeepAReadingWhoseEpisodeEndedBeforeItBegan(t *testing.T) {
	r := newCondRig(t)
	uid := r.uids["Fridge"]
	rng := r.key(CondRange, "Fridge")
	start := r.clk.Now()
	for i := 0; i < 3; i++ { // the kitchen gateway's clock is known, 20 s behind delivery
		r.feedVia(gwKitchen, "Fridge", temp(5), ms(r.clk.Now())-20_000)
		put(t, r.db, []store.Reading{{UID: uid, Metric: Temperature, TS: ms(r.clk.Now()) - 20_000, Value: 5}})
		r.clk.Advance(20 * time.Second)
	}
	r.feedRaw(gwCorridor, "Fridge", temp(12)) // no ts: the receive time
	put(t, r.db, []store.Reading{{UID: uid, Metric: Temperature, TS: ms(r.clk.Now()), Value: 12}})
	r.expect(rng + " active")
	r.clk.Advance(time.Second)
	back := ms(r.clk.Now()) - 20_000
	r.feedVia(gwKitchen, "Fridge", temp(5), back)
	put(t, r.db, []store.Reading{{UID: uid, Metric: Temperature, TS: back, Value: 5}})
	r.expect(rng + " resolved")
	// A second episode close by: the widened spans overlap.
	r.clk.Advance(time.Minute)
	r.feedRaw(gwCorridor, "Fridge", temp(13))
	put(t, r.db, []store.Reading{{UID: uid, Metric: Temperature, TS: ms(r.clk.Now()), Value: 13}})
	r.expect(rng + " active")

	got, err := (&Service{DB: r.db, Conds: r.m.Conds}).Alerts(ms(r.clk.Now()))
	if err != nil {
		t.Fatal(err)
	}
	var vals []float64
	for _, a := range got {
		vals = append(vals, a.Value)
	}
	if len(vals) != 2 || vals[0] != 13 || vals[1] != 12 {
		t.Fatalf("alerts %v since %v, want [13 12]", vals, start)
	}
}

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

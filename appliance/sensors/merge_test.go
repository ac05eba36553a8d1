package sensors

import (
	"testing"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/clock"
	"beaconhub/store"
)

// TestMergeLeavesTheLatestReadingsTheHistoryHolds runs a real merge of
// two sources into a survivor, with the recorder connected, and checks
// that the latest reading of every metric in memory is the history's
// after the merge: the exclusive windows (docs/api.md "Merge") delete a
// source's older readings, metric by metric this can leave the survivor's
// own reading, an earlier source's or none.
func TestMergeLeavesTheLatestReadingsTheHistoryHolds(t *testing.T) {
	db := openDB(t)
	clk := clock.NewFake(time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC))
	svc, create := assetsWithLocation(t, db, clk)
	var views []assets.BeaconView
	for _, mac := range []string{"C3000000000A", "C3000000000B", "C3000000000C"} {
		views = append(views, create(map[string]any{"mac": mac, "name": mac, "type": "sensor"}))
	}
	surv, src0, src1 := views[0].AssetUID, views[1].AssetUID, views[2].AssetUID
	base := clk.Now().Add(-time.Hour).UnixMilli()
	at := func(s int64) int64 { return base + s*1000 }
	put(t, db, []store.Reading{
		{UID: surv, Metric: Temperature, TS: at(100), Value: 4},
		{UID: surv, Metric: Humidity, TS: at(300), Value: 50},   // the survivor's newest: src0 keeps > 300
		{UID: src0, Metric: Temperature, TS: at(250), Value: 5}, // deleted by the window
		{UID: src0, Metric: Battery, TS: at(50), Value: 2900},   // deleted: no battery survives
		{UID: src0, Metric: Humidity, TS: at(350), Value: 40},   // kept; src1 keeps > 350
		{UID: src1, Metric: Humidity, TS: at(340), Value: 30},   // deleted
		{UID: src1, Metric: Temperature, TS: at(400), Value: 6}, // kept
	})
	rec := NewRecorder()
	if err := rec.Restore(db); err != nil {
		t.Fatal(err)
	}
	svc.Connect(assets.IngestHooks{Recorder: rec})

	if _, err := svc.Merge(surv, assets.MergeInput{SourceIDs: []uint64{views[1].ID, views[2].ID}}); err != nil {
		t.Fatal(err)
	}
	latest, err := db.LatestReadings()
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint8]Latest{}
	for _, r := range latest {
		if r.UID != surv {
			if r.UID == src0 || r.UID == src1 {
				t.Errorf("the history still holds %s's reading %+v", r.UID, r)
			}
			continue
		}
		want[r.Metric] = Latest{TS: r.TS, Value: r.Value}
	}
	if len(want) != 2 || want[Temperature].TS != at(400) || want[Humidity].TS != at(350) {
		t.Fatalf("the history after the merge: %+v (the test's premise)", want)
	}
	for _, m := range []uint8{Temperature, Humidity, Battery} {
		got, ok := rec.Latest(surv, m)
		if w, has := want[m]; ok != has || got != w {
			t.Errorf("metric %d: memory %+v (%v), history %+v (%v)", m, got, ok, w, has)
		}
	}
	for _, uid := range []string{src0, src1} {
		if _, ok := rec.Latest(uid, Humidity); ok {
			t.Errorf("%s still has readings in memory", uid)
		}
	}
}

package sensors

import (
	"testing"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/ingest"
	"beaconhub/store"
)

// A remint renames a legacy fridge in alarm: the store commit renames its
// range condition (LEGACY-… -> SEN-…) at once, and the in-memory state
// follows later, in finishRemint's moveLive, after every asset's own
// commit, the writer flush, the sweep and the earlier renames' followers
// (push saves its state once per rename). The minute's not-seen tick runs
// on its own timer; when it falls in that window its Reload sees only the
// new uid while Conds still holds the old one. A former uid is not
// resolved as gone (it was: "No longer monitored" for a fridge at 12 °C),
// and the blank state the tick made for the new uid does not take the
// place of the old one's (it did, and no reading could end the alarm
// after: both a review). The test makes the tick fall there (the assets
// service here has no followers: moveLive's calls are made by hand
// after the tick), and the next in-range reading ends the alarm.
func TestARemintWindowDoesNotEndALiveFridgesAlarm(t *testing.T) {
	db := openDB(t)
	clk := clock.NewFake(time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC))
	svc, _ := assetsWithLocation(t, db, clk)
	locs, err := svc.Locations()
	if err != nil || len(locs) == 0 {
		t.Fatal(locs, err)
	}
	const legacy = "LEGACY-C3000000000D"
	if err := db.CreateBeacon(&store.Beacon{AssetUID: legacy, MAC: "C3000000000D", Name: "Fridge L", Type: "sensor", Active: true,
		Status: store.AssetActive, LocationID: locs[0].ID, TemperatureRange: &store.Range{Min: 2, Max: 8}}); err != nil {
		t.Fatal(err)
	}
	m, err := NewMonitor(db, clk, nil)
	if err != nil {
		t.Fatal(err)
	}
	var recs []store.SensorConditionRecord
	m.Conds.Subscribe(func(r store.SensorConditionRecord) { recs = append(recs, r) })
	m.Start()
	t.Cleanup(m.Stop)
	feed := func(uid string, v float32) {
		now := clk.Now().UnixMilli()
		b := &ingest.Batch{Kind: ingest.KindAdv1, Received: now, Obs: []ingest.Observation{{Report: ingest.Report{Has: ingest.HasTemperature, Temperature: v, TS: now},
			Asset: &assets.Asset{UID: uid, Kind: store.KindBeacon, Type: "sensor", Name: "Fridge L"}}}}
		var w ingest.Writes
		m.Observe(b, &w)
		for _, op := range w.Ops {
			if err := db.Update(op); err != nil {
				t.Fatal(err)
			}
		}
	}
	feed(legacy, 12)
	if !m.Conds.IsActive(CondRange, legacy) {
		t.Fatal("12 °C did not open the range condition")
	}
	res, err := svc.RemintApply() // the commits; followers not told yet
	if err != nil || len(res.Reminted) != 1 {
		t.Fatalf("remint: %+v %v", res, err)
	}
	newUID := res.Reminted[0].NewUID
	recs = nil
	clk.Advance(time.Minute) // the minute's tick, inside the window
	// moveLive, then RenamesDone, as finishRemint does after the tick.
	m.Rename(legacy, newUID)
	m.RenamesDone()
	var ended []string
	for _, r := range recs {
		ended = append(ended, r.Key+" "+r.Phase+" "+r.Message)
	}
	active, _ := db.ActiveSensorConditions()
	var inStore []string
	for _, c := range active {
		inStore = append(inStore, c.Key)
	}
	// Back in range: the store's range:<new> must end.
	window := len(recs)
	feed(newUID, 5)
	stillStored := false
	if after, _ := db.ActiveSensorConditions(); len(after) > 0 {
		stillStored = true
	}
	if window > 0 || stillStored {
		t.Fatalf("fridge at 12 °C reminted (%s -> %s): transitions %q; in memory active=%v; active in the store %q; after a 5 °C reading still active in the store: %v",
			legacy, newUID, ended, m.Conds.IsActive(CondRange, newUID), inStore, stillStored)
	}
}

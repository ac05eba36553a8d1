package sensors

import (
	"testing"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/ingest"
	"beaconhub/store"
)

// TestRecorderMergeKeepsWhatTheHistoryKept: a merge folds the source
// onto a survivor that has readings of its own. The history keeps only
// the source's readings newer than the survivor's newest (the exclusive
// window, docs/api.md "Merge"), and the latest readings in memory must
// agree with it, metric by metric: the survivor's battery does not vanish
// because the source's temperature is newer, and a source humidity the
// merge deleted is not shown although it is newer than the survivor's.
func TestRecorderMergeKeepsWhatTheHistoryKept(t *testing.T) {
	r := NewRecorder()
	feed := func(uid string, kind ingest.Kind, ts int64, rep ingest.Report) {
		rep.TS = ts
		var w ingest.Writes
		r.Observe(&ingest.Batch{Kind: kind, Received: ts, Obs: []ingest.Observation{{Report: rep,
			Asset: &assets.Asset{UID: uid, Kind: store.KindBeacon}}}}, &w)
	}
	feed("SURV", ingest.KindAdv1, 1000, ingest.Report{Has: ingest.HasTemperature | ingest.HasHumidity, Temperature: 4, Humidity: 50})
	feed("SURV", ingest.KindAdv8, 2000, ingest.Report{Has: ingest.HasVBatt, VBatt: 2900})
	feed("SRC", ingest.KindAdv1, 1500, ingest.Report{Has: ingest.HasHumidity, Humidity: 30})
	feed("SRC", ingest.KindAdv1, 3000, ingest.Report{Has: ingest.HasTemperature, Temperature: 6})

	r.MergeLatest("SRC", "SURV", 2000) // the survivor's newest reading
	for _, c := range []struct {
		metric uint8
		want   Latest
	}{
		{Temperature, Latest{TS: 3000, Value: 6}}, // kept by the window, newer
		{Humidity, Latest{TS: 1000, Value: 50}},   // the source's 1500 was deleted
		{Battery, Latest{TS: 2000, Value: 2900}},  // only the survivor had one
	} {
		if got, ok := r.Latest("SURV", c.metric); !ok || got != c.want {
			t.Errorf("metric %d: %+v %v, want %+v", c.metric, got, ok, c.want)
		}
	}
	if _, ok := r.Latest("SRC", Temperature); ok {
		t.Error("the source's uid still has readings after the merge")
	}
	// A remint renames onto a fresh uid and moves everything.
	r.Rename("SURV", "NEW")
	for _, m := range []uint8{Temperature, Humidity, Battery} {
		if _, ok := r.Latest("NEW", m); !ok {
			t.Errorf("metric %d lost by the rename", m)
		}
	}
	if _, ok := r.Latest("SURV", Battery); ok {
		t.Error("the old uid still has readings after the rename")
	}
}

package assets

import (
	"reflect"
	"testing"
	"time"

	"beaconhub/store"
)

func TestMergeExclusiveWindowsPlanEqualsApply(t *testing.T) {
	e := newEnv(t)
	h := e.loc("Hospital", "H1", 0)
	surv := e.beacon(BeaconInput{MAC: sp("C3000000000A"), Name: sp("fridge"), Type: sp("sensor"), LocationID: up(h)})
	var src []BeaconView
	for _, mac := range []string{"C3000000000B", "C3000000000C", "C3000000000D", "C3000000000E"} {
		src = append(src, e.beacon(BeaconInput{MAC: sp(mac), Name: sp(mac)}))
	}
	e.clock.Advance(time.Hour)
	e.readings(surv.AssetUID, 100, 200, 300)
	e.readings(src[0].AssetUID, 50, 250, 300, 350, 400) // overlaps the survivor up to 300
	e.readings(src[1].AssetUID, 10, 20)                 // entirely older: dropped, and no lowering of the mark
	e.readings(src[2].AssetUID, 390, 410, 420)          // window opens after src[0]'s last (400)
	// src[3] has no readings but is the newest device.
	ids := MergeInput{SourceIDs: []uint64{src[0].ID, src[1].ID, src[2].ID, src[3].ID}}

	plan, err := e.svc.PlanMerge(surv.AssetUID, ids)
	if err != nil {
		t.Fatal(err)
	}
	type win struct {
		after, until  *int64
		kept, dropped int
	}
	want := []win{{ip(300), ip(400), 2, 3}, {ip(400), ip(20), 0, 2}, {ip(400), ip(420), 2, 1}, {ip(420), nil, 0, 0}}
	for i, w := range want {
		s := plan.Sources[i]
		if !reflect.DeepEqual(s.After, w.after) || !reflect.DeepEqual(s.Until, w.until) || s.Kept != w.kept || s.Dropped != w.dropped {
			t.Errorf("source %d window = after %v until %v kept %d dropped %d; want %+v", i, deref(s.After), deref(s.Until), s.Kept, s.Dropped, w)
		}
	}
	if plan.SurvivorReadings != 3 || plan.Kept != 4 || plan.Dropped != 6 || plan.DeviceAfter != "C3000000000E" {
		t.Errorf("plan = %+v", plan)
	}
	if got := e.history(src[0].AssetUID); len(got) != 5 {
		t.Fatalf("plan wrote: %v", got)
	}

	done, err := e.svc.Merge(surv.AssetUID, ids)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(plan, done) {
		t.Errorf("plan != apply:\n%+v\n%+v", plan, done)
	}
	if got, want := e.history(surv.AssetUID), []int64{100, 200, 300, 350, 400, 410, 420}; !reflect.DeepEqual(got, want) {
		t.Errorf("survivor history = %v, want %v", got, want)
	}
	for _, s := range src {
		if got := e.history(s.AssetUID); len(got) != 0 {
			t.Errorf("%s keeps %v", s.AssetUID, got)
		}
		v, _ := e.svc.Beacon(s.AssetUID)
		if v.Active || v.Status != store.AssetMerged || v.MergedInto != surv.ID || v.MAC != "" {
			t.Errorf("source after merge = %+v", v)
		}
	}
	e.resolves("C3000000000E", surv.AssetUID)
	for _, mac := range []string{"C3000000000A", "C3000000000B", "C3000000000C", "C3000000000D"} {
		e.resolves(mac, "")
	}
	as, _ := e.svc.Assignments(store.KindBeacon, surv.AssetUID)
	open := 0
	for _, a := range as {
		if a.Open {
			open++
			if a.MAC != "C3000000000E" {
				t.Errorf("open assignment %+v", a)
			}
		}
	}
	if len(as) != 5 || open != 1 {
		t.Errorf("assignments = %+v", as)
	}
	if ds, _ := e.svc.Devices(DeviceFilter{Status: store.DeviceAvailable}); len(ds) != 4 {
		t.Errorf("available = %+v", ds)
	}
	// Irreversible: the sources are gone from service.
	_, err = e.svc.Merge(surv.AssetUID, ids)
	wantField(t, err, "source_ids")
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestMergeValidation(t *testing.T) {
	e := newEnv(t)
	surv := e.beacon(BeaconInput{MAC: sp("C3000000000A"), Name: sp("s")})
	src := e.beacon(BeaconInput{MAC: sp("C3000000000B"), Name: sp("b")})
	e.readings(src.AssetUID, 1, 2)
	for name, ids := range map[string][]uint64{
		"empty":     {},
		"survivor":  {surv.ID},
		"duplicate": {src.ID, src.ID},
		"unknown":   {src.ID, 99},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := e.svc.Merge(surv.AssetUID, MergeInput{SourceIDs: ids})
			wantField(t, err, "source_ids")
			if got := e.history(src.AssetUID); len(got) != 2 {
				t.Errorf("refused merge wrote: %v", got)
			}
			e.resolves("C3000000000B", src.AssetUID)
		})
	}
	// Survivor without readings: the first source keeps everything.
	p, err := e.svc.Merge(surv.AssetUID, MergeInput{SourceIDs: []uint64{src.ID}})
	if err != nil || p.Sources[0].After != nil || p.Sources[0].Kept != 2 || p.DeviceAfter != "C3000000000B" {
		t.Errorf("merge = %+v %v", p, err)
	}
	e.resolves("C3000000000A", "")
}

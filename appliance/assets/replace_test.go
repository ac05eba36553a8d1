package assets

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"beaconhub/appliance/apperr"
	"beaconhub/store"
)

// replaceEnv: a coded hospital, a sensor SEN-H1-1 on device A with
// readings, and a leftover legacy row named after device B that holds B
// and B's readings (the situation replace with replaced_at is for).
func replaceEnv(t *testing.T) (*env, BeaconView, BeaconView) {
	e := newEnv(t)
	h := e.loc("Hospital", "H1", 0)
	rec := e.beacon(BeaconInput{MAC: sp("C3000000000A"), Name: sp("fridge"), Type: sp("sensor"), LocationID: up(h),
		CalibratedAt: ip(e.ago(24 * time.Hour)), CalibrationIntervalDays: intp(365)})
	donor := e.beacon(BeaconInput{MAC: sp("C3000000000B"), Name: sp("leftover")})
	e.clock.Advance(48 * time.Hour) // the devices were attached two days ago
	base := e.ago(10 * time.Hour)
	e.readings(rec.AssetUID, base+1, base+2)
	e.readings(donor.AssetUID, base+100, base+200, base+300, base+400, base+500)
	return e, rec, donor
}

func samePlan(t *testing.T, plan, done ReplacePlan) {
	t.Helper()
	done.AssignmentID = 0
	if !reflect.DeepEqual(plan, done) {
		t.Errorf("plan != apply:\nplan  %+v %+v\napply %+v %+v", plan, plan.Donor, done, done.Donor)
	}
}

func TestReplaceWithReplacedAtMovesOnlyLaterReadings(t *testing.T) {
	e, rec, donor := replaceEnv(t)
	base := e.ago(10 * time.Hour)
	in := ReplaceInput{MAC: "c3:00:00:00:00:0b", ReplacedAt: ip(base + 300), RetireDonor: true, LastCalibratedAt: ip(e.ago(time.Hour))}
	plan, err := e.svc.PlanReplace(store.KindBeacon, rec.AssetUID, in)
	if err != nil {
		t.Fatal(err)
	}
	if plan.ReadingsKept != 3 || plan.ReadingsMoved != 2 || !plan.DonorLeftWithoutDevice || plan.Donor.AssetUID != donor.AssetUID || !plan.Donor.Retired {
		t.Fatalf("plan = %+v %+v", plan, plan.Donor)
	}
	done, err := e.svc.Replace(store.KindBeacon, rec.AssetUID, in)
	if err != nil {
		t.Fatal(err)
	}
	samePlan(t, plan, done)
	if got := e.history(donor.AssetUID); len(got) != 3 || got[2] != base+300 {
		t.Errorf("donor keeps %v", got)
	}
	if got := e.history(rec.AssetUID); len(got) != 4 || got[2] != base+400 {
		t.Errorf("recipient has %v", got)
	}
	d, _ := e.svc.Beacon(donor.AssetUID)
	if d.Status != store.AssetRetired || d.Active || d.MAC != "" {
		t.Errorf("donor = %+v", d)
	}
	r, _ := e.svc.Beacon(rec.AssetUID)
	if r.MAC != "C3000000000B" || r.CalibrationIntervalDays != 365 || r.Calibration != CalOK {
		t.Errorf("recipient = %+v (interval is inherited from the outgoing device)", r)
	}
	e.resolves("C3000000000B", rec.AssetUID)
	e.resolves("C3000000000A", "")
	as, _ := e.svc.Assignments(store.KindBeacon, rec.AssetUID)
	if len(as) != 2 || as[0].MAC != "C3000000000A" || as[0].To != base+300 || !as[1].Open || as[1].From != base+300 {
		t.Errorf("assignments = %+v", as)
	}
	ds, _ := e.svc.Devices(DeviceFilter{Status: store.DeviceAvailable})
	if len(ds) != 1 || ds[0].MAC != "C3000000000A" {
		t.Errorf("available devices = %+v", ds)
	}
}

func TestReplaceNowRewritesNoHistory(t *testing.T) {
	e, rec, donor := replaceEnv(t)
	in := ReplaceInput{MAC: "C3000000000B", LastCalibratedAt: ip(e.ago(time.Hour)), OldDeviceStatus: store.DeviceInCalibration}
	plan, err := e.svc.PlanReplace(store.KindBeacon, rec.AssetUID, in)
	if err != nil {
		t.Fatal(err)
	}
	if plan.ReadingsKept != 5 || plan.ReadingsMoved != 0 || plan.RewritesHistory || plan.EffectiveAt != e.now() {
		t.Fatalf("plan = %+v", plan)
	}
	done, err := e.svc.Replace(store.KindBeacon, rec.AssetUID, in)
	if err != nil {
		t.Fatal(err)
	}
	samePlan(t, plan, done)
	if len(e.history(donor.AssetUID)) != 5 || len(e.history(rec.AssetUID)) != 2 {
		t.Errorf("history rewritten: %v %v", e.history(donor.AssetUID), e.history(rec.AssetUID))
	}
	d, _ := e.svc.Beacon(donor.AssetUID)
	if d.Status != store.AssetActive || d.MAC != "" {
		t.Errorf("donor (not retired) = %+v", d)
	}
	// The old device went for calibration: it cannot come back without a date.
	ds, _ := e.svc.Devices(DeviceFilter{Status: store.DeviceInCalibration})
	if len(ds) != 1 || ds[0].MAC != "C3000000000A" {
		t.Fatalf("in calibration = %+v", ds)
	}
	_, err = e.svc.Replace(store.KindBeacon, donor.AssetUID, ReplaceInput{MAC: "C3000000000A"})
	wantField(t, err, "mac")
	if _, err := e.svc.Replace(store.KindBeacon, donor.AssetUID, ReplaceInput{MAC: "C3000000000A", LastCalibratedAt: ip(e.now())}); err != nil {
		t.Errorf("device back from calibration: %v", err)
	}
	e.resolves("C3000000000A", donor.AssetUID)
}

func TestReplaceRules(t *testing.T) {
	e, rec, donor := replaceEnv(t)
	watch := e.beacon(BeaconInput{MAC: sp("C3000000000C"), Name: sp("w"), Type: sp("watch"), LocationID: up(1)})
	for name, tc := range map[string]struct {
		uid   string
		in    ReplaceInput
		field string
	}{
		"uncalibrated device for a sensor": {rec.AssetUID, ReplaceInput{MAC: "C3000000000D"}, "mac"},
		"malformed mac":                    {rec.AssetUID, ReplaceInput{MAC: "C3000000000"}, "mac"},
		"same device":                      {rec.AssetUID, ReplaceInput{MAC: "C3000000000A"}, "mac"},
		"replaced_at in the future":        {rec.AssetUID, ReplaceInput{MAC: "C3000000000B", ReplacedAt: ip(e.now() + 1), RequireCalibrated: bp(false)}, "replaced_at"},
		"replaced_at before current":       {rec.AssetUID, ReplaceInput{MAC: "C3000000000B", ReplacedAt: ip(1), RequireCalibrated: bp(false)}, "replaced_at"},
		"retire a real asset":              {watch.AssetUID, ReplaceInput{MAC: "C3000000000A", RetireDonor: true}, "retire_donor"},
		"bad old device status":            {watch.AssetUID, ReplaceInput{MAC: "C3000000000D", OldDeviceStatus: "lost"}, "old_device_status"},
		"future calibration":               {rec.AssetUID, ReplaceInput{MAC: "C3000000000D", LastCalibratedAt: ip(e.now() + 5)}, "last_calibrated_at"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := e.svc.Replace(store.KindBeacon, tc.uid, tc.in)
			wantField(t, err, tc.field)
			e.resolves("C3000000000A", rec.AssetUID)
			e.resolves("C3000000000B", donor.AssetUID)
			e.resolves("C3000000000C", watch.AssetUID)
		})
	}
	// The admin override, and no requirement for a watch.
	if _, err := e.svc.Replace(store.KindBeacon, rec.AssetUID, ReplaceInput{MAC: "C3000000000D", RequireCalibrated: bp(false)}); err != nil {
		t.Errorf("override: %v", err)
	}
	if _, err := e.svc.Replace(store.KindBeacon, watch.AssetUID, ReplaceInput{MAC: "C3000000000E", OldDeviceStatus: store.DeviceRetired}); err != nil {
		t.Errorf("watch: %v", err)
	}
	_, err := e.svc.Replace(store.KindBeacon, donor.AssetUID, ReplaceInput{MAC: "C3000000000C"})
	wantField(t, err, "mac") // retired devices never come back
	if _, err := e.svc.Replace(store.KindGateway, rec.AssetUID, ReplaceInput{MAC: "C3000000000F"}); apperr.KindOf(err) != apperr.KindNotFound {
		t.Errorf("beacon through the gateway route: %v", err)
	}
}

func TestGatewayReplaceTakesEffectNowOnly(t *testing.T) {
	e := newEnv(t)
	g, err := e.svc.CreateGateway(GatewayInput{MAC: sp("AC233FA0B1C2"), Name: sp("gw")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Replace(store.KindGateway, g.AssetUID, ReplaceInput{MAC: "AC233FA0B1C3", ReplacedAt: ip(e.now() - 10)})
	wantField(t, err, "replaced_at")
	if _, err := e.svc.Replace(store.KindGateway, g.AssetUID, ReplaceInput{MAC: "AC233FA0B1C3"}); err != nil {
		t.Fatal(err)
	}
	m, _ := ParseMAC("AC233FA0B1C3")
	if a, ok := e.svc.Registry().Gateway(m); !ok || a.UID != g.AssetUID {
		t.Errorf("gateway cache = %+v", a)
	}
	_, err = e.svc.Replace(store.KindGateway, g.AssetUID, ReplaceInput{MAC: "C3000000000A"})
	if err != nil {
		t.Fatal(err) // a fresh MAC becomes a gateway device
	}
	b, err := e.svc.CreateBeacon(BeaconInput{MAC: sp("AC233FA0B1C2"), Name: sp("b")})
	wantField(t, err, "mac") // a gateway device cannot become a beacon
	_ = b
}

func TestBatchReplace(t *testing.T) {
	e := newEnv(t)
	h := e.loc("Hospital", "H1", 0)
	var items []BatchItem
	for i := 0; i < MaxBatchReplace; i++ {
		b := e.beacon(BeaconInput{MAC: sp(fmt.Sprintf("C300000%05X", i)), Name: sp("w"), Type: sp("watch"), LocationID: up(h)})
		items = append(items, BatchItem{AssetUID: b.AssetUID, ReplaceInput: ReplaceInput{MAC: fmt.Sprintf("D300000%05X", i)}})
	}
	items[3].MAC = "nope"
	items[7].AssetUID = "WCH-H1-9999"
	items[11].ReplacedAt = ip(e.now() - 1)
	items[13].MAC = items[12].MAC // 12 takes it first; 13 then takes it from 12
	over := append(append([]BatchItem(nil), items...), items[0])
	if _, err := e.svc.ReplaceBatch(BatchInput{Replacements: over}); apperr.KindOf(err) != apperr.KindInvalid {
		t.Fatalf("201 items: %v", err)
	}
	e.resolves("C30000000000", "WCH-H1-1") // refused as a whole: nothing done
	_, err := e.svc.ReplaceBatch(BatchInput{})
	wantField(t, err, "replacements")

	res, err := e.svc.ReplaceBatch(BatchInput{Replacements: items})
	if err != nil {
		t.Fatal(err)
	}
	if res.Succeeded != 197 || res.Failed != 3 || len(res.Results) != 200 {
		t.Fatalf("batch: %d ok, %d failed", res.Succeeded, res.Failed)
	}
	for i, want := range map[int]struct {
		status int
		field  string
	}{3: {400, "mac"}, 7: {404, ""}, 11: {400, "replaced_at"}} {
		if r := res.Results[i]; r.OK || r.Status != want.status || r.Field != want.field || r.Error == "" {
			t.Errorf("item %d = %+v", i, r)
		}
	}
	if r := res.Results[13]; !r.OK || r.Result.Donor == nil || r.Result.Donor.AssetUID != items[12].AssetUID {
		t.Errorf("item 13 = %+v", r)
	}
	e.resolves("D30000000000", "WCH-H1-1")
	e.resolves("C30000000000", "")
	e.resolves("C30000000003", "WCH-H1-4") // failed item untouched
	e.resolves(items[12].MAC, items[13].AssetUID)
}

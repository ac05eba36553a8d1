package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/store"
)

// replaceSetup: a calibrated sensor SEN-H1-1 on device A, and a leftover
// LEGACY row holding device B with readings at base+100..500.
func replaceSetup(t *testing.T) (*assetHarness, int64) {
	h := newAssetHarness(t)
	root := h.location("Hospital", "H1", 0)
	h.beacon(map[string]any{"mac": "C3000000000A", "name": "Fridge", "type": "sensor", "location_id": root,
		"calibrated_at": h.clock.Now().UnixMilli() - 1, "calibration_interval_days": 365})
	h.beacon(map[string]any{"mac": "C3000000000B", "name": "leftover"})
	h.clock.Advance(24 * time.Hour)
	h.admin = h.token("admin") // the first one has expired
	base := h.clock.Now().UnixMilli() - 10_000
	h.readings("LEGACY-C3000000000B", base+100, base+200, base+300, base+400, base+500)
	return h, base
}

func TestReplaceDevicePlanEqualsApplyHTTP(t *testing.T) {
	for _, tc := range []struct {
		name        string
		extra       map[string]any
		kept, moved int
	}{
		{"now", map[string]any{}, 5, 0},
		{"replaced_at", map[string]any{"replaced_at": 300}, 3, 2},
		{"replaced_at and retire_donor", map[string]any{"replaced_at": 300, "retire_donor": true}, 3, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, base := replaceSetup(t)
			body := map[string]any{"mac": "C3:00:00:00:00:0B", "last_calibrated_at": base}
			for k, v := range tc.extra {
				if k == "replaced_at" {
					v = base + int64(v.(int))
				}
				body[k] = v
			}
			before := h.snapshot()
			var plan, done assets.ReplacePlan
			h.post("/api/v1/beacon/SEN-H1-1/replace-device/plan", body, http.StatusOK).decodePayload(t, &plan)
			if h.snapshot() != before {
				t.Fatal("plan wrote")
			}
			if plan.ReadingsKept != tc.kept || plan.ReadingsMoved != tc.moved || !plan.DonorLeftWithoutDevice {
				t.Fatalf("plan = %+v", plan)
			}
			h.post("/api/v1/beacon/SEN-H1-1/replace-device", body, http.StatusOK).decodePayload(t, &done)
			done.AssignmentID = 0
			if !reflect.DeepEqual(plan, done) {
				t.Errorf("plan %+v\napply %+v", plan, done)
			}
			if h.countHistory("SEN-H1-1") != tc.moved || h.countHistory("LEGACY-C3000000000B") != tc.kept {
				t.Errorf("history: recipient %d, donor %d", h.countHistory("SEN-H1-1"), h.countHistory("LEGACY-C3000000000B"))
			}
			var donor assets.BeaconView
			h.adminGet("/api/v1/beacon/LEGACY-C3000000000B", http.StatusOK).decodePayload(t, &donor)
			if retired := tc.extra["retire_donor"] == true; donor.MAC != "" || (donor.Status == "retired") != retired {
				t.Errorf("donor = %+v", donor)
			}
			var as struct {
				Assignments []assets.AssignmentView `json:"assignments"`
			}
			h.adminGet("/api/v1/beacon/SEN-H1-1/assignments", http.StatusOK).decodePayload(t, &as)
			if len(as.Assignments) != 2 || !as.Assignments[1].Open || as.Assignments[1].MAC != "C3000000000B" {
				t.Errorf("assignments = %+v", as)
			}
			m, _ := assets.ParseMAC("C3000000000B")
			if a, ok := h.reg.Registry().Beacon(m); !ok || a.UID != "SEN-H1-1" {
				t.Errorf("cache: %+v", a)
			}
		})
	}
}

func TestReplaceDeviceRefusalsHTTP(t *testing.T) {
	h, base := replaceSetup(t)
	before := h.snapshot()
	for name, tc := range map[string]struct {
		body  any
		field string
	}{
		"not calibrated":     {map[string]any{"mac": "C3000000000C"}, "mac"},
		"malformed mac":      {map[string]any{"mac": "xyz"}, "mac"},
		"future replaced_at": {map[string]any{"mac": "C3000000000B", "replaced_at": h.clock.Now().UnixMilli() + 1, "require_calibrated": false}, "replaced_at"},
		"bad old status":     {map[string]any{"mac": "C3000000000B", "old_device_status": "gone", "require_calibrated": false}, "old_device_status"},
		"string replaced_at": {map[string]any{"mac": "C3000000000B", "replaced_at": "yesterday"}, ""},
		"unknown field":      {map[string]any{"mac": "C3000000000B", "when": base}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			h.send("POST", "/api/v1/beacon/SEN-H1-1/replace-device", h.admin, tc.body).wantBad(t, tc.field)
			h.send("POST", "/api/v1/beacon/SEN-H1-1/replace-device/plan", h.admin, tc.body).wantBad(t, tc.field)
		})
	}
	if h.snapshot() != before {
		t.Fatal("refused replaces wrote")
	}
	h.send("POST", "/api/v1/beacon/NOPE-1/replace-device", h.admin, map[string]any{"mac": "C3000000000C"}).expect(t, http.StatusNotFound)
}

func TestBatchReplaceHTTP(t *testing.T) {
	h := newAssetHarness(t)
	root := h.location("Hospital", "H1", 0)
	if err := h.db.SeedBeacons(200, func(i int) store.Beacon {
		return store.Beacon{AssetUID: fmt.Sprintf("WCH-H1-%d", i+1), MAC: fmt.Sprintf("C300000%05X", i), Type: "watch", LocationID: root, Active: true}
	}); err != nil {
		t.Fatal(err)
	}
	if err := h.reg.Registry().Reload(); err != nil {
		t.Fatal(err)
	}
	items := make([]map[string]any, 0, 201)
	for i := 0; i < 200; i++ {
		items = append(items, map[string]any{"asset_uid": fmt.Sprintf("WCH-H1-%d", i+1), "mac": fmt.Sprintf("D300000%05X", i)})
	}
	items[5]["mac"] = "bad"
	items[6]["asset_uid"] = "WCH-H1-999"
	items[7]["replaced_at"] = 1
	over := append(append([]map[string]any(nil), items...), map[string]any{"asset_uid": "WCH-H1-1", "mac": "D3000000FFFF"})
	before := h.snapshot()
	h.send("POST", "/api/v1/assets/replace-device/batch", h.admin, map[string]any{"replacements": over}).wantBad(t, "replacements")
	h.send("POST", "/api/v1/assets/replace-device/batch", h.admin, map[string]any{"replacements": []any{}}).wantBad(t, "replacements")
	h.send("POST", "/api/v1/assets/replace-device/batch", h.admin, `{"replacements": [`).wantBad(t, "")
	if h.snapshot() != before {
		t.Fatal("refused batches wrote")
	}

	var res assets.BatchResult
	h.post("/api/v1/assets/replace-device/batch", map[string]any{"replacements": items}, http.StatusOK).decodePayload(t, &res)
	if res.Succeeded != 197 || res.Failed != 3 {
		t.Fatalf("batch = %d/%d: %+v", res.Succeeded, res.Failed, res.Results[0])
	}
	for i, status := range map[int]int{5: 400, 6: 404, 7: 400} {
		if r := res.Results[i]; r.OK || r.Status != status || r.Error == "" {
			t.Errorf("item %d = %+v", i, r)
		}
	}
	if res.Results[7].Field != "replaced_at" {
		t.Errorf("item 7 = %+v", res.Results[7])
	}
	for i, r := range res.Results {
		if i != 5 && i != 6 && i != 7 && (!r.OK || r.Result == nil || r.Result.MAC != fmt.Sprintf("D300000%05X", i)) {
			t.Fatalf("item %d = %+v", i, r)
		}
	}
	m, _ := assets.ParseMAC("D30000000000")
	if a, ok := h.reg.Registry().Beacon(m); !ok || a.UID != "WCH-H1-1" {
		t.Errorf("cache = %+v", a)
	}
}

func TestMergePlanEqualsApplyHTTP(t *testing.T) {
	h := newAssetHarness(t)
	root := h.location("Hospital", "H1", 0)
	surv := h.beacon(map[string]any{"mac": "C3000000000A", "name": "Fridge", "type": "sensor", "location_id": root})
	s1 := h.beacon(map[string]any{"mac": "C3000000000B", "name": "old 1"})
	s2 := h.beacon(map[string]any{"mac": "C3000000000C", "name": "old 2"})
	h.readings(surv.AssetUID, 100, 200)
	h.readings(s1.AssetUID, 150, 250, 300)
	h.readings(s2.AssetUID, 290, 310)
	body := map[string]any{"source_ids": []uint64{s1.ID, s2.ID}}
	before := h.snapshot()
	for name, b := range map[string]any{
		"strings":   `{"source_ids":["a"]}`,
		"negative":  `{"source_ids":[-1]}`,
		"empty":     map[string]any{"source_ids": []int{}},
		"survivor":  map[string]any{"source_ids": []uint64{surv.ID}},
		"unknown":   map[string]any{"source_ids": []uint64{s1.ID, 99}},
		"duplicate": map[string]any{"source_ids": []uint64{s1.ID, s1.ID}},
	} {
		t.Run(name, func(t *testing.T) {
			h.send("POST", "/api/v1/beacon/SEN-H1-1/merge", h.admin, b).wantBad(t, "")
			h.send("POST", "/api/v1/beacon/SEN-H1-1/merge/plan", h.admin, b).wantBad(t, "")
		})
	}
	var plan, done assets.MergePlan
	h.post("/api/v1/beacon/SEN-H1-1/merge/plan", body, http.StatusOK).decodePayload(t, &plan)
	if h.snapshot() != before {
		t.Fatal("plan or refusals wrote")
	}
	// s1 keeps 250, 300 (after the survivor's 200); s2 keeps 310 (after s1's 300).
	if plan.Kept != 3 || plan.Dropped != 2 || plan.Sources[0].Kept != 2 || *plan.Sources[1].After != 300 || plan.DeviceAfter != "C3000000000C" {
		t.Fatalf("plan = %s", mustJSON(plan))
	}
	h.post("/api/v1/beacon/SEN-H1-1/merge", body, http.StatusOK).decodePayload(t, &done)
	if !reflect.DeepEqual(plan, done) {
		t.Errorf("plan %s\napply %s", mustJSON(plan), mustJSON(done))
	}
	if h.countHistory("SEN-H1-1") != 5 || h.countHistory(s1.AssetUID) != 0 || h.countHistory(s2.AssetUID) != 0 {
		t.Errorf("history after merge: %d", h.countHistory("SEN-H1-1"))
	}
	h.send("POST", "/api/v1/beacon/SEN-H1-1/merge", h.admin, body).wantBad(t, "source_ids") // irreversible
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestRemintAndDevicesHTTP(t *testing.T) {
	h := newAssetHarness(t)
	root := h.location("Hospital", "H1", 0)
	if err := h.db.CreateBeacon(&store.Beacon{MAC: "C30000000A01", Type: "sensor", LocationID: root, Active: true}); err != nil {
		t.Fatal(err)
	}
	h.readings("C30000000A01", 100) // still keyed by the MAC
	h.readings("LEGACY-C30000000A01", 200)
	var plan assets.RemintPlan
	h.adminGet("/api/v1/assets/remint/plan", http.StatusOK).decodePayload(t, &plan)
	if plan.Mintable != 1 || len(plan.MACKeyed) != 1 || plan.Assets[0].NewUID != "SEN-H1-1" {
		t.Fatalf("plan = %s", mustJSON(plan))
	}
	// It takes no input: a body meant for something else is refused,
	// not ignored (it ran: a black-box check).
	unreminted := h.snapshot()
	h.send("POST", "/api/v1/assets/remint/apply", h.admin, map[string]any{"x": 1}).wantBad(t, "")
	if h.snapshot() != unreminted {
		t.Fatal("a refused apply reminted")
	}
	var res assets.RemintResult
	h.post("/api/v1/assets/remint/apply", nil, http.StatusOK).decodePayload(t, &res)
	if len(res.Reminted) != 1 || res.Reminted[0].NewUID != "SEN-H1-1" || h.countHistory("SEN-H1-1") != 2 {
		t.Fatalf("apply = %s", mustJSON(res))
	}
	if f, _ := h.db.AuditMACKeys(); len(f) != 0 {
		t.Errorf("audit = %+v", f)
	}

	h.beacon(map[string]any{"mac": "C30000000A02", "name": "w", "calibrated_at": h.clock.Now().UnixMilli() - 1, "calibration_interval_days": 10})
	if err := h.db.Update(store.PutDiscovered([]store.DiscoveredDevice{{MAC: "C30000000F0F", LastSeen: 5}})); err != nil {
		t.Fatal(err)
	}
	var ds struct {
		Devices []assets.DeviceView `json:"devices"`
	}
	for q, want := range map[string]int{"": 3, "?status=unknown": 1, "?calibration=due": 1, "?calibration=none": 2, "?asset_kind=gateway": 0, "?asset_kind=all&status=assigned": 2} {
		h.adminGet("/api/v1/devices"+q, http.StatusOK).decodePayload(t, &ds)
		if len(ds.Devices) != want {
			t.Errorf("devices%s = %s, want %d", q, mustJSON(ds), want)
		}
	}
	for _, q := range []string{"?status=lost", "?calibration=soon", "?asset_kind=fridge"} {
		h.get("/api/v1/devices"+q, h.admin).wantBad(t, "")
	}
	before := h.snapshot()
	h.send("POST", "/api/v1/device/C30000000A02", h.admin, map[string]any{"status": "retired"}).wantBad(t, "status") // attached
	h.send("POST", "/api/v1/device/nope", h.admin, map[string]any{}).wantBad(t, "mac")
	h.send("POST", "/api/v1/device/C30000000A02", h.admin, map[string]any{"calibration_interval_days": -1}).wantBad(t, "calibration_interval_days")
	if h.snapshot() != before {
		t.Fatal("refused device updates wrote")
	}
	h.send("POST", "/api/v1/device/C30000000A0F", h.admin, map[string]any{}).expect(t, http.StatusNotFound)
}

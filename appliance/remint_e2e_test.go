package appliance_test

import (
	"testing"
	"time"

	"beaconhub/appliance/clock"
	"beaconhub/appliance/push"
	"beaconhub/appliance/push/ntfytest"
	"beaconhub/appliance/sensors"
	"beaconhub/broker/brokertest"
	"beaconhub/store"
)

// remintIntoWard stores the location Ward (code W1) and moves beacon uid
// there through the admin API at addr: a beacon whose legacy uid gets a coded
// home is reminted. It returns the uid the beacon has after.
func remintIntoWard(t *testing.T, addr, tok, uid string) string {
	t.Helper()
	var loc struct {
		ID uint64 `json:"id"`
	}
	adminCall(t, addr, tok, "POST", "/api/v1/locations", map[string]any{"name": "Ward", "code": "W1"}, &loc)
	var b struct {
		AssetUID string `json:"asset_uid"`
	}
	adminCall(t, addr, tok, "POST", "/api/v1/beacon/"+uid, map[string]any{"location_id": loc.ID}, &b)
	return b.AssetUID
}

// TestRemintDuringActiveAlertIsNotDoubled: a fridge is out of range, its
// uid is reminted (it moved to another location), it stays out of range,
// then comes back. The staff get one alert and one recovery, the recovery
// under the new uid, each subject's last word right (the old one's quiet
// "continues as"), and no condition is left behind under the old one.
func TestRemintDuringActiveAlertIsNotDoubled(t *testing.T) {
	fake := ntfytest.New()
	t.Cleanup(fake.Close)
	clk := clock.NewFake(time.Now())
	app := startAppWith(t, appRig{clock: clk,
		extra: map[string]any{"server_push_server_url": fake.URL, "server_push_ops_enabled": false},
		fridge: func(b *store.Beacon) {
			b.AssetUID = "LEGACY-C30000000A01"
			b.TemperatureRange = &store.Range{Min: 2, Max: 8}
		}})
	db := app.DB()
	clk.Advance(sensors.NotSeenEvery)
	c := app.Live().Get()
	pub := func(temp string) {
		brokertest.Pub(t, app.MQTTAddr(), c.MQTTUser, c.MQTTPass, "-q", "1", "-i", "AC233FA0B1C2", "-t", "gw/AC233FA0B1C2/adv1",
			"-m", `{"reports":[{"mac":"C30000000A01","rssi":-70,"temperature":`+temp+`}]}`)
		app.Push().Idle()
	}
	sensorMsgs := func() []push.Record {
		var out []push.Record
		for _, m := range fake.Messages() {
			if m.Topic != c.ServerID+"-sensors" {
				continue
			}
			rec, err := push.ParseRecord(m.Message)
			if err != nil {
				t.Fatalf("record: %v", err)
			}
			out = append(out, rec)
		}
		return out
	}

	pub("9.5")
	if got := sensorMsgs(); len(got) != 1 || got[0].Subject != "range:LEGACY-C30000000A01" {
		t.Fatalf("first alert: %+v", got)
	}

	tok := adminToken(t, app)
	if uid := remintIntoWard(t, app.HTTPAddr(), tok, "LEGACY-C30000000A01"); uid != "SEN-W1-1" {
		t.Fatalf("reminted as %q", uid)
	}

	pub("9.7") // still out of range: the same condition, not a new one
	// No second alert: the old subject's last word is that it continues
	// under the new uid, the new one's that it is active, both quiet.
	got := sensorMsgs()
	if len(got) != 2 || got[1].Subject != "changes:sensors" || got[1].Intent != push.IntentState || len(got[1].Items) != 2 ||
		got[1].Items[0].Subject != "range:LEGACY-C30000000A01" || got[1].Items[0].Phase != push.PhaseResolved ||
		got[1].Items[1].Subject != "range:SEN-W1-1" || got[1].Items[1].Phase != push.PhaseActive {
		t.Fatalf("after remint, still out of range: %d messages, want the alert and one quiet message of last words: %+v", len(got), got)
	}
	pub("5.0")
	got = sensorMsgs()
	if len(got) != 3 || got[2].Subject != "range:SEN-W1-1" || got[2].Phase != push.PhaseResolved {
		t.Fatalf("recovery: %+v", got)
	}
	active, err := db.ActiveSensorConditions()
	if err != nil || len(active) != 0 {
		t.Fatalf("active conditions left: %+v %v", active, err)
	}
}

// TestPressAcrossRemintIsOneEvent: a panic button pressed while its
// legacy uid is reminted (the gateways' reports of one press arrive on
// both sides of the rename) stays one event, under the new uid.
func TestPressAcrossRemintIsOneEvent(t *testing.T) {
	app := startApp(t, nil)
	c := app.Live().Get()
	tok := adminToken(t, app)
	var b struct {
		AssetUID string `json:"asset_uid"`
	}
	adminCall(t, app.HTTPAddr(), tok, "POST", "/api/v1/beacons", map[string]any{"mac": "C3000000D004", "name": "Panic 4"}, &b)
	adminCall(t, app.HTTPAddr(), tok, "POST", "/api/v1/beacon/"+b.AssetUID, map[string]any{"type": "panic"}, &b)
	if b.AssetUID != "LEGACY-C3000000D004" {
		t.Fatalf("typed without a home: %q", b.AssetUID)
	}
	press := func(rssi string) {
		brokertest.Pub(t, app.MQTTAddr(), c.MQTTUser, c.MQTTPass, "-q", "1", "-i", "AC233FA0B1C2", "-t", "gw/AC233FA0B1C2/adv4",
			"-m", `{"reports":[{"mac":"C3000000D004","rssi":`+rssi+`,"beacon_is_pushed":true,"press":"single"}]}`)
	}
	press("-60")
	var loc struct {
		ID uint64 `json:"id"`
	}
	adminCall(t, app.HTTPAddr(), tok, "POST", "/api/v1/locations", map[string]any{"name": "Ward", "code": "W1"}, &loc)
	adminCall(t, app.HTTPAddr(), tok, "POST", "/api/v1/beacon/"+b.AssetUID, map[string]any{"location_id": loc.ID}, &b)
	if b.AssetUID == "LEGACY-C3000000D004" {
		t.Fatal("not reminted")
	}
	press("-55")
	evs, _, err := app.DB().ListEvents(store.EventFilter{}, store.EventCursor{}, 10, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].AssetUID != b.AssetUID || evs[0].Reports != 2 {
		t.Fatalf("events across the remint: %+v", evs)
	}
}

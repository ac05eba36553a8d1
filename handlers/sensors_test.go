package handlers

import (
	"fmt"
	"net/http"
	"testing"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/sensors"
	"beaconhub/store"
	"beaconhub/web"

	bolt "go.etcd.io/bbolt"
)

// sensorHarness is the asset harness with the sensors service wired in.
type sensorHarness struct {
	*assetHarness
	fridge, room assets.BeaconView
}

func newSensorHarness(t *testing.T) *sensorHarness {
	t.Helper()
	ah := newAssetHarness(t)
	svc := &sensors.Service{DB: ah.db, Clock: ah.clock}
	ah.srv = New(Deps{Live: ah.live, DB: ah.db, Auth: ah.auth, AppLog: ah.applog, Logger: ah.logger,
		Static: web.FS(), Assets: ah.reg, Sensors: svc})
	h := &sensorHarness{assetHarness: ah}
	root := h.location("Hospital", "H1", 0)
	h.fridge = h.beacon(map[string]any{"mac": "C3000000000A", "name": "Fridge 1", "type": "sensor", "location_id": root,
		"temperature_range": map[string]any{"min": 2, "max": 8}, "humidity_range": map[string]any{"min": 20, "max": 60}})
	h.room = h.beacon(map[string]any{"mac": "C3000000000B", "name": "Room 2", "type": "sensor", "location_id": root})
	return h
}

func (h *sensorHarness) store(rs ...store.Reading) {
	h.t.Helper()
	if err := h.db.Update(func(tx *bolt.Tx) error { _, err := store.PutReadings(tx, rs); return err }); err != nil {
		h.t.Fatal(err)
	}
}

func TestSensorHistoryEndpoint(t *testing.T) {
	h := newSensorHarness(t)
	now := h.clock.Now().UnixMilli()
	var rs []store.Reading
	for i := int64(0); i < 40*1440; i++ { // 40 days, one a minute
		rs = append(rs, store.Reading{UID: h.fridge.AssetUID, Metric: store.MetricTemperature, TS: now - 40*86400e3 + i*60e3, Value: 4})
	}
	h.store(rs...)
	user := h.token("user")

	var raw sensors.HistoryResult
	h.get(fmt.Sprintf("/api/v1/sensors/history?since=%d&until=%d", now-3600e3, now), user).expect(t, http.StatusOK).decodePayload(t, &raw)
	if raw.Downsampled || len(raw.Rows) != 60 || raw.RowCap != sensors.RowCap {
		t.Fatalf("1 h: downsampled=%v rows=%d cap=%d", raw.Downsampled, len(raw.Rows), raw.RowCap)
	}

	var ds sensors.HistoryResult
	h.get(fmt.Sprintf("/api/v1/sensors/history?since=%d&until=%d&asset=%s&metric=temperature", now-30*86400e3, now, h.fridge.AssetUID),
		user).expect(t, http.StatusOK).decodePayload(t, &ds)
	if !ds.Downsampled || ds.BucketMS == 0 || len(ds.Rows) > sensors.RowCap || len(ds.Rows) == 0 {
		t.Fatalf("30 d: downsampled=%v bucket=%d rows=%d", ds.Downsampled, ds.BucketMS, len(ds.Rows))
	}

	var none sensors.HistoryResult
	h.get(fmt.Sprintf("/api/v1/sensors/history?since=%d&until=%d&metric=1", now-3600e3, now), user).expect(t, http.StatusOK).decodePayload(t, &none)
	if len(none.Rows) != 0 {
		t.Fatalf("humidity rows %d", len(none.Rows))
	}
	h.get(fmt.Sprintf("/api/v1/sensors/history?since=%d&until=%d", now, now-1), user).expect(t, http.StatusBadRequest)
	h.get("/api/v1/sensors/history?metric=pressure", user).expect(t, http.StatusBadRequest)
	h.get("/api/v1/sensors/history", "").expect(t, http.StatusForbidden)
}

func TestSensorDevicesAndAlerts(t *testing.T) {
	h := newSensorHarness(t)
	now := h.clock.Now().UnixMilli()
	uid := h.fridge.AssetUID
	var rs []store.Reading
	for i := int64(0); i < 25; i++ { // alternating in and out of 2..8 °C
		v := 5.0
		if i%2 == 1 {
			v = 9 + float64(i)
		}
		rs = append(rs, store.Reading{UID: uid, Metric: store.MetricTemperature, TS: now - 1000*(30-i), Value: v})
	}
	rs = append(rs,
		store.Reading{UID: uid, Metric: store.MetricHumidity, TS: now - 500, Value: 70},  // out
		store.Reading{UID: uid, Metric: store.MetricBattery, TS: now - 400, Value: 2900}, // no range
		store.Reading{UID: h.room.AssetUID, Metric: store.MetricTemperature, TS: now - 300, Value: 40},
	)
	h.store(rs...)

	var dl struct{ Devices []sensors.Device }
	h.get("/api/v1/sensors/devices", h.token("user")).expect(t, http.StatusOK).decodePayload(t, &dl)
	ds := dl.Devices
	if len(ds) != 2 || ds[0].Name != "Fridge 1" || ds[0].Battery == nil || ds[0].Battery.Value != 2900 ||
		ds[0].Humidity.Value != 70 || ds[0].LastSeen != now-400 || ds[0].TemperatureRange.Max != 8 || ds[1].HumidityRange != nil {
		t.Fatalf("devices %+v", ds)
	}

	h.get("/api/v1/sensors/alerts", h.token("user")).expect(t, http.StatusForbidden)
	var al struct{ Alerts []sensors.Alert }
	h.adminGet("/api/v1/sensors/alerts", http.StatusOK).decodePayload(t, &al)
	as := al.Alerts
	if len(as) != sensors.AlertLimit {
		t.Fatalf("%d alerts, want %d", len(as), sensors.AlertLimit)
	}
	if as[0].Metric != "Humidity" || as[0].Value != 70 || as[1].Value != 32 || as[1].Metric != "Temperature" {
		t.Fatalf("newest alerts %+v", as[:2])
	}
	for i, a := range as {
		if a.AssetUID != uid || (i > 0 && a.TS > as[i-1].TS) {
			t.Fatalf("alert %d %+v", i, a)
		}
	}
}

// wardUser binds the harness user to a ward below the fridge's home, with
// a sensor of its own there ("Ward fridge"); each sensor has one reading.
func (h *sensorHarness) wardUser() (cold assets.BeaconView, now int64) {
	h.t.Helper()
	ward := h.location("Ward", "W1", h.fridge.LocationID)
	cold = h.beacon(map[string]any{"mac": "C3000000000C", "name": "Ward fridge", "type": "sensor", "location_id": ward})
	now = h.clock.Now().UnixMilli()
	h.store(store.Reading{UID: h.fridge.AssetUID, Metric: store.MetricTemperature, TS: now - 2000, Value: 4},
		store.Reading{UID: cold.AssetUID, Metric: store.MetricTemperature, TS: now - 1000, Value: 5})
	if _, err := h.db.UpdateUser(h.users["user"].ID, func(u *store.User) error { u.LocationID = ward; return nil }); err != nil {
		h.t.Fatal(err)
	}
	return cold, now
}

// TestSensorRoutesFollowLocationScope: a user bound to one ward sees only
// the sensors homed there, in the device list and in the history.
func TestSensorRoutesFollowLocationScope(t *testing.T) {
	h := newSensorHarness(t)
	cold, now := h.wardUser()
	user := h.token("user")
	var dl struct{ Devices []sensors.Device }
	h.get("/api/v1/sensors/devices", user).expect(t, http.StatusOK).decodePayload(t, &dl)
	if ds := dl.Devices; len(ds) != 1 || ds[0].AssetUID != cold.AssetUID {
		t.Fatalf("ward user devices %+v", dl.Devices)
	}
	var hist sensors.HistoryResult
	h.get(fmt.Sprintf("/api/v1/sensors/history?since=%d&until=%d", now-3600e3, now), user).expect(t, http.StatusOK).decodePayload(t, &hist)
	if len(hist.Rows) != 1 {
		t.Fatalf("ward user history rows %+v", hist.Rows)
	}
	h.get("/api/v1/sensors/devices", h.admin).expect(t, http.StatusOK).decodePayload(t, &dl)
	if len(dl.Devices) != 3 {
		t.Fatalf("admin devices %d, want 3", len(dl.Devices))
	}
}

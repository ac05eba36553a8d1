package handlers

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/sensors"

	"github.com/julienschmidt/httprouter"
)

// defaultHistorySpanMS is the span of a history query without `since`:
// one day, the span the sensor page opens with.
const defaultHistorySpanMS = 86400e3

// sensorsService returns the sensors service or the error for a feature
// set that does not collect sensor data.
func (s *Server) sensorsService() (*sensors.Service, error) {
	if s.deps.Sensors == nil {
		return nil, apperr.Invalid("feature sensors is not enabled")
	}
	return s.deps.Sensors, nil
}

// parseMetric accepts a metric id (1..3) or its name (case-insensitive).
func parseMetric(v string) (uint8, error) {
	if v == "" {
		return 0, nil
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 1 && n <= 3 {
		return uint8(n), nil
	}
	for i, name := range sensors.MetricNames {
		if i > 0 && strings.EqualFold(name, v) {
			return uint8(i), nil
		}
	}
	return 0, apperr.InvalidField("metric", "metric must be 1, 2, 3 or humidity, temperature, battery")
}

// sensorHistory is GET /api/v1/sensors/history?since&until[&asset][&metric]:
// raw rows under the row cap, else downsampled (see sensors.History).
func (s *Server) sensorHistory(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	svc, err := s.sensorsService()
	if err != nil {
		return err
	}
	since, err := queryMillis(r, "since")
	if err != nil {
		return err
	}
	until, err := queryMillis(r, "until")
	if err != nil {
		return err
	}
	if until == 0 {
		until = svc.Now() + 1 // include a reading stamped "now"
	}
	if since == 0 {
		since = until - defaultHistorySpanMS
	}
	if since >= until {
		return apperr.InvalidField("since", "since must be before until")
	}
	metric, err := parseMetric(r.URL.Query().Get("metric"))
	if err != nil {
		return err
	}
	var uids []string
	for _, v := range r.URL.Query()["asset"] {
		for _, u := range strings.Split(v, ",") {
			if u = strings.TrimSpace(u); u != "" {
				uids = append(uids, u)
			}
		}
	}
	keys, err := sensors.Keys(svc.DB, uids, metric)
	if err != nil {
		return err
	}
	allowed, err := s.sensorScope(r, svc)
	if err != nil {
		return err
	}
	keys = slices.DeleteFunc(keys, func(k sensors.Key) bool { return !allowed(k.UID) })
	res, err := sensors.History(svc.DB, keys, since, until, sensors.RowCap)
	if err != nil {
		return err
	}
	return ok(w, res)
}

// sensorDevices is GET /api/v1/sensors/devices: {devices: [...]}, an
// object as the spec's envelope says (it answered a bare list).
func (s *Server) sensorDevices(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	svc, err := s.sensorsService()
	if err != nil {
		return err
	}
	ds, err := svc.Devices()
	if err != nil {
		return err
	}
	allowed, err := s.sensorScope(r, svc)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"devices": slices.DeleteFunc(ds, func(d sensors.Device) bool { return !allowed(d.AssetUID) })})
}

// sensorScope says which asset_uids the caller may see: all for a
// system-wide caller, else beacons homed inside its location scope
// (retired and merged ones included, their history keeps its home).
func (s *Server) sensorScope(r *http.Request, svc *sensors.Service) (func(uid string) bool, error) {
	sc, err := s.scopeOf(r)
	if err != nil {
		return nil, err
	}
	if sc.all {
		return func(string) bool { return true }, nil
	}
	bs, err := svc.Beacons()
	if err != nil {
		return nil, err
	}
	return func(uid string) bool {
		b, ok := bs[uid]
		return ok && sc.allows(b.LocationID)
	}, nil
}

// sensorAlerts is GET /api/v1/sensors/alerts: the 10 most recent readings
// outside their beacon's range.
func (s *Server) sensorAlerts(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	svc, err := s.sensorsService()
	if err != nil {
		return err
	}
	as, err := svc.Alerts(svc.Now())
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"alerts": as})
}

package handlers

import (
	"encoding/json"
	"net/http"

	"beaconhub/appliance/sensors"
	"beaconhub/store"

	"github.com/julienschmidt/httprouter"
)

// Low-level-discovery lists for the monitoring server. They are in the
// monitoring server's own format ({"data": [...]}), not the API envelope,
// and need no credentials (spec). Besides the macros (uid, MAC, name) each
// row carries what the monitoring bridge reports per item: last sighting
// and, for sensors, the latest readings. Never the zone: where a person
// wearing a watch is must not be readable without credentials.

func (s *Server) lldBeacons(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	return s.lld(w, store.KindBeacon)
}

func (s *Server) lldGateways(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	return s.lld(w, store.KindGateway)
}

func (s *Server) lld(w http.ResponseWriter, kind string) error {
	reg, err := s.registry()
	if err != nil {
		return err
	}
	items, err := reg.LLD(kind)
	if err != nil {
		return err
	}
	if svc := s.deps.Sensors; svc != nil && svc.Recorder != nil && kind == store.KindBeacon {
		for i := range items {
			it := &items[i]
			if l, ok := svc.Recorder.Latest(it.UID, sensors.Temperature); ok {
				it.Temperature = &l.Value
			}
			if l, ok := svc.Recorder.Latest(it.UID, sensors.Humidity); ok {
				it.Humidity = &l.Value
			}
			if l, ok := svc.Recorder.Latest(it.UID, sensors.Battery); ok {
				mv := int64(l.Value)
				it.BatteryMV = &mv
			}
		}
	}
	data, err := json.Marshal(map[string]any{"data": items})
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(data)
	return nil
}

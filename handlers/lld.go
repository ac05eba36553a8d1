package handlers

import (
	"encoding/json"
	"net/http"

	"beaconhub/store"

	"github.com/julienschmidt/httprouter"
)

// Low-level-discovery lists for the monitoring server. They are in the
// monitoring server's own format ({"data": [...]}), not the API envelope,
// and need no credentials (spec): they carry uids, MACs and names only.

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

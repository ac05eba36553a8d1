package handlers

import (
	"net/http"
	"strconv"

	"beaconhub/appliance/applog"
	"beaconhub/appliance/assets"

	"github.com/julienschmidt/httprouter"
)

func (s *Server) listLocations(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	reg, err := s.registry()
	if err != nil {
		return err
	}
	ls, err := reg.Locations()
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"locations": ls})
}

// saveLocation creates (no id, 201) or updates (with id, 200) a location.
func (s *Server) saveLocation(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	reg, err := s.registry()
	if err != nil {
		return err
	}
	var in assets.LocationInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	l, isNew, err := reg.SaveLocation(in)
	if err != nil {
		return err
	}
	subject := "location " + strconv.FormatUint(l.ID, 10)
	if isNew {
		s.deps.AppLog.Record(applog.Normal, "location.create", subject, actor(r), subject+" ("+l.Name+") created")
		return created(w, l)
	}
	s.deps.AppLog.Record(applog.Normal, "location.update", subject, actor(r), subject+" ("+l.Name+") updated")
	return ok(w, l)
}

package handlers

import (
	"errors"
	"math"
	"net/http"
	"slices"
	"strconv"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/applog"
	"beaconhub/store"

	"github.com/julienschmidt/httprouter"
)

// Zones: rectangles in a map's pixels with a symmetric adjacency graph.
//
//	GET    /api/v1/maps/:id/zones      list a map's zones (auth)
//	POST   /api/v1/maps/:id/zones      create {name, x1, y1, x2, y2} (admin)
//	GET    /api/v1/zone/:id            one zone (auth)
//	POST   /api/v1/zone/:id            update {name, x1, y1, x2, y2} (admin)
//	DELETE /api/v1/zone/:id            delete; neighbours and samples follow (admin)
//	POST   /api/v1/zone/:id/adjacency  replace neighbours {adjacent:[ids], allow_cross_map} (admin)

// zoneInput is the body of zone create and update.
type zoneInput struct {
	Name string   `json:"name"`
	X1   *float64 `json:"x1"`
	Y1   *float64 `json:"y1"`
	X2   *float64 `json:"x2"`
	Y2   *float64 `json:"y2"`
}

type adjacencyInput struct {
	Adjacent      []uint64 `json:"adjacent"`
	AllowCrossMap bool     `json:"allow_cross_map"`
}

// validZone checks a zone body and fills z from it.
func validZone(in *zoneInput, z *store.Zone) error {
	name, err := apperr.CleanName("name", in.Name, maxMapName)
	if err != nil {
		return err
	}
	in.Name = name
	for _, c := range []struct {
		v    *float64
		name string
	}{{in.X1, "x1"}, {in.Y1, "y1"}, {in.X2, "x2"}, {in.Y2, "y2"}} {
		if c.v == nil {
			return apperr.InvalidField(c.name, "%s is required (map pixels)", c.name)
		}
		if *c.v < 0 || math.IsNaN(*c.v) || math.IsInf(*c.v, 0) {
			return apperr.InvalidField(c.name, "%s must be a non-negative number of pixels", c.name)
		}
	}
	if *in.X1 >= *in.X2 || *in.Y1 >= *in.Y2 {
		field := "y2"
		if *in.X1 >= *in.X2 {
			field = "x2"
		}
		return apperr.InvalidField(field, "a zone needs x1 < x2 and y1 < y2 (top-left, then bottom-right corner)")
	}
	z.Name, z.X1, z.Y1, z.X2, z.Y2 = in.Name, *in.X1, *in.Y1, *in.X2, *in.Y2
	return nil
}

func (s *Server) mapZones(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	m, err := s.mapByParam(p)
	if err != nil {
		return err
	}
	zones, err := s.deps.DB.ListZones(m.ID)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"map_id": m.ID, "zones": zones})
}

func (s *Server) createZone(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	m, err := s.mapByParam(p)
	if err != nil {
		return err
	}
	var in zoneInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	z := store.Zone{MapID: m.ID}
	if err := validZone(&in, &z); err != nil {
		return err
	}
	z, err = s.deps.DB.PutZone(z)
	if err != nil {
		return store.ClientErr(err, "map")
	}
	s.zoneRecord(r, "zone.create", z)
	if err := s.reloadSite(); err != nil {
		return err
	}
	return created(w, z)
}

func (s *Server) zoneByParam(p httprouter.Params) (store.Zone, error) {
	id, err := pathID(p, "id")
	if err != nil {
		return store.Zone{}, err
	}
	z, err := s.deps.DB.GetZone(id)
	if errors.Is(err, store.ErrNotFound) {
		return z, apperr.NotFound("zone %d not found", id)
	}
	return z, err
}

func (s *Server) getZone(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	z, err := s.zoneByParam(p)
	if err != nil {
		return err
	}
	return ok(w, z)
}

func (s *Server) updateZone(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	z, err := s.zoneByParam(p)
	if err != nil {
		return err
	}
	var in zoneInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if err := validZone(&in, &z); err != nil {
		return err
	}
	if z, err = s.deps.DB.PutZone(z); err != nil {
		return store.ClientErr(err, "zone")
	}
	s.zoneRecord(r, "zone.update", z)
	if err := s.reloadSite(); err != nil {
		return err
	}
	return ok(w, z)
}

func (s *Server) deleteZone(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	z, err := s.zoneByParam(p)
	if err != nil {
		return err
	}
	if err := s.deps.DB.DeleteZone(z.ID); err != nil {
		return store.ClientErr(err, "zone")
	}
	s.zoneRecord(r, "zone.delete", z)
	if err := s.reloadSite(); err != nil {
		return err
	}
	return ok(w, map[string]any{"id": z.ID})
}

func (s *Server) setZoneAdjacency(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	z, err := s.zoneByParam(p)
	if err != nil {
		return err
	}
	var in adjacencyInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if in.Adjacent == nil {
		return apperr.InvalidField("adjacent", "adjacent is required (a list of zone ids, [] for none)")
	}
	// The bound is on neighbours, not on how often a list names one.
	if distinct := slices.Compact(slices.Sorted(slices.Values(in.Adjacent))); len(distinct) > 1000 {
		return apperr.InvalidField("adjacent", "at most 1000 neighbours")
	}
	if z, err = s.deps.DB.SetAdjacency(z.ID, in.Adjacent, in.AllowCrossMap); err != nil {
		return store.ClientErr(err, "zone")
	}
	s.zoneRecord(r, "zone.adjacency", z)
	if err := s.reloadSite(); err != nil {
		return err
	}
	return ok(w, z)
}

func (s *Server) zoneRecord(r *http.Request, action string, z store.Zone) {
	subject := "zone " + strconv.FormatUint(z.ID, 10)
	s.deps.AppLog.Record(applog.Normal, action, subject, actor(r), subject+" ("+z.Name+") on map "+strconv.FormatUint(z.MapID, 10))
}

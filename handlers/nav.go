package handlers

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/applog"
	"beaconhub/appliance/nav"
	"beaconhub/store"

	"github.com/julienschmidt/httprouter"
)

// Navigation (issue 10): floors, nodes, edges, whole-floor graphs and
// pathfinding. Every change is recorded in the application log.

// nav is the navigation service where feature navigation is on. The
// appliance builds the service whenever it has a database (maps and the
// tracking engine read floors too), so the feature, not the pointer,
// decides whether its routes answer.
func (s *Server) nav() (*nav.Service, error) {
	if s.deps.Nav == nil || !s.navigationOn() {
		return nil, apperr.Unavailable("navigation is not running in this configuration (feature navigation)")
	}
	return s.deps.Nav, nil
}

// navWithID is the prelude of the per-resource navigation handlers: the
// service and the :id of the path.
func (s *Server) navWithID(p httprouter.Params) (*nav.Service, uint64, error) {
	n, err := s.nav()
	if err != nil {
		return nil, 0, err
	}
	id, err := pathID(p, "id")
	return n, id, err
}

func (s *Server) navRecord(r *http.Request, action, kind string, id uint64, what string) {
	subject := kind + " " + strconv.FormatUint(id, 10)
	s.deps.AppLog.Record(applog.Normal, action, subject, actor(r), subject+" "+what)
}

func (s *Server) listFloors(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	n, err := s.nav()
	if err != nil {
		return err
	}
	fs, err := n.Floors()
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"floors": nonNil(fs)})
}

// floorInput is the editable part of a floor, plus the fields a GET
// gives that are not editable: docs/navigation.md says to send a record
// back whole as read, which was refused for its id (a black-box check).
type floorInput struct {
	Name       string `json:"name"`
	Level      int    `json:"level"`
	LocationID uint64 `json:"location_id"`
	MapID      uint64 `json:"map_id"`
	readOnly
	CreatedAt json.RawMessage `json:"created_at,omitempty"`
	UpdatedAt json.RawMessage `json:"updated_at,omitempty"`
}

// readOnly is the record's fields a save sends back as read: id, which
// must be the path's, and floor_id, which a save does not change.
type readOnly struct {
	ID      *uint64 `json:"id,omitempty"`
	FloorID *uint64 `json:"floor_id,omitempty"`
}

// check refuses an id other than the record's (id 0: a create, which
// takes none).
func (ro readOnly) check(id uint64) error {
	if ro.ID != nil && *ro.ID != id {
		if id == 0 {
			return apperr.InvalidField("id", "id is given by the server: leave it out of a create")
		}
		return apperr.InvalidField("id", "id %d is not the record's (%d)", *ro.ID, id)
	}
	return nil
}

func (s *Server) saveFloor(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	n, err := s.nav()
	if err != nil {
		return err
	}
	var id uint64
	if p.ByName("id") != "" {
		if id, err = pathID(p, "id"); err != nil {
			return err
		}
	}
	var in floorInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if err := in.check(id); err != nil {
		return err
	}
	if in.FloorID != nil {
		return apperr.InvalidField("floor_id", "a floor has no floor_id")
	}
	f, err := n.SaveFloor(store.Floor{ID: id, Name: in.Name, Level: in.Level, LocationID: in.LocationID, MapID: in.MapID})
	if err != nil {
		return err
	}
	if id == 0 {
		s.navRecord(r, "floor.create", "floor", f.ID, "("+f.Name+") created")
		return created(w, f)
	}
	s.navRecord(r, "floor.update", "floor", f.ID, "("+f.Name+") updated")
	return ok(w, f)
}

func (s *Server) getFloor(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	n, id, err := s.navWithID(p)
	if err != nil {
		return err
	}
	f, err := n.Floor(id)
	if err != nil {
		return err
	}
	return ok(w, f)
}

func (s *Server) deleteFloor(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	n, id, err := s.navWithID(p)
	if err != nil {
		return err
	}
	beacons, err := n.DeleteFloor(id)
	if err != nil {
		return err
	}
	what := "deleted with its nodes and edges"
	if len(beacons) > 0 {
		what += "; floor_id cleared on beacons " + strings.Join(beacons, ", ")
	}
	s.navRecord(r, "floor.delete", "floor", id, what)
	return ok(w, map[string]any{"id": id, "unassigned_beacons": beacons})
}

func (s *Server) floorGraph(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	n, id, err := s.navWithID(p)
	if err != nil {
		return err
	}
	g, err := n.FloorGraph(id)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"nodes": g.Nodes, "edges": g.Edges})
}

func (s *Server) floorNodes(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	n, id, err := s.navWithID(p)
	if err != nil {
		return err
	}
	g, err := n.FloorGraph(id)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"nodes": nonNil(g.Nodes)})
}

func (s *Server) floorEdges(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	n, id, err := s.navWithID(p)
	if err != nil {
		return err
	}
	g, err := n.FloorGraph(id)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"edges": nonNil(g.Edges)})
}

func (s *Server) replaceFloorGraph(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	n, id, err := s.navWithID(p)
	if err != nil {
		return err
	}
	var in nav.GraphInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	g, err := n.ReplaceFloorGraph(id, in)
	if err != nil {
		return err
	}
	s.navRecord(r, "floor.graph", "floor", id, "graph replaced: "+strconv.Itoa(len(g.Nodes))+" nodes, "+strconv.Itoa(len(g.Edges))+" edges")
	return ok(w, map[string]any{"nodes": g.Nodes, "edges": g.Edges})
}

func (s *Server) pathfind(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	n, err := s.nav()
	if err != nil {
		return err
	}
	var req nav.PathRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	res, err := n.Pathfind(req)
	if err != nil {
		return err
	}
	return ok(w, res)
}

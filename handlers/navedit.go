package handlers

import (
	"net/http"

	"beaconhub/appliance/nav"

	"github.com/julienschmidt/httprouter"
)

// Single node and edge edits; each is one validated graph transaction.

// nodeBody and edgeBody take a record as read (id, floor_id) besides
// its editable part: floor_id is ignored, a node stays on its floor and
// an edge belongs to its from node's.
type nodeBody struct {
	nav.NodeInput
	readOnly
}

type edgeBody struct {
	nav.EdgeInput
	readOnly
}

func (s *Server) createNode(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	n, err := s.nav()
	if err != nil {
		return err
	}
	floor, err := pathID(p, "id")
	if err != nil {
		return err
	}
	var in nodeBody
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if err := in.check(0); err != nil {
		return err
	}
	node, err := n.CreateNode(floor, in.NodeInput)
	if err != nil {
		return err
	}
	s.navRecord(r, "node.create", "node", node.ID, "created")
	return created(w, node)
}

func (s *Server) updateNode(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	n, id, err := s.navWithID(p)
	if err != nil {
		return err
	}
	var in nodeBody
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if err := in.check(id); err != nil {
		return err
	}
	node, err := n.UpdateNode(id, in.NodeInput)
	if err != nil {
		return err
	}
	s.navRecord(r, "node.update", "node", id, "updated")
	return ok(w, node)
}

func (s *Server) deleteNode(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	n, id, err := s.navWithID(p)
	if err != nil {
		return err
	}
	if err := n.DeleteNode(id); err != nil {
		return err
	}
	s.navRecord(r, "node.delete", "node", id, "deleted with its edges")
	return ok(w, map[string]any{"id": id})
}

func (s *Server) createEdge(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	return s.saveEdge(w, r, p, true)
}

func (s *Server) updateEdge(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	return s.saveEdge(w, r, p, false)
}

func (s *Server) saveEdge(w http.ResponseWriter, r *http.Request, p httprouter.Params, isNew bool) error {
	n, id, err := s.navWithID(p)
	if err != nil {
		return err
	}
	var in edgeBody
	if err := decode(w, r, &in); err != nil {
		return err
	}
	own := id // the edge's own id on an update; the floor's on a create
	if isNew {
		own = 0
	}
	if err := in.check(own); err != nil {
		return err
	}
	if isNew {
		e, err := n.SaveEdge(id, 0, in.EdgeInput)
		if err != nil {
			return err
		}
		s.navRecord(r, "edge.create", "edge", e.ID, "created")
		return created(w, e)
	}
	e, err := n.SaveEdge(0, id, in.EdgeInput)
	if err != nil {
		return err
	}
	s.navRecord(r, "edge.update", "edge", id, "updated")
	return ok(w, e)
}

func (s *Server) deleteEdge(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	n, id, err := s.navWithID(p)
	if err != nil {
		return err
	}
	if err := n.DeleteEdge(id); err != nil {
		return err
	}
	s.navRecord(r, "edge.delete", "edge", id, "deleted")
	return ok(w, map[string]any{"id": id})
}

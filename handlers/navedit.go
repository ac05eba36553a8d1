package handlers

import (
	"net/http"

	"beaconhub/appliance/nav"

	"github.com/julienschmidt/httprouter"
)

// Single node and edge edits; each is one validated graph transaction.

func (s *Server) createNode(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	n, err := s.nav()
	if err != nil {
		return err
	}
	floor, err := pathID(p, "id")
	if err != nil {
		return err
	}
	var in nav.NodeInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	node, err := n.CreateNode(floor, in)
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
	var in nav.NodeInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	node, err := n.UpdateNode(id, in)
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
	var in nav.EdgeInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if isNew {
		e, err := n.SaveEdge(id, 0, in)
		if err != nil {
			return err
		}
		s.navRecord(r, "edge.create", "edge", e.ID, "created")
		return created(w, e)
	}
	e, err := n.SaveEdge(0, id, in)
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

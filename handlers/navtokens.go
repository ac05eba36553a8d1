package handlers

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// Navigation tokens: read-only secrets for kiosks and integrations,
// accepted as `Authorization: Token <t>` on Token/Auth routes only.

func (s *Server) listNavTokens(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	n, err := s.nav()
	if err != nil {
		return err
	}
	ts, err := n.Tokens()
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"tokens": nonNil(ts)})
}

func (s *Server) createNavToken(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	n, err := s.nav()
	if err != nil {
		return err
	}
	var in struct {
		Name string `json:"name"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	secret, t, err := n.CreateToken(in.Name, actor(r))
	if err != nil {
		return err
	}
	s.navRecord(r, "navtoken.create", "navigation token", t.ID, "("+t.Prefix+"…) created")
	// The secret is shown this once; only its hash is kept.
	noStore(w)
	return created(w, map[string]any{"token": secret, "id": t.ID, "name": t.Name, "prefix": t.Prefix, "created_at": t.CreatedAt})
}

func (s *Server) deleteNavToken(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	n, id, err := s.navWithID(p)
	if err != nil {
		return err
	}
	if err := n.RevokeToken(id); err != nil {
		return err
	}
	s.navRecord(r, "navtoken.delete", "navigation token", id, "revoked")
	return ok(w, map[string]any{"id": id})
}

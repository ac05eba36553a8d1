package handlers

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/applog"
	"beaconhub/appliance/uitemplates"
	"beaconhub/store"

	"github.com/julienschmidt/httprouter"
)

// Interface templates (admin): what `user` and `maintenance` accounts see.
// The role is fixed at creation because the definition was validated
// against it; a template for the other role is made with clone.

const maxTemplateName = 80

// now is the request time in Unix ms from the injected clock.
func (s *Server) now() int64 { return s.nowTime().UnixMilli() }

func (s *Server) nowTime() time.Time {
	if s.deps.Clock != nil {
		return s.deps.Clock.Now()
	}
	return time.Now()
}

func templateName(name string) (string, error) {
	return apperr.CleanName("name", name, maxTemplateName)
}

// canonical validates raw for role and returns its canonical JSON.
func canonical(raw json.RawMessage, role string) (json.RawMessage, error) {
	d, err := uitemplates.Parse(raw, role)
	if err != nil {
		return nil, err
	}
	return json.Marshal(d)
}

func (s *Server) templateByID(p httprouter.Params) (*store.UITemplate, error) {
	id, err := pathID(p, "id")
	if err != nil {
		return nil, err
	}
	t, err := s.deps.DB.GetUITemplate(id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apperr.NotFound("interface template not found")
	}
	return t, err
}

func (s *Server) listTemplates(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	ts, err := s.deps.DB.ListUITemplates()
	if err != nil {
		return err
	}
	if ts == nil {
		ts = []store.UITemplate{}
	}
	return ok(w, map[string]any{"templates": ts})
}

// getTemplate answers the template with assigned_user_ids, so an admin sees
// who a change will affect.
func (s *Server) getTemplate(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	t, err := s.templateByID(p)
	if err != nil {
		return err
	}
	users, err := s.deps.DB.UITemplateUsers(t.ID)
	if err != nil {
		return err
	}
	return ok(w, struct {
		*store.UITemplate
		AssignedUserIDs []uint64 `json:"assigned_user_ids"`
	}{t, users})
}

func (s *Server) createTemplate(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var in struct {
		Name       string          `json:"name"`
		Role       string          `json:"role"`
		Definition json.RawMessage `json:"definition"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	name, err := templateName(in.Name)
	if err != nil {
		return err
	}
	if !uitemplates.ValidRole(in.Role) {
		return apperr.InvalidField("role", "role must be user or maintenance")
	}
	def, err := canonical(in.Definition, in.Role)
	if err != nil {
		return err
	}
	now := s.now()
	t, err := s.deps.DB.CreateUITemplate(store.UITemplate{Name: name, Role: in.Role, Definition: def, CreatedAt: now, UpdatedAt: now})
	if err != nil {
		return err
	}
	s.templateRecord(r, "template.create", &t, "created")
	return created(w, t)
}

// updateTemplate is PUT: name and definition only. Sending role is refused
// unless it repeats the current one, so a client that round-trips the
// whole record still works and a role change never passes silently.
func (s *Server) updateTemplate(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	cur, err := s.templateByID(p)
	if err != nil {
		return err
	}
	var in struct {
		Name       string          `json:"name"`
		Role       *string         `json:"role"`
		Definition json.RawMessage `json:"definition"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if in.Role != nil && *in.Role != cur.Role {
		return apperr.InvalidField("role", "role is immutable; clone the template to make one for another role")
	}
	name, err := templateName(in.Name)
	if err != nil {
		return err
	}
	def, err := canonical(in.Definition, cur.Role)
	if err != nil {
		return err
	}
	t, err := s.deps.DB.UpdateUITemplate(cur.ID, func(t *store.UITemplate) error {
		t.Name, t.Definition, t.UpdatedAt = name, def, s.now()
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return apperr.NotFound("interface template not found")
	}
	if err != nil {
		return err
	}
	s.templateRecord(r, "template.update", t, "updated")
	return ok(w, t)
}

// deleteTemplate refuses (409, assigned_user_ids) while users are assigned
// to the template: silently unassigning would change what those users see
// without the admin noticing.
func (s *Server) deleteTemplate(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	t, err := s.templateByID(p)
	if err != nil {
		return err
	}
	err = s.deps.DB.DeleteUITemplate(t.ID)
	var inUse *store.TemplateInUseError
	switch {
	case errors.As(err, &inUse):
		who := strconv.Itoa(len(inUse.UserIDs)) + " users"
		if len(inUse.UserIDs) == 1 {
			who = "1 user"
		}
		e := apperr.Conflict("interface template is assigned to %s; assign another template first", who)
		e.Details = map[string]any{"assigned_user_ids": inUse.UserIDs}
		return e
	case errors.Is(err, store.ErrNotFound):
		return apperr.NotFound("interface template not found")
	case err != nil:
		return err
	}
	s.templateRecord(r, "template.delete", t, "deleted")
	return ok(w, map[string]any{"id": t.ID})
}

// cloneTemplate copies a template under a new name, possibly for the other
// role. Components the target role may not use make it answer 409 with
// incompatible_components, unless remove_incompatible drops them.
func (s *Server) cloneTemplate(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	src, err := s.templateByID(p)
	if err != nil {
		return err
	}
	var in struct {
		Name               string `json:"name"`
		Role               string `json:"role"`
		RemoveIncompatible bool   `json:"remove_incompatible"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	name, err := templateName(in.Name)
	if err != nil {
		return err
	}
	if !uitemplates.ValidRole(in.Role) {
		return apperr.InvalidField("role", "role must be user or maintenance")
	}
	d, err := uitemplates.ParseStored(src.Definition, src.Role)
	if err != nil {
		return err
	}
	if bad := uitemplates.IncompatibleWith(d, in.Role); len(bad) > 0 {
		if !in.RemoveIncompatible {
			e := apperr.Conflict("%d components are not available to role %s; clone with remove_incompatible to drop them", len(bad), in.Role)
			e.Details = map[string]any{"incompatible_components": bad}
			return e
		}
		d = uitemplates.WithoutIncompatible(d, in.Role)
	}
	def, err := json.Marshal(d)
	if err != nil {
		return err
	}
	now := s.now()
	t, err := s.deps.DB.CreateUITemplate(store.UITemplate{Name: name, Role: in.Role, Definition: def, CreatedAt: now, UpdatedAt: now})
	if err != nil {
		return err
	}
	s.templateRecord(r, "template.clone", &t, "cloned from "+src.Name)
	return created(w, t)
}

// assignTemplate is PUT /api/v1/users/:userId/template with
// {"template_id": n} (null or 0 unassigns).
func (s *Server) assignTemplate(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	uid, err := pathID(p, "userId")
	if err != nil {
		return err
	}
	var in struct {
		TemplateID json.RawMessage `json:"template_id"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	// Required: {} unassigned silently, as if null had been sent (a
	// black-box check); null or 0 unassigns.
	var tid uint64
	if len(in.TemplateID) == 0 {
		return apperr.InvalidField("template_id", "template_id is required (null or 0 unassigns)")
	}
	if string(in.TemplateID) != "null" {
		if err := json.Unmarshal(in.TemplateID, &tid); err != nil {
			return apperr.InvalidField("template_id", "template_id must be a template id, or null or 0 to unassign")
		}
	}
	err = s.deps.DB.AssignUITemplate(uid, tid)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return apperr.NotFound("user or interface template not found")
	case errors.Is(err, store.ErrRoleMismatch):
		return apperr.InvalidField("template_id", "the template's role is not the user's role")
	case err != nil:
		return err
	}
	s.deps.AppLog.Record(applog.Normal, "template.assign", "user "+p.ByName("userId"), actor(r), "interface template assignment changed")
	var assigned any // null when unassigned, whether null or 0 was sent
	if tid != 0 {
		assigned = tid
	}
	return ok(w, map[string]any{"user_id": uid, "template_id": assigned})
}

func (s *Server) templateRecord(r *http.Request, action string, t *store.UITemplate, what string) {
	s.deps.AppLog.Record(applog.Normal, action, "template "+t.Name, actor(r), "interface template "+t.Name+" "+what)
}

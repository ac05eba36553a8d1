package handlers

import (
	"net/http"
	"strconv"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/applog"
	"beaconhub/appliance/eink"

	"github.com/julienschmidt/httprouter"
)

// E-ink designer support: the sensor list and saved layout templates,
// including loading a template onto a display with a sensor mapping.

func (s *Server) einkSensors(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	svc, err := s.einkSvc()
	if err != nil {
		return err
	}
	ss, err := svc.Sensors()
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"sensors": ss})
}

func (s *Server) listEInkTemplates(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	svc, err := s.einkSvc()
	if err != nil {
		return err
	}
	ts, err := svc.Templates()
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"templates": ts})
}

func (s *Server) createEInkTemplate(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	svc, err := s.einkSvc()
	if err != nil {
		return err
	}
	var in eink.TemplateInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	tp, err := svc.SaveTemplate(0, in)
	if err != nil {
		return err
	}
	subject := "layout template " + strconv.FormatUint(tp.ID, 10)
	s.deps.AppLog.Record(applog.Normal, "eink.template.create", subject, actor(r), subject+" ("+tp.Name+") created")
	return created(w, tp)
}

func templateID(p httprouter.Params) (uint64, error) {
	id, err := strconv.ParseUint(p.ByName("id"), 10, 64)
	if err != nil || id == 0 {
		return 0, apperr.InvalidField("id", "template id must be a positive integer")
	}
	return id, nil
}

func (s *Server) updateEInkTemplate(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	svc, err := s.einkSvc()
	if err != nil {
		return err
	}
	id, err := templateID(p)
	if err != nil {
		return err
	}
	var in eink.TemplateInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	tp, err := svc.SaveTemplate(id, in)
	if err != nil {
		return err
	}
	subject := "layout template " + strconv.FormatUint(id, 10)
	s.deps.AppLog.Record(applog.Normal, "eink.template.update", subject, actor(r), subject+" ("+tp.Name+") updated")
	return ok(w, tp)
}

func (s *Server) deleteEInkTemplate(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	svc, err := s.einkSvc()
	if err != nil {
		return err
	}
	id, err := templateID(p)
	if err != nil {
		return err
	}
	if err := svc.DeleteTemplate(id); err != nil {
		return err
	}
	subject := "layout template " + strconv.FormatUint(id, 10)
	s.deps.AppLog.Record(applog.Normal, "eink.template.delete", subject, actor(r), subject+" deleted")
	return ok(w, nil)
}

// applyEInkTemplate loads a saved template onto a display:
// body {template_id, sensor_map: {template sensor uid: display sensor uid}}.
func (s *Server) applyEInkTemplate(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	svc, id, err := s.einkWithID(p)
	if err != nil {
		return err
	}
	var in eink.ApplyInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if in.TemplateID == 0 { // not "layout template 0 not found" (a black-box check)
		return apperr.InvalidField("template_id", "template_id is required")
	}
	v, err := svc.ApplyTemplate(id, in)
	if err != nil {
		return err
	}
	s.deps.AppLog.Record(applog.Normal, "eink.template.apply", v.AssetUID, actor(r),
		"layout template "+strconv.FormatUint(in.TemplateID, 10)+" loaded onto e-ink display "+v.AssetUID)
	return ok(w, v)
}

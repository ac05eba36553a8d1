package handlers

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/nav"

	"github.com/julienschmidt/httprouter"
)

// Fingerprint survey and model (issue 10). Survey writes and reads are
// Admin: navigation tokens are read-only by the spec, and raw survey data
// names every access point and phone around the site. The model is what
// phones download, so it is Token/Auth like the floor map.

func (s *Server) uploadSurvey(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	n, id, err := s.navWithID(p)
	if err != nil {
		return err
	}
	added, total, err := n.AddSurvey(id, http.MaxBytesReader(w, r.Body, nav.MaxSurveyBody))
	if err != nil {
		return err
	}
	s.navRecord(r, "survey.upload", "floor", id, "survey: "+strconv.Itoa(added)+" samples added, "+strconv.Itoa(total)+" in all")
	return created(w, map[string]any{"floor_id": id, "added": added, "total": total})
}

func (s *Server) listSurvey(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	n, id, err := s.navWithID(p)
	if err != nil {
		return err
	}
	samples, err := n.Survey(id)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"samples": nonNil(samples)})
}

// exportSurvey answers JSONL in the upload format.
func (s *Server) exportSurvey(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	n, id, err := s.navWithID(p)
	if err != nil {
		return err
	}
	samples, err := n.Survey(id)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Disposition", `attachment; filename="survey_floor_`+strconv.FormatUint(id, 10)+`.jsonl"`)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	// Headers are sent with the first byte; a write error now can only
	// be a gone client.
	_ = nav.WriteSurvey(w, samples)
	return nil
}

func (s *Server) deleteSurvey(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	n, id, err := s.navWithID(p)
	if err != nil {
		return err
	}
	deleted, err := n.DeleteSurvey(id)
	if err != nil {
		return err
	}
	s.navRecord(r, "survey.delete", "floor", id, "survey deleted ("+strconv.Itoa(deleted)+" samples)")
	return ok(w, map[string]any{"floor_id": id, "deleted": deleted})
}

func (s *Server) deleteSurveySample(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	n, id, err := s.navWithID(p)
	if err != nil {
		return err
	}
	floor, err := n.DeleteSurveySample(id)
	if err != nil {
		return err
	}
	s.navRecord(r, "survey.delete", "survey sample", id, "deleted from floor "+strconv.FormatUint(floor, 10))
	return ok(w, map[string]any{"id": id, "floor_id": floor})
}

// fingerprintModel serves the model file itself (no envelope) so the app
// can store the body as fingerprint_model_floor_<id>.json unchanged.
func (s *Server) fingerprintModel(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	n, id, err := s.navWithID(p)
	if err != nil {
		return err
	}
	if _, err := n.Floor(id); err != nil {
		return err
	}
	m, err := n.FingerprintModel(id)
	if err != nil {
		return err
	}
	if m == nil {
		return apperr.NotFound("floor %d has no survey samples", id)
	}
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	w.Header().Set("ETag", etag)
	if notModified(w, r, etag) {
		return nil
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="fingerprint_model_floor_`+strconv.FormatUint(id, 10)+`.json"`)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(data)
	return nil
}

func (s *Server) fingerprintEval(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	n, id, err := s.navWithID(p)
	if err != nil {
		return err
	}
	ev, err := n.EvaluateFloor(id)
	if err != nil {
		return err
	}
	return ok(w, ev)
}

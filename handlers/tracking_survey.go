package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/applog"
	"beaconhub/appliance/rtls"
	"beaconhub/store"

	"github.com/julienschmidt/httprouter"
)

// Survey (training) for the k-NN fingerprint algorithm: an admin stands a
// beacon in a zone, starts recording, stops after a while; the engine cuts
// what it heard into samples, which are stored and handed back to the
// engine (SetSamples through Reload), now and on every start.
//
//	POST   /api/v1/tracking/survey/start  {asset_uid, zone_id}
//	POST   /api/v1/tracking/survey/stop   {asset_uid} -> stored samples
//	GET    /api/v1/tracking/samples[?zone_id=&limit=&cursor=]
//	DELETE /api/v1/tracking/sample/:id
//	DELETE /api/v1/tracking/samples?zone_id=&asset_uid= (or ?all=true)

type surveyInput struct {
	AssetUID string `json:"asset_uid"`
	ZoneID   uint64 `json:"zone_id"`
}

func (s *Server) surveyStart(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	t, err := s.tracker()
	if err != nil {
		return err
	}
	var in surveyInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	reg, err := s.registry()
	if err != nil {
		return err
	}
	b, err := reg.Beacon(in.AssetUID)
	if err != nil {
		return apperr.InvalidField("asset_uid", "beacon %q is not registered", in.AssetUID)
	}
	// Ingest reports a beacon by its current uid: one recorded under a
	// former uid (a remint's) heard nothing and answered success (a
	// review). A beacon merged away or retired is not heard at all.
	if !b.Active {
		return apperr.InvalidField("asset_uid", "beacon %s is %s: it is not heard, so it records nothing", b.AssetUID, b.Status)
	}
	in.AssetUID = b.AssetUID
	if _, err := s.deps.DB.GetZone(in.ZoneID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return apperr.InvalidField("zone_id", "zone %d does not exist", in.ZoneID)
		}
		return err
	}
	// Said now, not after the survey: its samples would not be stored.
	// The windows of surveys under way count too (a review: with one
	// place left, two surveys started and lost theirs at their stops);
	// a beacon already recording is changing zone, not starting.
	running, already := 0, false
	for _, sv := range t.Status().Surveys {
		running += sv.Windows
		already = already || sv.AssetUID == in.AssetUID
	}
	if n, err := s.deps.DB.ZoneSampleCount(); err != nil {
		return err
	} else if !already && n+running >= store.MaxZoneSamples {
		return apperr.Conflict("the site holds %d survey samples and surveys under way %d more, the most it keeps is %d; delete some first (DELETE /api/v1/tracking/samples?zone_id=...)",
			n, running, store.MaxZoneSamples)
	}
	t.Record(in.AssetUID, in.ZoneID)
	s.deps.AppLog.Record(applog.Normal, "tracking.survey", "beacon "+in.AssetUID, actor(r),
		"survey of zone "+strconv.FormatUint(in.ZoneID, 10)+" started")
	return ok(w, map[string]any{"asset_uid": in.AssetUID, "zone_id": in.ZoneID, "recording": true})
}

func (s *Server) surveyStop(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	t, err := s.tracker()
	if err != nil {
		return err
	}
	var in struct {
		AssetUID string `json:"asset_uid"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if in.AssetUID == "" {
		return apperr.InvalidField("asset_uid", "asset_uid is required")
	}
	// A survey follows its beacon's remint: stopped by the uid it was
	// started with, it answered 404 with its samples still recording
	// under the new one (a review). The uid as given is tried last: the
	// engine moves a recording a moment after the store commits a
	// remint, and a deleted beacon's survey keeps its uid. The engine
	// follows the recordings it moved itself (a merge's to the
	// survivor), and only those.
	// The samples are stored under the uid the recording is under
	// now, which the answer names.
	st, err := store.ZoneSurveyStored{}, rtls.ErrNotRecording
	for _, c := range s.surveyUIDs(in.AssetUID) {
		if st, err = t.StopSurvey(c, s.nowTime()); !errors.Is(err, rtls.ErrNotRecording) {
			break
		}
	}
	if errors.Is(err, rtls.ErrNotRecording) {
		// Answered 200 with nothing stored, and reloaded the site, which
		// restarts every tracked beacon's decision (a review).
		return apperr.NotFound("beacon %q is not recording a survey", in.AssetUID)
	}
	if err != nil {
		return err
	}
	in.AssetUID = st.AssetUID
	msg := "survey stopped, " + st.Summary()
	s.deps.AppLog.Record(applog.Normal, "tracking.survey", "beacon "+in.AssetUID, actor(r), msg)
	if len(st.Samples) > 0 {
		if err := s.reloadSite(); err != nil {
			return err
		}
	}
	out := map[string]any{"asset_uid": in.AssetUID, "stored": len(st.Samples), "dropped": st.Dropped, "samples": st.Samples}
	if st.Full > 0 {
		out["not_stored"] = st.Full
	}
	if st.Over > 0 {
		out["over_limit"] = st.Over
	}
	if st.Full > 0 || st.Over > 0 {
		out["warning"] = msg
	}
	return ok(w, out)
}

// surveyUIDs are the uids a survey started as uid may record under now:
// the beacon's current uid, then uid itself.
func (s *Server) surveyUIDs(uid string) []string {
	var out []string
	if reg, err := s.registry(); err == nil {
		if b, err := reg.Beacon(uid); err == nil {
			out = append(out, b.AssetUID)
		}
	}
	if !slices.Contains(out, uid) {
		out = append(out, uid)
	}
	return out
}

// deleteSamples: DELETE /api/v1/tracking/samples?zone_id=&asset_uid=
// (either or both), or ?all=true: many samples in one step and one
// model rebuild.
func (s *Server) deleteSamples(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if _, err := s.tracker(); err != nil {
		return err
	}
	q := r.URL.Query()
	var zone uint64
	if v := q.Get("zone_id"); v != "" {
		z, err := strconv.ParseUint(v, 10, 64)
		if err != nil || z == 0 {
			return apperr.InvalidField("zone_id", "zone_id must be a positive integer")
		}
		zone = z
	}
	uid := strings.TrimSpace(q.Get("asset_uid"))
	all := q.Get("all") == "true"
	switch {
	case all && (zone != 0 || uid != ""):
		return apperr.Invalid("all=true deletes every sample: give it alone, or zone_id and asset_uid without it")
	case zone == 0 && uid == "" && !all:
		return apperr.Invalid("say which samples: zone_id, asset_uid or both, or all=true for every one")
	}
	if zone != 0 {
		if _, err := s.deps.DB.GetZone(zone); errors.Is(err, store.ErrNotFound) {
			return apperr.NotFound("zone %d not found", zone)
		} else if err != nil {
			return err
		}
	}
	n, err := s.deps.DB.DeleteZoneSamples(zone, uid)
	if err != nil {
		return err
	}
	s.deps.AppLog.Record(applog.Normal, "tracking.sample", "samples", actor(r),
		fmt.Sprintf("%d survey samples deleted (zone %d, beacon %q; 0 and \"\" are any)", n, zone, uid))
	if n > 0 {
		if err := s.reloadSite(); err != nil {
			return err
		}
	}
	return ok(w, map[string]any{"deleted": n})
}

func (s *Server) listSamples(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if _, err := s.tracker(); err != nil {
		return err
	}
	var zone uint64
	if v := r.URL.Query().Get("zone_id"); v != "" {
		z, err := strconv.ParseUint(v, 10, 64)
		if err != nil || z == 0 {
			return apperr.InvalidField("zone_id", "zone_id must be a positive integer")
		}
		zone = z
	}
	// Paged: a site keeps up to 20,000 samples of a kilobyte or more,
	// and one answer of them all was tens of megabytes.
	limit, err := queryInt(r, "limit", 1000, 1, 5000)
	if err != nil {
		return err
	}
	var after uint64
	if c := r.URL.Query().Get("cursor"); c != "" {
		if after, err = strconv.ParseUint(c, 10, 64); err != nil || after == 0 {
			return apperr.InvalidField("cursor", "cursor must be the next_cursor of a previous page")
		}
	}
	ss, next, err := s.deps.DB.ZoneSamplesPage(zone, after, limit)
	if err != nil {
		return err
	}
	var nc any
	if next != 0 {
		nc = strconv.FormatUint(next, 10)
	}
	return ok(w, map[string]any{"samples": ss, "next_cursor": nc})
}

func (s *Server) deleteSample(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if _, err := s.tracker(); err != nil {
		return err
	}
	id, err := pathID(p, "id")
	if err != nil {
		return err
	}
	if err := s.deps.DB.DeleteSample(id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return apperr.NotFound("sample %d not found", id)
		}
		return err
	}
	s.deps.AppLog.Record(applog.Normal, "tracking.sample", "sample "+strconv.FormatUint(id, 10), actor(r), "survey sample deleted")
	if err := s.reloadSite(); err != nil {
		return err
	}
	return ok(w, map[string]any{"id": id})
}

package handlers

import (
	"errors"
	"net/http"
	"time"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/applog"
	"beaconhub/appliance/auth"
	"beaconhub/appliance/rtls"
	"beaconhub/store"

	"github.com/julienschmidt/httprouter"
)

// Tracker is the tracking engine as the HTTP layer uses it: the engine's
// own methods (appliance/rtls/contract.go) plus Reload, which the
// composition root implements by rebuilding the engine's site and samples
// from the store. Start records the chosen algorithm so that a restart
// resumes it.
type Tracker interface {
	Algorithms() []rtls.AlgorithmInfo
	Start(name string) error
	Stop()
	Status() rtls.Status
	Current() string
	Location(uid string) (rtls.Location, bool)
	Locations() []rtls.Location
	Listen(l rtls.Listener, debug func(uid string) bool) (cancel func())
	Record(uid string, zone uint64)
	// StopSurvey ends uid's survey and stores its samples
	// (rtls.ErrNotRecording when it records none).
	StopSurvey(uid string, now time.Time) (store.ZoneSurveyStored, error)
	// LastSeen is the persisted time the beacon was last heard (Unix ms,
	// 0 = never), kept by ingest independently of the engine.
	LastSeen(uid string) int64
	// Reload hands the engine the site (maps, zones, placed gateways) and
	// the survey samples as they are now in the store.
	Reload() error
}

const msgRTLSOff = "real-time location is not enabled (feature rtls)"

// tracker returns the engine, or 400 when feature rtls is off (the spec's
// answer for the simple-user location routes, used for every RTLS route).
func (s *Server) tracker() (Tracker, error) {
	if s.deps.RTLS == nil {
		return nil, apperr.Invalid(msgRTLSOff)
	}
	return s.deps.RTLS, nil
}

// reloadSite tells a running engine that maps, zones, placements or
// samples changed. The edit is already committed; a failed reload is
// logged and answered as an error so the admin knows the engine lags.
func (s *Server) reloadSite() error {
	if s.deps.RTLS == nil {
		return nil
	}
	return s.deps.RTLS.Reload()
}

// trackingStart: GET /api/v1/tracking/start/:alg (admin).
func (s *Server) trackingStart(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	t, err := s.tracker()
	if err != nil {
		return err
	}
	alg := p.ByName("alg")
	if err := t.Start(alg); err != nil {
		if errors.Is(err, rtls.ErrUnknownAlgorithm) {
			return apperr.InvalidField("alg", "unknown algorithm %q; see GET /api/v1/tracking/algorithms", alg)
		}
		return err
	}
	out := s.statusPayload(r, t)
	msg := "tracking started with " + alg
	// Started all the same (an admin may choose k-NN before the survey),
	// but said: it ran and located nothing without a word (a review).
	for _, a := range t.Algorithms() {
		if a.Name == alg && !a.Ready {
			out.Warning = alg + " is not ready and locates nothing until it is: " + a.Reason
			msg += "; " + out.Warning
		}
	}
	s.deps.AppLog.Record(applog.Normal, "tracking.start", "tracking", actor(r), msg)
	return ok(w, out)
}

// trackingStop: GET /api/v1/tracking/stop (admin).
func (s *Server) trackingStop(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	t, err := s.tracker()
	if err != nil {
		return err
	}
	t.Stop()
	s.deps.AppLog.Record(applog.Normal, "tracking.stop", "tracking", actor(r), "tracking stopped")
	return ok(w, s.statusPayload(r, t))
}

// trackingStatus: GET /api/v1/tracking/status: the engine's status and
// the live feed's counters.
func (s *Server) trackingStatus(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	t, err := s.tracker()
	if err != nil {
		return err
	}
	return ok(w, s.statusPayload(r, t))
}

// trackingPayload is what start, stop and status all answer, so a client
// reads one shape whichever it called.
type trackingPayload struct {
	rtls.Status
	// Shadows Status.Algorithm: null when stopped, as in
	// /tracking/algorithms and /algorithms/current.
	Algorithm any      `json:"algorithm"`
	Since     *int64   `json:"since"` // likewise null when stopped
	WebSocket *wsStats `json:"websocket,omitempty"`
	// Warning (start only): the algorithm started is not ready.
	Warning string `json:"warning,omitempty"`
}

func (s *Server) statusPayload(r *http.Request, t Tracker) trackingPayload {
	st := t.Status()
	// Surveys name beacons and the zones they stand in, and survey
	// recording is the admin's: a user saw every beacon's, out of its
	// location scope too (a review).
	if c := claimsFrom(r); c == nil || c.Role != auth.RoleAdmin || st.Surveys == nil {
		st.Surveys = []rtls.SurveyStatus{}
	}
	out := trackingPayload{Status: st, Algorithm: nullIfEmpty(st.Algorithm)}
	if st.Running {
		out.Since = &st.Since
	}
	if s.hub != nil {
		out.WebSocket = s.hub.stats()
	}
	return out
}

// trackingAlgorithms: GET /api/v1/tracking/algorithms.
func (s *Server) trackingAlgorithms(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	t, err := s.tracker()
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"algorithms": t.Algorithms(), "current": nullIfEmpty(t.Current())})
}

// trackingCurrent: GET /api/v1/tracking/algorithms/current.
func (s *Server) trackingCurrent(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	t, err := s.tracker()
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"algorithm": nullIfEmpty(t.Current()), "running": t.Current() != ""})
}

// trackingAsset: GET /api/v1/tracking/:id. Non-admins see only active
// trackable beacons inside their location scope; admins any asset_uid
// the registry knows.
func (s *Server) trackingAsset(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	t, err := s.tracker()
	if err != nil {
		return err
	}
	// Resolved to the asset's current uid: a reminted asset's former uid
	// keeps working, and the engine knows only the current one.
	uid := p.ByName("id")
	if c := claimsFrom(r); c == nil || c.Role != auth.RoleAdmin {
		b, err := s.visibleTrackable(r, uid)
		if err != nil {
			return err
		}
		uid = b.AssetUID
	} else {
		reg, err := s.registry()
		if err != nil {
			return err
		}
		// Any kind: an e-ink display's uid answered 404 "not found"
		// (a review), where the spec says admins may ask any asset_uid.
		cur, err := reg.CurrentUID(uid)
		if err != nil {
			if apperr.KindOf(err) == apperr.KindNotFound {
				return apperr.NotFound("asset %s not found", uid)
			}
			return err
		}
		uid = cur
	}
	loc, seen := t.Location(uid)
	located := seen && loc.Zone != 0
	// An unknown beacon (timed out, its zone deleted) has no location:
	// null, as the integration API answers, not zeroed fields whose
	// since reads as 1970.
	out := map[string]any{"asset_uid": uid, "located": located, "location": nil}
	if located {
		out["location"] = loc
	}
	return ok(w, out)
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

package handlers

import (
	"context"
	"net/http"
	"time"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/status"

	"github.com/julienschmidt/httprouter"
)

// StatusMonitor answers the status endpoints from cached probe results
// (status.Monitor); only Recheck probes on request.
type StatusMonitor interface {
	Dashboard() status.Dashboard
	AlertsysStatus() status.AlertsysSnapshot
	Recheck(ctx context.Context, target string) (status.Dashboard, error)
}

// noStore keeps an answer out of every cache: status snapshots, which
// change from one second to the next, and answers carrying a secret (a
// login's tokens, the mobile key, a navigation token, the companion QR),
// which went out without it (a black-box check).
func noStore(w http.ResponseWriter) { w.Header().Set("Cache-Control", "no-store") }

func (s *Server) statusMQTT(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	noStore(w)
	if s.deps.Status == nil {
		return apperr.Unavailable("MQTT ingest is not running in this configuration")
	}
	return ok(w, s.deps.Status.MQTTStatus())
}

func (s *Server) monitor() (StatusMonitor, error) {
	if s.deps.Monitor == nil {
		return nil, apperr.Unavailable("status monitoring is not running in this configuration")
	}
	return s.deps.Monitor, nil
}

func (s *Server) statusAlertsys(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	noStore(w)
	m, err := s.monitor()
	if err != nil {
		return err
	}
	return ok(w, m.AlertsysStatus())
}

func (s *Server) statusDashboard(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	noStore(w)
	m, err := s.monitor()
	if err != nil {
		return err
	}
	return ok(w, m.Dashboard())
}

// recheckTimeout bounds a forced probe; each probe has tighter limits of
// its own (10 s per request), push runs two of them.
const recheckTimeout = 30 * time.Second

func (s *Server) statusRecheck(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	noStore(w)
	var body struct {
		Target string `json:"target"`
	}
	if err := decode(w, r, &body); err != nil {
		return err
	}
	switch body.Target {
	case status.TargetMQTT, status.TargetAlertsys, status.TargetPush:
	default:
		return apperr.InvalidField("target", "target must be mqtt, alertsys or push")
	}
	m, err := s.monitor()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), recheckTimeout)
	defer cancel()
	d, err := m.Recheck(ctx, body.Target)
	if err != nil {
		return err
	}
	return ok(w, d)
}

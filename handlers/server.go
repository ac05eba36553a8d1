package handlers

import (
	"io/fs"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"

	"beaconhub/appliance/applog"
	"beaconhub/appliance/assets"
	"beaconhub/appliance/auth"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/config"
	"beaconhub/appliance/eink"
	"beaconhub/appliance/nav"
	"beaconhub/appliance/push"
	"beaconhub/appliance/sensors"
	"beaconhub/store"

	"github.com/julienschmidt/httprouter"
)

// Deps are what the HTTP layer calls into. Subsystems that a feature set
// does not start are nil, and their routes answer accordingly.
type Deps struct {
	Live   *config.Live
	DB     *store.DB
	Auth   *auth.Service
	AppLog *applog.Log
	Logger *slog.Logger
	Static fs.FS
	Status StatusSource
	// Monitor serves the status dashboard, alertsys status and rechecks
	// (status.Monitor); nil where nothing ingests.
	Monitor StatusMonitor
	// Assets is the asset registry (locations, beacons, gateways, devices);
	// nil where no database is kept.
	Assets *assets.Service
	// EInk is the e-ink display subsystem; nil where no database is kept.
	EInk *eink.Service
	// Sensors serves sensor history, devices, alerts and the chart
	// datasource; nil without feature sensors.
	Sensors *sensors.Service
	// Push is the push-notification subsystem (companion QR); nil where
	// nothing ingests.
	Push *push.Service
	// Nav is indoor navigation (floors, graph, pathfinding); nil where no
	// database is kept.
	Nav *nav.Service
	// RTLS is the tracking engine behind the tracking, user-location,
	// integration-location and WebSocket routes; nil when feature rtls is
	// off (tracking.go).
	RTLS Tracker
	// WS tunes the WebSocket feed; zero fields take defaults (ws.go).
	WS WSOptions
	// Clock stamps interface templates and bug reports; nil means the
	// wall clock.
	Clock clock.Clock
}

// StatusSource provides cached status snapshots (MQTT and later others).
type StatusSource interface {
	MQTTStatus() any
}

// handlerFunc is a handler that returns its error for the one error writer.
type handlerFunc func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error

// Server is the HTTP handler of the appliance.
type Server struct {
	deps   Deps
	log    *slog.Logger
	router *httprouter.Router
	routes []Route
	// exact holds static routes that httprouter cannot place next to a
	// parameter at the same position (e.g. /api/v1/assets/remint/plan beside
	// /api/v1/assets/:asset_uid); they are matched by exact path first.
	exact map[string]httprouter.Handle
	// params holds parameter routes httprouter cannot place beside
	// another parameter route (paramroutes.go).
	params []paramRoute
	// hub is the WebSocket feed (ws_hub.go); nil without the engine.
	hub *wsHub
	// navGzip keeps compressed navigation projects by hash (navgzip.go).
	navGzip navGzipCache
	// imageTags caches map images' ETags by image id (mapImage): an
	// image id's bytes never change while the process runs (a restore
	// replaces the database offline), and hashing up to 5 MiB at every
	// revalidation is not worth repeating.
	imageTags sync.Map
}

// New builds the router from the route table.
func New(d Deps) *Server {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	s := &Server{deps: d, log: d.Logger, router: httprouter.New()}
	s.router.RedirectTrailingSlash = false
	s.router.RedirectFixedPath = false
	s.router.HandleMethodNotAllowed = true
	s.router.NotFound = http.HandlerFunc(s.notFound)
	s.router.MethodNotAllowed = http.HandlerFunc(s.methodNotAllowed)
	// The router's own OPTIONS answer, its Allow completed likewise (GET
	// /maps/image is exact, its HEAD in the router: a review).
	s.router.GlobalOPTIONS = http.HandlerFunc(s.completeAllow)
	s.router.PanicHandler = func(w http.ResponseWriter, r *http.Request, v any) {
		s.log.Error("handler panic", "route", routeOf(r), "panic", v)
		writeJSONError(w, http.StatusInternalServerError, "internal error")
	}
	s.routes = s.table()
	s.exact = map[string]httprouter.Handle{}
	// Parameter routes first, so that a static route conflicting with one
	// is the one that falls back to exact matching.
	ordered := append([]Route(nil), s.routes...)
	sort.SliceStable(ordered, func(i, j int) bool { return hasParam(ordered[i].Path) && !hasParam(ordered[j].Path) })
	for _, rt := range ordered {
		s.mount(rt)
		if rt.Method == http.MethodGet && answersHead[rt.Path] {
			rt.Method = http.MethodHead
			s.mount(rt)
		}
	}
	if d.RTLS != nil {
		s.hub = newWSHub(s, d.RTLS, d.WS)
	}
	return s
}

// answersHead lists the GET routes that serve documents (the frontend,
// the key set, map images) and so answer HEAD as well: a cache or a
// browser checking its copy of a floor plan asks with HEAD. Only these:
// some GET routes act (tracking/start), and a HEAD must never act. Go's
// server sends HEAD the GET's headers without its body.
var answersHead = map[string]bool{
	"/": true, "/index.html": true, "/css/:filename": true, "/js/:filename": true,
	"/images/:filename": true, "/webfonts/:filename": true, "/.well-known/jwks.json": true,
	"/api/v1/maps/image": true,
}

func hasParam(path string) bool { return strings.ContainsAny(path, ":*") }

func (s *Server) mount(rt Route) {
	h := s.guard(rt, rt.h)
	defer func() {
		if v := recover(); v != nil {
			if hasParam(rt.Path) {
				// httprouter cannot hold both /tracking/start/:alg and
				// /tracking/:id; the later one is matched by segments
				// (paramroutes.go).
				s.addParamRoute(rt, h)
				return
			}
			s.exact[rt.Method+" "+rt.Path] = h
		}
	}()
	s.router.Handle(rt.Method, rt.Path, h)
}

// Routes returns the route table (for the guard-matrix test and docs).
func (s *Server) Routes() []Route { return append([]Route(nil), s.routes...) }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if refusePreview(w, r) {
		return
	}
	if len(s.exact) > 0 {
		if h, ok := s.exact[r.Method+" "+r.URL.Path]; ok {
			h(w, r, nil)
			return
		}
	}
	if s.serveParamRoute(w, r) {
		return
	}
	s.router.ServeHTTP(w, r)
}

// notFound answers a path the router does not know for this method: 405
// with Allow when it is a path of the exact or segment-matched routes
// under another method (the router's own 405 does not see those: a
// review found GET /maps/upload answered 404), OPTIONS as the router
// answers it on its own paths, else 404.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	allow := s.otherMethods(r.URL.Path, "")
	if len(allow) == 0 {
		writeJSONError(w, http.StatusNotFound, "no such endpoint")
		return
	}
	w.Header().Set("Allow", strings.Join(append(allow, http.MethodOptions), ", "))
	if r.Method != http.MethodOptions {
		writeJSONError(w, http.StatusMethodNotAllowed, "method not allowed")
	}
}

// methodNotAllowed is the router's 405, its Allow completed with the
// exact and segment-matched routes' methods on the same path (GET
// /maps/image is exact, its HEAD in the router: the Allow lacked GET).
func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	s.completeAllow(w, r)
	writeJSONError(w, http.StatusMethodNotAllowed, "method not allowed")
}

// completeAllow completes the router's Allow header (its OPTIONS answer
// and its 405) with the exact and segment-matched routes' methods.
func (s *Server) completeAllow(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Allow", strings.Join(s.otherMethods(r.URL.Path, w.Header().Get("Allow")), ", "))
}

// otherMethods merges the methods of have (an Allow value) with those of
// the exact and segment-matched routes on path, in a fixed order.
func (s *Server) otherMethods(path, have string) []string {
	in := map[string]bool{}
	for _, m := range strings.Split(have, ",") {
		if m = strings.TrimSpace(m); m != "" {
			in[m] = true
		}
	}
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
		if _, ok := s.exact[m+" "+path]; in[m] || ok || s.matchesParamRoute(m, path) {
			out = append(out, m)
		}
	}
	return out
}

func writeJSONError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff") // as every other answer (a black-box check)
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`{"type":"error","message":"` + msg + `","payload":{}}`))
}

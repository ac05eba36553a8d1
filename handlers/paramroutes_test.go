package handlers

import (
	"net/http"
	"testing"

	"github.com/julienschmidt/httprouter"
)

// Segment-matched routes serve what the router cannot hold and never
// shadow a route the router has.
func TestParamRoutes(t *testing.T) {
	s := &Server{router: httprouter.New()}
	s.router.GET("/api/v1/tracking/status", func(http.ResponseWriter, *http.Request, httprouter.Params) {})
	hit := ""
	s.addParamRoute(Route{Method: "GET", Path: "/api/v1/tracking/:id"}, func(_ http.ResponseWriter, _ *http.Request, p httprouter.Params) {
		hit = p.ByName("id")
	})
	for path, want := range map[string]string{
		"/api/v1/tracking/WCH-1":     "WCH-1",
		"/api/v1/tracking/status":    "", // a router route
		"/api/v1/tracking/a/b":       "", // more segments
		"/api/v1/tracking/":          "", // empty parameter
		"/api/v1/trackingx/anything": "",
	} {
		hit = ""
		r, _ := http.NewRequest("GET", path, nil)
		served := s.serveParamRoute(nil, r)
		if hit != want || served != (want != "") {
			t.Errorf("%s: served %v with %q, want %q", path, served, hit, want)
		}
	}
	r, _ := http.NewRequest("POST", "/api/v1/tracking/WCH-1", nil)
	if s.serveParamRoute(nil, r) {
		t.Error("served the wrong method")
	}
	defer func() {
		if recover() == nil {
			t.Error("a duplicate table entry did not panic")
		}
	}()
	s.routes = append(s.routes, Route{Method: "GET", Path: "/dup/:x"}, Route{Method: "GET", Path: "/dup/:x"})
	s.addParamRoute(Route{Method: "GET", Path: "/dup/:x"}, nil)
}

package handlers

import (
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"
)

// paramRoute is a parameter route matched segment by segment because
// httprouter rejects it next to another parameter route at the same
// position (GET /api/v1/tracking/:id beside /api/v1/tracking/start/:alg).
// Such routes are few, so a linear scan before the router is cheap.
type paramRoute struct {
	method string
	segs   []string
	h      httprouter.Handle
}

func (s *Server) addParamRoute(rt Route, h httprouter.Handle) {
	n := 0
	for _, o := range s.routes {
		if o.Method == rt.Method && o.Path == rt.Path {
			n++
		}
	}
	if n > 1 {
		panic("route table lists " + rt.Method + " " + rt.Path + " twice")
	}
	s.params = append(s.params, paramRoute{method: rt.Method, segs: strings.Split(rt.Path, "/"), h: h})
}

// serveParamRoute serves r when one of the segment-matched routes fits.
// Static routes registered in the router take precedence: a request whose
// path is a static route of the table never reaches here (exact routes are
// checked first, and a literal segment never matches a parameter here
// unless no router route has that literal).
func (s *Server) serveParamRoute(w http.ResponseWriter, r *http.Request) bool {
	if len(s.params) == 0 {
		return false
	}
	segs := strings.Split(r.URL.Path, "/")
	for _, pr := range s.params {
		if pr.method != r.Method {
			continue
		}
		if ps, ok := pr.match(segs); ok {
			if h, _, _ := s.router.Lookup(r.Method, r.URL.Path); h != nil {
				return false // the router has a route for this very path
			}
			pr.h(w, r, ps)
			return true
		}
	}
	return false
}

// match reports whether the path's segments fit the route's, with the
// parameters they give.
func (pr *paramRoute) match(segs []string) (httprouter.Params, bool) {
	if len(pr.segs) != len(segs) {
		return nil, false
	}
	var ps httprouter.Params
	for i, seg := range pr.segs {
		switch {
		case strings.HasPrefix(seg, ":"):
			if segs[i] == "" {
				return nil, false
			}
			ps = append(ps, httprouter.Param{Key: seg[1:], Value: segs[i]})
		case seg != segs[i]:
			return nil, false
		}
	}
	return ps, true
}

// matchesParamRoute reports whether a segment-matched route of method
// fits path.
func (s *Server) matchesParamRoute(method, path string) bool {
	segs := strings.Split(path, "/")
	for _, pr := range s.params {
		if pr.method == method {
			if _, ok := pr.match(segs); ok {
				return true
			}
		}
	}
	return false
}

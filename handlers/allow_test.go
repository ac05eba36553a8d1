package handlers

import (
	"net/http"
	"sort"
	"strings"
	"testing"
)

// OPTIONS and a 405's Allow list exactly the methods the path
// serves (a method is served when it is neither 404 "no such endpoint"
// nor 405), on every path of the route table (a review found the exact
// routes' methods missing from both).
func TestAllowMatchesServedMethodsEverywhere(t *testing.T) {
	h := newHarness(t)
	paths := map[string]bool{}
	for _, rt := range h.srv.Routes() {
		segs := strings.Split(rt.Path, "/")
		for i, s := range segs {
			if strings.HasPrefix(s, ":") || strings.HasPrefix(s, "*") {
				segs[i] = "X1"
			}
		}
		paths[strings.Join(segs, "/")] = true
	}
	var list []string
	for p := range paths {
		list = append(list, p)
	}
	sort.Strings(list)
	for _, p := range list {
		var served []string
		for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"} {
			r := h.do(req{method: m, path: p, body: bodyFor(m)})
			if r.Code == http.StatusMethodNotAllowed || (r.Code == http.StatusNotFound && r.Message == "no such endpoint") {
				continue
			}
			served = append(served, m)
		}
		want := strings.Join(append(served, "OPTIONS"), ", ")
		o := h.do(req{method: "OPTIONS", path: p})
		if o.Code != http.StatusOK || normAllow(o.Header.Get("Allow")) != normAllow(want) {
			t.Errorf("OPTIONS %s: %d Allow=%q, served %q", p, o.Code, o.Header.Get("Allow"), want)
		}
		for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"} {
			r := h.do(req{method: m, path: p, body: bodyFor(m)})
			if r.Code == http.StatusMethodNotAllowed && normAllow(r.Header.Get("Allow")) != normAllow(want) {
				t.Errorf("%s %s: 405 Allow=%q, served %q", m, p, r.Header.Get("Allow"), want)
			}
		}
	}
}

func normAllow(s string) string {
	var ms []string
	for _, m := range strings.Split(s, ",") {
		if m = strings.TrimSpace(m); m != "" {
			ms = append(ms, m)
		}
	}
	sort.Strings(ms)
	return strings.Join(ms, ",")
}

// OPTIONS /maps/image is answered by the router itself (its HEAD is a
// router route): the Allow lacks the exact GET, the very gap 9e88cce
// closed for the 405.
func TestOptionsOnMapsImageListsGET(t *testing.T) {
	h := newHarness(t)
	r := h.do(req{method: "OPTIONS", path: "/api/v1/maps/image"})
	if !strings.Contains(r.Header.Get("Allow"), "GET") {
		t.Errorf("OPTIONS /api/v1/maps/image: %d Allow=%q, want GET in it", r.Code, r.Header.Get("Allow"))
	}
}

// A 405 on an exact/segment path omits OPTIONS, which that path now
// answers (the router's own 405 lists it).
func TestExact405AllowListsOPTIONS(t *testing.T) {
	h := newHarness(t)
	ref := h.do(req{method: "PUT", path: "/api/v1/maps"})
	r := h.do(req{method: "GET", path: "/api/v1/maps/upload"})
	if r.Code != 405 || !strings.Contains(r.Header.Get("Allow"), "OPTIONS") {
		t.Errorf("GET /api/v1/maps/upload: %d Allow=%q; PUT /api/v1/maps: Allow=%q", r.Code, r.Header.Get("Allow"), ref.Header.Get("Allow"))
	}
}

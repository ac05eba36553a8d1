package handlers

import (
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strconv"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/nav"

	"github.com/julienschmidt/httprouter"
)

// MobileKeyHeader carries server_mobile_api_key on the mobile routes, in
// addition to their Token/Auth guard.
const MobileKeyHeader = "X-Mobile-Key"

// projectID reads :id; 0 is allowed (floors not assigned to a location).
func projectID(p httprouter.Params) (uint64, error) {
	id, err := strconv.ParseUint(p.ByName("id"), 10, 64)
	if err != nil {
		return 0, apperr.InvalidField("id", "id must be a non-negative integer")
	}
	return id, nil
}

func (s *Server) navProject(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	n, err := s.nav()
	if err != nil {
		return err
	}
	return s.project(w, r, n, p)
}

// project answers project :id with its ETag, or 304.
func (s *Server) project(w http.ResponseWriter, r *http.Request, n *nav.Service, p httprouter.Params) error {
	id, err := projectID(p)
	if err != nil {
		return err
	}
	_, data, sha, err := n.ProjectJSON(id)
	if err != nil {
		return err
	}
	etag := `"` + sha + `"`
	w.Header().Set("ETag", etag)
	// The 304 carries the Vary the 200 does (a cache keys on it).
	w.Header().Add("Vary", "Accept-Encoding")
	if notModified(w, r, etag) {
		return nil
	}
	// The bytes the hash covers, not a second encoding of a large project.
	return s.writeProject(w, r, id, sha, data)
}

func (s *Server) navProjectSHA(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	n, err := s.nav()
	if err != nil {
		return err
	}
	id, err := projectID(p)
	if err != nil {
		return err
	}
	_, sha, err := n.Project(id)
	if err != nil {
		return err
	}
	w.Header().Set("ETag", `"`+sha+`"`)
	return ok(w, map[string]any{"id": id, "sha": sha})
}

func (s *Server) mobileKey(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	if _, err := s.nav(); err != nil {
		return err
	}
	noStore(w)
	return ok(w, map[string]any{"mobile_api_key": s.deps.Live.Get().MobileAPIKey, "header": MobileKeyHeader})
}

// mobileNav is the prelude of the /mobile/* routes: the feature first
// (with navigation off every route answers 503, key or not), then the key.
func (s *Server) mobileNav(r *http.Request) (*nav.Service, error) {
	n, err := s.nav()
	if err != nil {
		return nil, err
	}
	return n, s.checkMobileKey(r)
}

// checkMobileKey refuses a missing or wrong shared key; an empty key in
// the configuration refuses everyone rather than admitting everyone.
func (s *Server) checkMobileKey(r *http.Request) error {
	want := s.deps.Live.Get().MobileAPIKey
	got := r.Header.Get(MobileKeyHeader)
	if want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return apperr.Forbidden("a valid %s header is required", MobileKeyHeader)
	}
	return nil
}

func (s *Server) mobileProject(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	n, err := s.mobileNav(r)
	if err != nil {
		return err
	}
	return s.project(w, r, n, p)
}

// mobileCatalog lists every project with its hash, so the app fetches
// only those whose hash it does not have.
func (s *Server) mobileCatalog(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	n, err := s.mobileNav(r)
	if err != nil {
		return err
	}
	ids, err := n.ProjectIDs()
	if err != nil {
		return err
	}
	out := []map[string]any{}
	for _, id := range ids {
		_, sha, err := n.Project(id)
		if err != nil {
			return err
		}
		out = append(out, map[string]any{"id": id, "sha": sha})
	}
	return ok(w, map[string]any{"projects": out})
}

// mobileSnapshot is every project in one download.
func (s *Server) mobileSnapshot(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	n, err := s.mobileNav(r)
	if err != nil {
		return err
	}
	ids, err := n.ProjectIDs()
	if err != nil {
		return err
	}
	out := []map[string]any{}
	for _, id := range ids {
		_, data, sha, err := n.ProjectJSON(id)
		if err != nil {
			return err
		}
		out = append(out, map[string]any{"sha": sha, "project": json.RawMessage(data)})
	}
	return ok(w, map[string]any{"projects": out})
}

package handlers

import (
	"net/http"
	"slices"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/assets"
	"beaconhub/appliance/auth"
	"beaconhub/appliance/rtls"
	"beaconhub/store"

	"github.com/julienschmidt/httprouter"
)

// Simple-user location (spec "Simple-user location"): read-only, 400 when
// feature rtls is off, and limited to the caller's location scope.

// isTrackable: an active beacon of a type the engine locates (spec
// "Integration API": watch, panic, navigation, sos).
func isTrackable(b *assets.BeaconView) bool {
	return b.Active && b.Status == store.AssetActive && rtls.Trackable(b.Type)
}

// scope says which home locations the caller may see. Admins and api
// accounts are system-wide; a user or maintenance account bound to a
// location sees that location and everything below it.
type scope struct {
	all bool
	in  map[uint64]bool
}

func (sc scope) allows(location uint64) bool { return sc.all || sc.in[location] }

func (s *Server) scopeOf(r *http.Request) (scope, error) {
	c := claimsFrom(r)
	if c == nil {
		return scope{}, apperr.Forbidden(msgAuthRequired)
	}
	if c.Role == auth.RoleAdmin || c.Role == auth.RoleAPI {
		return scope{all: true}, nil
	}
	u, err := s.deps.DB.GetUser(c.UserID)
	if err != nil {
		return scope{}, err
	}
	if u.LocationID == 0 {
		return scope{all: true}, nil
	}
	reg, err := s.registry()
	if err != nil {
		return scope{}, err
	}
	locs, err := reg.Locations()
	if err != nil {
		return scope{}, err
	}
	children := map[uint64][]uint64{}
	for _, l := range locs {
		children[l.ParentID] = append(children[l.ParentID], l.ID)
	}
	in := map[uint64]bool{u.LocationID: true}
	queue := []uint64{u.LocationID}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		for _, ch := range children[id] {
			if !in[ch] {
				in[ch] = true
				queue = append(queue, ch)
			}
		}
	}
	return scope{in: in}, nil
}

// trackableBeacons lists the active trackable beacons the caller may see.
func (s *Server) trackableBeacons(r *http.Request) ([]assets.BeaconView, error) {
	reg, err := s.registry()
	if err != nil {
		return nil, err
	}
	all, err := reg.Beacons(0)
	if err != nil {
		return nil, err
	}
	seen, err := s.inScope(r, all)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(seen, func(b assets.BeaconView) bool { return !isTrackable(&b) }), nil
}

// visibleTrackable resolves uid to a trackable beacon in the caller's
// scope; anything else is 404, so existence outside the scope is not
// revealed.
func (s *Server) visibleTrackable(r *http.Request, uid string) (assets.BeaconView, error) {
	reg, err := s.registry()
	if err != nil {
		return assets.BeaconView{}, err
	}
	// One answer for unknown, untrackable and out of scope: distinct
	// wording would tell a scoped user which uids exist elsewhere.
	hidden := apperr.NotFound("no trackable beacon %s visible to you", uid)
	b, err := reg.Beacon(uid)
	if err != nil {
		if apperr.KindOf(err) == apperr.KindNotFound {
			return b, hidden
		}
		return b, err
	}
	sc, err := s.scopeOf(r)
	if err != nil {
		return b, err
	}
	if !isTrackable(&b) || !sc.allows(b.LocationID) {
		return b, hidden
	}
	return b, nil
}

// userTrackableBeacons: GET /api/v1/user/rtls/trackable-beacons. Each
// beacon carries its live location in the integration shape.
func (s *Server) userTrackableBeacons(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	bs, locs, err := s.trackableLocations(r)
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(bs))
	for i := range bs {
		loc := locs[i]
		out = append(out, map[string]any{"asset_uid": bs[i].AssetUID, "mac": nullIfEmpty(bs[i].MAC), "name": bs[i].Name,
			"type": bs[i].Type, "location_id": nullIfZero(bs[i].LocationID), "zone": loc.Zone, "map": loc.Map,
			"position": loc.Position, "since": loc.Since, "updated": loc.Updated, "last_seen": loc.LastSeen})
	}
	return ok(w, map[string]any{"beacons": out})
}

// userZoneIntervals: GET /api/v1/user/rtls/beacons/:mac/zone-intervals
// (:mac is the asset_uid).
func (s *Server) userZoneIntervals(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if _, err := s.tracker(); err != nil {
		return err
	}
	b, err := s.visibleTrackable(r, p.ByName("mac"))
	if err != nil {
		return err
	}
	return s.zoneIntervalPage(w, r, b.AssetUID)
}

func nullIfZero(v uint64) any {
	if v == 0 {
		return nil
	}
	return v
}

package handlers

import (
	"net/http"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/assets"
	"beaconhub/appliance/rtls"

	"github.com/julienschmidt/httprouter"
)

// Integration API, RTLS part (spec "Integration API"; the shapes are fixed
// in docs/api.md and the OpenAPI document): roles api and admin, epoch ms,
// 400 when feature rtls is off.

type idName struct {
	ID   uint64 `json:"id"`
	Name string `json:"name"`
}

type xy struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// integrationBeacon is the Beacon shape.
type integrationBeacon struct {
	AssetUID   string  `json:"asset_uid"`
	MAC        *string `json:"mac"`
	Name       string  `json:"name"`
	Type       string  `json:"type"`
	LocationID *uint64 `json:"location_id"`
}

// beaconLoc is the BeaconLocation shape. Zone, Map, Position, Since and
// Updated are null until the engine has seen the beacon since it started
// (and again while the beacon is unknown); LastSeen is the persisted last
// radio sighting.
type beaconLoc struct {
	AssetUID string  `json:"asset_uid"`
	Name     string  `json:"name"`
	Type     string  `json:"type"`
	Zone     *idName `json:"zone"`
	Map      *idName `json:"map"`
	Position *xy     `json:"position"`
	Since    *int64  `json:"since"`
	Updated  *int64  `json:"updated"`
	LastSeen *int64  `json:"last_seen"`
}

// integrationZone is the Zone shape.
type integrationZone struct {
	ID       uint64   `json:"id"`
	Name     string   `json:"name"`
	MapID    uint64   `json:"map_id"`
	MapName  string   `json:"map_name"`
	X1       float64  `json:"x1"`
	Y1       float64  `json:"y1"`
	X2       float64  `json:"x2"`
	Y2       float64  `json:"y2"`
	Adjacent []uint64 `json:"adjacent"`
}

func ptr[T any](v T) *T { return &v }

// mapNames maps map ids to names.
func (s *Server) mapNames() (map[uint64]string, error) {
	maps, err := s.deps.DB.ListMaps()
	if err != nil {
		return nil, err
	}
	out := make(map[uint64]string, len(maps))
	for _, m := range maps {
		out[m.ID] = m.Name
	}
	return out, nil
}

// beaconLocation builds one BeaconLocation from the engine's live state.
func beaconLocation(t Tracker, mapNames map[uint64]string, b *assets.BeaconView) beaconLoc {
	out := beaconLoc{AssetUID: b.AssetUID, Name: b.Name, Type: b.Type}
	loc, seen := t.Location(b.AssetUID)
	// The persisted time moves in whole seconds (assets.Resolution); the
	// engine's last sighting is exact, so last_seen never reads earlier
	// than updated in the same answer.
	ls := t.LastSeen(b.AssetUID)
	if seen && loc.Updated > ls {
		ls = loc.Updated
	}
	if ls > 0 {
		out.LastSeen = ptr(ls)
	}
	if !seen || loc.Zone == 0 {
		return out
	}
	out.Zone = &idName{ID: loc.Zone, Name: loc.ZoneName}
	out.Map = &idName{ID: loc.MapID, Name: mapNames[loc.MapID]}
	if loc.HasPos {
		out.Position = &xy{X: loc.X, Y: loc.Y}
	}
	out.Since, out.Updated = ptr(loc.Since), ptr(loc.Updated)
	return out
}

// integrationBeacons: GET /api/v1/integration/beacons[?type=].
func (s *Server) integrationBeacons(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if _, err := s.tracker(); err != nil {
		return err
	}
	typ := r.URL.Query().Get("type")
	if typ != "" && !rtls.Trackable(typ) {
		return apperr.InvalidField("type", "type must be one of watch, panic, navigation, sos")
	}
	bs, err := s.trackableBeacons(r)
	if err != nil {
		return err
	}
	out := make([]integrationBeacon, 0, len(bs))
	for _, b := range bs {
		if typ != "" && b.Type != typ {
			continue
		}
		ib := integrationBeacon{AssetUID: b.AssetUID, Name: b.Name, Type: b.Type}
		if b.MAC != "" {
			ib.MAC = ptr(b.MAC)
		}
		if b.LocationID != 0 {
			ib.LocationID = ptr(b.LocationID)
		}
		out = append(out, ib)
	}
	return ok(w, map[string]any{"beacons": out})
}

// integrationLocations: GET /api/v1/integration/beacons/locations.
func (s *Server) integrationLocations(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	_, locs, err := s.trackableLocations(r)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"locations": locs})
}

// trackableLocations lists the trackable beacons the caller may see, each
// with its live location in the integration shape.
func (s *Server) trackableLocations(r *http.Request) ([]assets.BeaconView, []beaconLoc, error) {
	t, err := s.tracker()
	if err != nil {
		return nil, nil, err
	}
	bs, err := s.trackableBeacons(r)
	if err != nil {
		return nil, nil, err
	}
	names, err := s.mapNames()
	if err != nil {
		return nil, nil, err
	}
	locs := make([]beaconLoc, len(bs))
	for i := range bs {
		locs[i] = beaconLocation(t, names, &bs[i])
	}
	return bs, locs, nil
}

// integrationLocation: GET /api/v1/integration/beacons/:mac/location
// (:mac is the asset_uid; 404 unknown or untrackable).
func (s *Server) integrationLocation(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	t, err := s.tracker()
	if err != nil {
		return err
	}
	b, err := s.visibleTrackable(r, p.ByName("mac"))
	if err != nil {
		return err
	}
	names, err := s.mapNames()
	if err != nil {
		return err
	}
	return ok(w, beaconLocation(t, names, &b))
}

// integrationZones: GET /api/v1/integration/zones.
func (s *Server) integrationZones(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	// Zones are the navigation feature's as much as the engine's (the
	// map routes serve them with either), so navigation alone serves
	// them too; with neither, the answer is the rest of this family's.
	if !s.navigationOn() {
		if _, err := s.tracker(); err != nil {
			return err
		}
	}
	zones, err := s.deps.DB.ListZones(0)
	if err != nil {
		return err
	}
	names, err := s.mapNames()
	if err != nil {
		return err
	}
	out := make([]integrationZone, 0, len(zones))
	for _, z := range zones {
		adj := z.Adjacent
		if adj == nil {
			adj = []uint64{}
		}
		out = append(out, integrationZone{ID: z.ID, Name: z.Name, MapID: z.MapID, MapName: names[z.MapID],
			X1: z.X1, Y1: z.Y1, X2: z.X2, Y2: z.Y2, Adjacent: adj})
	}
	return ok(w, map[string]any{"zones": out})
}

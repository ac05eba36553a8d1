package handlers

import (
	"net/http"

	"beaconhub/appliance/rtls"
	"beaconhub/store"

	"github.com/julienschmidt/httprouter"
)

// Map overviews: what the tracking canvas draws. Live beacons appear only
// when feature rtls runs, and only those in the caller's scope.

type canvasBeacon struct {
	AssetUID string `json:"asset_uid"`
	Name     string `json:"name"`
	Type     string `json:"type"`
	ZoneID   uint64 `json:"zone_id"`
	Position *xy    `json:"position"`
	Since    int64  `json:"since"`
	Updated  int64  `json:"updated"`
}

// liveOnMaps returns the caller's trackable beacons the engine has placed,
// by map id.
func (s *Server) liveOnMaps(r *http.Request) (map[uint64][]canvasBeacon, error) {
	out := map[uint64][]canvasBeacon{}
	if s.deps.RTLS == nil {
		return out, nil
	}
	bs, err := s.trackableBeacons(r)
	if err != nil {
		return nil, err
	}
	for i := range bs {
		loc, seen := s.deps.RTLS.Location(bs[i].AssetUID)
		if !seen || loc.Zone == 0 {
			continue
		}
		out[loc.MapID] = append(out[loc.MapID], canvasOf(&loc, bs[i].Name, bs[i].Type))
	}
	return out, nil
}

func canvasOf(loc *rtls.Location, name, typ string) canvasBeacon {
	c := canvasBeacon{AssetUID: loc.AssetUID, Name: name, Type: typ, ZoneID: loc.Zone, Since: loc.Since, Updated: loc.Updated}
	if loc.HasPos {
		c.Position = &xy{X: loc.X, Y: loc.Y}
	}
	return c
}

// mapsOverview: GET /api/v1/maps/overview: every map with its counts.
func (s *Server) mapsOverview(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	maps, err := s.deps.DB.ListMaps()
	if err != nil {
		return err
	}
	zones, err := s.deps.DB.ListZones(0)
	if err != nil {
		return err
	}
	gws, err := s.placedGateways(0)
	if err != nil {
		return err
	}
	live, err := s.liveOnMaps(r)
	if err != nil {
		return err
	}
	nz, ng := map[uint64]int{}, map[uint64]int{}
	for _, z := range zones {
		nz[z.MapID]++
	}
	for _, g := range gws {
		ng[g.MapID]++
	}
	type row struct {
		store.Map
		Zones    int `json:"zones"`
		Gateways int `json:"gateways"`
		Located  int `json:"located"`
	}
	out := make([]row, 0, len(maps))
	for _, m := range maps {
		out = append(out, row{Map: m, Zones: nz[m.ID], Gateways: ng[m.ID], Located: len(live[m.ID])})
	}
	return ok(w, map[string]any{"maps": out, "tracking": s.deps.RTLS != nil})
}

// mapOverview: GET /api/v1/maps/:id/overview: one map, its zones, placed
// gateways and the live beacons on it.
func (s *Server) mapOverview(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	m, err := s.mapByParam(p)
	if err != nil {
		return err
	}
	zones, err := s.deps.DB.ListZones(m.ID)
	if err != nil {
		return err
	}
	gws, err := s.placedGateways(m.ID)
	if err != nil {
		return err
	}
	live, err := s.liveOnMaps(r)
	if err != nil {
		return err
	}
	beacons := live[m.ID]
	if beacons == nil {
		beacons = []canvasBeacon{}
	}
	return ok(w, map[string]any{"map": m, "zones": zones, "gateways": gws, "beacons": beacons, "tracking": s.deps.RTLS != nil})
}

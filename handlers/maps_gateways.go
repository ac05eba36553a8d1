package handlers

import (
	"math"
	"net/http"
	"strconv"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/applog"
	"beaconhub/appliance/assets"
	"beaconhub/store"

	"github.com/julienschmidt/httprouter"
)

// Gateway placement and the map overviews (the tracking canvas).
//
//	GET    /api/v1/maps/:id/gateways           placed gateways (auth)
//	POST   /api/v1/maps/:id/gateways           place {gateway: asset_uid, x, y} (admin)
//	DELETE /api/v1/maps/:id/gateways/:gateway  unplace (admin)
//
// A gateway sits on at most one map: placing it again moves it. The
// placement follows the gateway record, so it survives a device replace.

type placeInput struct {
	Gateway string   `json:"gateway"`
	X       *float64 `json:"x"`
	Y       *float64 `json:"y"`
}

type placedGateway struct {
	AssetUID string  `json:"asset_uid"`
	Name     string  `json:"name"`
	MAC      string  `json:"mac"`
	MapID    uint64  `json:"map_id"`
	X        float64 `json:"x"`
	Y        float64 `json:"y"`
}

// placedGateways joins placements (on one map, or all for 0) with the
// registry; placements of deleted gateways are skipped.
func (s *Server) placedGateways(mapID uint64) ([]placedGateway, error) {
	reg, err := s.registry()
	if err != nil {
		return nil, err
	}
	ps, err := s.deps.DB.GatewayPlacements(mapID)
	if err != nil {
		return nil, err
	}
	gws, err := reg.Gateways()
	if err != nil {
		return nil, err
	}
	byID := make(map[uint64]*assets.GatewayView, len(gws))
	for i := range gws {
		byID[gws[i].ID] = &gws[i]
	}
	out := []placedGateway{}
	for _, p := range ps {
		if g := byID[p.GatewayID]; g != nil {
			out = append(out, placedGateway{AssetUID: g.AssetUID, Name: g.Name, MAC: g.MAC, MapID: p.MapID, X: p.X, Y: p.Y})
		}
	}
	return out, nil
}

func (s *Server) mapGateways(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	m, err := s.mapByParam(p)
	if err != nil {
		return err
	}
	out, err := s.placedGateways(m.ID)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"map_id": m.ID, "gateways": out})
}

func (s *Server) placeGateway(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	m, err := s.mapByParam(p)
	if err != nil {
		return err
	}
	var in placeInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	reg, err := s.registry()
	if err != nil {
		return err
	}
	g, err := reg.Gateway(in.Gateway)
	if err != nil {
		return apperr.InvalidField("gateway", "gateway %q is not registered", in.Gateway)
	}
	for _, c := range []struct {
		v    *float64
		max  float64
		name string
	}{{in.X, m.Width, "x"}, {in.Y, m.Height, "y"}} {
		if c.v == nil || math.IsNaN(*c.v) || *c.v < 0 || *c.v > c.max {
			return apperr.InvalidField(c.name, "%s must be a pixel position inside the map (0 to %g)", c.name, c.max)
		}
	}
	pl := store.GatewayPlacement{GatewayID: g.ID, MapID: m.ID, X: *in.X, Y: *in.Y}
	if err := s.deps.DB.PlaceGateway(pl); err != nil {
		return store.ClientErr(err, "map")
	}
	s.deps.AppLog.Record(applog.Normal, "map.gateway", "map "+strconv.FormatUint(m.ID, 10), actor(r), "gateway "+g.AssetUID+" placed")
	if err := s.reloadSite(); err != nil {
		return err
	}
	return ok(w, placedGateway{AssetUID: g.AssetUID, Name: g.Name, MAC: g.MAC, MapID: m.ID, X: pl.X, Y: pl.Y})
}

func (s *Server) unplaceGateway(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	m, err := s.mapByParam(p)
	if err != nil {
		return err
	}
	reg, err := s.registry()
	if err != nil {
		return err
	}
	g, err := reg.Gateway(p.ByName("gateway"))
	if err != nil {
		return apperr.NotFound("gateway %s not found", p.ByName("gateway"))
	}
	if err := s.deps.DB.UnplaceGateway(m.ID, g.ID); err != nil {
		return store.ClientErr(err, "placement of gateway "+g.AssetUID+" on this map")
	}
	s.deps.AppLog.Record(applog.Normal, "map.gateway", "map "+strconv.FormatUint(m.ID, 10), actor(r), "gateway "+g.AssetUID+" removed")
	if err := s.reloadSite(); err != nil {
		return err
	}
	return ok(w, map[string]any{"map_id": m.ID, "gateway": g.AssetUID})
}

package handlers

import (
	"net/http"
	"slices"
	"strconv"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/applog"
	"beaconhub/appliance/assets"
	"beaconhub/store"

	"github.com/julienschmidt/httprouter"
)

// Beacons, gateways and asset lookups. Path segments :id and :asset_uid
// are asset_uids (a former uid still finds a reminted asset).

// registry returns the asset service or a 503 where none runs.
func (s *Server) registry() (*assets.Service, error) {
	if s.deps.Assets == nil {
		return nil, apperr.Unavailable("the asset registry is not running in this configuration")
	}
	return s.deps.Assets, nil
}

// actor names the caller in the application log.
func actor(r *http.Request) string {
	if c := claimsFrom(r); c != nil {
		return c.Email
	}
	return "anonymous"
}

func (s *Server) listBeacons(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	reg, err := s.registry()
	if err != nil {
		return err
	}
	bs, err := reg.Beacons(0)
	if err != nil {
		return err
	}
	if bs, err = s.inScope(r, bs); err != nil {
		return err
	}
	return ok(w, map[string]any{"beacons": bs})
}

// inScope keeps the beacons homed inside the caller's location scope (all
// of them for admins, api accounts and unbound users).
func (s *Server) inScope(r *http.Request, bs []assets.BeaconView) ([]assets.BeaconView, error) {
	sc, err := s.scopeOf(r)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(bs, func(b assets.BeaconView) bool { return !sc.allows(b.LocationID) }), nil
}

// beaconInScope reads one beacon the caller may see; outside the scope it
// is 404, so its existence is not disclosed.
func (s *Server) beaconInScope(r *http.Request, id string) (assets.BeaconView, error) {
	reg, err := s.registry()
	if err != nil {
		return assets.BeaconView{}, err
	}
	b, err := reg.Beacon(id)
	if err != nil {
		return assets.BeaconView{}, err
	}
	sc, err := s.scopeOf(r)
	if err != nil {
		return assets.BeaconView{}, err
	}
	if !sc.allows(b.LocationID) {
		return assets.BeaconView{}, apperr.NotFound("beacon %s not found", id)
	}
	return b, nil
}

// maxListLimit bounds GET /api/v1/beacons/:limit.
const maxListLimit = 10000

func (s *Server) latestBeacons(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	reg, err := s.registry()
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(p.ByName("limit"))
	if err != nil || n < 1 || n > maxListLimit {
		return apperr.InvalidField("limit", "limit must be an integer from 1 to %d", maxListLimit)
	}
	bs, err := reg.Beacons(n)
	if err != nil {
		return err
	}
	if bs, err = s.inScope(r, bs); err != nil {
		return err
	}
	return ok(w, map[string]any{"beacons": bs})
}

func (s *Server) getBeacon(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	b, err := s.beaconInScope(r, p.ByName("id"))
	if err != nil {
		return err
	}
	return ok(w, b)
}

func (s *Server) createBeacon(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	reg, err := s.registry()
	if err != nil {
		return err
	}
	var in assets.BeaconInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	b, err := reg.CreateBeacon(in)
	if err != nil {
		return err
	}
	s.deps.AppLog.Record(applog.Normal, "beacon.create", b.AssetUID, actor(r), "beacon "+b.AssetUID+" created with device "+b.MAC)
	return created(w, b)
}

func (s *Server) updateBeacon(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	reg, err := s.registry()
	if err != nil {
		return err
	}
	var in assets.BeaconInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	uid := p.ByName("id")
	b, err := reg.UpdateBeacon(uid, in)
	if err != nil {
		return err
	}
	msg := "beacon " + b.AssetUID + " updated"
	if b.AssetUID != uid {
		msg += " (reminted from " + uid + ")"
	}
	s.deps.AppLog.Record(applog.Normal, "beacon.update", b.AssetUID, actor(r), msg)
	return ok(w, b)
}

func (s *Server) deleteBeacon(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	reg, err := s.registry()
	if err != nil {
		return err
	}
	b, err := reg.DeleteBeacon(p.ByName("id"))
	if err != nil {
		return err
	}
	s.deps.AppLog.Record(applog.Normal, "beacon.delete", b.AssetUID, actor(r), "beacon "+b.AssetUID+" deleted")
	return ok(w, b)
}

func (s *Server) beaconInfo(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	return s.info(w, store.KindBeacon, p.ByName("id"))
}

func (s *Server) assetInfo(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	return s.info(w, "", p.ByName("asset_uid"))
}

func (s *Server) info(w http.ResponseWriter, kind, uid string) error {
	reg, err := s.registry()
	if err != nil {
		return err
	}
	info, err := reg.Info(kind, uid)
	if err != nil {
		return err
	}
	return ok(w, info)
}

func (s *Server) getAsset(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	reg, err := s.registry()
	if err != nil {
		return err
	}
	kind, v, err := reg.AssetByUID(p.ByName("asset_uid"))
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"kind": kind, "asset": v})
}

func (s *Server) beaconAssignments(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	reg, err := s.registry()
	if err != nil {
		return err
	}
	as, err := reg.Assignments(store.KindBeacon, p.ByName("id"))
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"assignments": as})
}

func (s *Server) listGateways(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	reg, err := s.registry()
	if err != nil {
		return err
	}
	gs, err := reg.Gateways()
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"gateways": gs})
}

func (s *Server) getGateway(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	reg, err := s.registry()
	if err != nil {
		return err
	}
	g, err := reg.Gateway(p.ByName("id"))
	if err != nil {
		return err
	}
	return ok(w, g)
}

func (s *Server) createGateway(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	reg, err := s.registry()
	if err != nil {
		return err
	}
	var in assets.GatewayInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	g, err := reg.CreateGateway(in)
	if err != nil {
		return err
	}
	s.deps.AppLog.Record(applog.Normal, "gateway.create", g.AssetUID, actor(r), "gateway "+g.AssetUID+" created with device "+g.MAC)
	return created(w, g)
}

func (s *Server) updateGateway(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	reg, err := s.registry()
	if err != nil {
		return err
	}
	var in assets.GatewayInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	uid := p.ByName("id")
	g, err := reg.UpdateGateway(uid, in)
	if err != nil {
		return err
	}
	msg := "gateway " + g.AssetUID + " updated"
	if g.AssetUID != uid {
		msg += " (reminted from " + uid + ")"
	}
	s.deps.AppLog.Record(applog.Normal, "gateway.update", g.AssetUID, actor(r), msg)
	return ok(w, g)
}

func (s *Server) deleteGateway(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	reg, err := s.registry()
	if err != nil {
		return err
	}
	g, err := reg.DeleteGateway(p.ByName("id"))
	if err != nil {
		return err
	}
	s.deps.AppLog.Record(applog.Normal, "gateway.delete", g.AssetUID, actor(r), "gateway "+g.AssetUID+" deleted")
	return ok(w, g)
}

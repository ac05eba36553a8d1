package handlers

import (
	"fmt"
	"net/http"

	"beaconhub/appliance/applog"
	"beaconhub/appliance/assets"
	"beaconhub/store"

	"github.com/julienschmidt/httprouter"
)

// Devices and the operations that move them between assets: replace
// (single, gateway, batch), merge and remint.

func (s *Server) listDevices(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	reg, err := s.registry()
	if err != nil {
		return err
	}
	q := r.URL.Query()
	ds, err := reg.Devices(assets.DeviceFilter{Status: q.Get("status"), Calibration: q.Get("calibration"), AssetKind: q.Get("asset_kind")})
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"devices": ds})
}

func (s *Server) updateDevice(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	reg, err := s.registry()
	if err != nil {
		return err
	}
	var in assets.DeviceInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	d, err := reg.UpdateDevice(p.ByName("mac"), in)
	if err != nil {
		return err
	}
	s.deps.AppLog.Record(applog.Normal, "device.update", d.MAC, actor(r), "device "+d.MAC+" is "+d.Status)
	return ok(w, d)
}

func (s *Server) replaceBeaconDevice(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	return s.replace(w, r, store.KindBeacon, p.ByName("id"))
}

func (s *Server) replaceGatewayDevice(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	return s.replace(w, r, store.KindGateway, p.ByName("id"))
}

func (s *Server) replace(w http.ResponseWriter, r *http.Request, kind, uid string) error {
	reg, err := s.registry()
	if err != nil {
		return err
	}
	var in assets.ReplaceInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	res, err := reg.Replace(kind, uid, in)
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("%s %s: device %s replaced by %s", kind, res.AssetUID, orNone(res.OldMAC), res.MAC)
	if res.Donor != nil {
		msg += " (taken from " + res.Donor.AssetUID
		if res.Donor.Retired {
			msg += ", retired"
		}
		msg += ")"
	}
	s.deps.AppLog.Record(applog.Normal, kind+".replace_device", res.AssetUID, actor(r), msg)
	return ok(w, res)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func (s *Server) planBeaconReplace(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	reg, err := s.registry()
	if err != nil {
		return err
	}
	var in assets.ReplaceInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	plan, err := reg.PlanReplace(store.KindBeacon, p.ByName("id"), in)
	if err != nil {
		return err
	}
	return ok(w, plan)
}

func (s *Server) replaceBatch(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	reg, err := s.registry()
	if err != nil {
		return err
	}
	var in assets.BatchInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	res, err := reg.ReplaceBatch(in)
	if err != nil {
		return err
	}
	for _, it := range res.Results {
		if it.OK {
			s.deps.AppLog.Record(applog.Normal, it.Result.Kind+".replace_device", it.Result.AssetUID, actor(r),
				fmt.Sprintf("%s %s: device %s replaced by %s (batch)", it.Result.Kind, it.Result.AssetUID, orNone(it.Result.OldMAC), it.Result.MAC))
		}
	}
	return ok(w, res)
}

func (s *Server) planMerge(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	reg, err := s.registry()
	if err != nil {
		return err
	}
	var in assets.MergeInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	plan, err := reg.PlanMerge(p.ByName("id"), in)
	if err != nil {
		return err
	}
	return ok(w, plan)
}

func (s *Server) merge(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	reg, err := s.registry()
	if err != nil {
		return err
	}
	var in assets.MergeInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	res, err := reg.Merge(p.ByName("id"), in)
	if err != nil {
		return err
	}
	s.deps.AppLog.Record(applog.Normal, "beacon.merge", res.AssetUID, actor(r),
		fmt.Sprintf("beacon %s: merged %d sources (%d readings kept, %d dropped)", res.AssetUID, len(res.Sources), res.Kept, res.Dropped))
	return ok(w, res)
}

func (s *Server) remintPlan(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	reg, err := s.registry()
	if err != nil {
		return err
	}
	plan, err := reg.RemintPlan()
	if err != nil {
		return err
	}
	return ok(w, plan)
}

func (s *Server) remintApply(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if err := noBody(w, r); err != nil {
		return err
	}
	reg, err := s.registry()
	if err != nil {
		return err
	}
	res, err := reg.RemintApply()
	s.logRemint(r, res)
	if err != nil {
		return err
	}
	return ok(w, res)
}

// logRemint records what was reminted, also when apply stopped part-way.
func (s *Server) logRemint(r *http.Request, res assets.RemintResult) {
	for _, d := range res.Reminted {
		s.deps.AppLog.Record(applog.Normal, d.Kind+".update", d.NewUID, actor(r), d.Kind+" "+d.OldUID+" reminted as "+d.NewUID)
	}
}

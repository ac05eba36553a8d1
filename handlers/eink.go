package handlers

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/applog"
	"beaconhub/appliance/eink"

	"github.com/julienschmidt/httprouter"
)

// E-ink displays: the device poll (outside /api/v1, no auth, device JSON
// in Windows-1250, never the envelope) and the admin endpoints.

func (s *Server) einkSvc() (*eink.Service, error) {
	if s.deps.EInk == nil {
		return nil, apperr.Unavailable("e-ink displays are not running in this configuration")
	}
	return s.deps.EInk, nil
}

// pollBufs recycles reply buffers: a poll reply is a few hundred bytes to a
// few KiB, and 2,000 displays poll continuously.
var pollBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func plain(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(msg + "\n"))
}

// einkPoll answers GET/POST /eink/display?mac=&voltage=.
func (s *Server) einkPoll(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	svc := s.deps.EInk
	if svc == nil {
		plain(w, http.StatusServiceUnavailable, "e-ink displays are not running in this configuration")
		return nil
	}
	rawMAC, rawVoltage := queryValue(r.URL.RawQuery, "mac"), queryValue(r.URL.RawQuery, "voltage")
	if r.Method == http.MethodPost && rawMAC == "" {
		// Firmwares that post a form body: read it, bounded.
		r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
		// Not "missing mac" for a mac sent in a body too long to read (a
		// black-box check). Other parse errors stay ignored: ParseForm
		// reports one for any bad pair, the query's included, and a
		// firmware's "note=100%" beside a good mac was served before (a
		// review).
		err := r.ParseForm()
		if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
			err = r.ParseMultipartForm(4 << 10)
		}
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			plain(w, http.StatusRequestEntityTooLarge, "form body over 4 KiB")
			return nil
		}
		rawMAC, rawVoltage = r.PostFormValue("mac"), r.PostFormValue("voltage")
	}
	if rawMAC == "" {
		plain(w, http.StatusBadRequest, "missing mac")
		return nil
	}
	mac, good := eink.ParseMAC(rawMAC)
	if !good {
		plain(w, http.StatusBadRequest, "mac must be exactly 12 hex digits")
		return nil
	}
	req := eink.PollRequest{MAC: mac}
	req.Voltage, req.HasVoltage = eink.ParseVoltage(rawVoltage)
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		req.IP = host
	}
	bp := pollBufs.Get().(*[]byte)
	defer pollBufs.Put(bp)
	body, err := svc.Poll((*bp)[:0], req)
	if err != nil {
		s.log.Error("e-ink poll failed", "mac", mac, "err", err)
		plain(w, http.StatusInternalServerError, "internal error")
		return nil
	}
	*bp = body[:0]
	w.Header()["Content-Type"] = einkContentType
	w.Header()["Cache-Control"] = einkNoStore
	// Always a length: net/http adds one only to replies it buffered
	// whole (about 2 KiB), and a firmware may size its buffer by it (a
	// black-box check saw layouts of 40 texts sent chunked).
	w.Header()["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return nil
}

// queryValue returns the first value of key in a raw query without
// building the url.Values map: a poll has two short parameters, and
// ParseQuery's map and slices were a third of a poll's allocations. Only
// an escaped value is unescaped (an invalid escape reads as empty, which
// the caller refuses or ignores).
func queryValue(raw, key string) string {
	for raw != "" {
		var kv string
		kv, raw, _ = strings.Cut(raw, "&")
		k, v, _ := strings.Cut(kv, "=")
		if k != key {
			continue
		}
		if strings.ContainsAny(v, "%+") {
			u, err := url.QueryUnescape(v)
			if err != nil {
				return ""
			}
			return u
		}
		return v
	}
	return ""
}

// Shared header values: assigning the slices directly skips the
// canonicalisation and allocation of Header.Set on every poll.
var (
	einkContentType = []string{"application/json; charset=windows-1250"}
	einkNoStore     = []string{"no-store"}
)

// einkWithID is the prelude of the per-display handlers: the service and
// the display the :id of the path names.
func (s *Server) einkWithID(p httprouter.Params) (*eink.Service, uint64, error) {
	svc, err := s.einkSvc()
	if err != nil {
		return nil, 0, err
	}
	id, err := svc.ResolveID(p.ByName("id"))
	return svc, id, err
}

func (s *Server) listEInk(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	svc, err := s.einkSvc()
	if err != nil {
		return err
	}
	ds, err := svc.Displays()
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"displays": ds})
}

func (s *Server) updateEInk(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	svc, id, err := s.einkWithID(p)
	if err != nil {
		return err
	}
	var in eink.Input
	if err := decode(w, r, &in); err != nil {
		return err
	}
	v, err := svc.Update(id, in)
	if err != nil {
		return err
	}
	s.deps.AppLog.Record(applog.Normal, "eink.update", v.AssetUID, actor(r), "e-ink display "+v.AssetUID+" updated")
	return ok(w, v)
}

func (s *Server) deleteEInk(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	svc, id, err := s.einkWithID(p)
	if err != nil {
		return err
	}
	if err := svc.Delete(id); err != nil {
		return err
	}
	subject := "e-ink display " + strconv.FormatUint(id, 10)
	s.deps.AppLog.Record(applog.Normal, "eink.delete", subject, actor(r), subject+" deleted")
	return ok(w, nil)
}

func (s *Server) setEInkState(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	svc, id, err := s.einkWithID(p)
	if err != nil {
		return err
	}
	var in struct {
		State string `json:"state"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	v, err := svc.SetState(id, in.State)
	if err != nil {
		return err
	}
	s.deps.AppLog.Record(applog.Normal, "eink.state", v.AssetUID, actor(r), "e-ink display "+v.AssetUID+" set "+v.State)
	return ok(w, v)
}

func (s *Server) replaceEInkDevice(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	svc, id, err := s.einkWithID(p)
	if err != nil {
		return err
	}
	var in struct {
		MAC string `json:"mac"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	v, err := svc.ReplaceDevice(id, in.MAC)
	if err != nil {
		return err
	}
	s.deps.AppLog.Record(applog.Normal, "eink.replace_device", v.AssetUID, actor(r), "e-ink display "+v.AssetUID+" now on device "+v.MAC)
	return ok(w, v)
}

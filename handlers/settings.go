package handlers

import (
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/applog"
	"beaconhub/appliance/buildinfo"
	"beaconhub/appliance/config"
	"beaconhub/store"

	"github.com/julienschmidt/httprouter"
)

type optionInfo struct {
	Key     string `json:"key"`
	Group   string `json:"group"`
	UI      bool   `json:"ui"`
	Secret  bool   `json:"secret"`
	Restart bool   `json:"restart"`
}

func (s *Server) settingsPayload() map[string]any {
	editable, readOnly := s.deps.Live.Groups()
	var opts []optionInfo
	for _, o := range config.Options {
		if o.Restricted {
			continue
		}
		opts = append(opts, optionInfo{Key: o.Key, Group: o.Group, UI: o.UI, Secret: o.Secret, Restart: o.Restart})
	}
	return map[string]any{"editable": editable, "read_only": readOnly, "options": opts}
}

func (s *Server) getSettings(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	w.Header().Set("Cache-Control", "no-store")
	return ok(w, s.settingsPayload())
}

// patchSettings applies UI-editable keys at once; any other key is a 400
// naming it, and nothing is applied unless everything validates.
func (s *Server) patchSettings(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var changes map[string]json.RawMessage
	if err := decode(w, r, &changes); err != nil {
		return err
	}
	if len(changes) == 0 {
		return apperr.Invalid("no settings given")
	}
	// Judged against the verbosity before the change, so switching the log
	// off is itself recorded.
	wasLogging := s.deps.Live.Get().LogVerbosity != "none"
	changed, err := s.deps.Live.Patch(changes)
	var ne *config.NotEditableError
	var ve *config.ValidationError
	switch {
	case errors.As(err, &ne):
		return apperr.InvalidField(ne.Key, "%s", ne.Error())
	case errors.As(err, &ve):
		return apperr.InvalidField(ve.Key, "%s", ve.Error())
	case errors.As(err, new(*config.FileEditedError)):
		return apperr.Conflict("%s", err.Error())
	case err != nil:
		return err
	}
	if len(changed) > 0 {
		// Keys only: values of secrets must not reach the log.
		rec := s.deps.AppLog.Record
		if wasLogging {
			rec = s.deps.AppLog.RecordAlways
		}
		rec(applog.Normal, "settings.update", strings.Join(changed, ","), claimsFrom(r).Email,
			"settings changed: "+strings.Join(changed, ", "))
	}
	p := s.settingsPayload()
	sort.Strings(changed)
	if changed == nil {
		changed = []string{} // a list, empty when nothing changed (null was: a review)
	}
	p["changed"] = changed
	w.Header().Set("Cache-Control", "no-store")
	return ok(w, p)
}

// staffTopics are the eight push categories staff can subscribe to.
var staffTopics = []string{"sensors", "sos", "watches", "batteries", "notseen", "calibration", "test", "health"}

func (s *Server) features(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	c := s.deps.Live.Get()
	type topic struct {
		Category string `json:"category"`
		Topic    string `json:"topic"`
	}
	topics := make([]topic, 0, len(staffTopics))
	for _, t := range staffTopics {
		topics = append(topics, topic{Category: t, Topic: c.ServerID + "-" + t})
	}
	feats := c.EnabledFeatures()
	if feats == nil {
		feats = []string{}
	}
	return ok(w, map[string]any{
		"server_id":   c.ServerID,
		"features":    feats,
		"configured":  c.ServerFeatures,
		"server_mode": c.ServerMode,
		"ntfy_topics": topics,
	})
}

func (s *Server) version(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	b := config.ActiveBrand()
	return ok(w, map[string]any{
		"version":    buildinfo.Version,
		"commit":     buildinfo.Commit,
		"build_time": buildinfo.BuildTime,
		"brand":      b.Name,
		"product":    b.Product,
		"company":    b.Company,
	})
}

// pathID reads a positive integer path parameter.
func pathID(p httprouter.Params, name string) (uint64, error) {
	id, err := strconv.ParseUint(p.ByName(name), 10, 64)
	if err != nil || id == 0 {
		return 0, apperr.InvalidField(name, "%s must be a positive integer", name)
	}
	return id, nil
}

func queryInt(r *http.Request, name string, def, min, max int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n > max {
		return 0, apperr.InvalidField(name, "%s must be an integer between %d and %d", name, min, max)
	}
	return n, nil
}

func (s *Server) logs(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	limit, err := queryInt(r, "limit", 50, 1, 500)
	if err != nil {
		return err
	}
	var before uint64
	if c := r.URL.Query().Get("cursor"); c != "" {
		before, err = strconv.ParseUint(c, 10, 64)
		if err != nil || before == 0 {
			return apperr.InvalidField("cursor", "cursor must be a positive integer")
		}
	}
	items, next, err := s.scopedLogs(r, before, limit)
	if err != nil {
		return err
	}
	type item struct {
		ID      uint64 `json:"id"`
		Time    int64  `json:"time"`
		Action  string `json:"action"`
		Subject string `json:"subject"`
		Actor   string `json:"actor"`
		Message string `json:"message"`
	}
	out := make([]item, 0, len(items))
	for _, it := range items {
		out = append(out, item{it.ID, it.Time.UnixMilli(), it.Action, it.Subject, it.Actor, it.Message})
	}
	var nc any
	if next != 0 {
		nc = strconv.FormatUint(next, 10)
	}
	return ok(w, map[string]any{"items": out, "next_cursor": nc})
}

// logScanBudget bounds the entries one page of a location-bound account's
// log reads looking for its own: past it the page comes back short, with
// a cursor to go on from.
const logScanBudget = 2000

// scopedLogs is a page of the app log as the caller may see it. A
// location-bound account sees only the entries about assets it may read
// elsewhere: beacons homed inside its scope (their routes answer 404
// outside it), gateways and e-ink displays (their routes are site-wide).
// The whole log showed it every account's email and role changes and the
// names of other sites' beacons (two black-box checks). Entries about
// users, the configuration or an asset since deleted are none of these.
// Everyone else sees the whole log.
func (s *Server) scopedLogs(r *http.Request, before uint64, limit int) ([]store.LogRecord, uint64, error) {
	sc, err := s.scopeOf(r)
	if err != nil {
		return nil, 0, err
	}
	if sc.all {
		return s.deps.AppLog.List(before, limit)
	}
	reg, err := s.registry()
	if err != nil {
		return nil, 0, err
	}
	var kept []store.LogRecord
	for scanned := 0; scanned < logScanBudget; {
		page, next, err := s.deps.AppLog.List(before, limit)
		if err != nil {
			return nil, 0, err
		}
		uids := make([]string, len(page))
		for i, it := range page {
			uids[i] = it.Subject
		}
		homes, err := reg.HomesOf(uids)
		if err != nil {
			return nil, 0, err
		}
		for i, it := range page {
			if a, ok := homes[it.Subject]; ok && (a.Kind != store.KindBeacon || a.Home != 0 && sc.allows(a.Home)) {
				kept = append(kept, it)
				if len(kept) == limit {
					if i == len(page)-1 && next == 0 {
						return kept, 0, nil // the oldest entry: no empty page after it (a review)
					}
					return kept, it.ID, nil // older entries from here on
				}
			}
		}
		scanned += len(page)
		if next == 0 {
			return kept, 0, nil
		}
		before = next
	}
	return kept, before, nil
}

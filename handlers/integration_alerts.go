package handlers

import (
	"net/http"
	"strconv"

	"beaconhub/appliance/apperr"
	"beaconhub/store"

	"github.com/julienschmidt/httprouter"
)

// integrationAlert is the integration API's view of an event: the record
// without internal ids. Timestamps are Unix ms (UTC).
type integrationAlert struct {
	ID              uint64   `json:"id"`
	Status          string   `json:"status"`
	Type            string   `json:"type"`
	Test            bool     `json:"test"`
	AssetUID        string   `json:"asset_uid"`
	MAC             string   `json:"mac"`
	BeaconName      string   `json:"beacon_name"`
	BeaconType      string   `json:"beacon_type"`
	Location        string   `json:"location"`
	Gateway         string   `json:"gateway"`
	GatewayUID      string   `json:"gateway_uid"`
	GatewayName     string   `json:"gateway_name"`
	GatewayLocation string   `json:"gateway_location"`
	Gateways        []string `json:"gateways"`
	Reports         int      `json:"reports"`
	CreatedAt       int64    `json:"created_at"`
	UpdatedAt       int64    `json:"updated_at"`
	Alertsys        string   `json:"alertsys"`
}

func toIntegrationAlert(e *store.Event) integrationAlert {
	return integrationAlert{e.ID, e.Status, e.Type, e.Test, e.AssetUID, e.MAC, e.BeaconName, e.BeaconType, e.Location,
		e.Gateway, e.GatewayUID, e.GatewayName, e.GatewayLocation, e.Gateways, e.Reports, e.CreatedAt, e.UpdatedAt, e.Alertsys}
}

// integrationAlerts serves GET /api/v1/integration/alerts.
//
// Without after_id it returns the newest matching events, newest first,
// and next_after_id to start following from. With after_id it returns
// events with a larger id, oldest first; next_after_id is the highest id
// examined, so passing it back never skips an event: ids commit in order,
// so nothing below it can appear later. Test sends are left out unless
// include_test=true, so an external system never mistakes a drill for an
// emergency.
func (s *Server) integrationAlerts(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	f, err := eventFilter(r)
	if err != nil {
		return err
	}
	if f.Test == nil {
		no := false
		f.Test = &no
	}
	if v := r.URL.Query().Get("include_test"); v != "" {
		inc, err := strconv.ParseBool(v)
		if err != nil {
			return apperr.InvalidField("include_test", "include_test must be true or false")
		}
		if inc {
			f.Test = nil
		}
	}
	limit, err := queryInt(r, "limit", 100, 1, 500)
	if err != nil {
		return err
	}
	var evs []store.Event
	var next uint64
	if v := r.URL.Query().Get("after_id"); v != "" {
		after, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return apperr.InvalidField("after_id", "after_id must be a non-negative integer")
		}
		// A cursor past the newest id was never handed out: a database
		// restored from a backup, or a client's bug. Followed, it skipped
		// every alert until ids reached it (a black-box check); say so.
		seq, err := s.deps.DB.EventSequence()
		if err != nil {
			return err
		}
		if after > seq {
			return apperr.InvalidField("after_id", "after_id %d is past the newest event id %d: follow again without after_id (was the database restored?)", after, seq)
		}
		if evs, next, err = s.deps.DB.EventsAfter(f, after, limit, 0); err != nil {
			return err
		}
	} else {
		// Read the sequence first: whatever commits after it has a larger
		// id, so following from it misses nothing even if the page is empty.
		if next, err = s.deps.DB.EventSequence(); err != nil {
			return err
		}
		if evs, _, err = s.deps.DB.ListEvents(f, store.EventCursor{}, limit, 0); err != nil {
			return err
		}
		for i := range evs {
			next = max(next, evs[i].ID)
		}
	}
	out := make([]integrationAlert, 0, len(evs))
	for i := range evs {
		out = append(out, toIntegrationAlert(&evs[i]))
	}
	return ok(w, map[string]any{"alerts": out, "next_after_id": next})
}

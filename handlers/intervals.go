package handlers

import (
	"errors"
	"net/http"

	"beaconhub/appliance/apperr"
	"beaconhub/store"

	"github.com/julienschmidt/httprouter"
)

// Zone-interval pages (spec "Limits": limit default 30, max 200).
const (
	intervalsDefault = 30
	intervalsMax     = 200
)

// zoneIntervalPage reads limit and cursor and answers one page of a
// beacon's zone intervals, newest first. next_cursor carries the offset and
// the newest interval when paging began, so intervals that arrive between
// pages neither repeat nor push older ones out of reach.
func (s *Server) zoneIntervalPage(w http.ResponseWriter, r *http.Request, uid string) error {
	limit, err := queryInt(r, "limit", intervalsDefault, 1, intervalsMax)
	if err != nil {
		return err
	}
	cur, err := store.ParseZoneCursor(r.URL.Query().Get("cursor"))
	if err != nil {
		return apperr.InvalidField("cursor", "%s", err.Error())
	}
	items, next, err := s.deps.DB.ZoneIntervals(uid, cur, limit)
	if errors.Is(err, store.ErrBadCursor) || errors.Is(err, store.ErrStaleCursor) || errors.Is(err, store.ErrForeignCursor) {
		return apperr.InvalidField("cursor", "%s", err.Error())
	}
	if err != nil {
		return err
	}
	var nc any
	if next != nil {
		nc = next.String()
	}
	return ok(w, map[string]any{"asset_uid": uid, "intervals": items, "next_cursor": nc})
}

// beaconIntervals: GET /api/v1/beacon/:id/intervals.
func (s *Server) beaconIntervals(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	b, err := s.beaconInScope(r, p.ByName("id"))
	if err != nil {
		return err
	}
	return s.zoneIntervalPage(w, r, b.AssetUID)
}

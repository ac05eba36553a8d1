package handlers

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"beaconhub/appliance/apperr"
	"beaconhub/store"

	"github.com/julienschmidt/httprouter"
)

// Event statuses and types accepted as filters.
var (
	eventStatuses = map[string]bool{store.EventAlert: true, store.EventWarning: true, store.EventActive: true}
	eventTypes    = map[string]bool{"single": true, "double": true, "triple": true, "long": true, "motion": true}
)

// eventFilter reads status, type, asset_uid, since, until (Unix ms, both
// inclusive) and test (true/false) from the query.
func eventFilter(r *http.Request) (store.EventFilter, error) {
	q := r.URL.Query()
	f := store.EventFilter{Status: q.Get("status"), Type: q.Get("type"), AssetUID: q.Get("asset_uid")}
	if f.Status != "" && !eventStatuses[f.Status] {
		return f, apperr.InvalidField("status", "status must be alert, warning or active")
	}
	if f.Type != "" && !eventTypes[f.Type] {
		return f, apperr.InvalidField("type", "type must be single, double, triple, long or motion")
	}
	if len(f.AssetUID) > store.MaxUIDLen {
		return f, apperr.InvalidField("asset_uid", "asset_uid is too long")
	}
	var err error
	if f.Since, err = queryMillis(r, "since"); err != nil {
		return f, err
	}
	if f.Until, err = queryMillis(r, "until"); err != nil {
		return f, err
	}
	if f.Since != 0 && f.Until != 0 && f.Until < f.Since {
		return f, apperr.InvalidField("until", "until is before since")
	}
	if v := q.Get("test"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return f, apperr.InvalidField("test", "test must be true or false")
		}
		f.Test = &b
	}
	return f, nil
}

func queryMillis(r *http.Request, name string) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, apperr.InvalidField(name, "%s must be a positive Unix time in milliseconds", name)
	}
	return n, nil
}

// Cursors are "<created_at>_<id>": the position of the last event returned.
func parseEventCursor(s string) (store.EventCursor, error) {
	at, id, ok := strings.Cut(s, "_")
	c := store.EventCursor{}
	var err1, err2 error
	c.At, err1 = strconv.ParseInt(at, 10, 64)
	c.ID, err2 = strconv.ParseUint(id, 10, 64)
	if !ok || err1 != nil || err2 != nil || c.At < 0 {
		return c, apperr.InvalidField("cursor", "cursor is not a value returned as next_cursor")
	}
	return c, nil
}

func formatEventCursor(c *store.EventCursor) any {
	if c == nil {
		return nil
	}
	return strconv.FormatInt(c.At, 10) + "_" + strconv.FormatUint(c.ID, 10)
}

func (s *Server) events(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	f, err := eventFilter(r)
	if err != nil {
		return err
	}
	sc, err := s.scopeOf(r)
	if err != nil {
		return err
	}
	if !sc.all {
		f.Locations = sc.in
	}
	limit, err := queryInt(r, "limit", 50, 1, 500)
	if err != nil {
		return err
	}
	var cur store.EventCursor
	if c := r.URL.Query().Get("cursor"); c != "" {
		if cur, err = parseEventCursor(c); err != nil {
			return err
		}
	}
	evs, next, err := s.deps.DB.ListEvents(f, cur, limit, 0)
	if err != nil {
		return err
	}
	if evs == nil {
		evs = []store.Event{}
	}
	return ok(w, map[string]any{"events": evs, "next_cursor": formatEventCursor(next)})
}

// exportPage is how many events one read transaction serves: the export
// streams page by page so a slow client never holds a transaction open
// (which would stall the database's growth, and with it ingest).
const exportPage = 500

var exportHeader = []string{"id", "created_at", "created_at_ms", "updated_at", "status", "type", "test", "asset_uid",
	"beacon_name", "beacon_type", "mac", "location", "gateway", "gateway_name", "gateway_location", "gateways",
	"reports", "alertsys", "alertsys_message"}

func (s *Server) eventsExport(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	f, err := eventFilter(r)
	if err != nil {
		return err
	}
	// The first page is read before anything is written, so a database
	// error can still become a proper error response.
	evs, next, err := s.deps.DB.ListEvents(f, store.EventCursor{}, exportPage, 0)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("events-%s-%s.csv", s.deps.Live.Get().ServerID, time.Now().UTC().Format("20060102-150405"))
	h := w.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	// A UTF-8 byte order mark makes spreadsheet programs read the file as
	// UTF-8 instead of the local code page.
	_, _ = w.Write([]byte("\xEF\xBB\xBF"))
	cw := csv.NewWriter(w)
	cw.UseCRLF = true // RFC 4180
	_ = cw.Write(exportHeader)
	row := make([]string, len(exportHeader))
	for {
		for i := range evs {
			if err := cw.Write(exportRow(row, &evs[i])); err != nil {
				return nil // client gone; nothing left to answer
			}
		}
		cw.Flush()
		if cw.Error() != nil {
			return nil
		}
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		if next == nil || r.Context().Err() != nil {
			return nil
		}
		if evs, next, err = s.deps.DB.ListEvents(f, *next, exportPage, 0); err != nil {
			s.log.Error("events export stopped", "err", err)
			return nil
		}
	}
}

func exportRow(row []string, e *store.Event) []string {
	ms := func(v int64) string { return time.UnixMilli(v).UTC().Format("2006-01-02T15:04:05.000Z") }
	row = row[:0]
	return append(row,
		strconv.FormatUint(e.ID, 10), ms(e.CreatedAt), strconv.FormatInt(e.CreatedAt, 10), ms(e.UpdatedAt),
		e.Status, e.Type, strconv.FormatBool(e.Test), cell(e.AssetUID),
		cell(e.BeaconName), cell(e.BeaconType), e.MAC, cell(e.Location), e.Gateway, cell(e.GatewayName), cell(e.GatewayLocation),
		strings.Join(e.Gateways, " "), strconv.Itoa(e.Reports), e.Alertsys, cell(e.AlertsysMessage))
}

// cell defuses spreadsheet formulas: text typed by people (names,
// locations) that starts like a formula gets a leading apostrophe, which
// spreadsheets show as plain text. Quoting of commas, quotes and newlines
// is encoding/csv's.
func cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

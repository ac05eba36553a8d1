package handlers

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

func seedEvent(t *testing.T, db *store.DB, e store.Event) {
	t.Helper()
	if e.Gateway == "" {
		e.Gateway = "AC233FA0B1C2"
		e.Gateways = []string{e.Gateway}
	}
	if e.UpdatedAt == 0 {
		e.UpdatedAt = e.CreatedAt
	}
	if err := db.Update(store.InsertEvent(e, 0, nil, nil)); err != nil {
		t.Fatal(err)
	}
}

type eventsPage struct {
	Events     []store.Event `json:"events"`
	NextCursor *string       `json:"next_cursor"`
}

func TestEventsListFiltersAndPaging(t *testing.T) {
	h := newHarness(t)
	for i := 1; i <= 12; i++ {
		st, typ := store.EventAlert, "single"
		if i%4 == 0 {
			st, typ = store.EventWarning, "motion"
		}
		seedEvent(t, h.db, store.Event{ID: uint64(i), Status: st, Type: typ, AssetUID: fmt.Sprintf("PAN-%d", i%2),
			Test: i == 5, CreatedAt: int64(i) * 1000})
	}
	tok := h.token("user")
	// Every listed field is there for an event of a beacon with no home
	// heard by an unregistered gateway ("" or 0), not left out (a
	// black-box check).
	var raw struct{ Events []map[string]json.RawMessage }
	h.get("/api/v1/events?limit=1", tok).expect(t, http.StatusOK).decodePayload(t, &raw)
	for _, k := range []string{"location_id", "location", "gateway_uid", "gateway_name", "gateway_location", "alertsys_message"} {
		if _, has := raw.Events[0][k]; !has {
			t.Errorf("event without %q: %v", k, raw.Events[0])
		}
	}

	var all []uint64
	path := "/api/v1/events?limit=5"
	for n := 0; n < 5; n++ {
		var p eventsPage
		h.get(path, tok).expect(t, http.StatusOK).decodePayload(t, &p)
		for _, e := range p.Events {
			all = append(all, e.ID)
		}
		if p.NextCursor == nil {
			break
		}
		path = "/api/v1/events?limit=5&cursor=" + url.QueryEscape(*p.NextCursor)
	}
	if fmt.Sprint(all) != "[12 11 10 9 8 7 6 5 4 3 2 1]" {
		t.Fatalf("paged = %v", all)
	}

	var p eventsPage
	h.get("/api/v1/events?status=warning&asset_uid=PAN-0&since=4000&until=8000", tok).expect(t, http.StatusOK).decodePayload(t, &p)
	if len(p.Events) != 2 || p.Events[0].ID != 8 || p.Events[1].ID != 4 || p.NextCursor != nil {
		t.Errorf("filtered = %+v", p)
	}
	h.get("/api/v1/events?test=true", tok).expect(t, http.StatusOK).decodePayload(t, &p)
	if len(p.Events) != 1 || p.Events[0].ID != 5 {
		t.Errorf("test events = %+v", p.Events)
	}
	for _, q := range []string{"status=panic", "type=tap", "limit=501", "limit=0", "since=abc", "since=10&until=5", "cursor=zz", "test=maybe"} {
		if r := h.get("/api/v1/events?"+q, tok); r.Code != http.StatusBadRequest {
			t.Errorf("%s: %d %s", q, r.Code, r.Body)
		}
	}
	if r := h.get("/api/v1/events", h.token("api")); r.Code != http.StatusForbidden {
		t.Errorf("api role: %d", r.Code)
	}
}

func TestEventsExportCSV(t *testing.T) {
	h := newHarness(t)
	names := []string{
		`Room 12, bed 2`,
		`The "quiet" ward`,
		"Line one\nline two",
		"Příliš žluťoučký kůň — 病房",
		"=HYPERLINK(\"http://evil\")",
		"-2 floor",
	}
	for i, n := range names {
		seedEvent(t, h.db, store.Event{ID: uint64(i + 1), Status: store.EventAlert, Type: "single", AssetUID: fmt.Sprintf("PAN-A1-%d", i+1),
			BeaconName: n, Location: "Site / " + n, CreatedAt: int64(i+1) * 1000, Alertsys: store.AlertsysSent})
	}
	if r := h.get("/api/v1/events/export", h.token("user")); r.Code != http.StatusForbidden {
		t.Fatalf("non-admin export: %d", r.Code)
	}
	r := h.get("/api/v1/events/export?status=alert", h.token("admin")).expect(t, http.StatusOK)
	if ct := r.Header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
		t.Errorf("content type %q", ct)
	}
	if cd := r.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, `attachment; filename="events-`) {
		t.Errorf("disposition %q", cd)
	}
	body := []byte(r.Body)
	if !bytes.HasPrefix(body, []byte("\xEF\xBB\xBF")) {
		t.Fatal("no UTF-8 byte order mark")
	}
	body = body[3:]
	if !bytes.Contains(body, []byte("\r\n")) {
		t.Error("records not CRLF-terminated (RFC 4180)")
	}
	recs, err := csv.NewReader(bytes.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatalf("CSV does not parse: %v\n%s", err, body)
	}
	if len(recs) != len(names)+1 || recs[0][0] != "id" || recs[0][8] != "beacon_name" {
		t.Fatalf("records = %q", recs)
	}
	// Newest first: record 1 is the last name.
	for i, n := range names {
		rec := recs[len(names)-i]
		want := n
		if strings.HasPrefix(n, "=") || strings.HasPrefix(n, "-") {
			want = "'" + n // formula defused
		}
		if rec[8] != want || rec[11] != "Site / "+n || rec[17] != "sent" {
			t.Errorf("row %d: name %q location %q, want %q", i, rec[8], rec[11], want)
		}
	}
	// The raw text quotes exactly as RFC 4180 says (a line break inside a
	// field is written as CRLF too).
	for _, raw := range []string{`"Room 12, bed 2"`, `"The ""quiet"" ward"`, "\"Line one\r\nline two\""} {
		if !bytes.Contains(body, []byte(raw)) {
			t.Errorf("raw CSV lacks %s", raw)
		}
	}
}

func TestEventsExportStreamsManyPages(t *testing.T) {
	h := newHarness(t)
	const n = exportPage*2 + 7
	err := h.db.Update(func(tx *bolt.Tx) error {
		for i := 1; i <= n; i++ {
			e := store.Event{ID: uint64(i), Status: store.EventWarning, Type: "motion", AssetUID: "SEN-1", CreatedAt: int64(i)}
			if err := store.InsertEvent(e, 0, nil, nil)(tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r := h.get("/api/v1/events/export", h.token("admin")).expect(t, http.StatusOK)
	recs, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(r.Body, "\xEF\xBB\xBF"))).ReadAll()
	if err != nil || len(recs) != n+1 || recs[1][0] != fmt.Sprint(n) || recs[n][0] != "1" {
		t.Fatalf("%d records, err %v", len(recs), err)
	}
}

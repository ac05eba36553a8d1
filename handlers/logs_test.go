package handlers

import (
	"net/http"
	"strconv"
	"testing"

	"beaconhub/store"
)

type logsPayload struct {
	Items []struct {
		ID      uint64 `json:"id"`
		Time    int64  `json:"time"`
		Action  string `json:"action"`
		Subject string `json:"subject"`
		Actor   string `json:"actor"`
		Message string `json:"message"`
	} `json:"items"`
	NextCursor *string `json:"next_cursor"`
}

func TestLogsNewestFirstWithPaging(t *testing.T) {
	h := newHarness(t)
	admin := h.token("admin")
	for i := 0; i < 5; i++ {
		h.send("POST", "/api/v1/register", admin, map[string]string{"email": "p" + strconv.Itoa(i) + "@example.com", "password": "paging-pw-1"}).expect(t, http.StatusCreated)
	}
	user := h.token("user")
	var ids []uint64
	path := "/api/v1/logs?limit=2"
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		r := h.get(path, user).expect(t, http.StatusOK)
		var p logsPayload
		r.decodePayload(t, &p)
		for _, it := range p.Items {
			ids = append(ids, it.ID)
			if it.Action != "user.create" || it.Actor != "admin@example.com" || it.Time != harnessStart.UnixMilli() {
				t.Errorf("log item %+v", it)
			}
		}
		if p.NextCursor == nil {
			if pages != 2 {
				t.Errorf("%d pages, want 3", pages+1)
			}
			break
		}
		path = "/api/v1/logs?limit=2&cursor=" + *p.NextCursor
	}
	if len(ids) != 5 {
		t.Fatalf("ids over all pages %v", ids)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] >= ids[i-1] {
			t.Errorf("not newest first: %v", ids)
		}
	}
	for _, bad := range []string{"?limit=0", "?limit=501", "?limit=x", "?cursor=0", "?cursor=-1", "?cursor=abc"} {
		checkErrorEnvelope(t, "logs"+bad, h.get("/api/v1/logs"+bad, user), http.StatusBadRequest)
	}
	// An empty page has a null cursor and an empty (not null) list.
	r := h.get("/api/v1/logs?cursor=1", user).expect(t, http.StatusOK)
	var p logsPayload
	r.decodePayload(t, &p)
	if p.Items == nil || len(p.Items) != 0 || p.NextCursor != nil {
		t.Errorf("page before the oldest record: %s", r.Payload)
	}
}

func TestLogsRespectVerbosity(t *testing.T) {
	h := newHarness(t)
	admin := h.token("admin")
	act := func(tag string) {
		h.loginHTTP("user@example.com", userPassword)
		h.send("POST", "/api/v1/register", admin, map[string]string{"email": tag + "@example.com", "password": "verbosity-pw"}).expect(t, http.StatusCreated)
	}
	count := func() (logins, creates int) {
		for _, r := range h.logRecords() {
			switch r.Action {
			case "login":
				logins++
			case "user.create":
				creates++
			}
		}
		return
	}

	act("normal") // default: normal
	if l, c := count(); l != 0 || c != 1 {
		t.Errorf("normal: %d logins, %d creations recorded; want 0, 1", l, c)
	}
	h.setVerbosity("none")
	act("none")
	if l, c := count(); l != 0 || c != 1 {
		t.Errorf("none: %d logins, %d creations recorded; want 0, 1", l, c)
	}
	h.setVerbosity("verbose")
	act("verbose")
	if l, c := count(); l != 1 || c != 2 {
		t.Errorf("verbose: %d logins, %d creations recorded; want 1, 2", l, c)
	}
	for _, r := range h.logRecords() {
		if r.Action == "login" && (r.Subject != "user@example.com" || r.Actor != "user@example.com") {
			t.Errorf("login record %+v", r)
		}
	}
}

// A location-bound account reads only the entries about the assets it
// may read elsewhere: beacons homed in its scope, gateways and displays
// (site-wide): the whole log showed it every account's email and role
// changes and the names of other sites' beacons (two black-box checks).
// Its pages are still newest first, end to end, and the last one says so
// (no empty page after the oldest entry: a review).
func TestLogsOfALocationBoundAccount(t *testing.T) {
	h := newAssetHarness(t)
	var gw struct {
		AssetUID string `json:"asset_uid"`
	}
	h.post("/api/v1/gateways", map[string]any{"mac": "AC233FA0B1C2", "name": "Hall"}, http.StatusCreated).decodePayload(t, &gw)
	site := h.location("Site", "S1", 0)
	ward := h.location("Ward", "W1", site)
	other := h.location("Other", "O1", 0)
	var mine []string
	for i := 0; i < 3; i++ {
		mine = append(mine, h.beacon(map[string]any{"mac": "C3000000000" + strconv.Itoa(i), "name": "mine", "location_id": ward}).AssetUID)
		h.beacon(map[string]any{"mac": "C3000000010" + strconv.Itoa(i), "name": "theirs", "location_id": other})
		h.send("POST", "/api/v1/register", h.admin, map[string]string{"email": "p" + strconv.Itoa(i) + "@example.com", "password": "paging-pw-1"}).expect(t, http.StatusCreated)
	}
	if _, err := h.db.UpdateUser(h.users["user"].ID, func(u *store.User) error { u.LocationID = site; return nil }); err != nil {
		t.Fatal(err)
	}
	user := h.token("user")
	var seen []string
	var ids []uint64
	path := "/api/v1/logs?limit=2"
	for pages := 0; ; pages++ {
		if pages > 1 {
			t.Fatal("more than the two pages of four entries")
		}
		var p logsPayload
		h.get(path, user).expect(t, http.StatusOK).decodePayload(t, &p)
		for _, it := range p.Items {
			seen = append(seen, it.Subject)
			ids = append(ids, it.ID)
		}
		if p.NextCursor == nil {
			break
		}
		path = "/api/v1/logs?limit=2&cursor=" + *p.NextCursor
	}
	if len(seen) != 4 || seen[0] != mine[2] || seen[2] != mine[0] || seen[3] != gw.AssetUID || ids[0] < ids[1] {
		t.Fatalf("a ward-bound user sees %v (ids %v), want %v newest first, then %s", seen, ids, mine, gw.AssetUID)
	}
	// The admin, and an unbound account, still see everything.
	var all logsPayload
	h.get("/api/v1/logs?limit=500", h.admin).expect(t, http.StatusOK).decodePayload(t, &all)
	if len(all.Items) < 9 {
		t.Errorf("the admin sees %d entries", len(all.Items))
	}
}

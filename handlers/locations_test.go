package handlers

import (
	"net/http"
	"testing"

	"beaconhub/appliance/assets"
)

func TestLocationsEndpoints(t *testing.T) {
	h := newAssetHarness(t)
	root := h.location("Hospital", "h1", 0)
	wing := h.location("Wing", "W2", root)
	room := h.location("Room", "", wing)

	var list struct {
		Locations []assets.LocationView `json:"locations"`
	}
	h.get("/api/v1/locations", h.token("user")).expect(t, http.StatusOK).decodePayload(t, &list)
	if len(list.Locations) != 3 || list.Locations[1].Path != "H1W2" || list.Locations[0].Code != "H1" || list.Locations[2].Coded {
		t.Fatalf("locations = %+v", list.Locations)
	}

	var upd assets.LocationView
	h.post("/api/v1/locations", map[string]any{"id": room, "code": "R7"}, http.StatusOK).decodePayload(t, &upd)
	if upd.Path != "H1W2R7" || upd.Name != "Room" {
		t.Errorf("update = %+v", upd)
	}

	before := h.snapshot()
	for name, tc := range map[string]struct {
		body  any
		field string
	}{
		"code with a space":  {map[string]any{"name": "x", "code": "A 1"}, "code"},
		"code too long":      {map[string]any{"name": "x", "code": "ABCDEFGHIJKLM"}, "code"},
		"duplicate sibling":  {map[string]any{"name": "x", "code": "w2", "parent_id": root}, "code"},
		"unknown parent":     {map[string]any{"name": "x", "parent_id": 999}, "parent_id"},
		"cycle":              {map[string]any{"id": root, "parent_id": room}, "parent_id"},
		"own parent":         {map[string]any{"id": wing, "parent_id": wing}, "parent_id"},
		"no name":            {map[string]any{"code": "Z9"}, "name"},
		"unknown field":      {map[string]any{"name": "x", "colour": "red"}, ""},
		"malformed JSON":     {`{"name": "x",`, ""},
		"wrong type":         {map[string]any{"name": "x", "parent_id": "one"}, "parent_id"},
		"negative parent id": {`{"name":"x","parent_id":-1}`, "parent_id"},
	} {
		t.Run(name, func(t *testing.T) {
			h.send("POST", "/api/v1/locations", h.admin, tc.body).wantBad(t, tc.field)
		})
	}
	if h.snapshot() != before {
		t.Error("refused location requests wrote")
	}
	h.send("POST", "/api/v1/locations", h.admin, map[string]any{"id": 999, "name": "x"}).expect(t, http.StatusNotFound)

	created, updated := 0, 0
	for _, rec := range h.logRecords() {
		switch rec.Action {
		case "location.create":
			created++
		case "location.update":
			updated++
		}
	}
	if created != 3 || updated != 1 {
		t.Errorf("application log: %d creates, %d updates", created, updated)
	}
}

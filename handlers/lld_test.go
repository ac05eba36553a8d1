package handlers

import (
	"encoding/json"
	"net/http"
	"testing"
)

func TestLLDLists(t *testing.T) {
	h := newAssetHarness(t)
	root := h.location("Hospital", "H1", 0)
	h.beacon(map[string]any{"mac": "C30000000A01", "name": "Fridge", "type": "sensor", "location_id": root})
	h.beacon(map[string]any{"mac": "C30000000A02", "name": "Spare"})
	h.post("/api/v1/gateways", map[string]any{"mac": "AC233FA0B1C2", "name": "Kitchen", "location_id": root}, http.StatusCreated)
	h.send("DELETE", "/api/v1/beacon/LEGACY-C30000000A02", h.admin, nil).expect(t, http.StatusOK)

	for path, want := range map[string]string{
		"/lld/beacons":  `{"data":[{"{#ASSET_UID}":"SEN-H1-1","{#MAC}":"C30000000A01","{#NAME}":"Fridge","type":"sensor"}]}`,
		"/lld/gateways": `{"data":[{"{#ASSET_UID}":"GW-H1-1","{#MAC}":"AC233FA0B1C2","{#NAME}":"Kitchen"}]}`,
	} {
		r := h.get(path, "") // no credentials: the monitoring server has none
		r.expect(t, http.StatusOK)
		if r.Body != want {
			t.Errorf("%s = %s, want %s", path, r.Body, want)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(r.Body), &v); err != nil {
			t.Error(err)
		}
	}
}

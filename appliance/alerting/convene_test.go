package alerting

import (
	"encoding/json"
	"strings"
	"testing"

	"beaconhub/store"
)

// TestConveneBodyCarriesEveryKey: docs/alertsys.md says what the registry
// does not know is an empty string; the heard_by keys and location.id
// were left out (omitempty) for a press heard only by an unregistered
// gateway from a beacon with no home (a black-box check).
func TestConveneBodyCarriesEveryKey(t *testing.T) {
	body, err := json.Marshal(conveneRequest(store.Event{ID: 9, Type: "single", AssetUID: "LEGACY-C3000000B0FF", MAC: "C3000000B0FF",
		BeaconType: "panic", Gateway: "AC233FA0B1AA", CreatedAt: 1}))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"location":{"id":null,"name":""}`, `"heard_by":{"gateway":"AC233FA0B1AA","asset_uid":"","name":"","location":""}`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("body lacks %s: %s", want, body)
		}
	}
	body, _ = json.Marshal(conveneRequest(store.Event{LocationID: 7, Location: "Site / Ward B"}))
	if !strings.Contains(string(body), `"location":{"id":7,"name":"Site / Ward B"}`) {
		t.Errorf("a known location: %s", body)
	}
}

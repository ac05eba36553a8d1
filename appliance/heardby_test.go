package appliance

import (
	"testing"

	"beaconhub/appliance/assets"
)

// A spell that never lasted (a device put on gateway 1 and taken off in
// one millisecond at 300, then on gateway 4, empty till then, at 600)
// is as if it had not been: heard at 400 the device counts for gateway
// 4, at its recording time or its store time (it was read as off the
// site, or as gateway 1's device now: a review); with no other spell it
// was never on a gateway, and is read as it is.
func TestHeardByIgnoresSpellsThatNeverLasted(t *testing.T) {
	gws := []assets.GatewayView{{ID: 1, MAC: "AA00000000E1"}, {ID: 4, MAC: "AA00000000D4"}}
	spells := []assets.GatewaySpell{
		{ID: 6, MAC: "AA00000000D4", GatewayID: 1, From: 300, To: 300},
		{ID: 7, MAC: "AA00000000D4", GatewayID: 4, From: 600},
	}
	at := heardBy(gws, spells)
	got, ok := at(macOf("AA00000000D4"), 400, true)
	if !ok || got != macOf("AA00000000D4") {
		t.Errorf("exact at 400: %X %v, want gateway 4's D4", got, ok)
	}
	got, ok = at(macOf("AA00000000D4"), 400, false)
	if !ok || got != macOf("AA00000000D4") {
		t.Errorf("legacy at 400: %X %v, want gateway 4's D4, not gateway 1's E1", got, ok)
	}
	only := []assets.GatewaySpell{{ID: 6, MAC: "AA00000000D4", GatewayID: 1, From: 300, To: 300}}
	got, ok = heardBy(gws[:1], only)(macOf("AA00000000D4"), 200, true)
	if !ok || got != macOf("AA00000000D4") {
		t.Errorf("only an empty spell, heard before: %X %v, want it read as it is (never on a gateway)", got, ok)
	}
}

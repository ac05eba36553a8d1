package assets

import (
	"reflect"
	"strings"
	"testing"

	"beaconhub/appliance/apperr"
	"beaconhub/store"
)

func TestLocationValidation(t *testing.T) {
	e := newEnv(t)
	h := e.loc("Hospital", "h1", 0)
	w := e.loc("Wing", "W2", h)
	room := e.loc("Room", "", w)
	for name, tc := range map[string]struct {
		in    LocationInput
		field string
	}{
		"code with a space":     {LocationInput{Name: sp("x"), Code: sp("A 1")}, "code"},
		"code too long":         {LocationInput{Name: sp("x"), Code: sp("ABCDEFGHIJKLM")}, "code"},
		"code punctuation":      {LocationInput{Name: sp("x"), Code: sp("A-1")}, "code"},
		"duplicate sibling":     {LocationInput{Name: sp("x"), Code: sp("w2"), ParentID: up(h)}, "code"},
		"unknown parent":        {LocationInput{Name: sp("x"), ParentID: up(999)}, "parent_id"},
		"missing name":          {LocationInput{Code: sp("Z")}, "name"},
		"blank name":            {LocationInput{Name: sp("  ")}, "name"},
		"name too long":         {LocationInput{Name: sp(strings.Repeat("š", 101))}, "name"},
		"own parent":            {LocationInput{ID: w, ParentID: up(w)}, "parent_id"},
		"cycle via descendant":  {LocationInput{ID: h, ParentID: up(room)}, "parent_id"},
		"sibling clash on move": {LocationInput{ID: room, Code: sp("W2"), ParentID: up(h)}, "code"},
	} {
		t.Run(name, func(t *testing.T) {
			before, _ := e.svc.Locations()
			_, _, err := e.svc.SaveLocation(tc.in)
			wantField(t, err, tc.field)
			if after, _ := e.svc.Locations(); !reflect.DeepEqual(before, after) {
				t.Errorf("refused save changed the tree")
			}
		})
	}
	// The same code under another parent is fine; codes are stored upper-case.
	other := e.loc("Other wing", "w2", w)
	ls, _ := e.svc.Locations()
	for _, l := range ls {
		if l.ID == other && (l.Code != "W2" || l.Path != "H1W2W2" || !l.Coded) {
			t.Errorf("location = %+v", l)
		}
		if l.ID == room && l.Coded {
			t.Errorf("uncoded room reported coded: %+v", l)
		}
	}
	if _, _, err := e.svc.SaveLocation(LocationInput{ID: 999, Name: sp("x")}); apperr.KindOf(err) != apperr.KindNotFound {
		t.Errorf("update of a missing location: %v", err)
	}
}

func TestMintingUIDs(t *testing.T) {
	e := newEnv(t)
	h := e.loc("Hospital", "H1", 0)
	w := e.loc("Wing", "W2", h)
	uncoded := e.loc("Annex", "", h)
	room := e.loc("Room", "R7", uncoded)

	for i, tc := range []struct {
		typ  string
		loc  uint64
		want string
	}{
		{"sensor", w, "SEN-H1W2-1"},
		{"sensor", w, "SEN-H1W2-2"},
		{"panic", w, "PAN-H1W2-1"},
		{"watch", h, "WCH-H1-1"},
		{"navigation", h, "NAV-H1-1"},
		{"sos", w, "SOS-H1W2-1"},
		{"unknown", w, "LEGACY-C300000000A6"},
		{"sensor", 0, "LEGACY-C300000000A7"},
	} {
		mac := "C300000000A" + string(rune('0'+i))
		in := BeaconInput{MAC: sp(mac), Name: sp("b"), Type: sp(tc.typ)}
		if tc.loc != 0 {
			in.LocationID = up(tc.loc)
		}
		if got := e.beacon(in).AssetUID; got != tc.want {
			t.Errorf("%s at %d: uid %s, want %s", tc.typ, tc.loc, got, tc.want)
		}
	}

	// An uncoded location anywhere on the path refuses a real uid, naming it.
	_, err := e.svc.CreateBeacon(BeaconInput{MAC: sp("C300000000B1"), Name: sp("b"), Type: sp("sensor"), LocationID: up(room)})
	wantField(t, err, "location_id")
	if ae, _ := apperr.As(err); ae == nil || !strings.Contains(ae.Msg, `"Annex"`) {
		t.Errorf("message does not name the uncoded location: %v", err)
	}
	if bs, _ := e.svc.Beacons(0); len(bs) != 8 {
		t.Errorf("refused create wrote a beacon: %d", len(bs))
	}

	// A deleted uid's number is never handed out again.
	if _, err := e.svc.DeleteBeacon("SEN-H1W2-2"); err != nil {
		t.Fatal(err)
	}
	if got := e.beacon(BeaconInput{MAC: sp("C300000000B2"), Name: sp("b"), Type: sp("sensor"), LocationID: up(w)}).AssetUID; got != "SEN-H1W2-3" {
		t.Errorf("after delete: %s", got)
	}

	gw, err := e.svc.CreateGateway(GatewayInput{MAC: sp("AC:23:3F:A0:B1:C2"), Name: sp("gw"), LocationID: up(w), IP: sp("10.0.0.5")})
	if err != nil || gw.AssetUID != "GW-H1W2-1" || gw.MAC != "AC233FA0B1C2" {
		t.Errorf("gateway = %+v %v", gw, err)
	}
	gw2, err := e.svc.CreateGateway(GatewayInput{MAC: sp("AC233FA0B1C3"), Name: sp("gw")})
	if err != nil || gw2.AssetUID != "LEGACY-AC233FA0B1C3" {
		t.Errorf("gateway without location = %+v %v", gw2, err)
	}
	_ = e.db.UpdateAssets(e.clock.Now(), func(tx *store.AssetTx) error {
		uid, err := Mint(tx, PrefixEInk, w, store.AssetRef{Kind: store.KindEInk, ID: 1})
		if err != nil || uid != "EK-H1W2-1" {
			t.Errorf("e-ink mint = %s %v", uid, err)
		}
		return nil
	})
}

func TestBeaconValidationWritesNothing(t *testing.T) {
	e := newEnv(t)
	h := e.loc("Hospital", "H1", 0)
	e.beacon(BeaconInput{MAC: sp("C30000000A01"), Name: sp("taken"), Type: sp("sensor"), LocationID: up(h)})
	for name, tc := range map[string]struct {
		in    BeaconInput
		field string
	}{
		"malformed mac":     {BeaconInput{MAC: sp("C30000000A0"), Name: sp("x")}, "mac"},
		"non-hex mac":       {BeaconInput{MAC: sp("C30000000A0G"), Name: sp("x")}, "mac"},
		"duplicate mac":     {BeaconInput{MAC: sp("c3:00:00:00:0a:01"), Name: sp("x")}, "mac"},
		"missing mac":       {BeaconInput{Name: sp("x")}, "mac"},
		"missing name":      {BeaconInput{MAC: sp("C30000000A02")}, "name"},
		"name too long":     {BeaconInput{MAC: sp("C30000000A02"), Name: sp(strings.Repeat("x", 101))}, "name"},
		"bad type":          {BeaconInput{MAC: sp("C30000000A02"), Name: sp("x"), Type: sp("fridge")}, "type"},
		"unknown location":  {BeaconInput{MAC: sp("C30000000A02"), Name: sp("x"), LocationID: up(42)}, "location_id"},
		"inverted range":    {BeaconInput{MAC: sp("C30000000A02"), Name: sp("x"), HumidityRange: Opt[store.Range]{Set: true, V: store.Range{Min: 60, Max: 20}}}, "humidity_range"},
		"range out of phys": {BeaconInput{MAC: sp("C30000000A02"), Name: sp("x"), HumidityRange: Opt[store.Range]{Set: true, V: store.Range{Min: 0, Max: 120}}}, "humidity_range"},
		"future cal date":   {BeaconInput{MAC: sp("C30000000A02"), Name: sp("x"), CalibratedAt: ip(e.now() + 1)}, "calibrated_at"},
		"uid chosen":        {BeaconInput{MAC: sp("C30000000A02"), Name: sp("x"), AssetUID: sp("SEN-X-1")}, "asset_uid"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := e.svc.CreateBeacon(tc.in)
			wantField(t, err, tc.field)
			if bs, _ := e.svc.Beacons(0); len(bs) != 1 {
				t.Errorf("refused create left %d beacons", len(bs))
			}
			if ds, _ := e.svc.Devices(DeviceFilter{}); len(ds) != 1 {
				t.Errorf("refused create left %d devices", len(ds))
			}
		})
	}
	// Names are counted in characters: 100 Czech letters are 200 bytes.
	if _, err := e.svc.UpdateBeacon("SEN-H1-1", BeaconInput{Name: sp(strings.Repeat("ř", 100))}); err != nil {
		t.Errorf("a 100-character name: %v", err)
	}
	if _, _, err := e.svc.SaveLocation(LocationInput{Name: sp(strings.Repeat("ž", 100))}); err != nil {
		t.Errorf("a 100-character location name: %v", err)
	}
	_, err := e.svc.UpdateBeacon("SEN-H1-1", BeaconInput{MAC: sp("C30000000A09")})
	wantField(t, err, "mac")
	if _, err := e.svc.UpdateBeacon("SEN-H1-1", BeaconInput{MAC: sp("c30000000a01"), Name: sp("same mac is fine")}); err != nil {
		t.Errorf("update echoing the mac: %v", err)
	}
	if _, err := e.svc.UpdateBeacon("SEN-H1-404", BeaconInput{}); apperr.KindOf(err) != apperr.KindNotFound {
		t.Errorf("missing beacon: %v", err)
	}
}

func TestLegacyUpdateRemintsAndMovesHistory(t *testing.T) {
	e := newEnv(t)
	h := e.loc("Hospital", "H1", 0)
	uncoded := e.loc("Annex", "", h)
	b := e.beacon(BeaconInput{MAC: sp("C30000000A01"), Name: sp("fridge")})
	if b.AssetUID != "LEGACY-C30000000A01" || b.Type != TypeUnknown {
		t.Fatalf("legacy = %+v", b)
	}
	e.readings(b.AssetUID, 100, 200, 300)
	e.mem.seen[b.AssetUID] = 300

	// A type alone keeps the legacy uid; an uncoded home refuses, naming it.
	if v, err := e.svc.UpdateBeacon(b.AssetUID, BeaconInput{Type: sp("sensor")}); err != nil || v.AssetUID != b.AssetUID {
		t.Fatalf("type only: %+v %v", v, err)
	}
	_, err := e.svc.UpdateBeacon(b.AssetUID, BeaconInput{LocationID: up(uncoded), Name: sp("renamed")})
	wantField(t, err, "location_id")
	if v, _ := e.svc.Beacon(b.AssetUID); v.Name != "fridge" || v.LocationID != 0 {
		t.Errorf("refused update wrote: %+v", v)
	}

	v, err := e.svc.UpdateBeacon(b.AssetUID, BeaconInput{LocationID: up(h)})
	if err != nil || v.AssetUID != "SEN-H1-1" {
		t.Fatalf("remint: %+v %v", v, err)
	}
	if got := e.history("SEN-H1-1"); len(got) != 3 {
		t.Errorf("history under new uid = %v", got)
	}
	if got := e.history(b.AssetUID); len(got) != 0 {
		t.Errorf("history left under legacy uid = %v", got)
	}
	e.resolves("C30000000A01", "SEN-H1-1")
	if e.mem.Asset("SEN-H1-1") != 300 {
		t.Errorf("in-memory last seen not renamed: %+v", e.mem.renames)
	}
	// The old uid still finds the asset.
	if v, err := e.svc.Beacon(b.AssetUID); err != nil || v.AssetUID != "SEN-H1-1" {
		t.Errorf("lookup by former uid: %+v %v", v, err)
	}
	// A minted uid is stable: moving the beacon does not remint it.
	w := e.loc("Wing", "W1", h)
	if v, _ := e.svc.UpdateBeacon("SEN-H1-1", BeaconInput{LocationID: up(w)}); v.AssetUID != "SEN-H1-1" {
		t.Errorf("minted uid changed on move: %s", v.AssetUID)
	}
	// The legacy name is never handed out again (a sweep would steal it).
	e.clock.Advance(1)
	if _, err := e.svc.UpdateDevice("C30000000A01", DeviceInput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.DeleteBeacon("SEN-H1-1"); err != nil {
		t.Fatal(err)
	}
	if again := e.beacon(BeaconInput{MAC: sp("C30000000A01"), Name: sp("again")}); again.AssetUID != "LEGACY-C30000000A01-2" {
		t.Errorf("re-created legacy uid = %s", again.AssetUID)
	}
}

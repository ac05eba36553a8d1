package assets

import "testing"

// TestReloadKeepsUnchangedAssets: ingest reads each report's Asset and
// bumps its last-seen cell, allocated together so that they share cache
// lines. A reload (after any registry write) must hand back the same
// Asset for a beacon whose fields did not change, a new one for a changed
// beacon, and the same last-seen cell either way.
func TestReloadKeepsUnchangedAssets(t *testing.T) {
	e := newEnv(t)
	loc := e.loc("Hospital", "H1", 0)
	a := e.beacon(BeaconInput{MAC: sp("C3000000000A"), Name: sp("Fridge"), Type: sp("sensor"), LocationID: up(loc)})
	b := e.beacon(BeaconInput{MAC: sp("C3000000000B"), Name: sp("Panic"), Type: sp("panic"), LocationID: up(loc)})
	reg := e.svc.Registry()
	get := func(mac string) *Asset {
		t.Helper()
		m, _ := ParseMAC(mac)
		x, ok := reg.Beacon(m)
		if !ok {
			t.Fatalf("%s not resolved", mac)
		}
		return x
	}
	fa, fb := get("C3000000000A"), get("C3000000000B")
	if fa.Seen == nil || fa.UID != a.AssetUID || fb.UID != b.AssetUID {
		t.Fatalf("assets %+v %+v", fa, fb)
	}
	fa.Seen.Bump(5000)

	if _, err := e.svc.UpdateBeacon(b.AssetUID, BeaconInput{Name: sp("Panic 2")}); err != nil {
		t.Fatal(err)
	}
	if got := get("C3000000000A"); got != fa {
		t.Error("an unchanged beacon got a new Asset on reload")
	}
	nb := get("C3000000000B")
	if nb == fb || nb.Name != "Panic 2" {
		t.Errorf("the renamed beacon: %+v (was %p, now %p)", nb, fb, nb)
	}
	if nb.Seen != fb.Seen || nb.Hash() != UIDHash(b.AssetUID) {
		t.Error("a changed beacon lost its last-seen cell or its hash")
	}
	if c, ok := reg.SeenIfAny(a.AssetUID); !ok || c != fa.Seen || c.Load() != 5000 {
		t.Error("the cell beside the asset is not the uid's cell")
	}
}

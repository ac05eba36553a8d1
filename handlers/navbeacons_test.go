package handlers

import (
	"net/http"
	"testing"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/nav"
	"beaconhub/store"
	"beaconhub/web"
)

// newNavAssetHarness wires both the asset registry and navigation.
func newNavAssetHarness(t *testing.T) (*harness, string) {
	t.Helper()
	h := newHarness(t)
	reg, err := assets.NewService(assets.Options{DB: h.db, Clock: h.clock, Logger: h.logger})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := nav.New(h.db, h.clock)
	if err != nil {
		t.Fatal(err)
	}
	h.srv = New(Deps{Live: h.live, DB: h.db, Auth: h.auth, AppLog: h.applog, Logger: h.logger, Static: web.FS(), Assets: reg, Nav: svc, Clock: h.clock})
	return h, h.token("admin")
}

// TestBeaconNavigationFlags: a beacon's floor must be a navigation floor;
// point-of-interest and static beacons of a project's floors (or linked to
// its nodes) are in the project payload, and changing a flag changes the
// project hash.
func TestBeaconNavigationFlags(t *testing.T) {
	h, admin := newNavAssetHarness(t)
	h.locationsUpTo(5)
	var f store.Floor
	h.send("POST", "/api/v1/floors", admin, map[string]any{"name": "G", "location_id": 5}).expect(t, http.StatusCreated).decodePayload(t, &f)

	h.send("POST", "/api/v1/beacons", admin, map[string]any{"mac": "AABBCCDDEE01", "name": "x", "floor_id": 999}).expect(t, http.StatusBadRequest)
	var poi, plain, linkedStatic assets.BeaconView
	h.send("POST", "/api/v1/beacons", admin, map[string]any{"mac": "AABBCCDDEE01", "name": "Reception", "floor_id": f.ID, "poi": true}).
		expect(t, http.StatusCreated).decodePayload(t, &poi)
	h.send("POST", "/api/v1/beacons", admin, map[string]any{"mac": "AABBCCDDEE02", "name": "Tag", "floor_id": f.ID}).
		expect(t, http.StatusCreated).decodePayload(t, &plain)
	h.send("POST", "/api/v1/beacons", admin, map[string]any{"mac": "AABBCCDDEE03", "name": "Pillar", "static": true}).
		expect(t, http.StatusCreated).decodePayload(t, &linkedStatic)
	var node store.NavNode
	h.send("POST", "/api/v1/floor/"+itoa(f.ID)+"/nodes", admin, map[string]any{"x": 1, "y": 1, "beacon_uid": linkedStatic.AssetUID}).
		expect(t, http.StatusCreated).decodePayload(t, &node)

	project := func() (nav.Project, string) {
		var out struct {
			SHA     string      `json:"sha"`
			Project nav.Project `json:"project"`
		}
		h.get("/api/v1/navigation/project/5", admin).expect(t, http.StatusOK).decodePayload(t, &out)
		return out.Project, out.SHA
	}
	p, sha := project()
	if len(p.Beacons) != 2 {
		t.Fatalf("beacons %+v", p.Beacons)
	}
	byUID := map[string]nav.ProjectBeacon{}
	for _, b := range p.Beacons {
		byUID[b.AssetUID] = b
	}
	if b := byUID[poi.AssetUID]; !b.POI || b.FloorID != f.ID || b.MAC != "AABBCCDDEE01" || b.Name != "Reception" {
		t.Fatalf("poi beacon %+v", b)
	}
	if b := byUID[linkedStatic.AssetUID]; !b.Static || b.NodeID != node.ID {
		t.Fatalf("linked static beacon %+v", b)
	}
	// The node link also makes the beacon a pathfinding endpoint.
	var res nav.PathResult
	h.send("POST", "/api/v1/navigation/pathfind", admin, map[string]any{"from": map[string]any{"beacon": linkedStatic.AssetUID}, "to": map[string]any{"node_id": node.ID}}).
		expect(t, http.StatusOK).decodePayload(t, &res)
	if len(res.Nodes) != 1 {
		t.Fatalf("route %+v", res)
	}

	h.send("POST", "/api/v1/beacon/"+plain.AssetUID, admin, map[string]any{"poi": true}).expect(t, http.StatusOK)
	p2, sha2 := project()
	if sha2 == sha || len(p2.Beacons) != 3 {
		t.Fatalf("flag change: sha changed %v, beacons %+v", sha2 != sha, p2.Beacons)
	}
	if _, again := project(); again != sha2 {
		t.Fatal("hash changed without a content change")
	}
	// Deleted, the beacon links nothing (its uid stays in the node): a
	// route to it is a 404, as the project lists no such beacon (a
	// black-box check found the node's route served).
	h.send("DELETE", "/api/v1/beacon/"+linkedStatic.AssetUID, admin, nil).expect(t, http.StatusOK)
	h.send("POST", "/api/v1/navigation/pathfind", admin, map[string]any{"from": map[string]any{"node_id": node.ID}, "to": map[string]any{"beacon": linkedStatic.AssetUID}}).
		expect(t, http.StatusNotFound)
}

// TestDeleteFloorUnassignsBeacons: deleting a floor clears the floor_id of
// the beacons assigned to it (as deleting a map clears floors' map_id), so
// a beacon never names a floor that is gone and can be saved back as read.
func TestDeleteFloorUnassignsBeacons(t *testing.T) {
	h, admin := newNavAssetHarness(t)
	var f, keep store.Floor
	h.send("POST", "/api/v1/floors", admin, map[string]any{"name": "G"}).expect(t, http.StatusCreated).decodePayload(t, &f)
	h.send("POST", "/api/v1/floors", admin, map[string]any{"name": "K"}).expect(t, http.StatusCreated).decodePayload(t, &keep)
	var on, other assets.BeaconView
	h.send("POST", "/api/v1/beacons", admin, map[string]any{"mac": "AABBCCDDEE01", "name": "On", "floor_id": f.ID, "poi": true}).
		expect(t, http.StatusCreated).decodePayload(t, &on)
	h.send("POST", "/api/v1/beacons", admin, map[string]any{"mac": "AABBCCDDEE02", "name": "Other", "floor_id": keep.ID}).
		expect(t, http.StatusCreated).decodePayload(t, &other)
	h.clock.Advance(time.Minute)

	var del struct {
		Unassigned []string `json:"unassigned_beacons"`
	}
	h.send("DELETE", "/api/v1/floor/"+itoa(f.ID), admin, nil).expect(t, http.StatusOK).decodePayload(t, &del)
	// By asset_uid, which every beacon route takes: the numeric id was
	// answered and logged, and GET /beacon/<id> is a 404 (a review).
	if len(del.Unassigned) != 1 || del.Unassigned[0] != on.AssetUID {
		t.Fatalf("unassigned %v, want [%s]", del.Unassigned, on.AssetUID)
	}
	var got, kept assets.BeaconView
	h.get("/api/v1/beacon/"+on.AssetUID, admin).expect(t, http.StatusOK).decodePayload(t, &got)
	if got.FloorID != 0 || !got.POI || got.UpdatedAt != h.clock.Now().UnixMilli() {
		t.Fatalf("beacon after floor delete %+v", got)
	}
	h.get("/api/v1/beacon/"+other.AssetUID, admin).expect(t, http.StatusOK).decodePayload(t, &kept)
	if kept.FloorID != keep.ID {
		t.Fatalf("a beacon of another floor lost its floor: %+v", kept)
	}
	// Saving the beacon back as read is accepted.
	h.send("POST", "/api/v1/beacon/"+on.AssetUID, admin, map[string]any{"name": got.Name, "floor_id": got.FloorID, "poi": got.POI}).expect(t, http.StatusOK)
	if !h.applogHas(t, "floor_id cleared on beacons "+on.AssetUID) {
		t.Error("the floor.delete record does not name the unassigned beacon")
	}
}

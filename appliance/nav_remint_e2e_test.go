package appliance_test

import (
	"strconv"
	"testing"

	"beaconhub/store"
)

// TestNavNodeFollowsTheBeaconsRemint: a node names the beacon placed at it
// by asset_uid. A remint left the old uid there, so the project no longer
// linked the beacon to its node and pathfinding from it failed (a carried
// item); the uid sweep renames it in the node and the graph is recompiled.
func TestNavNodeFollowsTheBeaconsRemint(t *testing.T) {
	app := startAppWith(t, appRig{fridge: func(b *store.Beacon) { b.AssetUID = "LEGACY-C30000000A01" }})
	addr, tok := app.HTTPAddr(), adminToken(t, app)
	var site, floor, node struct {
		ID uint64 `json:"id"`
	}
	adminCall(t, addr, tok, "POST", "/api/v1/locations", map[string]any{"name": "Site"}, &site)
	adminCall(t, addr, tok, "POST", "/api/v1/floors", map[string]any{"name": "G", "location_id": site.ID}, &floor)
	fl := strconv.FormatUint(floor.ID, 10)
	adminCall(t, addr, tok, "POST", "/api/v1/beacon/LEGACY-C30000000A01", map[string]any{"floor_id": floor.ID, "poi": true}, nil)
	adminCall(t, addr, tok, "POST", "/api/v1/floor/"+fl+"/nodes", map[string]any{"x": 10, "y": 10, "beacon_uid": "LEGACY-C30000000A01"}, &node)
	adminCall(t, addr, tok, "POST", "/api/v1/floor/"+fl+"/nodes", map[string]any{"x": 50, "y": 10, "name": "exit"}, nil)

	uid := remintIntoWard(t, addr, tok, "LEGACY-C30000000A01")
	if uid == "LEGACY-C30000000A01" {
		t.Fatal("not reminted")
	}
	var nodes struct {
		Nodes []store.NavNode `json:"nodes"`
	}
	adminCall(t, addr, tok, "GET", "/api/v1/floor/"+fl+"/nodes", nil, &nodes)
	if len(nodes.Nodes) != 2 || nodes.Nodes[0].BeaconUID != uid {
		t.Fatalf("nodes after the remint to %s: %+v", uid, nodes.Nodes)
	}
	var project struct {
		Project struct {
			Beacons []struct {
				AssetUID string `json:"asset_uid"`
				NodeID   uint64 `json:"node_id"`
			} `json:"beacons"`
		} `json:"project"`
	}
	adminCall(t, addr, tok, "GET", "/api/v1/navigation/project/"+strconv.FormatUint(site.ID, 10), nil, &project)
	if bs := project.Project.Beacons; len(bs) != 1 || bs[0].AssetUID != uid || bs[0].NodeID != node.ID {
		t.Fatalf("project beacons after the remint: %+v", bs)
	}
}

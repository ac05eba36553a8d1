package nav

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"beaconhub/appliance/apperr"
	"beaconhub/store"
)

func newService(t *testing.T) *Service {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "nav.db"), store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	s, err := New(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ptr[T any](v T) *T { return &v }

func TestReplaceFloorGraphValidates(t *testing.T) {
	s := newService(t)
	f1, err := s.SaveFloor(store.Floor{Name: "Ground"})
	if err != nil {
		t.Fatal(err)
	}
	f2, _ := s.SaveFloor(store.Floor{Name: "First", Level: 1})
	nodes := []GraphNode{{Key: "a", NodeInput: NodeInput{X: 0}}, {Key: "b", NodeInput: NodeInput{X: 3, Y: 4}}}
	g, err := s.ReplaceFloorGraph(f1.ID, GraphInput{Nodes: nodes, Edges: []GraphEdge{{From: "a", To: "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Nodes) != 2 || len(g.Edges) != 1 || g.Edges[0].Weight != 5 || !g.Edges[0].Accessible {
		t.Fatalf("graph %+v", g)
	}
	bad := map[string]GraphInput{
		"negative weight": {Nodes: nodes, Edges: []GraphEdge{{From: "a", To: "b", Weight: ptr(-1.0)}}},
		"dangling":        {Nodes: nodes, Edges: []GraphEdge{{From: "a", To: "zzz"}}},
		"unknown id":      {Nodes: nodes, Edges: []GraphEdge{{From: "a", To: "999"}}},
		"self loop":       {Nodes: nodes, Edges: []GraphEdge{{From: "a", To: "a"}}},
		"duplicate key":   {Nodes: append(nodes, GraphNode{Key: "a"})},
		"bad kind":        {Nodes: nodes, Edges: []GraphEdge{{From: "a", To: "b", Kind: "slide"}}},
		"foreign node id": {Nodes: []GraphNode{{ID: 12345}}},
	}
	// A self loop names no edge id: a new edge's is one the refusal
	// rolls back.
	if _, err := s.ReplaceFloorGraph(f1.ID, bad["self loop"]); err == nil || regexp.MustCompile(`edge \d`).MatchString(err.Error()) {
		t.Errorf("self loop: %v", err)
	}
	for name, in := range bad {
		if _, err := s.ReplaceFloorGraph(f1.ID, in); apperr.KindOf(err) != apperr.KindInvalid {
			t.Errorf("%s: err %v, want invalid", name, err)
		}
	}
	if g2, _ := s.FloorGraph(f1.ID); len(g2.Nodes) != 2 || len(g2.Edges) != 1 {
		t.Fatalf("a rejected replace changed the graph: %+v", g2)
	}

	// An inter-floor corridor is refused; stairs are accepted.
	a := g.Nodes[0].ID
	up := GraphInput{Nodes: []GraphNode{{Key: "s"}}, Edges: []GraphEdge{{From: "s", To: NodeEnd(strconv.FormatUint(a, 10)), Weight: ptr(8.0)}}}
	if _, err := s.ReplaceFloorGraph(f2.ID, up); apperr.KindOf(err) != apperr.KindInvalid {
		t.Fatalf("inter-floor corridor: %v", err)
	}
	up.Edges[0].Kind = KindStairs
	if _, err := s.ReplaceFloorGraph(f2.ID, up); err != nil {
		t.Fatal(err)
	}
	// Floor 1 cannot drop node a while floor 2's stairs use it.
	if _, err := s.ReplaceFloorGraph(f1.ID, GraphInput{}); apperr.KindOf(err) != apperr.KindInvalid {
		t.Fatalf("dangling stairs allowed: %v", err)
	}
	res, err := s.Pathfind(PathRequest{From: Endpoint{Node: g.Nodes[1].ID}, To: Endpoint{Floor: f2.ID, X: ptr(0.0), Y: ptr(0.0)}})
	if err != nil || res.Length != 13 || len(res.Legs) != 2 {
		t.Fatalf("pathfind after edit: %+v %v", res, err)
	}
	// Deleting floor 2 removes its stairs, so floor 1 can be emptied.
	if _, err := s.DeleteFloor(f2.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReplaceFloorGraph(f1.ID, GraphInput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReplaceFloorGraph(9999, GraphInput{}); apperr.KindOf(err) != apperr.KindNotFound {
		t.Fatalf("unknown floor: %v", err)
	}
}

func TestNodeAndEdgeEdits(t *testing.T) {
	s := newService(t)
	f, _ := s.SaveFloor(store.Floor{Name: "G"})
	a, err := s.CreateNode(f.ID, NodeInput{Name: "door"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.CreateNode(f.ID, NodeInput{X: 6, Y: 8})
	e, err := s.SaveEdge(f.ID, 0, EdgeInput{From: a.ID, To: b.ID})
	if err != nil || e.ID == 0 || e.Weight != 10 {
		t.Fatalf("edge %+v %v", e, err)
	}
	if _, err := s.SaveEdge(f.ID, e.ID, EdgeInput{From: a.ID, To: b.ID, Weight: ptr(-2.0)}); apperr.KindOf(err) != apperr.KindInvalid {
		t.Fatalf("negative weight: %v", err)
	}
	if _, err := s.SaveEdge(f.ID, 0, EdgeInput{From: a.ID, To: 777}); apperr.KindOf(err) != apperr.KindInvalid {
		t.Fatalf("dangling: %v", err)
	}
	if err := s.DeleteNode(a.ID); err != nil {
		t.Fatal(err)
	}
	if g, _ := s.FloorGraph(f.ID); len(g.Nodes) != 1 || len(g.Edges) != 0 {
		t.Fatalf("node delete left %+v", g)
	}
	if err := s.DeleteEdge(e.ID); apperr.KindOf(err) != apperr.KindNotFound {
		t.Fatalf("edge went with its node: %v", err)
	}
	if _, err := s.SaveFloor(store.Floor{Name: " "}); apperr.KindOf(err) != apperr.KindInvalid {
		t.Fatalf("blank floor name: %v", err)
	}
}

// wantInvalid fails unless err is a 400 naming field whose message
// contains msg.
func wantInvalid(t *testing.T, err error, field, msg string) {
	t.Helper()
	e, ok := apperr.As(err)
	if !ok || e.Kind != apperr.KindInvalid || e.Field != field || !strings.Contains(e.Msg, msg) {
		t.Fatalf("err %v, want invalid %s containing %q", err, field, msg)
	}
}

// TestBeaconLinks: a node's beacon_uid names an existing beacon that no
// other node is linked to, in single edits and whole-floor replaces;
// duplicates stored before that rule neither block unrelated edits nor
// make pathfinding and the project disagree (the lowest node id wins).
func TestBeaconLinks(t *testing.T) {
	s := newService(t)
	f1, _ := s.SaveFloor(store.Floor{Name: "G"})
	f2, _ := s.SaveFloor(store.Floor{Name: "F", Level: 1})
	b1 := &store.Beacon{MAC: "AABBCCDDEE01", Name: "Desk", Active: true, POI: true}
	b2 := &store.Beacon{MAC: "AABBCCDDEE02", Name: "Lift", Active: true, POI: true}
	for _, b := range []*store.Beacon{b1, b2} {
		if err := s.db.CreateBeacon(b); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.CreateNode(f1.ID, NodeInput{BeaconUID: "NAV-NOPE-1"})
	wantInvalid(t, err, "beacon_uid", "beacon NAV-NOPE-1 does not exist")
	a, err := s.CreateNode(f1.ID, NodeInput{BeaconUID: b1.AssetUID})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.CreateNode(f1.ID, NodeInput{X: 5, BeaconUID: b1.AssetUID})
	wantInvalid(t, err, "beacon_uid", "already linked to node "+strconv.FormatUint(a.ID, 10))
	b, err := s.CreateNode(f1.ID, NodeInput{X: 5})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.UpdateNode(b.ID, NodeInput{X: 5, BeaconUID: " " + b1.AssetUID})
	wantInvalid(t, err, "beacon_uid", "already linked to node "+strconv.FormatUint(a.ID, 10))
	_, err = s.ReplaceFloorGraph(f2.ID, GraphInput{Nodes: []GraphNode{{NodeInput: NodeInput{BeaconUID: b1.AssetUID}}}})
	wantInvalid(t, err, "beacon_uid", "already linked to node "+strconv.FormatUint(a.ID, 10))
	twice := GraphInput{Nodes: []GraphNode{{NodeInput: NodeInput{BeaconUID: b2.AssetUID}}, {NodeInput: NodeInput{X: 1, BeaconUID: b2.AssetUID}}}}
	_, err = s.ReplaceFloorGraph(f2.ID, twice)
	wantInvalid(t, err, "beacon_uid", "more than one node of this request")
	_, err = s.ReplaceFloorGraph(f2.ID, GraphInput{Nodes: []GraphNode{{NodeInput: NodeInput{BeaconUID: "NAV-NOPE-1"}}}})
	wantInvalid(t, err, "beacon_uid", "does not exist")
	// Swapping two links in one replace is no duplicate.
	if _, err := s.ReplaceFloorGraph(f1.ID, GraphInput{Nodes: []GraphNode{
		{ID: a.ID, NodeInput: NodeInput{BeaconUID: b2.AssetUID}}, {ID: b.ID, NodeInput: NodeInput{X: 5, BeaconUID: b1.AssetUID}},
	}}); err != nil {
		t.Fatal(err)
	}

	// A duplicate stored before the rule: node d (on floor 2, a higher id)
	// is linked to b1 like node b.
	if _, err := s.db.UpdateNavGraph(func(cur store.NavGraph) (store.NavGraph, error) {
		cur.Nodes = append(cur.Nodes, store.NavNode{FloorID: f2.ID, BeaconUID: b1.AssetUID})
		return cur, nil
	}, func(store.NavGraph, store.GraphTx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.rebuild(); err != nil {
		t.Fatal(err)
	}
	// Unrelated edits and edits keeping a stored link still pass.
	if _, err := s.UpdateNode(b.ID, NodeInput{X: 6, Name: "desk", BeaconUID: b1.AssetUID}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateNode(f2.ID, NodeInput{X: 9}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Pathfind(PathRequest{From: Endpoint{Beacon: b1.AssetUID}, To: Endpoint{Node: b.ID}})
	if err != nil || len(res.Nodes) != 1 || res.Nodes[0] != b.ID {
		t.Fatalf("route from the beacon %+v %v, want node %d", res, err, b.ID)
	}
	p, _, err := s.Project(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, pb := range p.Beacons {
		if pb.AssetUID == b1.AssetUID && pb.NodeID != b.ID {
			t.Fatalf("project links %s to node %d, pathfinding to %d", pb.AssetUID, pb.NodeID, b.ID)
		}
	}
}

// TestCoordinateBounds: node coordinates are map pixels (0..1e6, as survey
// samples); a pathfinding point may lie off the plan, but no farther than
// one map size, where distances still tell nodes apart (1e300 snapped to
// whichever node came first).
func TestCoordinateBounds(t *testing.T) {
	s := newService(t)
	f, _ := s.SaveFloor(store.Floor{Name: "G"})
	_, err := s.CreateNode(f.ID, NodeInput{X: 1e308})
	wantInvalid(t, err, "x", "x must be a map pixel between 0 and 1000000")
	_, err = s.CreateNode(f.ID, NodeInput{X: 1, Y: -0.5})
	wantInvalid(t, err, "y", "between 0 and 1000000")
	near, err := s.CreateNode(f.ID, NodeInput{X: 0, Y: 0})
	if err != nil {
		t.Fatal(err)
	}
	far, err := s.CreateNode(f.ID, NodeInput{X: 1e6, Y: 1e6})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.UpdateNode(near.ID, NodeInput{Y: 1e6 + 1})
	wantInvalid(t, err, "y", "")
	_, err = s.ReplaceFloorGraph(f.ID, GraphInput{Nodes: []GraphNode{{ID: near.ID}, {Key: "door", NodeInput: NodeInput{X: 2e6}}}})
	wantInvalid(t, err, "x", `node "door": x must be`)

	for _, p := range [][2]float64{{1e300, -1e300}, {-1e6 - 1, 0}, {0, 2e6 + 1}} {
		_, err := s.Pathfind(PathRequest{From: Endpoint{Floor: f.ID, X: ptr(p[0]), Y: ptr(p[1])}, To: Endpoint{Node: near.ID}})
		wantInvalid(t, err, "from", "from: x and y must be numbers between -1000000 and 2000000")
	}
	// Off the plan within bounds still snaps to the nearest node.
	for p, want := range map[[2]float64]uint64{{-1e6, -1e6}: near.ID, {2e6, 2e6}: far.ID, {-5, 3}: near.ID} {
		// The nodes are not joined: only the node itself is reachable.
		res, err := s.Pathfind(PathRequest{From: Endpoint{Floor: f.ID, X: ptr(p[0]), Y: ptr(p[1])}, To: Endpoint{Node: want}})
		if err != nil || len(res.Nodes) != 1 {
			t.Fatalf("point %v: %+v %v, want a snap to node %d", p, res, err, want)
		}
	}
}

// TestNodeStoredOffThePlanKeepsItsPlace: the coordinate bound applies to
// new and moved nodes; a node stored before it (x = -5 was accepted) made
// the editor's whole-floor save, and any edit of that node, a 400 until
// it was moved (a review).
func TestNodeStoredOffThePlanKeepsItsPlace(t *testing.T) {
	s := newService(t)
	f, err := s.SaveFloor(store.Floor{Name: "Ground"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.UpdateNavGraph(func(cur store.NavGraph) (store.NavGraph, error) {
		cur.Nodes = append(cur.Nodes, store.NavNode{FloorID: f.ID, X: -5, Y: 10, Name: "door"}, store.NavNode{FloorID: f.ID, X: 20, Y: 10, Name: "desk"})
		return cur, nil
	}, func(store.NavGraph, store.GraphTx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	g, err := s.FloorGraph(f.ID)
	if err != nil {
		t.Fatal(err)
	}
	var in GraphInput
	var door store.NavNode
	for _, n := range g.Nodes {
		name := n.Name
		if name == "desk" {
			name = "front desk"
		} else {
			door = n
		}
		in.Nodes = append(in.Nodes, GraphNode{ID: n.ID, NodeInput: NodeInput{Name: name, X: n.X, Y: n.Y}})
	}
	if _, err := s.ReplaceFloorGraph(f.ID, in); err != nil {
		t.Fatalf("whole-floor save renaming another node: %v", err)
	}
	if _, err := s.UpdateNode(door.ID, NodeInput{Name: "main door", X: door.X, Y: door.Y}); err != nil {
		t.Fatalf("renaming the node in place: %v", err)
	}
	// Moved, it must land on the plan.
	if _, err := s.UpdateNode(door.ID, NodeInput{Name: "main door", X: -6, Y: door.Y}); err == nil {
		t.Fatal("moved off the plan: accepted")
	}
	in.Nodes[0].X, in.Nodes[1].X = -7, -7
	if _, err := s.ReplaceFloorGraph(f.ID, in); err == nil {
		t.Fatal("whole-floor save moving nodes off the plan: accepted")
	}
}

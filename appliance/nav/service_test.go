package nav

import (
	"path/filepath"
	"strconv"
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
	up := GraphInput{Nodes: []GraphNode{{Key: "s"}}, Edges: []GraphEdge{{From: "s", To: strconv.FormatUint(a, 10), Weight: ptr(8.0)}}}
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

package nav

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"beaconhub/appliance/apperr"
	"beaconhub/store"
)

// NodeInput is the editable part of a node.
type NodeInput struct {
	Name      string  `json:"name"`
	X         float64 `json:"x"`
	Y         float64 `json:"y"`
	Kind      string  `json:"kind"`
	BeaconUID string  `json:"beacon_uid"`
}

// EdgeInput is the editable part of an edge. Weight defaults to the
// Euclidean length on one floor; Accessible matters for lifts and ramps.
type EdgeInput struct {
	From       uint64   `json:"from"`
	To         uint64   `json:"to"`
	Weight     *float64 `json:"weight"`
	Kind       string   `json:"kind"`
	Accessible *bool    `json:"accessible"`
}

// GraphNode is a node in a whole-floor replacement: ID keeps an existing
// node of the floor (and every edge other floors have to it); Key names a
// new node for the edges of the same request.
type GraphNode struct {
	NodeInput
	ID  uint64 `json:"id"`
	Key string `json:"key"`
	// FloorID is accepted as GET /floor/:id/graph gives it and ignored:
	// the floor is the path's, and a graph read was refused when sent
	// back (a black-box check).
	FloorID *uint64 `json:"floor_id,omitempty"`
}

// NodeEnd is an edge end in a graph replacement: a key of the request
// or an existing node's id, as a string ("12") or, as GET
// /floor/:id/graph gives it, a number (12).
type NodeEnd string

// UnmarshalJSON takes a string or a whole number.
func (e *NodeEnd) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*e = NodeEnd(s)
		return nil
	}
	var n uint64
	if err := json.Unmarshal(b, &n); err != nil {
		return apperr.InvalidField("edges", "an edge end is a node key or a node id")
	}
	*e = NodeEnd(strconv.FormatUint(n, 10))
	return nil
}

// GraphEdge joins two nodes named by key, or by the decimal id of an
// existing node (any floor, for stairs and lifts).
type GraphEdge struct {
	From       NodeEnd  `json:"from"`
	To         NodeEnd  `json:"to"`
	Weight     *float64 `json:"weight"`
	Kind       string   `json:"kind"`
	Accessible *bool    `json:"accessible"`
	// ID is accepted as read and ignored: the floor's edges are
	// replaced. An edge whose FloorID names another floor is that
	// floor's, listed by the GET because it touches this one: it is kept
	// as stored, whatever the body says of it.
	ID      *uint64 `json:"id,omitempty"`
	FloorID *uint64 `json:"floor_id,omitempty"`
}

// GraphInput replaces one floor's nodes and the edges it owns.
type GraphInput struct {
	Nodes []GraphNode `json:"nodes"`
	Edges []GraphEdge `json:"edges"`
}

// maxNodeCoord bounds node coordinates: map pixels, as survey samples.
const maxNodeCoord = maxSurveyCoord

// checkXY refuses node coordinates outside the map's pixel range: 1e308
// was accepted, and distances between such points lose every digit.
func checkXY(in NodeInput, what string) error {
	for _, c := range []struct {
		name string
		v    float64
	}{{"x", in.X}, {"y", in.Y}} {
		if math.IsNaN(c.v) || c.v < 0 || c.v > maxNodeCoord {
			return apperr.InvalidField(c.name, "%s%s must be a map pixel between 0 and %.0f", what, c.name, maxNodeCoord)
		}
	}
	return nil
}

// checkMoved is checkXY for an existing node, n, when in moves it: a node
// stored before the bound (x = -5 was accepted) may keep its place, so
// the editor's whole-floor save, which sends every node back, is not
// refused over a node nobody touched (a review).
func checkMoved(n store.NavNode, in NodeInput, what string) error {
	if in.X == n.X && in.Y == n.Y {
		return nil
	}
	return checkXY(in, what)
}

func nodeFrom(in NodeInput, id, floor uint64) store.NavNode {
	return store.NavNode{ID: id, FloorID: floor, X: in.X, Y: in.Y, Name: strings.TrimSpace(in.Name), Kind: in.Kind, BeaconUID: strings.TrimSpace(in.BeaconUID)}
}

// placeholder is how a new node is referenced before it has an id; see
// store.UpdateNavGraph.
func placeholder(k int) uint64 { return uint64(-int64(k + 1)) }

// CreateNode adds a node to a floor.
func (s *Service) CreateNode(floor uint64, in NodeInput) (store.NavNode, error) {
	if err := checkXY(in, ""); err != nil {
		return store.NavNode{}, err
	}
	if _, err := s.Floor(floor); err != nil {
		return store.NavNode{}, err
	}
	out, err := s.edit(func(cur store.NavGraph) (store.NavGraph, error) {
		cur.Nodes = append(cur.Nodes, nodeFrom(in, 0, floor))
		return cur, nil
	})
	if err != nil {
		return store.NavNode{}, err
	}
	return out.Nodes[len(out.Nodes)-1], nil
}

// UpdateNode changes a node in place; its floor and edges stay.
func (s *Service) UpdateNode(id uint64, in NodeInput) (store.NavNode, error) {
	var got store.NavNode
	_, err := s.edit(func(cur store.NavGraph) (store.NavGraph, error) {
		for i, n := range cur.Nodes {
			if n.ID == id {
				if err := checkMoved(n, in, ""); err != nil {
					return cur, err
				}
				cur.Nodes[i] = nodeFrom(in, id, n.FloorID)
				got = cur.Nodes[i]
				return cur, nil
			}
		}
		return cur, apperr.NotFound("node not found")
	})
	return got, err
}

// DeleteNode removes a node and every edge touching it.
func (s *Service) DeleteNode(id uint64) error {
	_, err := s.edit(func(cur store.NavGraph) (store.NavGraph, error) {
		found := false
		nodes := cur.Nodes[:0]
		for _, n := range cur.Nodes {
			if n.ID == id {
				found = true
				continue
			}
			nodes = append(nodes, n)
		}
		if !found {
			return cur, apperr.NotFound("node not found")
		}
		edges := cur.Edges[:0]
		for _, e := range cur.Edges {
			if e.From != id && e.To != id {
				edges = append(edges, e)
			}
		}
		return store.NavGraph{Nodes: nodes, Edges: edges}, nil
	})
	return err
}

// SaveEdge creates (id 0) or updates an edge; a new edge must start on floor.
func (s *Service) SaveEdge(floor, id uint64, in EdgeInput) (store.NavEdge, error) {
	var got store.NavEdge
	out, err := s.edit(func(cur store.NavGraph) (store.NavGraph, error) {
		e := store.NavEdge{ID: id, From: in.From, To: in.To, Kind: in.Kind}
		if err := normEdge(&e, in.Weight, in.Accessible, index(cur.Nodes)); err != nil {
			return cur, err
		}
		if id == 0 {
			if e.FloorID != floor {
				return cur, apperr.InvalidField("from", "the edge must start on floor %d", floor)
			}
			cur.Edges = append(cur.Edges, e)
			return cur, nil
		}
		for i := range cur.Edges {
			if cur.Edges[i].ID == id {
				cur.Edges[i] = e
				return cur, nil
			}
		}
		return cur, apperr.NotFound("edge not found")
	})
	if err != nil {
		return got, err
	}
	// The store keeps the order and assigns ids in place, so the edge is
	// found by id, or as the last one when it was new.
	if id == 0 {
		return out.Edges[len(out.Edges)-1], nil
	}
	for _, e := range out.Edges {
		if e.ID == id {
			got = e
		}
	}
	return got, nil
}

// DeleteEdge removes one edge.
func (s *Service) DeleteEdge(id uint64) error {
	_, err := s.edit(func(cur store.NavGraph) (store.NavGraph, error) {
		for i, e := range cur.Edges {
			if e.ID == id {
				cur.Edges = append(cur.Edges[:i], cur.Edges[i+1:]...)
				return cur, nil
			}
		}
		return cur, apperr.NotFound("edge not found")
	})
	return err
}

// ReplaceFloorGraph swaps a floor's nodes and owned edges for in, all or
// nothing. Removing a node that another floor's edge still uses is
// refused rather than leaving that edge dangling.
func (s *Service) ReplaceFloorGraph(floor uint64, in GraphInput) (store.NavGraph, error) {
	if _, err := s.Floor(floor); err != nil {
		return store.NavGraph{}, err
	}
	if _, err := s.edit(func(cur store.NavGraph) (store.NavGraph, error) {
		return replace(cur, floor, in)
	}); err != nil {
		return store.NavGraph{}, err
	}
	return s.FloorGraph(floor)
}

func replace(cur store.NavGraph, floor uint64, in GraphInput) (store.NavGraph, error) {
	var next store.NavGraph
	old := map[uint64]store.NavNode{}
	for _, n := range cur.Nodes {
		if n.FloorID == floor {
			old[n.ID] = n
		} else {
			next.Nodes = append(next.Nodes, n)
		}
	}
	refs := map[string]uint64{}
	kept := map[uint64]bool{}
	fresh := 0
	for i, gn := range in.Nodes {
		what := "node " + strconv.Itoa(i+1) + ": "
		if gn.Key != "" {
			what = "node " + strconv.Quote(gn.Key) + ": "
		} else if gn.ID != 0 {
			what = "node " + strconv.FormatUint(gn.ID, 10) + ": "
		}
		id := gn.ID
		if id != 0 {
			was, ok := old[id]
			if !ok || kept[id] {
				return next, apperr.InvalidField("nodes", "node %d is not a node of this floor (or is listed twice)", id)
			}
			kept[id] = true
			if err := checkMoved(was, gn.NodeInput, what); err != nil {
				return next, err
			}
		} else {
			if err := checkXY(gn.NodeInput, what); err != nil {
				return next, err
			}
			id = placeholder(fresh)
			fresh++
		}
		if gn.Key != "" {
			if _, dup := refs[gn.Key]; dup {
				return next, apperr.InvalidField("nodes", "node key %q is used twice", gn.Key)
			}
			refs[gn.Key] = id
		}
		n := nodeFrom(gn.NodeInput, id, floor)
		if gn.ID == 0 {
			n.ID = 0
		}
		next.Nodes = append(next.Nodes, n)
	}
	// Edges owned by other floors stay; they must not lose an end.
	for _, e := range cur.Edges {
		if e.FloorID == floor {
			continue
		}
		for _, end := range []uint64{e.From, e.To} {
			if _, ours := old[end]; ours && !kept[end] {
				return next, apperr.InvalidField("nodes", "node %d is still used by edge %d of floor %d", end, e.ID, e.FloorID)
			}
		}
		next.Edges = append(next.Edges, e)
	}
	// Resolve against the nodes as they will be, placeholders included.
	all := map[uint64]store.NavNode{}
	k := 0
	for _, n := range next.Nodes {
		if n.ID == 0 {
			n.ID = placeholder(k)
			k++
		}
		all[n.ID] = n
	}
	for _, ge := range in.Edges {
		if ge.FloorID != nil && *ge.FloorID != floor {
			// Another floor's edge to this one, as GET /floor/:id/graph
			// lists it: kept above as stored. Taken as this floor's, each
			// graph sent back as read added a copy of the stairs (a
			// review).
			continue
		}
		if ge.From == "" || ge.To == "" {
			return next, apperr.InvalidField("edges", "every edge needs from and to")
		}
		from, err := resolve(string(ge.From), refs)
		if err != nil {
			return next, err
		}
		to, err := resolve(string(ge.To), refs)
		if err != nil {
			return next, err
		}
		e := store.NavEdge{From: from, To: to, Kind: ge.Kind}
		if err := normEdge(&e, ge.Weight, ge.Accessible, all); err != nil {
			return next, err
		}
		if all[from].FloorID != floor && all[to].FloorID != floor {
			return next, apperr.InvalidField("edges", "edge %s-%s does not touch this floor", ge.From, ge.To)
		}
		e.FloorID = floor
		next.Edges = append(next.Edges, e)
	}
	return next, nil
}

func resolve(ref string, refs map[string]uint64) (uint64, error) {
	if id, ok := refs[ref]; ok {
		return id, nil
	}
	if id, err := strconv.ParseUint(ref, 10, 64); err == nil {
		return id, nil
	}
	return 0, apperr.InvalidField("edges", "edge end %q is neither a node key nor a node id", ref)
}

package nav

import (
	"math"

	"beaconhub/appliance/apperr"
	"beaconhub/store"
)

// A pathfinding point is at most one map size off the plan's pixels
// (0..maxNodeCoord) in any direction.
const (
	minPointCoord = -maxNodeCoord
	maxPointCoord = 2 * maxNodeCoord
)

// Endpoint is where a route starts or ends: exactly one of a node id, a
// point-of-interest beacon (the node linked to its asset_uid) or a map
// coordinate on a floor (snapped to the nearest node of that floor).
type Endpoint struct {
	Node   uint64   `json:"node_id,omitempty"`
	Beacon string   `json:"beacon,omitempty"`
	Floor  uint64   `json:"floor_id,omitempty"`
	X      *float64 `json:"x,omitempty"`
	Y      *float64 `json:"y,omitempty"`
}

// PathRequest is the body of POST /api/v1/navigation/pathfind.
type PathRequest struct {
	From        Endpoint `json:"from"`
	To          Endpoint `json:"to"`
	AvoidStairs bool     `json:"avoid_stairs"`
}

// Leg is the polyline of consecutive path nodes on one floor.
type Leg struct {
	FloorID uint64       `json:"floor_id"`
	Points  [][2]float64 `json:"points"`
}

// PathResult is the route: node ids, per-floor polylines, total weight.
type PathResult struct {
	Nodes  []uint64 `json:"nodes"`
	Legs   []Leg    `json:"legs"`
	Length float64  `json:"length"`
}

func (g *Graph) endpoint(e Endpoint, field string) (store.NavNode, error) {
	set := 0
	if e.Node != 0 {
		set++
	}
	if e.Beacon != "" {
		set++
	}
	if e.X != nil || e.Y != nil {
		set++
	}
	if set != 1 {
		return store.NavNode{}, apperr.InvalidField(field, "give exactly one of node_id, beacon, or floor_id with x and y")
	}
	switch {
	case e.Node != 0:
		if n, ok := g.Node(e.Node); ok {
			return n, nil
		}
		return store.NavNode{}, apperr.NotFound("%s: node %d not found", field, e.Node)
	case e.Beacon != "":
		if n, ok := g.ByBeacon(e.Beacon); ok {
			return n, nil
		}
		return store.NavNode{}, apperr.NotFound("%s: no navigation node is linked to beacon %s", field, e.Beacon)
	default:
		if e.X == nil || e.Y == nil || e.Floor == 0 {
			return store.NavNode{}, apperr.InvalidField(field, "a coordinate needs floor_id, x and y")
		}
		// A point may lie off the plan (a phone's estimate drifts), but
		// not so far that distances to the nodes lose their digits.
		for _, v := range []float64{*e.X, *e.Y} {
			if math.IsNaN(v) || v < minPointCoord || v > maxPointCoord {
				return store.NavNode{}, apperr.InvalidField(field, "%s: x and y must be numbers between %.0f and %.0f", field, minPointCoord, maxPointCoord)
			}
		}
		if n, ok := g.Nearest(e.Floor, *e.X, *e.Y); ok {
			return n, nil
		}
		return store.NavNode{}, apperr.NotFound("%s: floor %d has no navigation nodes", field, e.Floor)
	}
}

// Pathfind answers a route request on the current graph.
func (s *Service) Pathfind(req PathRequest) (PathResult, error) {
	// A deleted beacon's uid stays in its node and links nothing (the
	// project lists no such beacon), so a route from or to it is a 404,
	// not the node's route (a black-box check).
	for _, e := range []struct {
		end   Endpoint
		field string
	}{{req.From, "from"}, {req.To, "to"}} {
		if e.end.Beacon == "" || e.end.Node != 0 || e.end.X != nil || e.end.Y != nil {
			continue // no beacon, or a malformed end Route answers 400
		}
		exists, err := s.db.BeaconUIDExists(e.end.Beacon)
		if err != nil {
			return PathResult{}, err
		}
		if !exists {
			return PathResult{}, apperr.NotFound("%s: no beacon %s", e.field, e.end.Beacon)
		}
	}
	return s.Graph().Route(req)
}

// Route answers a route request on this graph.
func (g *Graph) Route(req PathRequest) (PathResult, error) {
	from, err := g.endpoint(req.From, "from")
	if err != nil {
		return PathResult{}, err
	}
	to, err := g.endpoint(req.To, "to")
	if err != nil {
		return PathResult{}, err
	}
	path, length, ok := g.ShortestPath(from.ID, to.ID, req.AvoidStairs)
	if !ok {
		// 409: the request is well formed but the graph has no such route.
		e := apperr.Conflict("destination is unreachable from the start")
		if req.AvoidStairs {
			e = apperr.Conflict("destination is unreachable from the start without stairs")
		}
		e.Details = map[string]any{"reason": "unreachable"}
		return PathResult{}, e
	}
	res := PathResult{Nodes: path, Length: length}
	for _, id := range path {
		n, _ := g.Node(id)
		if len(res.Legs) == 0 || res.Legs[len(res.Legs)-1].FloorID != n.FloorID {
			res.Legs = append(res.Legs, Leg{FloorID: n.FloorID})
		}
		l := &res.Legs[len(res.Legs)-1]
		l.Points = append(l.Points, [2]float64{n.X, n.Y})
	}
	return res, nil
}

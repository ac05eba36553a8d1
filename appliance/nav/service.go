package nav

import (
	"math"
	"sync/atomic"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/clock"
	"beaconhub/store"
)

// Service owns floors and the navigation graph and keeps the compiled
// in-memory graph in step with the database.
type Service struct {
	db     *store.DB
	clock  clock.Clock
	graph  atomic.Pointer[Graph]
	models modelCache
}

// New loads the stored graph and compiles it.
func New(db *store.DB, clk clock.Clock) (*Service, error) {
	if clk == nil {
		clk = clock.Real{}
	}
	s := &Service{db: db, clock: clk}
	if err := s.rebuild(); err != nil {
		return nil, err
	}
	return s, nil
}

// Reload recompiles the graph from the store: after a change made
// outside the service (a uid rename swept through the nodes).
func (s *Service) Reload() error { return s.rebuild() }

// Graph returns the current compiled graph.
func (s *Service) Graph() *Graph { return s.graph.Load() }

func (s *Service) rebuild() error {
	g, err := s.db.AllNavGraph()
	if err != nil {
		return err
	}
	s.graph.Store(BuildGraph(g))
	return nil
}

// Floors lists every floor.
func (s *Service) Floors() ([]store.Floor, error) { return s.db.ListFloors() }

// Floor returns one floor.
func (s *Service) Floor(id uint64) (store.Floor, error) {
	f, err := s.db.GetFloor(id)
	return f, store.ClientErr(err, "floor")
}

// maxFloorName is a floor name's length limit, as for maps and zones.
const maxFloorName = 100

// SaveFloor creates (ID 0) or updates a floor.
func (s *Service) SaveFloor(f store.Floor) (store.Floor, error) {
	name, err := apperr.CleanName("name", f.Name, maxFloorName)
	if err != nil {
		return f, err
	}
	f.Name = name
	now := s.clock.Now().UTC()
	if f.ID == 0 {
		f.CreatedAt = now
	}
	f.UpdatedAt = now
	out, err := s.db.PutFloor(f)
	return out, store.ClientErr(err, "floor")
}

// DeleteFloor removes a floor with its nodes and edges and clears the
// floor_id of the beacons assigned to it, in one transaction; it returns
// those beacons' asset_uids (what every beacon route takes).
func (s *Service) DeleteFloor(id uint64) ([]string, error) {
	defer s.models.drop(id)
	beacons, err := s.db.DeleteFloor(id, s.clock.Now())
	if err != nil {
		return nil, store.ClientErr(err, "floor")
	}
	return beacons, s.rebuild()
}

// FloorGraph returns a floor's nodes and the edges touching them.
func (s *Service) FloorGraph(id uint64) (store.NavGraph, error) {
	g, err := s.db.FloorGraph(id)
	return g, store.ClientErr(err, "floor")
}

// edit applies change in one validated transaction and recompiles.
func (s *Service) edit(change func(cur store.NavGraph) (store.NavGraph, error)) (store.NavGraph, error) {
	out, err := s.db.UpdateNavGraph(change, check)
	if err != nil {
		return out, store.ClientErr(err, "floor")
	}
	return out, s.rebuild()
}

// Edge kinds. Ordinary corridor edges have no kind.
const (
	KindStairs = "stairs"
	KindLift   = "lift"
	KindRamp   = "ramp"
)

// normEdge fills the weight (Euclidean length when omitted on one floor)
// and the accessibility flag: corridors are always accessible, stairs
// never, lifts and ramps as given (a lift out of service is set false).
func normEdge(e *store.NavEdge, weight *float64, accessible *bool, nodes map[uint64]store.NavNode) error {
	// An update replaces the whole edge, so a body of only the changed
	// field lands here: say so rather than "a node does not exist".
	if e.From == 0 {
		return apperr.InvalidField("from", "from and to are required (the edge is replaced as a whole)")
	}
	if e.To == 0 {
		return apperr.InvalidField("to", "from and to are required (the edge is replaced as a whole)")
	}
	a, okA := nodes[e.From]
	b, okB := nodes[e.To]
	if !okA || !okB {
		return apperr.InvalidField("edges", "edge refers to a node that does not exist")
	}
	e.FloorID = a.FloorID
	if weight != nil {
		e.Weight = *weight
	} else if a.FloorID == b.FloorID {
		e.Weight = math.Hypot(a.X-b.X, a.Y-b.Y)
	} else {
		return apperr.InvalidField("weight", "an edge between floors needs an explicit weight")
	}
	switch e.Kind {
	case "":
		e.Accessible = true
	case KindStairs:
		e.Accessible = false
	case KindLift, KindRamp:
		e.Accessible = accessible == nil || *accessible
	default:
		return apperr.InvalidField("kind", "edge kind must be empty, stairs, lift or ramp")
	}
	return nil
}

// Validate checks a whole proposed graph: every edge joins two existing,
// distinct nodes, weights are finite and non-negative, and edges between
// floors are stairs or lifts.
func Validate(g store.NavGraph) error {
	nodes := make(map[uint64]store.NavNode, len(g.Nodes))
	for _, n := range g.Nodes {
		if math.IsNaN(n.X) || math.IsNaN(n.Y) || math.IsInf(n.X, 0) || math.IsInf(n.Y, 0) {
			return apperr.InvalidField("nodes", "node coordinates must be finite numbers")
		}
		nodes[n.ID] = n
	}
	for _, e := range g.Edges {
		a, okA := nodes[e.From]
		b, okB := nodes[e.To]
		if !okA || !okB {
			return apperr.InvalidField("edges", "edge %d refers to a node that does not exist (dangling edge)", e.ID)
		}
		if e.From == e.To {
			// No id: a new edge's is given in the transaction this refusal
			// rolls back, and named one the client never saw (a black-box
			// check).
			return apperr.InvalidField("to", "an edge may not join a node to itself (from and to are the same node)")
		}
		if math.IsNaN(e.Weight) || math.IsInf(e.Weight, 0) || e.Weight < 0 {
			return apperr.InvalidField("weight", "edge weights must be finite and not negative")
		}
		if a.FloorID != b.FloorID && e.Kind != KindStairs && e.Kind != KindLift {
			return apperr.InvalidField("kind", "an edge between floors must be stairs or lift")
		}
	}
	return nil
}

// check is the GraphCheck of every edit: the graph's shape, then its
// beacon links.
func check(g store.NavGraph, tx store.GraphTx) error {
	if err := Validate(g); err != nil {
		return err
	}
	return checkBeaconLinks(g, tx)
}

// checkBeaconLinks refuses a node linked (beacon_uid) to a beacon that does
// not exist or that another node is linked to: pathfinding from a beacon
// and the project's beacons[].node_id must mean one node. Only links the
// edit makes or changes are checked, so duplicates stored before this rule
// do not block unrelated edits; reads take the lowest node id (BuildGraph).
func checkBeaconLinks(g store.NavGraph, tx store.GraphTx) error {
	holders := map[string][]uint64{}
	for _, n := range g.Nodes {
		if n.BeaconUID != "" {
			holders[n.BeaconUID] = append(holders[n.BeaconUID], n.ID)
		}
	}
	for _, n := range g.Nodes {
		uid := n.BeaconUID
		if uid == "" {
			continue
		}
		if old, ok := tx.Stored(n.ID); ok && old.BeaconUID == uid {
			continue
		}
		if !tx.BeaconExists(uid) {
			return apperr.InvalidField("beacon_uid", "beacon %s does not exist", uid)
		}
		// Name a stored node (lowest id) when there is one: a new node's
		// id is not kept once the edit is refused.
		var stored uint64
		fresh := false
		for _, id := range holders[uid] {
			if id == n.ID {
				continue
			}
			if _, ok := tx.Stored(id); !ok {
				fresh = true
			} else if stored == 0 || id < stored {
				stored = id
			}
		}
		if stored != 0 {
			return apperr.InvalidField("beacon_uid", "beacon %s is already linked to node %d", uid, stored)
		}
		if fresh {
			return apperr.InvalidField("beacon_uid", "beacon %s is linked to more than one node of this request", uid)
		}
	}
	return nil
}

func index(nodes []store.NavNode) map[uint64]store.NavNode {
	m := make(map[uint64]store.NavNode, len(nodes))
	for _, n := range nodes {
		m[n.ID] = n
	}
	return m
}

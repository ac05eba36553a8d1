package store

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Navigation records (issue 10). The buckets are created on first write and
// read as empty before that, so no migration step is needed.
var (
	bNavFloors = []byte("nav_floors") // id -> Floor
	bNavNodes  = []byte("nav_nodes")  // id -> NavNode
	bNavEdges  = []byte("nav_edges")  // id -> NavEdge
)

// Floor is one storey of a building. LocationID, when not 0, is the
// location (navigation project) it belongs to; locations cannot be
// deleted, so the link stays valid. MapID, when not 0, is the map (floor
// plan) it shows; deleting that map sets it back to 0.
type Floor struct {
	ID         uint64    `json:"id"`
	Name       string    `json:"name"`
	Level      int       `json:"level"`
	LocationID uint64    `json:"location_id,omitempty"`
	MapID      uint64    `json:"map_id,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// NavNode is a point of the navigation graph in its floor's map coordinates.
type NavNode struct {
	ID        uint64  `json:"id"`
	FloorID   uint64  `json:"floor_id"`
	X         float64 `json:"x"`
	Y         float64 `json:"y"`
	Name      string  `json:"name,omitempty"`
	Kind      string  `json:"kind,omitempty"`
	BeaconUID string  `json:"beacon_uid,omitempty"`
}

// NavEdge is an undirected weighted edge. FloorID is the floor that owns it
// (the floor of From); an edge whose ends lie on different floors is a
// stairs or lift connection.
type NavEdge struct {
	ID         uint64  `json:"id"`
	FloorID    uint64  `json:"floor_id"`
	From       uint64  `json:"from"`
	To         uint64  `json:"to"`
	Weight     float64 `json:"weight"`
	Kind       string  `json:"kind,omitempty"`
	Accessible bool    `json:"accessible"`
}

// NavGraph is every node and edge, for building the in-memory graph.
type NavGraph struct {
	Nodes []NavNode
	Edges []NavEdge
}

func navList[T any](tx *bolt.Tx, name []byte, keep func(*T) bool) ([]T, error) {
	out := []T{}
	b := tx.Bucket(name)
	if b == nil {
		return out, nil
	}
	err := b.ForEach(func(k, _ []byte) error {
		var v T
		if err := getJSON(b, k, &v); err != nil {
			return err
		}
		if keep == nil || keep(&v) {
			out = append(out, v)
		}
		return nil
	})
	return out, err
}

func navBuckets(tx *bolt.Tx) (f, n, e *bolt.Bucket, err error) {
	if f, err = tx.CreateBucketIfNotExists(bNavFloors); err != nil {
		return
	}
	if n, err = tx.CreateBucketIfNotExists(bNavNodes); err != nil {
		return
	}
	e, err = tx.CreateBucketIfNotExists(bNavEdges)
	return
}

// ListFloors returns all floors in id order.
func (db *DB) ListFloors() ([]Floor, error) {
	var out []Floor
	err := db.View(func(tx *bolt.Tx) (err error) {
		out, err = navList[Floor](tx, bNavFloors, nil)
		return err
	})
	return out, err
}

// GetFloor returns one floor or ErrNotFound.
func (db *DB) GetFloor(id uint64) (Floor, error) {
	var f Floor
	err := db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bNavFloors)
		if b == nil {
			return ErrNotFound
		}
		return getJSON(b, itob(id), &f)
	})
	return f, err
}

// PutFloor creates (ID 0) or updates a floor and returns it as stored.
func (db *DB) PutFloor(f Floor) (Floor, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		fb, _, _, err := navBuckets(tx)
		if err != nil {
			return err
		}
		var old Floor
		if f.ID != 0 {
			if err := getJSON(fb, itob(f.ID), &old); err != nil {
				return err
			}
		}
		// Checked when it changes only: a floor stored before this check
		// with a location that does not exist can still be saved back
		// as read, renamed or linked to a map (a review).
		if f.LocationID != 0 && (f.ID == 0 || f.LocationID != old.LocationID) && !hasID(tx, bLocations, f.LocationID) {
			// Otherwise the mobile catalog lists a project nobody can
			// see in the site tree.
			return invalidField("location_id", "location %d does not exist", f.LocationID)
		}
		if f.MapID != 0 {
			// Checked in the write's transaction, so a map deleted
			// meanwhile cannot be linked (DeleteMap unlinks its floors).
			if !hasID(tx, bMaps, f.MapID) {
				return invalidField("map_id", "map %d does not exist", f.MapID)
			}
		}
		if f.ID == 0 {
			seq, err := fb.NextSequence()
			if err != nil {
				return err
			}
			f.ID = seq
		} else {
			f.CreatedAt = old.CreatedAt
		}
		return putJSON(fb, itob(f.ID), f)
	})
	return f, err
}

// DeleteFloor removes a floor, its nodes and every edge touching them, so
// no edge on another floor is left dangling. Beacons assigned to the floor
// stay, their floor_id cleared and UpdatedAt set to now (a beacon naming a
// floor that does not exist could not be saved back); their ids are
// returned.
func (db *DB) DeleteFloor(id uint64, now time.Time) ([]string, error) {
	var beacons []string
	err := db.Update(func(tx *bolt.Tx) error {
		beacons = []string{}
		fb, nb, eb, err := navBuckets(tx)
		if err != nil {
			return err
		}
		if fb.Get(itob(id)) == nil {
			return ErrNotFound
		}
		if bb := tx.Bucket(bBeacons); bb != nil {
			on, err := navList(tx, bBeacons, func(b *Beacon) bool { return b.FloorID == id })
			if err != nil {
				return err
			}
			for _, b := range on {
				b.FloorID, b.UpdatedAt = 0, now.UTC()
				if err := putJSON(bb, itob(b.ID), b); err != nil {
					return err
				}
				beacons = append(beacons, b.AssetUID)
			}
		}
		gone := map[uint64]bool{}
		nodes, err := navList(tx, bNavNodes, func(n *NavNode) bool { return n.FloorID == id })
		if err != nil {
			return err
		}
		for _, n := range nodes {
			gone[n.ID] = true
			if err := nb.Delete(itob(n.ID)); err != nil {
				return err
			}
		}
		if err := deleteEdgesWhere(tx, eb, func(e *NavEdge) bool { return e.FloorID == id || gone[e.From] || gone[e.To] }); err != nil {
			return err
		}
		if ib := tx.Bucket(bNavFloorImages); ib != nil {
			if err := ib.Delete(itob(id)); err != nil {
				return err
			}
		}
		if _, err := deleteSurveyOf(tx, id); err != nil {
			return err
		}
		if rb := tx.Bucket(bNavSurveyRev); rb != nil {
			if err := rb.Delete(itob(id)); err != nil {
				return err
			}
		}
		return fb.Delete(itob(id))
	})
	return beacons, err
}

func deleteEdgesWhere(tx *bolt.Tx, eb *bolt.Bucket, match func(*NavEdge) bool) error {
	edges, err := navList(tx, bNavEdges, match)
	if err != nil {
		return err
	}
	for _, e := range edges {
		if err := eb.Delete(itob(e.ID)); err != nil {
			return err
		}
	}
	return nil
}

// FloorGraph returns a floor's nodes and the edges touching them.
func (db *DB) FloorGraph(floor uint64) (NavGraph, error) {
	var g NavGraph
	err := db.View(func(tx *bolt.Tx) error {
		fb := tx.Bucket(bNavFloors)
		if fb == nil || fb.Get(itob(floor)) == nil {
			return ErrNotFound
		}
		var err error
		ids := map[uint64]bool{}
		if g.Nodes, err = navList(tx, bNavNodes, func(n *NavNode) bool { return n.FloorID == floor }); err != nil {
			return err
		}
		for _, n := range g.Nodes {
			ids[n.ID] = true
		}
		g.Edges, err = navList(tx, bNavEdges, func(e *NavEdge) bool { return e.FloorID == floor || ids[e.From] || ids[e.To] })
		return err
	})
	return g, err
}

// AllNavGraph returns every node and edge.
func (db *DB) AllNavGraph() (NavGraph, error) {
	var g NavGraph
	err := db.View(func(tx *bolt.Tx) (err error) {
		if g.Nodes, err = navList[NavNode](tx, bNavNodes, nil); err != nil {
			return err
		}
		g.Edges, err = navList[NavEdge](tx, bNavEdges, nil)
		return err
	})
	return g, err
}

// GraphCheck validates a proposed state of the whole graph inside the
// write transaction; it sees every node and edge after the change, and
// through tx the nodes as stored before it and the beacon registry.
type GraphCheck func(all NavGraph, tx GraphTx) error

// GraphTx is what a GraphCheck may read besides the proposed graph.
type GraphTx struct {
	tx     *bolt.Tx
	before map[uint64]NavNode
}

// Stored returns node id as it was before the change (false: new node).
func (g GraphTx) Stored(id uint64) (NavNode, bool) {
	n, ok := g.before[id]
	return n, ok
}

// BeaconExists reports whether a beacon holds asset_uid uid.
func (g GraphTx) BeaconExists(uid string) bool {
	if g.tx.Bucket(bAssetUIDs) == nil {
		return false
	}
	ref, ok := (&AssetTx{tx: g.tx}).UIDOwner(uid)
	return ok && ref.Kind == KindBeacon
}

// BeaconUIDExists reports whether a beacon holds asset_uid uid now (a
// deleted beacon's uid may stay in a node).
func (db *DB) BeaconUIDExists(uid string) (bool, error) {
	exists := false
	err := db.View(func(tx *bolt.Tx) error {
		exists = GraphTx{tx: tx}.BeaconExists(uid)
		return nil
	})
	return exists, err
}

// UpdateNavGraph applies change to the graph in one transaction and commits
// only if check accepts the result, so a rejected edit leaves nothing
// behind. change receives the current graph and returns the full new one;
// nodes and edges with ID 0 are given fresh ids (edges may reference new
// nodes by negative placeholder ids -1, -2, ... in creation order, stored
// as their two's complement).
func (db *DB) UpdateNavGraph(change func(cur NavGraph) (NavGraph, error), check GraphCheck) (NavGraph, error) {
	var out NavGraph
	err := db.Update(func(tx *bolt.Tx) error {
		fb, nb, eb, err := navBuckets(tx)
		if err != nil {
			return err
		}
		var cur NavGraph
		if cur.Nodes, err = navList[NavNode](tx, bNavNodes, nil); err != nil {
			return err
		}
		if cur.Edges, err = navList[NavEdge](tx, bNavEdges, nil); err != nil {
			return err
		}
		// change may reuse cur's arrays, so the stored state is kept apart.
		before := make(map[uint64]NavNode, len(cur.Nodes))
		for _, n := range cur.Nodes {
			before[n.ID] = n
		}
		next, err := change(cur)
		if err != nil {
			return err
		}
		placeholder := map[uint64]uint64{}
		for i := range next.Nodes {
			n := &next.Nodes[i]
			if fb.Get(itob(n.FloorID)) == nil {
				return fmt.Errorf("floor %d: %w", n.FloorID, ErrNotFound)
			}
			if n.ID == 0 {
				if n.ID, err = nb.NextSequence(); err != nil {
					return err
				}
				placeholder[uint64(-int64(len(placeholder)+1))] = n.ID
			}
		}
		for i := range next.Edges {
			e := &next.Edges[i]
			if id, ok := placeholder[e.From]; ok {
				e.From = id
			}
			if id, ok := placeholder[e.To]; ok {
				e.To = id
			}
			if e.ID == 0 {
				if e.ID, err = eb.NextSequence(); err != nil {
					return err
				}
			}
		}
		if err := check(next, GraphTx{tx: tx, before: before}); err != nil {
			return err
		}
		if err := clearBucket(nb); err != nil {
			return err
		}
		if err := clearBucket(eb); err != nil {
			return err
		}
		for _, n := range next.Nodes {
			if err := putJSON(nb, itob(n.ID), n); err != nil {
				return err
			}
		}
		for _, e := range next.Edges {
			if err := putJSON(eb, itob(e.ID), e); err != nil {
				return err
			}
		}
		out = next
		return nil
	})
	return out, err
}

func clearBucket(b *bolt.Bucket) error {
	var keys [][]byte
	if err := b.ForEach(func(k, _ []byte) error { keys = append(keys, append([]byte(nil), k...)); return nil }); err != nil {
		return err
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// FloorExists reports whether floor id exists, for registry validation of
// a beacon's floor assignment in the same transaction.
func (t *AssetTx) FloorExists(id uint64) bool { return hasID(t.tx, bNavFloors, id) }

// RewriterNavNodes: navigation nodes name the beacon placed at them by
// asset_uid (NavNode.BeaconUID). A remint or merge left the old uid there,
// so the project no longer linked the beacon to its node and pathfinding
// from it failed (a carried item); the rename follows into the node.
const RewriterNavNodes = "nav_nodes"

// navIndex is t's map of beacon uid -> ids of the nodes linked to it,
// read from the nodes once per transaction and kept up by
// renameNavNodeBeacon (a remint apply renames thousands of uids; each
// scanning every node held the write lock for seconds: a review).
func navIndex(t *AssetTx) (map[string][]uint64, error) {
	if t.navIdx != nil {
		return t.navIdx, nil
	}
	linked, err := navList(t.tx, bNavNodes, func(n *NavNode) bool { return n.BeaconUID != "" })
	if err != nil {
		return nil, err
	}
	idx := map[string][]uint64{}
	for _, n := range linked {
		idx[n.BeaconUID] = append(idx[n.BeaconUID], n.ID)
	}
	t.navIdx = idx
	return idx, nil
}

// renameNavNodeBeacon moves the links of oldUID to newUID. When newUID is
// linked already (a merge whose survivor has its own node), the source's
// nodes are unlinked instead: linked twice, the survivor was placed at
// the lowest node id, the source's (a review).
func renameNavNodeBeacon(t *AssetTx, oldUID, newUID string) (int, error) {
	idx, err := navIndex(t)
	if err != nil {
		return 0, err
	}
	ids := idx[oldUID]
	if len(ids) == 0 {
		return 0, nil
	}
	to := newUID
	if len(idx[newUID]) > 0 {
		to = ""
	}
	b := t.tx.Bucket(bNavNodes)
	for _, id := range ids {
		var n NavNode
		if err := getJSON(b, itob(id), &n); err != nil {
			return 0, err
		}
		n.BeaconUID = to
		if err := putJSON(b, itob(id), n); err != nil {
			return 0, err
		}
	}
	delete(idx, oldUID)
	if to != "" {
		idx[to] = ids
	}
	return len(ids), nil
}

func countNavNodeBeacon(t *AssetTx, uid string) (int, error) {
	idx, err := navIndex(t)
	return len(idx[uid]), err
}

// noKeyedUIDs: nav nodes hold no uid-keyed record, only a link by uid, so
// the audit and MAC adoption (which list and adopt keys that are MACs)
// have nothing of theirs: a node saved with a MAC as its beacon_uid
// (free text before links were checked) was listed by the audit and had
// remint apply mint a beacon for it (a review).
func noKeyedUIDs(*bolt.Tx, func(string) error) error { return nil }

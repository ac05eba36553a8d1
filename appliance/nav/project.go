package nav

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"

	"beaconhub/appliance/apperr"
	"beaconhub/store"
)

// A project is what the mobile app downloads for one site: the floors of a
// location with their nodes and edges. Its hash covers exactly the
// content, never timestamps, so re-saving an unchanged floor does not make
// every phone download the site again.

// ProjectFloor is a floor without its bookkeeping fields.
type ProjectFloor struct {
	ID    uint64          `json:"id"`
	Name  string          `json:"name"`
	Level int             `json:"level"`
	MapID uint64          `json:"map_id,omitempty"`
	Nodes []store.NavNode `json:"nodes"`
	// FingerprintModel is the floor's k-NN model; absent without a survey.
	FingerprintModel *Model `json:"fingerprint_model,omitempty"`
}

// ProjectBeacon is a beacon the app needs: a point of interest (a
// destination to list) or a static beacon (a fixed transmitter the app
// can position by), with its floor and the node linked to it.
type ProjectBeacon struct {
	AssetUID string `json:"asset_uid"`
	MAC      string `json:"mac,omitempty"`
	Name     string `json:"name"`
	FloorID  uint64 `json:"floor_id,omitempty"`
	NodeID   uint64 `json:"node_id,omitempty"`
	POI      bool   `json:"poi"`
	Static   bool   `json:"static"`
}

// Project is the navigation payload of one location.
type Project struct {
	ID      uint64          `json:"id"`
	Floors  []ProjectFloor  `json:"floors"`
	Edges   []store.NavEdge `json:"edges"`
	Beacons []ProjectBeacon `json:"beacons"`
}

// ProjectIDs lists the locations that have at least one floor.
func (s *Service) ProjectIDs() ([]uint64, error) {
	fs, err := s.db.ListFloors()
	if err != nil {
		return nil, err
	}
	seen := map[uint64]bool{}
	var ids []uint64
	for _, f := range fs {
		if !seen[f.LocationID] {
			seen[f.LocationID] = true
			ids = append(ids, f.LocationID)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// Project builds the payload of location id and its content hash.
func (s *Service) Project(id uint64) (Project, string, error) {
	p, _, sha, err := s.ProjectJSON(id)
	return p, sha, err
}

// ProjectJSON is Project with the JSON the hash was computed over, so a
// handler sends those bytes instead of encoding a large project twice.
// Nodes and edges come from the compiled graph (rebuilt after every
// edit), not from decoding every stored record again.
func (s *Service) ProjectJSON(id uint64) (Project, []byte, string, error) {
	fs, err := s.db.ListFloors()
	if err != nil {
		return Project{}, nil, "", err
	}
	g := s.Graph()
	p := Project{ID: id, Floors: []ProjectFloor{}, Edges: []store.NavEdge{}, Beacons: []ProjectBeacon{}}
	ours := map[uint64]int{}
	for _, f := range fs {
		if f.LocationID == id {
			ours[f.ID] = len(p.Floors)
			p.Floors = append(p.Floors, ProjectFloor{ID: f.ID, Name: f.Name, Level: f.Level, MapID: f.MapID, Nodes: []store.NavNode{}})
		}
	}
	if len(p.Floors) == 0 {
		return p, nil, "", apperr.NotFound("project %d has no floors", id)
	}
	for i := range p.Floors {
		if p.Floors[i].FingerprintModel, err = s.FingerprintModel(p.Floors[i].ID); err != nil {
			return p, nil, "", err
		}
	}
	linked := map[string]uint64{} // beacon asset_uid -> node of this project
	for _, n := range g.nodes {
		if i, ok := ours[n.FloorID]; ok {
			p.Floors[i].Nodes = append(p.Floors[i].Nodes, n)
			// The node pathfinding starts at for this beacon, so both
			// agree when stored data links a beacon to two nodes.
			if b, ok := g.ByBeacon(n.BeaconUID); ok && b.ID == n.ID {
				linked[n.BeaconUID] = n.ID
			}
		}
	}
	if p.Beacons, err = s.projectBeacons(ours, linked); err != nil {
		return p, nil, "", err
	}
	floorOf := func(node uint64) uint64 {
		n, _ := g.Node(node)
		return n.FloorID
	}
	for _, e := range g.edges {
		_, a := ours[floorOf(e.From)]
		_, b := ours[floorOf(e.To)]
		if a || b {
			p.Edges = append(p.Edges, e)
		}
	}
	data, err := json.Marshal(p)
	if err != nil {
		return p, nil, "", err
	}
	sum := sha256.Sum256(data)
	return p, data, hex.EncodeToString(sum[:]), nil
}

// projectBeacons lists the active POI or static beacons assigned to one
// of the project's floors or linked to one of its nodes, by asset_uid.
func (s *Service) projectBeacons(floors map[uint64]int, linked map[string]uint64) ([]ProjectBeacon, error) {
	bs, err := s.db.ListBeacons()
	if err != nil {
		return nil, err
	}
	out := []ProjectBeacon{}
	for _, b := range bs {
		if !b.Active || (!b.POI && !b.Static) {
			continue
		}
		_, onFloor := floors[b.FloorID]
		node, isLinked := linked[b.AssetUID]
		if !onFloor && !isLinked {
			continue
		}
		out = append(out, ProjectBeacon{AssetUID: b.AssetUID, MAC: b.MAC, Name: b.Name, FloorID: b.FloorID, NodeID: node, POI: b.POI, Static: b.Static})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].AssetUID < out[j].AssetUID })
	return out, nil
}

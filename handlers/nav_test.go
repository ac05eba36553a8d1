package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"beaconhub/appliance/nav"
	"beaconhub/store"
	"beaconhub/web"
)

func newNavHarness(t *testing.T, opts ...harnessOption) (*harness, string) {
	t.Helper()
	h := newHarness(t, opts...)
	svc, err := nav.New(h.db, h.clock)
	if err != nil {
		t.Fatal(err)
	}
	h.srv = New(Deps{Live: h.live, DB: h.db, Auth: h.auth, AppLog: h.applog, Logger: h.logger, Static: web.FS(), Nav: svc, Clock: h.clock})
	return h, h.token("admin")
}

// locationsUpTo stores locations until location id upTo exists: a floor's
// location_id must name one.
func (h *harness) locationsUpTo(upTo uint64) {
	h.t.Helper()
	err := h.db.UpdateAssets(h.clock.Now(), func(t *store.AssetTx) error {
		for {
			l := &store.Location{Name: "Site"}
			if err := t.PutLocation(l); err != nil {
				return err
			}
			if l.ID >= upTo {
				return nil
			}
		}
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

func TestNavigationGraphAndPathfind(t *testing.T) {
	h, admin := newNavHarness(t)
	var f store.Floor
	// A floor's name is held to a map's rules (it had no length limit).
	for _, bad := range []string{strings.Repeat("ř", 101), "Ground\r\nfloor", "  "} {
		h.send("POST", "/api/v1/floors", admin, map[string]any{"name": bad}).expect(t, http.StatusBadRequest)
	}
	h.send("POST", "/api/v1/floors", admin, map[string]any{"name": "Ground"}).expect(t, http.StatusCreated).decodePayload(t, &f)
	base := "/api/v1/floor/" + strconv.FormatUint(f.ID, 10)

	graph := map[string]any{
		"nodes": []map[string]any{{"key": "a", "x": 0, "y": 0}, {"key": "b", "x": 3, "y": 4}, {"key": "c", "x": 3, "y": 10}},
		"edges": []map[string]any{{"from": "a", "to": "b"}, {"from": "b", "to": "c"}},
	}
	var g struct {
		Nodes []store.NavNode `json:"nodes"`
		Edges []store.NavEdge `json:"edges"`
	}
	h.send("POST", base+"/graph", admin, graph).expect(t, http.StatusOK).decodePayload(t, &g)
	if len(g.Nodes) != 3 || len(g.Edges) != 2 {
		t.Fatalf("graph %+v", g)
	}

	// Bad input is refused and changes nothing.
	for name, body := range map[string]any{
		"negative": map[string]any{"nodes": graph["nodes"], "edges": []map[string]any{{"from": "a", "to": "b", "weight": -1}}},
		"dangling": map[string]any{"nodes": graph["nodes"], "edges": []map[string]any{{"from": "a", "to": "nowhere"}}},
		"unknown":  map[string]any{"nodes": []map[string]any{{"key": "a", "colour": "red"}}},
	} {
		if r := h.send("POST", base+"/graph", admin, body); r.Code != http.StatusBadRequest {
			t.Errorf("%s: status %d", name, r.Code)
		}
	}
	h.send("POST", "/api/v1/floor/999/graph", admin, map[string]any{}).expect(t, http.StatusNotFound)
	var nodes []store.NavNode
	h.get(base+"/nodes", h.token("user")).expect(t, http.StatusOK).decodePayload(t, &struct {
		Nodes *[]store.NavNode `json:"nodes"`
	}{&nodes})
	if len(nodes) != 3 {
		t.Fatalf("nodes after rejected edits: %+v", nodes)
	}

	var res nav.PathResult
	body := map[string]any{"from": map[string]any{"node_id": g.Nodes[0].ID}, "to": map[string]any{"floor_id": f.ID, "x": 3.2, "y": 9}}
	h.send("POST", "/api/v1/navigation/pathfind", h.token("user"), body).expect(t, http.StatusOK).decodePayload(t, &res)
	if res.Length != 11 || len(res.Nodes) != 3 || len(res.Legs) != 1 || len(res.Legs[0].Points) != 3 {
		t.Fatalf("route %+v", res)
	}

	// Removing the middle node's edge makes c unreachable: a clear 409.
	h.send("DELETE", "/api/v1/edge/"+strconv.FormatUint(g.Edges[1].ID, 10), admin, nil).expect(t, http.StatusOK)
	r := h.send("POST", "/api/v1/navigation/pathfind", admin, body).expect(t, http.StatusConflict)
	var p map[string]any
	r.decodePayload(t, &p)
	if p["reason"] != "unreachable" {
		t.Fatalf("payload %v", p)
	}

	actions := map[string]bool{}
	for _, rec := range h.logRecords() {
		actions[rec.Action] = true
	}
	for _, a := range []string{"floor.create", "floor.graph", "edge.delete"} {
		if !actions[a] {
			t.Errorf("no %s log record in %v", a, actions)
		}
	}
}

func TestNavigationNodeEdgeRoutes(t *testing.T) {
	h, admin := newNavHarness(t)
	var f store.Floor
	h.send("POST", "/api/v1/floors", admin, map[string]any{"name": "G"}).expect(t, http.StatusCreated).decodePayload(t, &f)
	base := "/api/v1/floor/" + strconv.FormatUint(f.ID, 10)
	var a, b store.NavNode
	h.send("POST", base+"/nodes", admin, map[string]any{"x": 0, "y": 0}).expect(t, http.StatusCreated).decodePayload(t, &a)
	h.send("POST", base+"/nodes", admin, map[string]any{"x": 0, "y": 2}).expect(t, http.StatusCreated).decodePayload(t, &b)
	var e store.NavEdge
	h.send("POST", base+"/edges", admin, map[string]any{"from": a.ID, "to": b.ID}).expect(t, http.StatusCreated).decodePayload(t, &e)
	if e.Weight != 2 {
		t.Fatalf("edge %+v", e)
	}
	h.send("POST", "/api/v1/edge/"+strconv.FormatUint(e.ID, 10), admin, map[string]any{"from": a.ID, "to": b.ID, "weight": -3}).expect(t, http.StatusBadRequest)
	// An update replaces the whole edge: a body of only the changed field
	// is refused naming what is missing, not as a dangling edge.
	r := h.send("POST", "/api/v1/edge/"+strconv.FormatUint(e.ID, 10), admin, map[string]any{"accessible": true})
	r.wantBad(t, "from")
	if !strings.Contains(r.Message, "from and to are required") {
		t.Fatalf("partial edge update: %q", r.Message)
	}
	h.send("POST", "/api/v1/edge/"+strconv.FormatUint(e.ID, 10), admin, map[string]any{"from": a.ID}).wantBad(t, "to")
	h.send("POST", base+"/graph", admin, map[string]any{"nodes": []map[string]any{{"key": "p"}}, "edges": []map[string]any{{"from": "p"}}}).wantBad(t, "edges")
	h.send("POST", "/api/v1/node/"+strconv.FormatUint(a.ID, 10), admin, map[string]any{"x": 1, "y": 1, "name": "door"}).expect(t, http.StatusOK)
	h.send("DELETE", "/api/v1/node/"+strconv.FormatUint(a.ID, 10), admin, nil).expect(t, http.StatusOK)
	edges := []store.NavEdge{{}}
	h.get(base+"/edges", admin).expect(t, http.StatusOK).decodePayload(t, &struct {
		Edges *[]store.NavEdge `json:"edges"`
	}{&edges})
	if edges == nil || len(edges) != 0 {
		t.Fatalf("edges left after node delete: %+v", edges)
	}
	h.send("POST", base, admin, map[string]any{"name": "G2", "level": 2}).expect(t, http.StatusOK)
	h.send("DELETE", base, admin, nil).expect(t, http.StatusOK)
	h.get(base, admin).expect(t, http.StatusNotFound)
	h.get("/api/v1/floor/abc", admin).expect(t, http.StatusBadRequest)
}

// TestFloorLocationMustExist: a floor's location_id names an existing
// location (0: none), on create and on update, like a beacon's; otherwise
// the mobile catalog would list a project no location stands for.
func TestFloorLocationMustExist(t *testing.T) {
	h, admin := newNavHarness(t)
	h.locationsUpTo(1)
	h.send("POST", "/api/v1/floors", admin, map[string]any{"name": "X", "location_id": 77}).wantBad(t, "location_id")
	var f store.Floor
	h.send("POST", "/api/v1/floors", admin, map[string]any{"name": "X", "location_id": 1}).expect(t, http.StatusCreated).decodePayload(t, &f)
	r := h.send("POST", "/api/v1/floor/"+itoa(f.ID), admin, map[string]any{"name": "X", "location_id": 77})
	r.wantBad(t, "location_id")
	if r.Message != "location 77 does not exist" {
		t.Errorf("message %q", r.Message)
	}
	h.send("POST", "/api/v1/floor/"+itoa(f.ID), admin, map[string]any{"name": "X"}).expect(t, http.StatusOK)
	var cat []map[string]any
	h.do(req{method: "GET", path: "/api/v1/navigation/mobile/catalog", token: admin, header: map[string]string{MobileKeyHeader: "harness-mobile-key"}}).
		expect(t, http.StatusOK).decodePayload(t, &struct {
		Projects *[]map[string]any `json:"projects"`
	}{&cat})
	if len(cat) != 1 || cat[0]["id"] != float64(0) {
		t.Fatalf("catalog %v", cat)
	}
}

// TestNavigationListsAreObjects: every payload is an object (the spec's
// envelope); seven navigation routes answered a bare array (a black-box
// check; the harness now checks every answer's payload). Each list is []
// when empty, not null.
func TestNavigationListsAreObjects(t *testing.T) {
	h, admin := newNavHarness(t)
	var f store.Floor
	h.send("POST", "/api/v1/floors", admin, map[string]any{"name": "G"}).expect(t, http.StatusCreated).decodePayload(t, &f)
	base := "/api/v1/floor/" + itoa(f.ID)
	mobile := map[string]string{MobileKeyHeader: "harness-mobile-key"}
	for _, c := range []struct{ path, key string }{
		{"/api/v1/floors", "floors"},
		{base + "/nodes", "nodes"},
		{base + "/edges", "edges"},
		{"/api/v1/navigation/tokens", "tokens"},
		{"/api/v1/navigation/floor/" + itoa(f.ID) + "/survey", "samples"},
		{"/api/v1/navigation/mobile/catalog", "projects"},
		{"/api/v1/navigation/mobile/snapshot", "projects"},
	} {
		r := h.do(req{method: "GET", path: c.path, token: admin, header: mobile}).expect(t, http.StatusOK)
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(r.Payload, &obj); err != nil {
			t.Errorf("GET %s: payload is not an object: %s", c.path, r.Payload)
			continue
		}
		if list := strings.TrimSpace(string(obj[c.key])); !strings.HasPrefix(list, "[") {
			t.Errorf("GET %s: %q is %s, want a list", c.path, c.key, r.Payload)
		}
	}
}

// A floor, node, edge or graph is sent back as read, as
// docs/navigation.md tells: the record's id, floor_id and times came back
// 400 as unknown fields, and a graph's numeric edge ends as the wrong
// type (a black-box check). An id other than the record's is refused.
func TestNavigationRecordsSaveBackAsRead(t *testing.T) {
	h, admin := newNavHarness(t)
	var f store.Floor
	h.send("POST", "/api/v1/floors", admin, map[string]any{"name": "G"}).expect(t, http.StatusCreated).decodePayload(t, &f)
	base := "/api/v1/floor/" + itoa(f.ID)
	var a, b store.NavNode
	h.send("POST", base+"/nodes", admin, map[string]any{"x": 0, "y": 0, "name": "door"}).expect(t, http.StatusCreated).decodePayload(t, &a)
	h.send("POST", base+"/nodes", admin, map[string]any{"x": 0, "y": 2}).expect(t, http.StatusCreated).decodePayload(t, &b)
	var e store.NavEdge
	h.send("POST", base+"/edges", admin, map[string]any{"from": a.ID, "to": b.ID}).expect(t, http.StatusCreated).decodePayload(t, &e)

	asRead := func(path string) json.RawMessage {
		t.Helper()
		return h.get(path, admin).expect(t, http.StatusOK).Payload
	}
	floor := asRead(base)
	h.send("POST", base, admin, floor).expect(t, http.StatusOK)
	var nodes struct{ Nodes []json.RawMessage }
	if err := json.Unmarshal(asRead(base+"/nodes"), &nodes); err != nil || len(nodes.Nodes) != 2 {
		t.Fatalf("nodes %v", err)
	}
	h.send("POST", "/api/v1/node/"+itoa(a.ID), admin, nodes.Nodes[0]).expect(t, http.StatusOK)
	var edges struct{ Edges []json.RawMessage }
	if err := json.Unmarshal(asRead(base+"/edges"), &edges); err != nil || len(edges.Edges) != 1 {
		t.Fatalf("edges %v", err)
	}
	h.send("POST", "/api/v1/edge/"+itoa(e.ID), admin, edges.Edges[0]).expect(t, http.StatusOK)
	graph := asRead(base + "/graph")
	h.send("POST", base+"/graph", admin, graph).expect(t, http.StatusOK)
	// The same graph; its edges are new records (a replace renumbers them).
	type graphT struct {
		Nodes []store.NavNode
		Edges []store.NavEdge
	}
	var was, now graphT
	_ = json.Unmarshal(graph, &was)
	_ = json.Unmarshal(asRead(base+"/graph"), &now)
	for i := range was.Edges {
		was.Edges[i].ID = 0
	}
	for i := range now.Edges {
		now.Edges[i].ID = 0
	}
	if fmt.Sprint(was) != fmt.Sprint(now) || len(now.Edges) != 1 {
		t.Errorf("graph sent back as read changed:\n%+v\n%+v", was, now)
	}
	if again := asRead(base); string(again) != string(floor) {
		// updated_at may move with a save; nothing else.
		var was, now store.Floor
		_ = json.Unmarshal(floor, &was)
		_ = json.Unmarshal(again, &now)
		now.UpdatedAt = was.UpdatedAt
		if was != now {
			t.Errorf("floor sent back as read changed: %+v -> %+v", was, now)
		}
	}
	// A second floor's stairs to this one are listed by both floors'
	// graphs; sent back as read, each floor keeps the one edge (a review
	// found a copy added per round trip).
	var up store.Floor
	h.send("POST", "/api/v1/floors", admin, map[string]any{"name": "1", "level": 1}).expect(t, http.StatusCreated).decodePayload(t, &up)
	var c store.NavNode
	h.send("POST", "/api/v1/floor/"+itoa(up.ID)+"/nodes", admin, map[string]any{"x": 0, "y": 0}).expect(t, http.StatusCreated).decodePayload(t, &c)
	h.send("POST", "/api/v1/floor/"+itoa(up.ID)+"/edges", admin, map[string]any{"from": c.ID, "to": a.ID, "kind": "stairs", "weight": 8}).expect(t, http.StatusCreated)
	for i := 0; i < 2; i++ {
		for _, g := range []string{base + "/graph", "/api/v1/floor/" + itoa(up.ID) + "/graph"} {
			h.send("POST", g, admin, asRead(g)).expect(t, http.StatusOK)
		}
	}
	if all, err := h.db.AllNavGraph(); err != nil || len(all.Edges) != 2 {
		t.Fatalf("after round trips: %d edges (want the corridor and the stairs), %v", len(all.Edges), err)
	}
	// Another record's id is refused, and a create takes none.
	h.send("POST", "/api/v1/node/"+itoa(a.ID), admin, nodes.Nodes[1]).wantBad(t, "id")
	h.send("POST", base+"/nodes", admin, nodes.Nodes[0]).wantBad(t, "id")
	h.send("POST", "/api/v1/floors", admin, floor).wantBad(t, "id")
}

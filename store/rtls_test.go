package store

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func openRTLSDB(t *testing.T) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "r.db"), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func mustMap(t *testing.T, db *DB, name string) Map {
	t.Helper()
	img, err := db.PutMapImage("image/png", []byte("png"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := db.PutMap(Map{Name: name, ImageID: img, Width: 100, Height: 50}, time.Unix(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustZone(t *testing.T, db *DB, mapID uint64, name string) Zone {
	t.Helper()
	z, err := db.PutZone(Zone{MapID: mapID, Name: name, X1: 0, Y1: 0, X2: 10, Y2: 10})
	if err != nil {
		t.Fatal(err)
	}
	return z
}

func adj(t *testing.T, db *DB, id uint64) []uint64 {
	t.Helper()
	z, err := db.GetZone(id)
	if err != nil {
		t.Fatal(err)
	}
	return z.Adjacent
}

func TestZoneAdjacencyStaysSymmetric(t *testing.T) {
	db := openRTLSDB(t)
	m1, m2 := mustMap(t, db, "G"), mustMap(t, db, "1")
	a, b, c := mustZone(t, db, m1.ID, "a"), mustZone(t, db, m1.ID, "b"), mustZone(t, db, m1.ID, "c")
	up := mustZone(t, db, m2.ID, "up")

	if _, err := db.SetAdjacency(a.ID, []uint64{b.ID, c.ID, b.ID}, false); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(adj(t, db, a.ID), []uint64{b.ID, c.ID}) || !slices.Equal(adj(t, db, b.ID), []uint64{a.ID}) || !slices.Equal(adj(t, db, c.ID), []uint64{a.ID}) {
		t.Fatalf("adjacency a=%v b=%v c=%v", adj(t, db, a.ID), adj(t, db, b.ID), adj(t, db, c.ID))
	}
	// Dropping c from a drops a from c.
	if _, err := db.SetAdjacency(a.ID, []uint64{b.ID}, false); err != nil {
		t.Fatal(err)
	}
	if len(adj(t, db, c.ID)) != 0 {
		t.Fatalf("c still adjacent: %v", adj(t, db, c.ID))
	}
	var inv *InvalidError
	for name, ids := range map[string][]uint64{"self": {a.ID}, "missing": {999}, "cross-map": {up.ID}} {
		if _, err := db.SetAdjacency(a.ID, ids, false); !errors.As(err, &inv) {
			t.Errorf("%s: err = %v, want InvalidError", name, err)
		}
	}
	if _, err := db.SetAdjacency(a.ID, []uint64{b.ID, up.ID}, true); err != nil {
		t.Fatal(err)
	}
	// Updating a zone's rectangle keeps its map and adjacency.
	if _, err := db.PutZone(Zone{ID: a.ID, MapID: m2.ID, Name: "a2", X1: 1, Y1: 1, X2: 5, Y2: 5}); err != nil {
		t.Fatal(err)
	}
	if z, _ := db.GetZone(a.ID); z.MapID != m1.ID || len(z.Adjacent) != 2 || z.Name != "a2" {
		t.Fatalf("after update %+v", z)
	}
	if _, err := db.PutZone(Zone{MapID: m1.ID, Name: "big", X2: 101, Y2: 10}); !errors.As(err, &inv) {
		t.Fatalf("zone outside its map: %v", err)
	}
	// Deleting map 2 cascades to its zone and the cross-map edge.
	if _, _, _, err := db.AddZoneSamples([]ZoneSample{{Zone: up.ID, RSSI: map[string]float64{"AABBCCDDEEFF": -60}}}, time.Unix(2, 0)); err != nil {
		t.Fatal(err)
	}
	g := &Gateway{AssetUID: "GW-T-7", MAC: "AC233FA0B1C7"}
	if err := db.CreateGateway(g); err != nil {
		t.Fatal(err)
	}
	if err := db.PlaceGateway(GatewayPlacement{GatewayID: g.ID, MapID: m2.ID, X: 1, Y: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.DeleteMap(m2.ID, time.Unix(9, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetZone(up.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("zone of deleted map: %v", err)
	}
	if !slices.Equal(adj(t, db, a.ID), []uint64{b.ID}) {
		t.Fatalf("dangling cross-map edge: %v", adj(t, db, a.ID))
	}
	if ss, _ := db.ListZoneSamples(0); len(ss) != 0 {
		t.Fatalf("samples of a deleted zone kept: %v", ss)
	}
	if ps, _ := db.GatewayPlacements(0); len(ps) != 0 {
		t.Fatalf("placements on a deleted map kept: %v", ps)
	}
	if _, err := db.GetMapImage(m2.ImageID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("image of deleted map kept: %v", err)
	}
}

func TestRTLSAlgorithmIsKept(t *testing.T) {
	db := openRTLSDB(t)
	if a, err := db.RTLSAlgorithm(); err != nil || a != "" {
		t.Fatalf("fresh algorithm %q %v", a, err)
	}
	if err := db.SetRTLSAlgorithm("hmm"); err != nil {
		t.Fatal(err)
	}
	if a, _ := db.RTLSAlgorithm(); a != "hmm" {
		t.Fatalf("algorithm %q", a)
	}
}

// TestPutMapKeepsPlacementsInside: a size that would leave a placed
// gateway outside the map is refused (naming its asset_uid) and nothing
// changes; a size that holds it is taken. Deleting the gateway takes its
// placement along, and a placement a deleted gateway left behind (as
// before that) does not block a resize.
func TestPutMapKeepsPlacementsInside(t *testing.T) {
	db := openRTLSDB(t)
	m := mustMap(t, db, "Ground") // 100 x 50
	g := &Gateway{AssetUID: "GW-T-1", MAC: "AC233FA0B1C2"}
	if err := db.CreateGateway(g); err != nil {
		t.Fatal(err)
	}
	if err := db.PlaceGateway(GatewayPlacement{GatewayID: g.ID, MapID: m.ID, X: 90, Y: 10}); err != nil {
		t.Fatal(err)
	}
	small := m
	small.Width = 80
	var inv *InvalidError
	if _, err := db.PutMap(small, time.Unix(2, 0)); !errors.As(err, &inv) || !strings.Contains(inv.Msg, "gateway GW-T-1") {
		t.Fatalf("shrinking past a placed gateway: %v", err)
	}
	if got, _ := db.GetMap(m.ID); got.Width != 100 {
		t.Fatalf("refused size stored: %+v", got)
	}
	small.Width = 95
	if _, err := db.PutMap(small, time.Unix(3, 0)); err != nil {
		t.Fatal(err)
	}

	if err := db.UpdateAssets(time.Unix(4, 0), func(t *AssetTx) error { return t.DeleteGateway(g.ID) }); err != nil {
		t.Fatal(err)
	}
	if ps, err := db.GatewayPlacements(0); err != nil || len(ps) != 0 {
		t.Fatalf("placements after the gateway's delete: %+v %v", ps, err)
	}
	// A placement of a gateway that is gone is refused in the write's
	// own transaction.
	if err := db.PlaceGateway(GatewayPlacement{GatewayID: g.ID, MapID: m.ID, X: 90, Y: 10}); !errors.As(err, &inv) || inv.Field != "gateway" {
		t.Fatalf("placing a deleted gateway: %v", err)
	}
	// An orphan as an older version left it: no gateway 7 exists.
	putOrphanPlacement(t, db, GatewayPlacement{GatewayID: 7, MapID: m.ID, X: 90, Y: 10})
	small.Width = 50
	if _, err := db.PutMap(small, time.Unix(5, 0)); err != nil {
		t.Fatalf("an orphaned placement blocks a resize: %v", err)
	}
}

// TestPlaceGatewayInsideTheMap: the bounds are checked in the write's
// own transaction, against the map as stored then, so a resize between
// a handler's check and the write cannot leave a gateway off the map.
func TestPlaceGatewayInsideTheMap(t *testing.T) {
	db := openRTLSDB(t)
	m := mustMap(t, db, "Ground") // 100 x 50
	g := &Gateway{AssetUID: "GW-T-1", MAC: "AC233FA0B1C2"}
	if err := db.CreateGateway(g); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		x, y  float64
		field string
	}{{101, 10, "x"}, {10, 51, "y"}, {150, 60, "x"}} {
		var inv *InvalidError
		err := db.PlaceGateway(GatewayPlacement{GatewayID: g.ID, MapID: m.ID, X: c.x, Y: c.y})
		if !errors.As(err, &inv) || inv.Field != c.field {
			t.Fatalf("placed at %g,%g on 100x50: %v", c.x, c.y, err)
		}
	}
	if err := db.PlaceGateway(GatewayPlacement{GatewayID: g.ID, MapID: m.ID, X: 100, Y: 50}); err != nil {
		t.Fatalf("the map's far corner: %v", err)
	}
}

// TestUnattachedImagesAreBounded: uploads no map uses are kept up to
// MaxUnattachedImages, the oldest going first; an image a map uses is
// never pruned however old.
func TestUnattachedImagesAreBounded(t *testing.T) {
	db := openRTLSDB(t)
	m := mustMap(t, db, "Ground")
	var ids []uint64
	for range MaxUnattachedImages + 3 {
		id, err := db.PutMapImage("image/png", []byte("png"))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for i, id := range ids {
		_, err := db.GetMapImage(id)
		if gone := i < 3; gone != errors.Is(err, ErrNotFound) {
			t.Fatalf("image %d of %d: err %v, want gone=%v", i, len(ids), err, gone)
		}
	}
	if _, err := db.GetMapImage(m.ImageID); err != nil {
		t.Fatalf("the map's own image was pruned: %v", err)
	}
}

func putOrphanPlacement(t *testing.T, db *DB, p GatewayPlacement) {
	t.Helper()
	err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bMapGateways)
		if err != nil {
			return err
		}
		return putJSON(b, itob(p.GatewayID), p)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRepairMapLinks: the migration step clears a floor's map_id that
// names no map and removes placements of deleted gateways (or on deleted
// maps), as older versions left them; links that hold are kept.
func TestRepairMapLinks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := Open(path, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := mustMap(t, db, "Ground")
	g1, g2 := &Gateway{AssetUID: "GW-T-1", MAC: "AC233FA0B1C2"}, &Gateway{AssetUID: "GW-T-2", MAC: "AC233FA0B1C3"}
	for _, g := range []*Gateway{g1, g2} {
		if err := db.CreateGateway(g); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.PlaceGateway(GatewayPlacement{GatewayID: g1.ID, MapID: m.ID, X: 1, Y: 1}); err != nil {
		t.Fatal(err)
	}
	putOrphanPlacement(t, db, GatewayPlacement{GatewayID: 77, MapID: m.ID, X: 2, Y: 2})  // gateway gone
	putOrphanPlacement(t, db, GatewayPlacement{GatewayID: g2.ID, MapID: 99, X: 2, Y: 2}) // map gone
	linked, err := db.PutFloor(Floor{Name: "G", MapID: m.ID})
	if err != nil {
		t.Fatal(err)
	}
	stamp := time.Unix(1000, 0).UTC()
	dangling := Floor{ID: 50, Name: "Old", MapID: 42, UpdatedAt: stamp}
	if err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bNavFloors)
		if err != nil {
			return err
		}
		return putJSON(b, itob(dangling.ID), dangling)
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	writeSchemaVersion(t, path, stepBefore(t, "floors naming a deleted map"))

	db, err = Open(path, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if f, err := db.GetFloor(dangling.ID); err != nil || f.MapID != 0 || f.Name != "Old" || !f.UpdatedAt.Equal(stamp) {
		t.Fatalf("dangling floor after the repair: %+v %v", f, err)
	}
	if f, err := db.GetFloor(linked.ID); err != nil || f.MapID != m.ID {
		t.Fatalf("a floor whose map exists lost it: %+v %v", f, err)
	}
	ps, err := db.GatewayPlacements(0)
	if err != nil || len(ps) != 1 || ps[0].GatewayID != g1.ID {
		t.Fatalf("placements after the repair: %+v %v, want only gateway %d's", ps, err, g1.ID)
	}
}

// TestZonesAreBounded: a site takes MaxZones zones, all maps together,
// and refuses one more until one goes; an edit of an existing zone is
// not a new one. Nothing refused zone 50,000, and each edit rebuilds the
// tracking engine's model, which grows with the square of the zones (a
// review).
func TestZonesAreBounded(t *testing.T) {
	db := openRTLSDB(t)
	m1, m2 := mustMap(t, db, "G"), mustMap(t, db, "1")
	if err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bZones)
		if err != nil {
			return err
		}
		for i := 1; i < MaxZones; i++ {
			if err := putJSON(b, itob(uint64(i)), Zone{ID: uint64(i), MapID: m1.ID, X2: 10, Y2: 10, Adjacent: []uint64{}}); err != nil {
				return err
			}
		}
		return b.SetSequence(MaxZones - 1)
	}); err != nil {
		t.Fatal(err)
	}
	last := mustZone(t, db, m2.ID, "last") // the MaxZones-th, on another map
	var inv *InvalidError
	if _, err := db.PutZone(Zone{MapID: m1.ID, Name: "one more", X2: 10, Y2: 10}); !errors.As(err, &inv) || !strings.Contains(inv.Msg, "at most") {
		t.Fatalf("zone %d: %v, want refused", MaxZones+1, err)
	}
	last.Name = "renamed"
	if _, err := db.PutZone(last); err != nil {
		t.Fatalf("an edit at the bound: %v", err)
	}
	if err := db.DeleteZone(1); err != nil {
		t.Fatal(err)
	}
	mustZone(t, db, m1.ID, "room again")
}

// TestZoneSamplesAreBounded: a site keeps at most MaxZoneSamples survey
// samples; the ones past it are counted, not stored. Nothing bounded
// them (a review: 53,000 samples made each model build 1.3 s).
func TestZoneSamplesAreBounded(t *testing.T) {
	db := openRTLSDB(t)
	m := mustMap(t, db, "G")
	z := mustZone(t, db, m.ID, "hall")
	fill := make([]ZoneSample, MaxZoneSamples-2)
	for i := range fill {
		fill[i] = ZoneSample{Zone: z.ID, RSSI: map[string]float64{"AABBCCDDEEFF": -60}}
	}
	if stored, _, full, err := db.AddZoneSamples(fill, time.Unix(1, 0)); err != nil || len(stored) != len(fill) || full != 0 {
		t.Fatalf("filling: %d stored, %d full, %v", len(stored), full, err)
	}
	stored, dropped, full, err := db.AddZoneSamples(fill[:5], time.Unix(2, 0))
	if err != nil || len(stored) != 2 || dropped != 0 || full != 3 {
		t.Fatalf("past the bound: %d stored, %d dropped, %d full, %v; want 2, 0, 3", len(stored), dropped, full, err)
	}
	all, _ := db.ListZoneSamples(0)
	if len(all) != MaxZoneSamples {
		t.Fatalf("%d samples kept, want %d", len(all), MaxZoneSamples)
	}
}

package store

import (
	"errors"
	"fmt"
	"slices"

	"beaconhub/appliance/apperr"

	bolt "go.etcd.io/bbolt"
)

// Zones (issue 5): rectangles on a map, with an undirected adjacency graph
// the tracking engine's filter moves along. Adjacency is stored on both
// ends and every write keeps it symmetric.
var bZones = []byte("zones") // id -> Zone

// Zone is an axis-aligned rectangle in its map's pixels (X1 < X2, Y1 < Y2).
type Zone struct {
	ID       uint64   `json:"id"`
	MapID    uint64   `json:"map_id"`
	Name     string   `json:"name"`
	X1       float64  `json:"x1"`
	Y1       float64  `json:"y1"`
	X2       float64  `json:"x2"`
	Y2       float64  `json:"y2"`
	Adjacent []uint64 `json:"adjacent"`
}

// InvalidError is a request the store refuses for what it says, not for a
// fault; its message is meant for the client, and Field names the
// request field at fault when there is one.
type InvalidError struct{ Msg, Field string }

func (e *InvalidError) Error() string { return e.Msg }

// ClientErr is err as the API reports it: an InvalidError as a 400
// naming its field (when it has one), ErrNotFound as a 404 saying what
// was not found, anything else unchanged.
func ClientErr(err error, what string) error {
	var inv *InvalidError
	switch {
	case errors.As(err, &inv) && inv.Field != "":
		return apperr.InvalidField(inv.Field, "%s", inv.Msg)
	case errors.As(err, &inv):
		return apperr.Invalid("%s", inv.Msg)
	case errors.Is(err, ErrNotFound):
		return apperr.NotFound("%s not found", what)
	}
	return err
}

func invalid(format string, args ...any) error {
	return &InvalidError{Msg: fmt.Sprintf(format, args...)}
}

func invalidField(field, format string, args ...any) error {
	return &InvalidError{Msg: fmt.Sprintf(format, args...), Field: field}
}

// ListZones returns every zone (mapID 0) or those of one map, in id order.
func (db *DB) ListZones(mapID uint64) ([]Zone, error) {
	var out []Zone
	err := db.View(func(tx *bolt.Tx) (err error) {
		out, err = navList(tx, bZones, func(z *Zone) bool { return mapID == 0 || z.MapID == mapID })
		return err
	})
	return out, err
}

// GetZone returns one zone or ErrNotFound.
func (db *DB) GetZone(id uint64) (Zone, error) {
	var z Zone
	err := db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bZones)
		if b == nil {
			return ErrNotFound
		}
		return getJSON(b, itob(id), &z)
	})
	return z, err
}

// MaxZones bounds a site's zones, all maps together: every edit rebuilds
// the tracking engine's model, whose next-hop table grows with the
// square of the zones (64 MB at this bound) and whose grid gives each
// zone a cell budget up to this many (appliance/rtls).
const MaxZones = 4096

// PutZone creates (ID 0) or updates a zone's name and rectangle; its map
// cannot change and its adjacency is kept (SetAdjacency edits that). The
// map must exist (ErrNotFound) and the rectangle must lie inside it.
func (db *DB) PutZone(z Zone) (Zone, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bZones)
		if err != nil {
			return err
		}
		if z.ID != 0 {
			var old Zone
			if err := getJSON(b, itob(z.ID), &old); err != nil {
				return err
			}
			z.MapID, z.Adjacent = old.MapID, old.Adjacent
		}
		var m Map
		mb := tx.Bucket(bMaps)
		if mb == nil {
			return ErrNotFound
		}
		if err := getJSON(mb, itob(z.MapID), &m); err != nil {
			return err
		}
		if !m.holds(z.X2, z.Y2) {
			field := "y2"
			if !m.holds(z.X2, 0) {
				field = "x2"
			}
			return invalidField(field, "the zone must lie inside its map (%gx%g pixels)", m.Width, m.Height)
		}
		if z.ID == 0 {
			if b.Stats().KeyN >= MaxZones {
				return invalidField("", "a site may have at most %d zones; delete zones no longer used first", MaxZones)
			}
			if z.ID, err = b.NextSequence(); err != nil {
				return err
			}
		}
		if z.Adjacent == nil {
			z.Adjacent = []uint64{}
		}
		return putJSON(b, itob(z.ID), z)
	})
	return z, err
}

// DeleteZone removes a zone, its edges from its neighbours, and the survey
// samples labelled with it (they would train for a zone that is gone).
func (db *DB) DeleteZone(id uint64) error {
	return db.Update(func(tx *bolt.Tx) error { return deleteZoneTx(tx, id) })
}

func deleteZoneTx(tx *bolt.Tx, id uint64) error {
	b := tx.Bucket(bZones)
	var z Zone
	if b == nil {
		return ErrNotFound
	}
	if err := getJSON(b, itob(id), &z); err != nil {
		return err
	}
	for _, n := range z.Adjacent {
		if err := unlink(b, n, id); err != nil {
			return err
		}
	}
	if _, err := deleteSamples(tx, id, ""); err != nil {
		return err
	}
	return b.Delete(itob(id))
}

// unlink removes id from zone n's adjacency (a missing n is fine).
func unlink(b *bolt.Bucket, n, id uint64) error {
	var nz Zone
	if err := getJSON(b, itob(n), &nz); err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		return err
	}
	nz.Adjacent = slices.DeleteFunc(nz.Adjacent, func(x uint64) bool { return x == id })
	return putJSON(b, itob(n), nz)
}

// SetAdjacency replaces zone id's neighbours with adjacent and mirrors the
// change on every zone gained or lost, so the graph stays symmetric. A
// neighbour on another map (stairs, a lift) is refused unless
// allowCrossMap says it is meant.
func (db *DB) SetAdjacency(id uint64, adjacent []uint64, allowCrossMap bool) (Zone, error) {
	var z Zone
	err := db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bZones)
		if b == nil {
			return ErrNotFound
		}
		if err := getJSON(b, itob(id), &z); err != nil {
			return err
		}
		want := slices.Clone(adjacent)
		slices.Sort(want)
		want = slices.Compact(want)
		for _, n := range want {
			if n == id {
				return invalidField("adjacent", "a zone cannot be adjacent to itself")
			}
			var nz Zone
			if err := getJSON(b, itob(n), &nz); err != nil {
				if errors.Is(err, ErrNotFound) {
					return invalidField("adjacent", "zone %d does not exist", n)
				}
				return err
			}
			if nz.MapID != z.MapID && !allowCrossMap {
				return invalidField("adjacent", "zone %d is on another map; set allow_cross_map to link maps", n)
			}
		}
		for _, n := range z.Adjacent {
			if !slices.Contains(want, n) {
				if err := unlink(b, n, id); err != nil {
					return err
				}
			}
		}
		for _, n := range want {
			var nz Zone
			if err := getJSON(b, itob(n), &nz); err != nil {
				return err
			}
			if !slices.Contains(nz.Adjacent, id) {
				nz.Adjacent = append(nz.Adjacent, id)
				slices.Sort(nz.Adjacent)
				if err := putJSON(b, itob(n), nz); err != nil {
					return err
				}
			}
		}
		z.Adjacent = want
		return putJSON(b, itob(id), z)
	})
	return z, err
}

package store

import (
	"errors"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Maps (issue 5): floor plans the tracking engine places zones and
// gateways on. An uploaded image is stored first under its own id and a map
// then refers to it, so a client can upload, show a preview and only then
// create the map. Buckets are created on first write and read as empty
// before, so no migration step is needed.
var (
	bMaps        = []byte("maps")         // id -> Map
	bMapImages   = []byte("map_images")   // id -> content type, 0, bytes
	bMapGateways = []byte("map_gateways") // gateway record id -> GatewayPlacement
)

// Map is one floor plan. Width and Height are the image's pixel size; zone
// and gateway coordinates are in those pixels.
type Map struct {
	ID             uint64    `json:"id"`
	Name           string    `json:"name"`
	LocationID     uint64    `json:"location_id,omitempty"`
	PixelsPerMeter float64   `json:"pixels_per_meter"`
	ImageID        uint64    `json:"image_id"`
	ContentType    string    `json:"content_type"`
	Width          float64   `json:"width"`
	Height         float64   `json:"height"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// GatewayPlacement puts a gateway (by its record id, which survives a
// device replace and a remint) at a pixel position on a map.
type GatewayPlacement struct {
	GatewayID uint64  `json:"gateway_id"`
	MapID     uint64  `json:"map_id"`
	X         float64 `json:"x"`
	Y         float64 `json:"y"`
}

// MapImage is an uploaded image and what was learnt from its bytes.
type MapImage struct {
	ID          uint64
	ContentType string
	Data        []byte
}

// PutMapImage stores an uploaded image and returns its id.
func (db *DB) PutMapImage(contentType string, data []byte) (uint64, error) {
	var id uint64
	err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bMapImages)
		if err != nil {
			return err
		}
		if id, err = b.NextSequence(); err != nil {
			return err
		}
		v := make([]byte, 0, len(contentType)+1+len(data))
		v = append(append(append(v, contentType...), 0), data...)
		if err := b.Put(itob(id), v); err != nil {
			return err
		}
		return pruneUnattachedImages(tx, b)
	})
	return id, err
}

// MaxUnattachedImages is how many uploaded images no map uses are kept: an
// upload is step one of creating or changing a map, and an admin who never
// takes step two should not leave megabytes behind for ever. When a new
// upload makes more, the oldest go (ids are sequential).
const MaxUnattachedImages = 10

func pruneUnattachedImages(tx *bolt.Tx, b *bolt.Bucket) error {
	used, err := imagesInUse(tx)
	if err != nil {
		return err
	}
	var loose []uint64
	c := b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if id := btoi(k); !used[id] {
			loose = append(loose, id)
		}
	}
	for _, id := range loose[:max(0, len(loose)-MaxUnattachedImages)] {
		if err := b.Delete(itob(id)); err != nil {
			return err
		}
	}
	return nil
}

// GetMapImage returns an uploaded image or ErrNotFound.
func (db *DB) GetMapImage(id uint64) (MapImage, error) {
	img := MapImage{ID: id}
	err := db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bMapImages)
		if b == nil {
			return ErrNotFound
		}
		v := b.Get(itob(id))
		for i, c := range v {
			if c == 0 {
				img.ContentType = string(v[:i])
				img.Data = clone(v[i+1:])
				return nil
			}
		}
		return ErrNotFound
	})
	return img, err
}

// ListMaps returns every map in id order.
func (db *DB) ListMaps() ([]Map, error) {
	var out []Map
	err := db.View(func(tx *bolt.Tx) (err error) {
		out, err = navList[Map](tx, bMaps, nil)
		return err
	})
	return out, err
}

// GetMap returns one map or ErrNotFound.
func (db *DB) GetMap(id uint64) (Map, error) {
	var m Map
	err := db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bMaps)
		if b == nil {
			return ErrNotFound
		}
		return getJSON(b, itob(id), &m)
	})
	return m, err
}

// PutMap creates (ID 0) or replaces a map and returns it as stored. The
// image it names must exist (ErrNotFound otherwise). A new size must still
// hold the map's zones and gateway placements (InvalidError naming the
// first that would fall outside: they are in map pixels, so moving them is
// the admin's call, not ours). An image the map no longer uses is removed
// unless another map uses it.
func (db *DB) PutMap(m Map, now time.Time) (Map, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bMaps)
		if err != nil {
			return err
		}
		var oldImage uint64
		ib := tx.Bucket(bMapImages)
		if ib == nil || ib.Get(itob(m.ImageID)) == nil {
			return ErrNotFound
		}
		if m.ID == 0 {
			if m.ID, err = b.NextSequence(); err != nil {
				return err
			}
			m.CreatedAt = now
		} else {
			var old Map
			if err := getJSON(b, itob(m.ID), &old); err != nil {
				return err
			}
			m.CreatedAt = old.CreatedAt
			if err := checkMapFits(tx, m); err != nil {
				return err
			}
			oldImage = old.ImageID
		}
		m.UpdatedAt = now
		if err := putJSON(b, itob(m.ID), m); err != nil {
			return err
		}
		if oldImage != 0 && oldImage != m.ImageID {
			return dropImageIfUnused(tx, oldImage)
		}
		return nil
	})
	return m, err
}

// checkMapFits refuses a size that would leave a zone or a placed gateway
// of m outside it.
func checkMapFits(tx *bolt.Tx, m Map) error {
	zones, err := navList(tx, bZones, func(z *Zone) bool { return z.MapID == m.ID })
	if err != nil {
		return err
	}
	for _, z := range zones {
		if !m.holds(z.X2, z.Y2) {
			return invalid("zone %q (%d) reaches %gx%g, outside the new map size %gx%g: move or delete it first", z.Name, z.ID, z.X2, z.Y2, m.Width, m.Height)
		}
	}
	ps, err := navList(tx, bMapGateways, func(p *GatewayPlacement) bool { return p.MapID == m.ID })
	if err != nil {
		return err
	}
	for _, p := range ps {
		if m.holds(p.X, p.Y) {
			continue
		}
		var g Gateway
		if err := getJSON(tx.Bucket(bGateways), itob(p.GatewayID), &g); errors.Is(err, ErrNotFound) {
			// A placement a deleted gateway left behind (before
			// DeleteGateway took it along) places nothing.
			continue
		} else if err != nil {
			return err
		}
		return invalid("gateway %s is placed at %g,%g, outside the new map size %gx%g: move it first", g.AssetUID, p.X, p.Y, m.Width, m.Height)
	}
	return nil
}

// holds reports whether the point x, y (map pixels, non-negative) lies on
// the map; a map whose size is unknown holds everything.
func (m Map) holds(x, y float64) bool {
	return m.Width <= 0 || m.Height <= 0 || (x <= m.Width && y <= m.Height)
}

// imagesInUse returns the ids of the images maps use (as stored in tx).
func imagesInUse(tx *bolt.Tx) (map[uint64]bool, error) {
	maps, err := navList(tx, bMaps, func(*Map) bool { return true })
	used := make(map[uint64]bool, len(maps))
	for _, m := range maps {
		used[m.ImageID] = true
	}
	return used, err
}

// dropImageIfUnused deletes image id unless a map (as stored in tx) uses it.
func dropImageIfUnused(tx *bolt.Tx, id uint64) error {
	used, err := imagesInUse(tx)
	if err != nil || used[id] {
		return err
	}
	if ib := tx.Bucket(bMapImages); ib != nil {
		return ib.Delete(itob(id))
	}
	return nil
}

// MapDeletion is what a map's delete took along.
type MapDeletion struct {
	Zones  int      // zones deleted with it
	Floors []uint64 // floors that showed it and now show no plan
}

// DeleteMap removes a map and cascades: its zones, every adjacency that
// points at them, the survey samples labelled with them, and the gateway
// placements on it. Floors that showed it are kept, unlinked, with
// UpdatedAt now. The image is removed too unless another map uses it.
func (db *DB) DeleteMap(id uint64, now time.Time) (MapDeletion, error) {
	var out MapDeletion
	err := db.Update(func(tx *bolt.Tx) error {
		out = MapDeletion{}
		b := tx.Bucket(bMaps)
		var m Map
		if b == nil {
			return ErrNotFound
		}
		if err := getJSON(b, itob(id), &m); err != nil {
			return err
		}
		zones, err := navList(tx, bZones, func(z *Zone) bool { return z.MapID == id })
		if err != nil {
			return err
		}
		for _, z := range zones {
			if err := deleteZoneTx(tx, z.ID); err != nil {
				return err
			}
		}
		out.Zones = len(zones)
		if gb := tx.Bucket(bMapGateways); gb != nil {
			ps, err := navList(tx, bMapGateways, func(p *GatewayPlacement) bool { return p.MapID == id })
			if err != nil {
				return err
			}
			for _, p := range ps {
				if err := gb.Delete(itob(p.GatewayID)); err != nil {
					return err
				}
			}
		}
		if out.Floors, err = unlinkFloors(tx, func(f *Floor) bool { return f.MapID == id }, now); err != nil {
			return err
		}
		if err := b.Delete(itob(id)); err != nil {
			return err
		}
		return dropImageIfUnused(tx, m.ImageID)
	})
	return out, err
}

// unlinkFloors sets map_id to 0 on the floors match selects: the floor
// stays, without the plan it showed. A zero now keeps UpdatedAt.
func unlinkFloors(tx *bolt.Tx, match func(*Floor) bool, now time.Time) ([]uint64, error) {
	fb := tx.Bucket(bNavFloors)
	if fb == nil {
		return []uint64{}, nil // a list in the API's answer, never null
	}
	floors, err := navList(tx, bNavFloors, func(f *Floor) bool { return f.MapID != 0 && match(f) })
	if err != nil {
		return nil, err
	}
	ids := make([]uint64, 0, len(floors))
	for _, f := range floors {
		f.MapID = 0
		if !now.IsZero() {
			f.UpdatedAt = now
		}
		if err := putJSON(fb, itob(f.ID), f); err != nil {
			return nil, err
		}
		ids = append(ids, f.ID)
	}
	return ids, nil
}

// repairMapLinks is a migration step. Before floors' map_id was checked
// (and cleared on a map's delete) a floor could name a map that does not
// exist, which would later link it silently to a new map given that id;
// before DeleteGateway took the placement along, a deleted gateway's
// placement stayed behind. Both are removed. UpdatedAt is kept: the
// migration knows no clock, and the floor showed no plan either way.
func repairMapLinks(tx *bolt.Tx) error {
	if _, err := unlinkFloors(tx, func(f *Floor) bool { return !hasID(tx, bMaps, f.MapID) }, time.Time{}); err != nil {
		return err
	}
	pb := tx.Bucket(bMapGateways)
	if pb == nil {
		return nil
	}
	ps, err := navList(tx, bMapGateways, func(p *GatewayPlacement) bool {
		return !hasID(tx, bGateways, p.GatewayID) || !hasID(tx, bMaps, p.MapID)
	})
	if err != nil {
		return err
	}
	for _, p := range ps {
		if err := pb.Delete(itob(p.GatewayID)); err != nil {
			return err
		}
	}
	return nil
}

// PlaceGateway puts a gateway on a map (replacing any earlier placement).
func (db *DB) PlaceGateway(p GatewayPlacement) error {
	return db.Update(func(tx *bolt.Tx) error {
		mb := tx.Bucket(bMaps)
		if mb == nil {
			return ErrNotFound
		}
		// Checked again here, where a concurrent resize of the map
		// cannot slip in between the check and the write.
		var m Map
		if err := getJSON(mb, itob(p.MapID), &m); err != nil {
			return err // ErrNotFound for an unknown map
		}
		if !m.holds(p.X, p.Y) {
			field := "x"
			if p.X <= m.Width {
				field = "y"
			}
			return invalidField(field, "%s must be a pixel position inside the map (%gx%g)", field, m.Width, m.Height)
		}
		// A gateway deleted since the caller looked it up would leave
		// an orphan placement behind; DeleteGateway runs in its own
		// transaction, so only this one can see it is gone.
		if !hasID(tx, bGateways, p.GatewayID) {
			return invalidField("gateway", "gateway %d is not registered", p.GatewayID)
		}
		b, err := tx.CreateBucketIfNotExists(bMapGateways)
		if err != nil {
			return err
		}
		return putJSON(b, itob(p.GatewayID), p)
	})
}

// UnplaceGateway removes a gateway from map mapID (ErrNotFound when it is
// not placed there).
func (db *DB) UnplaceGateway(mapID, gatewayID uint64) error {
	return db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bMapGateways)
		var p GatewayPlacement
		if b == nil {
			return ErrNotFound
		}
		if err := getJSON(b, itob(gatewayID), &p); err != nil {
			return err
		}
		if p.MapID != mapID {
			return ErrNotFound
		}
		return b.Delete(itob(gatewayID))
	})
}

// GatewayPlacements returns every placement (mapID 0) or those on one map.
func (db *DB) GatewayPlacements(mapID uint64) ([]GatewayPlacement, error) {
	var out []GatewayPlacement
	err := db.View(func(tx *bolt.Tx) (err error) {
		out, err = navList(tx, bMapGateways, func(p *GatewayPlacement) bool { return mapID == 0 || p.MapID == mapID })
		return err
	})
	return out, err
}

package store

import "fmt"

// Location is a node of the site tree (site, building, floor, room...).
// Code is what asset_uids are minted from; the registry service validates
// it (1-12 alphanumerics, unique among siblings).
type Location struct {
	ID        uint64 `json:"id"`
	Name      string `json:"name"`
	Code      string `json:"code,omitempty"`
	ParentID  uint64 `json:"parent_id,omitempty"`
	CreatedAt int64  `json:"created_at"`
	UpdatedAt int64  `json:"updated_at"`
}

// MaxLocationDepth bounds the tree; it also bounds every walk to the root,
// so a corrupt parent loop cannot hang a request.
const MaxLocationDepth = 16

// Location returns the location with id (ErrNotFound).
func (t *AssetTx) Location(id uint64) (*Location, error) {
	var l Location
	if err := getJSON(t.tx.Bucket(bLocations), itob(id), &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// PutLocation stores l, assigning an id when it has none.
func (t *AssetTx) PutLocation(l *Location) error {
	b := t.tx.Bucket(bLocations)
	if l.ID == 0 {
		id, err := b.NextSequence()
		if err != nil {
			return err
		}
		l.ID, l.CreatedAt = id, t.Now
	}
	l.UpdatedAt = t.Now
	return putJSON(b, itob(l.ID), l)
}

// EachLocation calls fn for every location in id order.
func (t *AssetTx) EachLocation(fn func(l *Location) error) error {
	b := t.tx.Bucket(bLocations)
	return b.ForEach(func(k, _ []byte) error {
		var l Location
		if err := getJSON(b, k, &l); err != nil {
			return err
		}
		return fn(&l)
	})
}

// LocationPath returns the locations from the root down to id.
func (t *AssetTx) LocationPath(id uint64) ([]Location, error) {
	var rev []Location
	for cur := id; cur != 0; {
		if len(rev) >= MaxLocationDepth {
			return nil, fmt.Errorf("location %d: path deeper than %d (loop?)", id, MaxLocationDepth)
		}
		l, err := t.Location(cur)
		if err != nil {
			return nil, err
		}
		rev = append(rev, *l)
		cur = l.ParentID
	}
	out := make([]Location, len(rev))
	for i := range rev {
		out[len(rev)-1-i] = rev[i]
	}
	return out, nil
}

// ListLocations returns every location ordered by id.
func (db *DB) ListLocations() ([]Location, error) {
	var out []Location
	err := db.ViewAssets(func(t *AssetTx) error {
		return t.EachLocation(func(l *Location) error { out = append(out, *l); return nil })
	})
	return out, err
}

package assets

import (
	"errors"
	"strings"

	"beaconhub/appliance/apperr"
	"beaconhub/store"
)

// LocationInput is the body of POST /api/v1/locations: without id it
// creates, with id it updates the fields present. A code of "" removes it.
type LocationInput struct {
	ID       uint64  `json:"id"`
	Name     *string `json:"name"`
	Code     *string `json:"code"`
	ParentID *uint64 `json:"parent_id"`
}

// LocationView is a location as the API shows it. Path is the code path
// assets homed here mint from ("" when some location on the way has no
// code).
type LocationView struct {
	ID        uint64 `json:"id"`
	Name      string `json:"name"`
	Code      string `json:"code"`
	ParentID  uint64 `json:"parent_id"`
	Path      string `json:"path"`
	Coded     bool   `json:"coded"`
	CreatedAt int64  `json:"created_at"`
	UpdatedAt int64  `json:"updated_at"`
}

const maxNameLen = 100

func locationView(t *store.AssetTx, l *store.Location) LocationView {
	v := LocationView{ID: l.ID, Name: l.Name, Code: l.Code, ParentID: l.ParentID, CreatedAt: l.CreatedAt, UpdatedAt: l.UpdatedAt}
	if p, why := mintable(t, l.ID); why == "" {
		v.Path, v.Coded = p, true
	}
	return v
}

// Locations lists every location.
func (s *Service) Locations() ([]LocationView, error) {
	out := []LocationView{}
	err := s.view(func(t *store.AssetTx) error {
		return t.EachLocation(func(l *store.Location) error {
			out = append(out, locationView(t, l))
			return nil
		})
	})
	return out, err
}

// SaveLocation creates or updates a location; created reports which.
func (s *Service) SaveLocation(in LocationInput) (v LocationView, created bool, err error) {
	err = s.write(func(t *store.AssetTx, _ *effects) error {
		l := &store.Location{}
		if in.ID != 0 {
			cur, err := t.Location(in.ID)
			if errors.Is(err, store.ErrNotFound) {
				return apperr.NotFound("location %d not found", in.ID)
			}
			if err != nil {
				return err
			}
			l = cur
		} else {
			created = true
			if in.Name == nil {
				return apperr.InvalidField("name", "name is required")
			}
		}
		if err := applyLocation(t, l, in); err != nil {
			return err
		}
		if err := t.PutLocation(l); err != nil {
			return err
		}
		v = locationView(t, l)
		return nil
	})
	return v, created, err
}

func applyLocation(t *store.AssetTx, l *store.Location, in LocationInput) error {
	if in.Name != nil {
		n, err := apperr.CleanName("name", *in.Name, maxNameLen)
		if err != nil {
			return err
		}
		l.Name = n
	}
	if in.ParentID != nil {
		if err := checkParent(t, l.ID, *in.ParentID); err != nil {
			return err
		}
		l.ParentID = *in.ParentID
	}
	if in.Code != nil {
		c := strings.ToUpper(*in.Code)
		if c != "" && !validCode(c) {
			return apperr.InvalidField("code", "code must be 1 to %d letters or digits (no spaces or punctuation), got %q", maxCodeLen, *in.Code)
		}
		l.Code = c
	}
	if l.Code == "" {
		return nil
	}
	// Codes are unique among siblings, so a code path names one location.
	return t.EachLocation(func(o *store.Location) error {
		if o.ID != l.ID && o.ParentID == l.ParentID && o.Code == l.Code {
			return apperr.InvalidField("code", "code %q is already used by location %q under the same parent", l.Code, o.Name)
		}
		return nil
	})
}

// checkParent refuses a missing parent, a parent that is the location
// itself or one of its descendants (a cycle), and a tree too deep.
func checkParent(t *store.AssetTx, id, parent uint64) error {
	if parent == 0 {
		return nil
	}
	if parent == id {
		return apperr.InvalidField("parent_id", "a location cannot be its own parent")
	}
	path, err := t.LocationPath(parent)
	if errors.Is(err, store.ErrNotFound) {
		return apperr.InvalidField("parent_id", "parent location %d does not exist", parent)
	}
	if err != nil {
		return err
	}
	for _, p := range path {
		if id != 0 && p.ID == id {
			return apperr.InvalidField("parent_id", "parent %d is inside location %d: the tree would have a cycle", parent, id)
		}
	}
	if len(path)+1+subtreeDepth(t, id) > store.MaxLocationDepth {
		return apperr.InvalidField("parent_id", "the location tree may be at most %d levels deep", store.MaxLocationDepth)
	}
	return nil
}

// subtreeDepth is how many levels hang below id (0 for a leaf or a new one).
func subtreeDepth(t *store.AssetTx, id uint64) int {
	if id == 0 {
		return 0
	}
	children := map[uint64][]uint64{}
	_ = t.EachLocation(func(l *store.Location) error {
		children[l.ParentID] = append(children[l.ParentID], l.ID)
		return nil
	})
	var depth func(n uint64, d int) int
	depth = func(n uint64, d int) int {
		if d > store.MaxLocationDepth {
			return d
		}
		best := d
		for _, c := range children[n] {
			best = max(best, depth(c, d+1))
		}
		return best
	}
	return depth(id, 0)
}

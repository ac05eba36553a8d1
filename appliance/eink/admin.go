package eink

import (
	"encoding/json"
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/assets"
	"beaconhub/store"
)

// DisplayView is a display as the admin list shows it: the record, its
// poll state and its location's name.
type DisplayView struct {
	store.EInkDisplay
	store.EInkPoll
	LocationName string `json:"location_name,omitempty"`
}

// Input is an admin update; nil fields are left alone.
type Input struct {
	Name       *string         `json:"name"`
	LocationID *uint64         `json:"location_id"`
	Width      *int            `json:"width"`
	Height     *int            `json:"height"`
	Rotation   *int            `json:"rotation"`
	Validity   *int            `json:"validity"`
	Layout     json.RawMessage `json:"layout"`
}

func notFound(id uint64) error { return apperr.NotFound("e-ink display %d not found", id) }

func (s *Service) view(t *store.AssetTx, d *store.EInkDisplay) (DisplayView, error) {
	v := DisplayView{EInkDisplay: *d}
	if st := s.polls[d.ID]; st != nil { // the caller holds s.mu
		st.mu.Lock()
		v.EInkPoll = st.p
		st.mu.Unlock()
		if v.LastVoltage != nil {
			x := *v.LastVoltage
			v.LastVoltage = &x
		}
	} else {
		p, err := t.EInkPollState(d.ID)
		if err != nil {
			return v, err
		}
		v.EInkPoll = p
	}
	if d.LocationID != 0 {
		if l, err := t.Location(d.LocationID); err == nil {
			v.LocationName = l.Name
		}
	}
	return v, nil
}

// Displays lists every display in id order.
func (s *Service) Displays() ([]DisplayView, error) {
	out := []DisplayView{}
	s.mu.RLock()
	defer s.mu.RUnlock()
	err := s.db.ViewAssets(func(t *store.AssetTx) error {
		return t.EachEInk(func(d *store.EInkDisplay) error {
			v, err := s.view(t, d)
			out = append(out, v)
			return err
		})
	})
	return out, err
}

func validRange(field string, p *int, lo, hi int) error {
	if p != nil && (*p < lo || *p > hi) {
		return apperr.InvalidField(field, "%s must be %d to %d", field, lo, hi)
	}
	return nil
}

func (in *Input) validate() error {
	if in.Name != nil && (utf8.RuneCountInString(*in.Name) > 100 || strings.TrimSpace(*in.Name) != *in.Name) {
		return apperr.InvalidField("name", "name must be at most 100 characters without surrounding spaces")
	}
	if in.Name != nil && strings.IndexFunc(*in.Name, unicode.IsControl) >= 0 {
		return apperr.InvalidField("name", "name may not contain control characters (newlines, tabs, escapes)")
	}
	return errors.Join(validRange("width", in.Width, 1, 4096), validRange("height", in.Height, 1, 4096),
		validRange("rotation", in.Rotation, 0, 3), validRange("validity", in.Validity, 10, 86400))
}

// Update changes a display. A display with a LEGACY- uid whose new home
// location has a fully coded path is reminted EK-LOCATIONPATH-SEQ; an
// uncoded location keeps the legacy uid (it is reminted once the codes
// exist and the display is saved again).
func (s *Service) Update(id uint64, in Input) (DisplayView, error) {
	if err := in.validate(); err != nil {
		if e, ok := apperr.As(err); ok {
			return DisplayView{}, e
		}
		return DisplayView{}, apperr.Invalid("%s", err.Error())
	}
	var v DisplayView
	err := s.adminWrite(func(t *store.AssetTx) error {
		d, err := t.EInk(id)
		if errors.Is(err, store.ErrNotFound) {
			return notFound(id)
		} else if err != nil {
			return err
		}
		set := func(dst *int, p *int) {
			if p != nil {
				*dst = *p
			}
		}
		if in.Name != nil {
			d.Name = *in.Name
		}
		set(&d.Width, in.Width)
		set(&d.Height, in.Height)
		set(&d.Rotation, in.Rotation)
		set(&d.Validity, in.Validity)
		if in.LocationID != nil {
			if *in.LocationID != 0 {
				if _, err := t.Location(*in.LocationID); err != nil {
					return apperr.InvalidField("location_id", "location %d does not exist", *in.LocationID)
				}
			}
			d.LocationID = *in.LocationID
		}
		if in.Layout != nil {
			raw, _, err := normalizeLayout(t, in.Layout)
			if err != nil {
				return err
			}
			d.Layout = raw
		}
		if err := remint(t, d); err != nil {
			return err
		}
		if err := t.PutEInk(d, d.MAC); err != nil {
			return err
		}
		v, err = s.view(t, d)
		return err
	})
	return v, err
}

// remint gives a legacy display its EK- uid when its home location is
// coded all the way up; the old uid becomes an alias.
func remint(t *store.AssetTx, d *store.EInkDisplay) error {
	if !assets.IsLegacy(d.AssetUID) || d.LocationID == 0 {
		return nil
	}
	ref := store.AssetRef{Kind: store.KindEInk, ID: d.ID}
	uid, err := assets.Mint(t, assets.PrefixEInk, d.LocationID, ref)
	if e, ok := apperr.As(err); ok && e.Kind == apperr.KindInvalid {
		return nil // path not coded yet: stay legacy
	}
	if err != nil {
		return err
	}
	old := d.AssetUID
	if err := t.ReleaseUID(old); err != nil {
		return err
	}
	if err := t.SetAlias(old, uid); err != nil {
		return err
	}
	if _, err := t.RenameUID(old, uid); err != nil {
		return err
	}
	d.AssetUID = uid
	return nil
}

// SetState moves a display along the transition table: any state may go
// back to pending, pending may be approved, pending or approved may be
// blocked. A blocked display must pass through pending to be approved, so
// unblocking is a deliberate second step. Setting the current state again
// is a no-op.
func (s *Service) SetState(id uint64, state string) (DisplayView, error) {
	if state != store.EInkPending && state != store.EInkApproved && state != store.EInkBlocked {
		return DisplayView{}, apperr.InvalidField("state", "state must be pending, approved or blocked")
	}
	var v DisplayView
	err := s.adminWrite(func(t *store.AssetTx) error {
		d, err := t.EInk(id)
		if errors.Is(err, store.ErrNotFound) {
			return notFound(id)
		} else if err != nil {
			return err
		}
		if !Allowed(d.State, state) {
			return apperr.Conflict("an e-ink display cannot go from %s to %s", d.State, state)
		}
		d.State = state
		if err := t.PutEInk(d, d.MAC); err != nil {
			return err
		}
		v, err = s.view(t, d)
		return err
	})
	return v, err
}

// Allowed reports whether the transition table permits from -> to.
func Allowed(from, to string) bool {
	switch {
	case from == to, to == store.EInkPending:
		return true
	case to == store.EInkApproved:
		return from == store.EInkPending
	case to == store.EInkBlocked:
		return from == store.EInkPending || from == store.EInkApproved
	}
	return false
}

package eink

import (
	"encoding/json"
	"errors"
	"sort"
	"strings"

	"beaconhub/appliance/apperr"
	"beaconhub/store"
)

// TemplateInput creates or updates a saved layout template; on update nil
// fields are left alone.
type TemplateInput struct {
	Name     *string         `json:"name"`
	Width    *int            `json:"width"`
	Height   *int            `json:"height"`
	Rotation *int            `json:"rotation"`
	Layout   json.RawMessage `json:"layout"`
}

// ApplyInput loads a template onto a display: SensorMap maps every sensor
// uid the template references to a sensor of the target display.
type ApplyInput struct {
	TemplateID uint64            `json:"template_id"`
	SensorMap  map[string]string `json:"sensor_map"`
}

func templateNotFound(id uint64) error { return apperr.NotFound("layout template %d not found", id) }

// Templates lists the saved templates in id order.
func (s *Service) Templates() ([]store.EInkTemplate, error) {
	out := []store.EInkTemplate{}
	err := s.db.ViewAssets(func(t *store.AssetTx) error {
		return t.EachEInkTemplate(func(tp *store.EInkTemplate) error { out = append(out, *tp); return nil })
	})
	return out, err
}

// SaveTemplate creates (id 0) or updates a template.
func (s *Service) SaveTemplate(id uint64, in TemplateInput) (store.EInkTemplate, error) {
	var out store.EInkTemplate
	// The first fault, naming its field as the display routes do (joined,
	// the error lost it: a black-box check).
	for _, err := range []error{validRange("width", in.Width, 1, 4096), validRange("height", in.Height, 1, 4096),
		validRange("rotation", in.Rotation, 0, 3)} {
		if err != nil {
			return out, err
		}
	}
	err := s.db.UpdateAssets(s.clock.Now(), func(t *store.AssetTx) error {
		tp := &store.EInkTemplate{Width: DefaultWidth, Height: DefaultHeight}
		if id != 0 {
			cur, err := t.EInkTemplate(id)
			if errors.Is(err, store.ErrNotFound) {
				return templateNotFound(id)
			} else if err != nil {
				return err
			}
			tp = cur
		} else if in.Name == nil || in.Layout == nil {
			return apperr.Invalid("a new layout template needs name and layout")
		}
		if in.Name != nil {
			n, err := apperr.CleanName("name", *in.Name, 100)
			if err != nil {
				return err
			}
			tp.Name = n
		}
		for _, f := range []struct {
			dst *int
			src *int
		}{{&tp.Width, in.Width}, {&tp.Height, in.Height}, {&tp.Rotation, in.Rotation}} {
			if f.src != nil {
				*f.dst = *f.src
			}
		}
		if in.Layout != nil {
			raw, _, err := normalizeLayout(t, in.Layout)
			if err != nil {
				return err
			}
			tp.Layout = raw
		}
		if err := t.PutEInkTemplate(tp); err != nil {
			return err
		}
		out = *tp
		return nil
	})
	return out, err
}

// DeleteTemplate removes a template.
func (s *Service) DeleteTemplate(id uint64) error {
	return s.db.UpdateAssets(s.clock.Now(), func(t *store.AssetTx) error {
		if _, err := t.EInkTemplate(id); errors.Is(err, store.ErrNotFound) {
			return templateNotFound(id)
		} else if err != nil {
			return err
		}
		return t.DeleteEInkTemplate(id)
	})
}

// ApplyTemplate copies a template's layout onto a display. The display
// must have the template's canvas size and rotation, and SensorMap must
// map every sensor the template references (and nothing else) to a sensor
// beacon; the copy gets the mapped uids. The template itself is only read.
func (s *Service) ApplyTemplate(displayID uint64, in ApplyInput) (DisplayView, error) {
	var v DisplayView
	err := s.adminWrite(func(t *store.AssetTx) error {
		d, err := t.EInk(displayID)
		if errors.Is(err, store.ErrNotFound) {
			return notFound(displayID)
		} else if err != nil {
			return err
		}
		tp, err := t.EInkTemplate(in.TemplateID)
		if errors.Is(err, store.ErrNotFound) {
			return templateNotFound(in.TemplateID)
		} else if err != nil {
			return err
		}
		if tp.Width != d.Width || tp.Height != d.Height || tp.Rotation != d.Rotation {
			return apperr.Conflict("template is %dx%d rotation %d, display is %dx%d rotation %d: canvas size and rotation must match",
				tp.Width, tp.Height, tp.Rotation, d.Width, d.Height, d.Rotation)
		}
		l, err := parseLayout(tp.Layout)
		if err != nil {
			return err
		}
		if err := l.plainText(); err != nil { // a template saved before they were refused
			return err
		}
		if err := l.complete(objectsWithT(tp.Layout)); err != nil {
			return err
		}
		if err := checkMapping(t, l.sensorUIDs(), in.SensorMap); err != nil {
			return err
		}
		for i := range l.Objects {
			if o := &l.Objects[i]; o.T == sensorPrim {
				o.SensorUID = in.SensorMap[o.SensorUID]
			}
		}
		raw, err := l.marshal()
		if err != nil {
			return err
		}
		d.Layout = raw
		if err := t.PutEInk(d, d.MAC); err != nil {
			return err
		}
		v, err = s.view(t, d)
		return err
	})
	return v, err
}

// checkMapping requires m to cover exactly refs, each onto a sensor beacon.
func checkMapping(t *store.AssetTx, refs []string, m map[string]string) error {
	var missing []string
	for _, uid := range refs {
		if _, ok := m[uid]; !ok {
			missing = append(missing, uid)
		}
	}
	if len(missing) > 0 {
		return apperr.InvalidField("sensor_map", "sensor_map must map every sensor of the template; missing: %s", strings.Join(missing, ", "))
	}
	if len(m) != len(refs) {
		var extra []string
		for k := range m {
			extra = append(extra, k)
		}
		sort.Strings(extra)
		return apperr.InvalidField("sensor_map", "sensor_map names sensors the template does not use (template uses %d, map has %s)", len(refs), strings.Join(extra, ", "))
	}
	for _, uid := range refs {
		ref, ok := t.UIDOwner(m[uid])
		if !ok || ref.Kind != store.KindBeacon {
			return apperr.InvalidField("sensor_map", "sensor_map[%s]: %q is not a sensor", uid, m[uid])
		}
		b, err := t.Beacon(ref.ID)
		if err != nil {
			return err
		}
		if !sensorSource(b.Type) {
			return apperr.InvalidField("sensor_map", "sensor_map[%s]: %s is a %s beacon, not a sensor", uid, m[uid], b.Type)
		}
	}
	return nil
}

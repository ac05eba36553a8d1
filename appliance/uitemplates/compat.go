package uitemplates

import "fmt"

// Incompatible is a placed component the target role may not use.
type Incompatible struct {
	Path string `json:"path"` // e.g. definition.tabs[0].components[2]
	Tab  string `json:"tab"`
	Type string `json:"type"`
}

// IncompatibleWith lists the placements of d that role may not use, in
// layout order.
func IncompatibleWith(d *Definition, role string) []Incompatible {
	out := []Incompatible{}
	for ti, t := range d.Tabs {
		for ci, p := range t.Components {
			if c, ok := Lookup(p.Type); !ok || !c.Allows(role) {
				out = append(out, Incompatible{Path: fmt.Sprintf("definition.tabs[%d].components[%d]", ti, ci), Tab: t.ID, Type: p.Type})
			}
		}
	}
	return out
}

// WithoutIncompatible returns a copy of d keeping only what role may use.
// Tabs stay even when emptied, so the clone keeps the source's navigation.
func WithoutIncompatible(d *Definition, role string) *Definition {
	out := &Definition{Version: d.Version, Tabs: make([]Tab, 0, len(d.Tabs))}
	for _, t := range d.Tabs {
		nt := t
		nt.Components = []Placement{}
		for _, p := range t.Components {
			if c, ok := Lookup(p.Type); ok && c.Allows(role) {
				nt.Components = append(nt.Components, p)
			}
		}
		out.Tabs = append(out.Tabs, nt)
	}
	return out
}

package uitemplates

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"beaconhub/appliance/apperr"
)

// CurrentVersion is the only definition version this build understands.
// A later layout change bumps it and adds an upgrade step here, so stored
// templates keep loading.
const CurrentVersion = 1

// Limits of a definition.
const (
	MaxTabs          = 12
	MaxComponents    = 24 // per tab
	MaxColumns       = 4
	MaxTabTitle      = 60
	MaxComponentName = 80
)

// Definition is a validated, canonical template layout.
type Definition struct {
	Version int   `json:"version"`
	Tabs    []Tab `json:"tabs"`
}

// Tab is one page of the user shell. Columns nil means one full-width
// column.
type Tab struct {
	ID         string      `json:"id"`
	Title      string      `json:"title"`
	Columns    *int        `json:"columns,omitempty"`
	Components []Placement `json:"components"`
}

// Placement is one component on a tab.
type Placement struct {
	Type    string         `json:"type"`
	Title   string         `json:"title,omitempty"`
	Column  *int           `json:"column,omitempty"`
	Options map[string]any `json:"options,omitempty"`
}

var tabID = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// Parse validates raw against the catalogue for role and returns the
// canonical definition. Errors are 400s naming the offending path, e.g.
// definition.tabs[1].components[0].type.
func Parse(raw json.RawMessage, role string) (*Definition, error) { return parse(raw, role, false) }

// ParseStored reads a definition already stored, to carry it into a new
// template (a clone): as Parse, but titles stored before control
// characters were refused have them mended to spaces (apperr.MendLine)
// rather than failing the clone with an error about a body the caller
// did not send.
func ParseStored(raw json.RawMessage, role string) (*Definition, error) {
	return parse(raw, role, true)
}

func parse(raw json.RawMessage, role string, mend bool) (*Definition, error) {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, apperr.InvalidField("definition", "definition is required")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, apperr.InvalidField("definition", "definition is not valid JSON")
	}
	w := walker{role: role, mend: mend}
	d := w.definition(v)
	if w.err != nil {
		return nil, w.err
	}
	return d, nil
}

// walker collects the first error with its path; later checks are no-ops.
type walker struct {
	role string
	err  error
	mend bool // ParseStored: mend titles that break a line
}

func (w *walker) fail(path, format string, args ...any) {
	if w.err == nil {
		w.err = apperr.InvalidField(path, "%s: %s", path, fmt.Sprintf(format, args...))
	}
}

// object checks v is an object with only the allowed keys.
func (w *walker) object(path string, v any, allowed ...string) map[string]any {
	m, isObj := v.(map[string]any)
	if !isObj {
		w.fail(path, "must be an object")
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		known := false
		for _, a := range allowed {
			known = known || a == k
		}
		if !known {
			w.fail(path+"."+k, "unknown field")
		}
	}
	return m
}

func (w *walker) integer(path string, v any, lo, hi int) int {
	n, isNum := v.(json.Number)
	i, err := n.Int64()
	if !isNum || err != nil || i < int64(lo) || i > int64(hi) {
		w.fail(path, "must be an integer from %d to %d", lo, hi)
		return 0
	}
	return int(i)
}

// text reads a title: trimmed, and held to the rules of a template's name
// (apperr.CleanName): a tab titled "  " or "A\nB", or a component title
// with an escape sequence, was stored though the name next to it is
// refused such (a black-box check).
func (w *walker) text(path string, v any, required bool, max int) string {
	s, isStr := v.(string)
	s = strings.TrimSpace(s)
	switch {
	case v == nil && !required:
		return ""
	case !isStr:
		w.fail(path, "must be a string")
	case required && s == "" && w.mend && isStr:
		// A blank stored title (before the rule, "  " was stored): the
		// caller gives it a stand-in (tab: its id).
	case required && s == "":
		w.fail(path, "is required")
	case len([]rune(s)) > max:
		w.fail(path, "must be at most %d characters", max)
	case apperr.BreaksALine(s) && w.mend:
		s = strings.TrimSpace(apperr.MendLine(s)) // "" for a title of escapes alone: as blank
	case apperr.BreaksALine(s):
		w.fail(path, "may not contain control characters or line breaks (newlines, tabs, escapes)")
	}
	return s
}

func (w *walker) definition(v any) *Definition {
	m := w.object("definition", v, "version", "tabs")
	if m == nil {
		return nil
	}
	d := &Definition{}
	if _, has := m["version"]; !has {
		w.fail("definition.version", "is required")
	} else if d.Version = w.integer("definition.version", m["version"], 1, 1<<30); w.err == nil && d.Version != CurrentVersion {
		w.fail("definition.version", "version %d is not supported (this build reads version %d)", d.Version, CurrentVersion)
	}
	tabs, isArr := m["tabs"].([]any)
	if !isArr || len(tabs) == 0 || len(tabs) > MaxTabs {
		w.fail("definition.tabs", "must be an array of 1 to %d tabs", MaxTabs)
		return nil
	}
	seen := map[string]bool{}
	for i, t := range tabs {
		tab := w.tab(fmt.Sprintf("definition.tabs[%d]", i), t)
		if w.err != nil {
			return nil
		}
		if seen[tab.ID] {
			w.fail(fmt.Sprintf("definition.tabs[%d].id", i), "duplicate tab id %q", tab.ID)
			return nil
		}
		seen[tab.ID] = true
		d.Tabs = append(d.Tabs, tab)
	}
	return d
}

func (w *walker) tab(path string, v any) Tab {
	m := w.object(path, v, "id", "title", "columns", "components")
	if m == nil {
		return Tab{}
	}
	t := Tab{Components: []Placement{}}
	if id, _ := m["id"].(string); !tabID.MatchString(id) {
		w.fail(path+".id", "must be 1 to 32 of a-z, 0-9, _ and -, starting with a letter or digit")
	} else {
		t.ID = id
	}
	t.Title = w.text(path+".title", m["title"], true, MaxTabTitle)
	if t.Title == "" && w.mend {
		// A stored tab title blank, or of control characters alone, once
		// mended: a clone failed on it, naming a path the request did not
		// carry (a review).
		t.Title = t.ID
	}
	cols := 1
	if c, has := m["columns"]; has {
		cols = w.integer(path+".columns", c, 1, MaxColumns)
		t.Columns = &cols
	}
	comps, isArr := m["components"].([]any)
	if !isArr || len(comps) > MaxComponents {
		w.fail(path+".components", "must be an array of at most %d components", MaxComponents)
		return t
	}
	for i, c := range comps {
		p := w.placement(fmt.Sprintf("%s.components[%d]", path, i), c, cols)
		if w.err != nil {
			return t
		}
		t.Components = append(t.Components, p)
	}
	return t
}

func (w *walker) placement(path string, v any, cols int) Placement {
	m := w.object(path, v, "type", "title", "column", "options")
	if m == nil {
		return Placement{}
	}
	typ, _ := m["type"].(string)
	comp, known := Lookup(typ)
	switch {
	case typ == "":
		w.fail(path+".type", "is required")
	case !known:
		w.fail(path+".type", "unknown component %q", typ)
	case !comp.Allows(w.role):
		w.fail(path+".type", "component %q is not available to role %s", typ, w.role)
	}
	p := Placement{Type: typ, Title: w.text(path+".title", m["title"], false, MaxComponentName)}
	if c, has := m["column"]; has {
		col := w.integer(path+".column", c, 1, cols)
		p.Column = &col
	}
	if o, has := m["options"]; has && w.err == nil {
		p.Options = w.options(path+".options", o, comp)
	}
	return p
}

func (w *walker) options(path string, v any, comp Component) map[string]any {
	allowed := make([]string, 0, len(comp.Options))
	for k := range comp.Options {
		allowed = append(allowed, k)
	}
	m := w.object(path, v, allowed...)
	out := map[string]any{}
	for k, raw := range m {
		o := comp.Options[k]
		p := path + "." + k
		switch o.Kind {
		case OptInt:
			out[k] = w.integer(p, raw, o.Min, o.Max)
		case OptBool:
			b, isBool := raw.(bool)
			if !isBool {
				w.fail(p, "must be true or false")
			}
			out[k] = b
		case OptEnum:
			s, _ := raw.(string)
			valid := false
			for _, e := range o.Values {
				valid = valid || e == s
			}
			if !valid {
				w.fail(p, "must be one of %v", o.Values)
			}
			out[k] = s
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

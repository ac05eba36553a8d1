package uitemplates

import (
	"encoding/json"
	"strings"
	"testing"

	"beaconhub/appliance/apperr"
)

func TestParseValid(t *testing.T) {
	raw := `{"version":1,"tabs":[
		{"id":"home","title":"Home","components":[{"type":"event_feed","options":{"limit":20,"status":"alert"}}]},
		{"id":"map","title":"Map","columns":2,"components":[
			{"type":"floor_map","column":1,"options":{"show_graph":true}},
			{"type":"sensor_chart","column":2,"title":"Fridges","options":{"hours":24,"metric":"temperature"}}]}]}`
	d, err := Parse(json.RawMessage(raw), RoleUser)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Tabs) != 2 || d.Tabs[0].Columns != nil || *d.Tabs[1].Columns != 2 || d.Tabs[1].Components[1].Options["hours"] != 24 {
		t.Errorf("parsed %+v", d)
	}
	// Canonical form round-trips through Parse unchanged.
	data, _ := json.Marshal(d)
	d2, err := Parse(data, RoleUser)
	if err != nil {
		t.Fatalf("canonical form refused: %v (%s)", err, data)
	}
	data2, _ := json.Marshal(d2)
	if string(data) != string(data2) {
		t.Errorf("not canonical:\n%s\n%s", data, data2)
	}
}

func TestParseRejects(t *testing.T) {
	tab := func(extra string) string {
		return `{"version":1,"tabs":[{"id":"a","title":"A","components":[` + extra + `]}]}`
	}
	for _, c := range []struct {
		name, role, raw, path, msg string
	}{
		{"empty", RoleUser, ``, "definition", "required"},
		{"null", RoleUser, `null`, "definition", "required"},
		{"not object", RoleUser, `[1]`, "definition", "object"},
		{"unknown top field", RoleUser, `{"version":1,"tabs":[],"x":1}`, "definition.x", "unknown field"},
		{"no version", RoleUser, `{"tabs":[{"id":"a","title":"A","components":[]}]}`, "definition.version", "required"},
		{"future version", RoleUser, `{"version":2,"tabs":[{"id":"a","title":"A","components":[]}]}`, "definition.version", "not supported"},
		{"no tabs", RoleUser, `{"version":1,"tabs":[]}`, "definition.tabs", "1 to 12"},
		{"bad tab id", RoleUser, `{"version":1,"tabs":[{"id":"A B","title":"A","components":[]}]}`, "definition.tabs[0].id", "a-z"},
		{"duplicate tab", RoleUser, `{"version":1,"tabs":[{"id":"a","title":"A","components":[]},{"id":"a","title":"B","components":[]}]}`, "definition.tabs[1].id", "duplicate"},
		{"no title", RoleUser, `{"version":1,"tabs":[{"id":"a","components":[]}]}`, "definition.tabs[0].title", "string"},
		{"zero columns", RoleUser, `{"version":1,"tabs":[{"id":"a","title":"A","columns":0,"components":[]}]}`, "definition.tabs[0].columns", "1 to 4"},
		{"five columns", RoleUser, `{"version":1,"tabs":[{"id":"a","title":"A","columns":5,"components":[]}]}`, "definition.tabs[0].columns", "1 to 4"},
		{"fractional columns", RoleUser, `{"version":1,"tabs":[{"id":"a","title":"A","columns":1.5,"components":[]}]}`, "definition.tabs[0].columns", "integer"},
		{"components missing", RoleUser, `{"version":1,"tabs":[{"id":"a","title":"A"}]}`, "definition.tabs[0].components", "array"},
		{"unknown component", RoleUser, tab(`{"type":"event_feed"},{"type":"coffee_machine"}`), "definition.tabs[0].components[1].type", "unknown component"},
		{"wrong role", RoleUser, tab(`{"type":"gateway_health"}`), "definition.tabs[0].components[0].type", "not available to role user"},
		{"wrong role maint", RoleMaintenance, tab(`{"type":"person_finder"}`), "definition.tabs[0].components[0].type", "not available to role maintenance"},
		{"column without columns", RoleUser, tab(`{"type":"event_feed","column":2}`), "definition.tabs[0].components[0].column", "1 to 1"},
		{"unknown option", RoleUser, tab(`{"type":"event_feed","options":{"colour":"red"}}`), "definition.tabs[0].components[0].options.colour", "unknown field"},
		{"option range", RoleUser, tab(`{"type":"event_feed","options":{"limit":1000}}`), "definition.tabs[0].components[0].options.limit", "1 to 100"},
		{"option enum", RoleUser, tab(`{"type":"sensor_chart","options":{"metric":"pressure"}}`), "definition.tabs[0].components[0].options.metric", "one of"},
		{"option bool", RoleUser, tab(`{"type":"floor_map","options":{"show_graph":"yes"}}`), "definition.tabs[0].components[0].options.show_graph", "true or false"},
		{"component field", RoleUser, tab(`{"type":"event_feed","size":"xl"}`), "definition.tabs[0].components[0].size", "unknown field"},
		{"long title", RoleUser, tab(`{"type":"event_feed","title":"` + strings.Repeat("x", 81) + `"}`), "definition.tabs[0].components[0].title", "at most 80"},
		// Titles are held to a template name's rules (they were not: a
		// black-box check).
		{"blank tab title", RoleUser, `{"version":1,"tabs":[{"id":"a","title":"  ","components":[]}]}`, "definition.tabs[0].title", "required"},
		{"tab title newline", RoleUser, `{"version":1,"tabs":[{"id":"a","title":"A\nB","components":[]}]}`, "definition.tabs[0].title", "control characters"},
		{"component title escape", RoleUser, tab(`{"type":"event_feed","title":"bad\u001b[31m"}`), "definition.tabs[0].components[0].title", "control characters"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(json.RawMessage(c.raw), c.role)
			e, ok := apperr.As(err)
			if !ok || e.Kind != apperr.KindInvalid {
				t.Fatalf("err = %v, want a 400", err)
			}
			if e.Field != c.path || !strings.Contains(e.Msg, c.msg) {
				t.Errorf("field %q msg %q, want field %q containing %q", e.Field, e.Msg, c.path, c.msg)
			}
		})
	}
}

func TestIncompatible(t *testing.T) {
	raw := `{"version":1,"tabs":[{"id":"a","title":"A","components":[{"type":"event_feed"},{"type":"gateway_health"}]},
		{"id":"b","title":"B","components":[{"type":"app_log"}]}]}`
	d, err := Parse(json.RawMessage(raw), RoleMaintenance)
	if err != nil {
		t.Fatal(err)
	}
	if got := IncompatibleWith(d, RoleMaintenance); len(got) != 0 {
		t.Errorf("same role: %v", got)
	}
	got := IncompatibleWith(d, RoleUser)
	if len(got) != 2 || got[0].Path != "definition.tabs[0].components[1]" || got[0].Type != "gateway_health" || got[1].Tab != "b" {
		t.Fatalf("incompatible = %+v", got)
	}
	out := WithoutIncompatible(d, RoleUser)
	if len(out.Tabs) != 2 || len(out.Tabs[0].Components) != 1 || len(out.Tabs[1].Components) != 0 {
		t.Errorf("without = %+v", out)
	}
	if len(d.Tabs[0].Components) != 2 {
		t.Error("WithoutIncompatible changed its input")
	}
}

func TestCatalogueIsConsistent(t *testing.T) {
	for _, c := range Catalogue() {
		if len(c.Roles) == 0 || len(c.Reads) == 0 {
			t.Errorf("%s: needs roles and reads", c.Type)
		}
		for _, r := range c.Roles {
			if !ValidRole(r) {
				t.Errorf("%s: role %s", c.Type, r)
			}
		}
		for _, p := range c.Reads {
			if !strings.HasPrefix(p, "/api/v1/") {
				t.Errorf("%s reads %s outside /api/v1/", c.Type, p)
			}
		}
	}
	if len(PreviewAllowlist()) < len(shellReads) {
		t.Error("allowlist too short")
	}
}

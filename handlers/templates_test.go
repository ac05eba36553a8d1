package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"beaconhub/store"
)

type templateOut struct {
	ID         uint64          `json:"id"`
	Name       string          `json:"name"`
	Role       string          `json:"role"`
	Definition json.RawMessage `json:"definition"`
	CreatedAt  int64           `json:"created_at"`
	UpdatedAt  int64           `json:"updated_at"`
}

// Definitions used across the template tests.
const (
	defShared = `{"version":1,"tabs":[{"id":"home","title":"Home","components":[{"type":"event_feed"},{"type":"floor_map"}]}]}`
	defUser   = `{"version":1,"tabs":[{"id":"home","title":"Home","columns":2,"components":[{"type":"event_feed","column":1},{"type":"person_finder","column":2}]},` +
		`{"id":"map","title":"Map","components":[{"type":"floor_map"}]}]}`
	defMaint = `{"version":1,"tabs":[{"id":"ops","title":"Ops","components":[{"type":"system_status"},{"type":"sensor_chart"},{"type":"gateway_health"}]},` +
		`{"id":"log","title":"Log","components":[{"type":"app_log","options":{"limit":50}}]}]}`
)

func (h *harness) createTemplate(name, role, def string) templateOut {
	h.t.Helper()
	var t templateOut
	h.send("POST", "/api/v1/interface-templates", h.token("admin"),
		map[string]any{"name": name, "role": role, "definition": json.RawMessage(def)}).expect(h.t, http.StatusCreated).decodePayload(h.t, &t)
	return t
}

func TestTemplateCRUD(t *testing.T) {
	h := newHarness(t)
	admin := h.token("admin")
	tpl := h.createTemplate("Ward staff", "user", defUser)
	if tpl.ID == 0 || tpl.Role != "user" || tpl.CreatedAt == 0 {
		t.Fatalf("created %+v", tpl)
	}
	var got templateOut
	h.get(fmt.Sprintf("/api/v1/interface-templates/%d", tpl.ID), admin).expect(t, http.StatusOK).decodePayload(t, &got)
	if got.Name != "Ward staff" || !strings.Contains(string(got.Definition), `"person_finder"`) {
		t.Errorf("get %+v", got)
	}
	var list struct{ Templates []templateOut }
	h.get("/api/v1/interface-templates", admin).expect(t, http.StatusOK).decodePayload(t, &list)
	if len(list.Templates) != 1 {
		t.Errorf("list %+v", list)
	}
	// PUT changes name and definition; the role stays (repeating it is fine).
	h.send("PUT", fmt.Sprintf("/api/v1/interface-templates/%d", tpl.ID), admin,
		map[string]any{"name": "Ward", "role": "user", "definition": json.RawMessage(defShared)}).expect(t, http.StatusOK).decodePayload(t, &got)
	if got.Name != "Ward" || got.Role != "user" || strings.Contains(string(got.Definition), "person_finder") {
		t.Errorf("put %+v", got)
	}
	r := h.send("PUT", fmt.Sprintf("/api/v1/interface-templates/%d", tpl.ID), admin,
		map[string]any{"name": "Ward", "role": "maintenance", "definition": json.RawMessage(defShared)}).expect(t, http.StatusBadRequest)
	if !strings.Contains(r.Body, `"field":"role"`) {
		t.Errorf("role change: %s", r.Body)
	}
	// A definition the role may not use is refused with the path.
	r = h.send("PUT", fmt.Sprintf("/api/v1/interface-templates/%d", tpl.ID), admin,
		map[string]any{"name": "Ward", "definition": json.RawMessage(defMaint)}).expect(t, http.StatusBadRequest)
	if !strings.Contains(r.Body, `"field":"definition.tabs[0].components[0].type"`) {
		t.Errorf("wrong-role put: %s", r.Body)
	}
	for name, body := range map[string]any{
		"no name":       map[string]any{"role": "user", "definition": json.RawMessage(defShared)},
		"admin role":    map[string]any{"name": "x", "role": "admin", "definition": json.RawMessage(defShared)},
		"no definition": map[string]any{"name": "x", "role": "user"},
		"unknown field": map[string]any{"name": "x", "role": "user", "definition": json.RawMessage(defShared), "colour": "red"},
		"bad columns":   map[string]any{"name": "x", "role": "user", "definition": json.RawMessage(strings.Replace(defUser, `"columns":2`, `"columns":9`, 1))},
	} {
		if r := h.send("POST", "/api/v1/interface-templates", admin, body); r.Code != http.StatusBadRequest {
			t.Errorf("%s: %d %s", name, r.Code, r.Body)
		}
	}
	h.send("DELETE", fmt.Sprintf("/api/v1/interface-templates/%d", tpl.ID), admin, nil).expect(t, http.StatusOK)
	h.get(fmt.Sprintf("/api/v1/interface-templates/%d", tpl.ID), admin).expect(t, http.StatusNotFound)
	h.send("DELETE", fmt.Sprintf("/api/v1/interface-templates/%d", tpl.ID), admin, nil).expect(t, http.StatusNotFound)
}

// The clone matrix: user <-> maintenance and same-role, with and without
// components the target role may not use.
func TestTemplateCloneMatrix(t *testing.T) {
	h := newHarness(t)
	admin := h.token("admin")
	sources := map[string]templateOut{
		"user shared":  h.createTemplate("u-shared", "user", defShared),
		"user only":    h.createTemplate("u-only", "user", defUser),
		"maint shared": h.createTemplate("m-shared", "maintenance", defShared),
		"maint only":   h.createTemplate("m-only", "maintenance", defMaint),
	}
	for _, c := range []struct {
		src, role    string
		incompatible []string // types refused without remove_incompatible
		kept         int      // components left after remove_incompatible
	}{
		{"user shared", "user", nil, 2},
		{"user shared", "maintenance", nil, 2},
		{"user only", "user", nil, 3},
		{"user only", "maintenance", []string{"person_finder"}, 2},
		{"maint shared", "maintenance", nil, 2},
		{"maint shared", "user", nil, 2},
		{"maint only", "maintenance", nil, 4},
		{"maint only", "user", []string{"system_status", "gateway_health", "app_log"}, 1},
	} {
		name := c.src + " -> " + c.role
		src := sources[c.src]
		path := fmt.Sprintf("/api/v1/interface-templates/%d/clone", src.ID)
		r := h.send("POST", path, admin, map[string]any{"name": name, "role": c.role})
		if len(c.incompatible) > 0 {
			if r.Code != http.StatusConflict {
				t.Errorf("%s: %d %s, want 409", name, r.Code, r.Body)
				continue
			}
			var p struct {
				Incompatible []struct{ Path, Tab, Type string } `json:"incompatible_components"`
			}
			r.decodePayload(t, &p)
			var types []string
			for _, ic := range p.Incompatible {
				types = append(types, ic.Type)
				if !strings.HasPrefix(ic.Path, "definition.tabs[") {
					t.Errorf("%s: path %q", name, ic.Path)
				}
			}
			if fmt.Sprint(types) != fmt.Sprint(c.incompatible) {
				t.Errorf("%s: incompatible %v, want %v", name, types, c.incompatible)
			}
			r = h.send("POST", path, admin, map[string]any{"name": name, "role": c.role, "remove_incompatible": true})
		}
		if r.Code != http.StatusCreated {
			t.Errorf("%s: %d %s", name, r.Code, r.Body)
			continue
		}
		var out templateOut
		r.decodePayload(t, &out)
		var d struct {
			Tabs []struct{ Components []struct{ Type string } }
		}
		_ = json.Unmarshal(out.Definition, &d)
		n := 0
		for _, tab := range d.Tabs {
			n += len(tab.Components)
		}
		if out.Role != c.role || out.Name != name || out.ID == src.ID || n != c.kept {
			t.Errorf("%s: clone %+v with %d components, want role %s and %d", name, out, n, c.role, c.kept)
		}
		// The clone is a valid template of its role: it survives a PUT.
		h.send("PUT", fmt.Sprintf("/api/v1/interface-templates/%d", out.ID), admin,
			map[string]any{"name": out.Name, "definition": out.Definition}).expect(t, http.StatusOK)
	}
	h.send("POST", "/api/v1/interface-templates/999/clone", admin, map[string]any{"name": "x", "role": "user"}).expect(t, http.StatusNotFound)
	h.send("POST", fmt.Sprintf("/api/v1/interface-templates/%d/clone", sources["user shared"].ID), admin,
		map[string]any{"name": "x", "role": "api"}).expect(t, http.StatusBadRequest)
}

// A template stored before titles were held to a name's rules (a tab
// titled "A\nB") is cloned with its titles mended, not refused with a
// 400 about a definition the request did not carry.
func TestCloneMendsTitlesStoredBeforeTheRule(t *testing.T) {
	h := newHarness(t)
	admin := h.token("admin")
	old := `{"version":1,"tabs":[{"id":"home","title":"Ward\n\tA","components":[{"type":"event_feed","title":"feed\u001b[31m"}]}]}`
	src, err := h.db.CreateUITemplate(store.UITemplate{Name: "old", Role: "user", Definition: json.RawMessage(old), CreatedAt: 1, UpdatedAt: 1})
	if err != nil {
		t.Fatal(err)
	}
	var out templateOut
	h.send("POST", fmt.Sprintf("/api/v1/interface-templates/%d/clone", src.ID), admin,
		map[string]any{"name": "new", "role": "user"}).expect(t, http.StatusCreated).decodePayload(t, &out)
	var d struct {
		Tabs []struct {
			Title      string
			Components []struct{ Title string }
		}
	}
	if err := json.Unmarshal(out.Definition, &d); err != nil || d.Tabs[0].Title != "Ward A" || d.Tabs[0].Components[0].Title != "feed [31m" {
		t.Fatalf("clone %s (%v)", out.Definition, err)
	}
	// A title stored blank, or of control characters alone, becomes the
	// tab's id.
	for i, title := range []string{"  ", "\x1b", "\a\n"} {
		tj, _ := json.Marshal(title)
		def := `{"version":1,"tabs":[{"id":"home","title":` + string(tj) + `,"components":[{"type":"event_feed"}]}]}`
		src, err := h.db.CreateUITemplate(store.UITemplate{Name: fmt.Sprintf("blank %d", i), Role: "user", Definition: json.RawMessage(def), CreatedAt: 1, UpdatedAt: 1})
		if err != nil {
			t.Fatal(err)
		}
		h.send("POST", fmt.Sprintf("/api/v1/interface-templates/%d/clone", src.ID), admin,
			map[string]any{"name": fmt.Sprintf("mended %d", i), "role": "user"}).expect(t, http.StatusCreated).decodePayload(t, &out)
		if err := json.Unmarshal(out.Definition, &d); err != nil || d.Tabs[0].Title != "home" {
			t.Fatalf("clone of title %q: %s (%v)", title, out.Definition, err)
		}
	}
	// Sent in a request, the same titles are still refused.
	h.send("POST", "/api/v1/interface-templates", admin,
		map[string]any{"name": "again", "role": "user", "definition": json.RawMessage(old)}).expect(t, http.StatusBadRequest)
}

func TestTemplateAssignment(t *testing.T) {
	h := newHarness(t)
	admin := h.token("admin")
	ut := h.createTemplate("users", "user", defUser)
	mt := h.createTemplate("maint", "maintenance", defMaint)
	user, maint := h.users["user"], h.users["maintenance"]
	assign := func(uid uint64, tid any) *response {
		return h.send("PUT", fmt.Sprintf("/api/v1/users/%d/template", uid), admin, map[string]any{"template_id": tid})
	}
	assign(user.ID, ut.ID).expect(t, http.StatusOK)
	var withUsers struct {
		ID              uint64   `json:"id"`
		AssignedUserIDs []uint64 `json:"assigned_user_ids"`
	}
	h.get(fmt.Sprintf("/api/v1/interface-templates/%d", ut.ID), admin).expect(t, http.StatusOK).decodePayload(t, &withUsers)
	if withUsers.ID != ut.ID || fmt.Sprint(withUsers.AssignedUserIDs) != fmt.Sprint([]uint64{user.ID}) {
		t.Errorf("template with users %+v", withUsers)
	}
	assign(maint.ID, ut.ID).expect(t, http.StatusBadRequest) // role mismatch
	assign(maint.ID, mt.ID).expect(t, http.StatusOK)
	assign(user.ID, 9999).expect(t, http.StatusNotFound)
	assign(9999, ut.ID).expect(t, http.StatusNotFound)
	assign(h.users["admin"].ID, ut.ID).expect(t, http.StatusBadRequest)

	// Deleting an assigned template is refused with the users it blocks on.
	r := h.send("DELETE", fmt.Sprintf("/api/v1/interface-templates/%d", ut.ID), admin, nil).expect(t, http.StatusConflict)
	if !strings.Contains(r.Body, fmt.Sprintf(`"assigned_user_ids":[%d]`, user.ID)) {
		t.Errorf("409 body %s", r.Body)
	}
	if r := assign(user.ID, 0).expect(t, http.StatusOK); string(r.Payload) != fmt.Sprintf(`{"template_id":null,"user_id":%d}`, user.ID) {
		t.Errorf("unassign answer %s", r.Payload)
	}
	h.send("DELETE", fmt.Sprintf("/api/v1/interface-templates/%d", ut.ID), admin, nil).expect(t, http.StatusOK)
	ut = h.createTemplate("users again", "user", defShared)
	assign(user.ID, ut.ID).expect(t, http.StatusOK)
	// {} is no "unassign" (it was taken for one: a black-box check);
	// nor is a template id of the wrong type.
	h.send("PUT", fmt.Sprintf("/api/v1/users/%d/template", user.ID), admin, map[string]any{}).wantBad(t, "template_id")
	assign(user.ID, "3").wantBad(t, "template_id")
	if r := h.send("DELETE", fmt.Sprintf("/api/v1/interface-templates/%d", ut.ID), admin, nil).expect(t, http.StatusConflict); !strings.Contains(r.Message, "assigned to 1 user;") {
		t.Errorf("in-use message %q", r.Message)
	}
	assign(user.ID, nil).expect(t, http.StatusOK)
	h.send("DELETE", fmt.Sprintf("/api/v1/interface-templates/%d", ut.ID), admin, nil).expect(t, http.StatusOK)

	// A deleted user no longer blocks deleting their template.
	h.send("DELETE", fmt.Sprintf("/api/v1/users/%d", maint.ID), admin, nil).expect(t, http.StatusOK)
	h.send("DELETE", fmt.Sprintf("/api/v1/interface-templates/%d", mt.ID), admin, nil).expect(t, http.StatusOK)
}

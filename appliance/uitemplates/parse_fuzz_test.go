package uitemplates

import (
	"encoding/json"
	"testing"
)

// FuzzParse: definitions come from admins' browsers. Parse must never
// panic, and whatever it accepts must be canonical: re-parsing its output
// gives the same bytes, for the role it was accepted for.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"version":1,"tabs":[{"id":"a","title":"A","columns":2,"components":[{"type":"event_feed","column":2,"options":{"limit":5}}]}]}`), false)
	f.Add([]byte(`{"version":1,"tabs":[{"id":"ops","title":"Ops","components":[{"type":"app_log","title":"x","options":{"limit":200}}]}]}`), true)
	f.Add([]byte(`{"version":1,"tabs":[{"id":"a","title":"A","components":[{"type":"floor_map","options":{"show_graph":true}}]}]}`), false)
	f.Add([]byte(`{"version":1e3,"tabs":[{}]}`), true)
	f.Add([]byte(`[]`), false)
	f.Fuzz(func(t *testing.T, raw []byte, maint bool) {
		role := RoleUser
		if maint {
			role = RoleMaintenance
		}
		d, err := Parse(raw, role)
		if err != nil {
			return
		}
		out, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		d2, err := Parse(out, role)
		if err != nil {
			t.Fatalf("canonical form %s refused: %v", out, err)
		}
		out2, _ := json.Marshal(d2)
		if string(out) != string(out2) {
			t.Fatalf("not canonical:\n%s\n%s", out, out2)
		}
		if len(IncompatibleWith(d, role)) != 0 {
			t.Fatalf("accepted components the role may not use: %s", out)
		}
	})
}

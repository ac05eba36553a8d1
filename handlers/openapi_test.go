package handlers

import (
	"encoding/json"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"

	integrationdocs "beaconhub/web/integration-docs"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
)

// openAPIDoc is the part of the document the consistency check reads.
type openAPIDoc struct {
	OpenAPI  string                                 `json:"openapi"`
	Security []map[string][]string                  `json:"security"`
	Paths    map[string]map[string]openAPIOperation `json:"paths"`
}

type openAPIOperation struct {
	Security *[]map[string][]string `json:"security"`
}

var oaParam = regexp.MustCompile(`\{([^}]+)\}`)

// documentedRoutes returns "METHOD /path/:param" -> operation.
func documentedRoutes(t *testing.T) map[string]openAPIOperation {
	t.Helper()
	var d openAPIDoc
	if err := json.Unmarshal(integrationdocs.OpenAPI(), &d); err != nil {
		t.Fatal(err)
	}
	if d.OpenAPI != "3.1.0" {
		t.Fatalf("openapi = %q, want 3.1.0", d.OpenAPI)
	}
	out := map[string]openAPIOperation{}
	for p, ops := range d.Paths {
		for m, op := range ops {
			out[strings.ToUpper(m)+" "+oaParam.ReplaceAllString(p, ":$1")] = op
		}
	}
	return out
}

// Every integration route in the table is documented, and everything
// documented is in the table; a documented route without security is one
// the table leaves unguarded, and the others are guarded.
func TestOpenAPIMatchesRouteTable(t *testing.T) {
	h := newHarness(t)
	doc := documentedRoutes(t)
	table := map[string]Route{}
	for _, rt := range h.srv.Routes() {
		table[rt.Method+" "+rt.Path] = rt
	}
	var keys []string
	for k := range table {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.Contains(k, " /api/v1/integration/") {
			if _, ok := doc[k]; !ok {
				t.Errorf("%s is in the route table but not in openapi.json", k)
			}
		}
	}
	for k, op := range doc {
		rt, inTable := table[k]
		switch {
		case !inTable:
			t.Errorf("%s is documented in openapi.json but not in the route table", k)
			continue
		}
		public := op.Security != nil && len(*op.Security) == 0
		open := rt.Guard == None || rt.Guard == DBOnly
		if public != open {
			t.Errorf("%s: documented public=%v, but the route's guard is %s", k, public, rt.Guard)
		}
		if strings.HasPrefix(rt.Path, "/api/v1/integration/") && !open && rt.Guard != Integration {
			t.Errorf("%s: integration route with guard %s, want integration", k, rt.Guard)
		}
	}
}

func newOpenAPIValidator(t *testing.T, spec []byte) validator.Validator {
	t.Helper()
	d, err := libopenapi.NewDocument(spec)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(d)
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	return v
}

// The document is valid OpenAPI 3.1 according to a real validator, and
// the validator does reject a broken one (so the check can fail).
func TestOpenAPIDocumentValidates(t *testing.T) {
	v := newOpenAPIValidator(t, integrationdocs.OpenAPI())
	if valid, errs := v.ValidateDocument(); !valid {
		for _, e := range errs {
			t.Errorf("%s: %s", e.Message, e.Reason)
			for _, f := range e.SchemaValidationErrors {
				t.Errorf("  at %s: %s", f.Location, f.Reason)
			}
		}
	}
	var m map[string]any
	if err := json.Unmarshal(integrationdocs.OpenAPI(), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "info")
	m["paths"].(map[string]any)["/api/v1/integration/alerts"].(map[string]any)["get"].(map[string]any)["responses"] = "none"
	broken, _ := json.Marshal(m)
	if valid, _ := newOpenAPIValidator(t, broken).ValidateDocument(); valid {
		t.Error("a document without info and with string responses validated")
	}
}

func TestOpenAPIServed(t *testing.T) {
	h := newHarness(t)
	r := h.get("/api/v1/integration/openapi.json", "").expect(t, http.StatusOK)
	if r.Body != string(integrationdocs.OpenAPI()) || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Errorf("served document differs or has type %q", r.Header.Get("Content-Type"))
	}
	for _, want := range []string{`"bearerAuth"`, `"scheme": "bearer"`, `"#/components/schemas/Error"`} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("document lacks %s", want)
		}
	}
}

package handlers

import (
	"beaconhub/appliance/rtls"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"beaconhub/appliance/auth"
	"beaconhub/store"
	integrationdocs "beaconhub/web/integration-docs"

	validator "github.com/pb33f/libopenapi-validator"
)

// integrationClient is a typed client of the integration API, written from
// openapi.json. Every answer it receives is validated against the
// document, so the document is a tested contract, not a description.
type integrationClient struct {
	t     *testing.T
	base  string
	v     validator.Validator
	token string
	// refresh is the current refresh token (rotated by Refresh).
	refresh string
}

type clientTokens struct {
	Token              string `json:"token"`
	RefreshToken       string `json:"refresh_token"`
	ExpiresAt          int64  `json:"expires_at"`
	MustChangePassword bool   `json:"must_change_password"`
	User               struct {
		Role string `json:"role"`
	} `json:"user"`
}

type clientAlert struct {
	ID       uint64 `json:"id"`
	Status   string `json:"status"`
	AssetUID string `json:"asset_uid"`
	Test     bool   `json:"test"`
}

type clientAlertsPage struct {
	Alerts      []clientAlert `json:"alerts"`
	NextAfterID uint64        `json:"next_after_id"`
}

// clientError is a non-2xx answer (already validated as the Error schema).
type clientError struct {
	Status  int
	Message string
}

func (e *clientError) Error() string { return fmt.Sprintf("%d %s", e.Status, e.Message) }

// call performs one request, validates the answer against the document
// and decodes the envelope's payload into out on success.
func (c *integrationClient) call(method, path string, body any, out any) error {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	raw, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	if valid, errs := c.v.ValidateHttpResponse(req, resp); !valid {
		for _, e := range errs {
			c.t.Errorf("%s %s -> %d does not match openapi.json: %s: %s", method, path, resp.StatusCode, e.Message, e.Reason)
			for _, f := range e.SchemaValidationErrors {
				c.t.Errorf("  at %s: %s", f.Location, f.Reason)
			}
		}
		c.t.Logf("body: %s", raw)
	}
	var env struct {
		Type    string          `json:"type"`
		Message string          `json:"message"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		c.t.Fatalf("%s %s: not an envelope: %s", method, path, raw)
	}
	if resp.StatusCode/100 != 2 {
		return &clientError{Status: resp.StatusCode, Message: env.Message}
	}
	if out != nil {
		if err := json.Unmarshal(env.Payload, out); err != nil {
			c.t.Fatalf("%s %s: payload: %v", method, path, err)
		}
	}
	return nil
}

func (c *integrationClient) Login(email, password string) (clientTokens, error) {
	var tk clientTokens
	err := c.call("POST", "/api/v1/login", map[string]string{"email": email, "password": password}, &tk)
	c.token, c.refresh = tk.Token, tk.RefreshToken
	return tk, err
}

func (c *integrationClient) Refresh() (clientTokens, error) {
	var tk clientTokens
	err := c.call("POST", "/api/v1/auth/refresh", map[string]string{"refresh_token": c.refresh}, &tk)
	if err == nil {
		c.token, c.refresh = tk.Token, tk.RefreshToken
	}
	return tk, err
}

func (c *integrationClient) Alerts(q url.Values) (clientAlertsPage, error) {
	var p clientAlertsPage
	err := c.call("GET", "/api/v1/integration/alerts?"+q.Encode(), nil, &p)
	return p, err
}

// Follow reads every alert after afterID, page by page, as an integration
// that polls would.
func (c *integrationClient) Follow(afterID uint64, limit int) ([]clientAlert, uint64, error) {
	var all []clientAlert
	for {
		p, err := c.Alerts(url.Values{"after_id": {fmt.Sprint(afterID)}, "limit": {fmt.Sprint(limit)}})
		if err != nil {
			return nil, afterID, err
		}
		all = append(all, p.Alerts...)
		if len(p.Alerts) == 0 {
			return all, p.NextAfterID, nil
		}
		afterID = p.NextAfterID
	}
}

// Get fetches any integration path; the payload is decoded loosely, the
// validator holds it to the documented shape.
func (c *integrationClient) Get(path string) error {
	var out map[string]any
	return c.call("GET", path, nil, &out)
}

func TestIntegrationClientWalk(t *testing.T) {
	h := newHarness(t)
	// An api account as `beaconhub api-account create` makes it.
	const email, password = "erp-bridge@api.local", "api-walk-password-1"
	if _, err := h.auth.CreateUser(email, password, auth.RoleAPI, false); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 7; i++ {
		seedEvent(t, h.db, store.Event{ID: uint64(i), Status: store.EventAlert, Type: "single", AssetUID: "PAN-A1-1",
			MAC: "AC233FA00001", BeaconName: "Panic 1", BeaconType: "panic", Test: i == 3, CreatedAt: int64(i) * 1000})
	}
	srv := httptest.NewServer(h.srv)
	defer srv.Close()
	c := &integrationClient{t: t, base: srv.URL, v: newOpenAPIValidator(t, integrationdocs.OpenAPI())}

	if err := c.call("GET", "/api/v1/integration/openapi.json", nil, nil); err != nil {
		t.Fatal(err)
	}
	tk, err := c.Login(email, password)
	if err != nil || tk.User.Role != auth.RoleAPI || tk.MustChangePassword {
		t.Fatalf("login: %v %+v", err, tk)
	}
	newest, err := c.Alerts(url.Values{"limit": {"2"}})
	if err != nil || len(newest.Alerts) != 2 || newest.Alerts[0].ID != 7 || newest.NextAfterID != 7 {
		t.Fatalf("newest: %v %+v", err, newest)
	}
	all, next, err := c.Follow(0, 2)
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	for _, a := range all {
		ids = append(ids, a.ID)
	}
	if fmt.Sprint(ids) != "[1 2 4 5 6 7]" || next != 7 {
		t.Errorf("followed %v next %d, want every non-test alert once, oldest first", ids, next)
	}
	if p, err := c.Alerts(url.Values{"include_test": {"true"}, "status": {"alert"}, "type": {"single"}, "since": {"3000"}, "until": {"3000"}}); err != nil || len(p.Alerts) != 1 || !p.Alerts[0].Test {
		t.Errorf("filtered: %v %+v", err, p)
	}
	// Documented errors come back in the documented shape.
	for _, q := range []url.Values{{"limit": {"0"}}, {"status": {"panicking"}}, {"after_id": {"x"}}} {
		var ce *clientError
		if _, err := c.Alerts(q); !errorAs(err, &ce) || ce.Status != http.StatusBadRequest {
			t.Errorf("%v: %v, want 400", q, err)
		}
	}
	if _, err := c.Refresh(); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if _, err := c.Alerts(url.Values{}); err != nil {
		t.Errorf("alerts with the refreshed token: %v", err)
	}
	// The RTLS endpoints: without feature rtls they answer 400, in the
	// documented error shape.
	for _, p := range []string{"/api/v1/integration/beacons", "/api/v1/integration/beacons?type=watch",
		"/api/v1/integration/beacons/locations", "/api/v1/integration/beacons/PAN-A1-1/location", "/api/v1/integration/zones"} {
		var ce *clientError
		if err := c.Get(p); err != nil && !errorAs(err, &ce) {
			t.Errorf("%s: %v", p, err)
		}
	}
	// A user token is refused, in the documented error shape; the api
	// token is refused outside the integration API.
	c.token = h.token(auth.RoleUser)
	var ce *clientError
	if _, err := c.Alerts(url.Values{}); !errorAs(err, &ce) || ce.Status != http.StatusForbidden {
		t.Errorf("user token: %v, want 403", err)
	}
	c.token = ""
	if _, err := c.Alerts(url.Values{}); !errorAs(err, &ce) || ce.Status != http.StatusForbidden {
		t.Errorf("no token: %v, want 403", err)
	}
	if _, err := c.Login(email, "wrong-password-123"); !errorAs(err, &ce) || ce.Status != http.StatusUnauthorized {
		t.Errorf("bad login: %v, want 401", err)
	}
}

func errorAs(err error, target **clientError) bool {
	ce, ok := err.(*clientError)
	if ok {
		*target = ce
	}
	return ok
}

// The RTLS payloads are fixed shapes; besides the walk over the real
// routes, the document is held to hand-written samples of them, valid and
// invalid, so a loosened schema fails here.
func TestOpenAPIRTLSShapes(t *testing.T) {
	v := newOpenAPIValidator(t, integrationdocs.OpenAPI())
	seen := `{"asset_uid":"WAT-A1-1","name":"Watch 1","type":"watch","zone":{"id":3,"name":"Ward A"},"map":{"id":1,"name":"Floor 1"},` +
		`"position":{"x":1.5,"y":20},"since":1700000000000,"updated":1700000005000,"last_seen":1700000005000}`
	unseen := `{"asset_uid":"SOS-A1-2","name":"SOS 2","type":"sos","zone":null,"map":null,"position":null,"since":null,"updated":null,"last_seen":null}`
	for _, c := range []struct {
		path, payload string
		status        int
		valid         bool
	}{
		{"/api/v1/integration/beacons", `{"beacons":[{"asset_uid":"WAT-A1-1","mac":"AC233FA00001","name":"W","type":"watch","location_id":4},` +
			`{"asset_uid":"NAV-A1-2","mac":null,"name":"N","type":"navigation","location_id":null}]}`, 200, true},
		{"/api/v1/integration/beacons?type=panic", `{"beacons":[]}`, 200, true},
		{"/api/v1/integration/beacons", `{"beacons":[{"asset_uid":"W","mac":"ac233fa00001","name":"W","type":"watch","location_id":4}]}`, 200, false},
		{"/api/v1/integration/beacons", `{"beacons":[{"asset_uid":"W","mac":null,"name":"W","type":"sensor","location_id":4}]}`, 200, false},
		{"/api/v1/integration/beacons", `{"beacons":[{"asset_uid":"W","mac":null,"name":"W","type":"watch"}]}`, 200, false},
		{"/api/v1/integration/beacons/locations", `{"locations":[` + seen + `,` + unseen + `]}`, 200, true},
		{"/api/v1/integration/beacons/locations", `{"locations":[{"asset_uid":"W","name":"W","type":"watch","zone":{"id":3},"map":null,"position":null,"since":null,"updated":null,"last_seen":null}]}`, 200, false},
		{"/api/v1/integration/beacons/WAT-A1-1/location", seen, 200, true},
		{"/api/v1/integration/beacons/WAT-A1-1/location", strings.Replace(seen, `,"last_seen":1700000005000`, "", 1), 200, false},
		{"/api/v1/integration/zones", `{"zones":[{"id":3,"name":"Ward A","map_id":1,"map_name":"Floor 1","x1":0,"y1":0,"x2":10.5,"y2":8,"adjacent":[4,5]}]}`, 200, true},
		{"/api/v1/integration/zones", `{"zones":[{"id":3,"name":"Ward A","map_id":1,"map_name":"Floor 1","x1":0,"y1":0,"x2":10.5,"y2":8}]}`, 200, false},
		{"/api/v1/integration/beacons/NOPE/location", `{}`, 404, true},
		{"/api/v1/integration/zones", `{}`, 400, true},
	} {
		req := httptest.NewRequest("GET", c.path, nil)
		typ := "success"
		if c.status != 200 {
			typ = "error"
		}
		body := `{"type":"` + typ + `","message":"m","payload":` + c.payload + `}`
		resp := &http.Response{StatusCode: c.status, Header: http.Header{"Content-Type": {"application/json; charset=utf-8"}},
			Body: io.NopCloser(strings.NewReader(body)), Request: req}
		valid, errs := v.ValidateHttpResponse(req, resp)
		if valid != c.valid {
			t.Errorf("%s %d %s: valid=%v, want %v (%v)", c.path, c.status, c.payload, valid, c.valid, errs)
		}
	}
}

// TestIntegrationClientWalkRTLS walks the RTLS integration routes of a
// server with the tracking engine present, as an api account, every answer
// held to openapi.json by the validator: located and unlocated beacons,
// the type filter, one location, a 404 and the zone directory.
func TestIntegrationClientWalkRTLS(t *testing.T) {
	h := newRTLSHarness(t, WSOptions{})
	f := h.site()
	h.fake.set(rtls.Location{AssetUID: f.watch, Zone: f.ward.ID, ZoneName: "Ward", MapID: f.m.ID, X: 150, Y: 40, HasPos: true, Since: 1000, Updated: 2000})
	h.fake.lastSeen[f.watch] = 2000
	const email, password = "erp-rtls@api.local", "api-walk-password-2"
	if _, err := h.auth.CreateUser(email, password, auth.RoleAPI, false); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h.srv)
	defer srv.Close()
	c := &integrationClient{t: t, base: srv.URL, v: newOpenAPIValidator(t, integrationdocs.OpenAPI())}
	if _, err := c.Login(email, password); err != nil {
		t.Fatal(err)
	}
	var bl struct {
		Beacons []struct {
			AssetUID string `json:"asset_uid"`
		} `json:"beacons"`
	}
	if err := c.call("GET", "/api/v1/integration/beacons", nil, &bl); err != nil || len(bl.Beacons) != 3 {
		t.Fatalf("beacons: %v %+v", err, bl)
	}
	if err := c.call("GET", "/api/v1/integration/beacons?type=panic", nil, &bl); err != nil || len(bl.Beacons) != 1 {
		t.Fatalf("panic beacons: %v %+v", err, bl)
	}
	var locs struct {
		Locations []struct {
			AssetUID string `json:"asset_uid"`
			Zone     *struct {
				ID uint64 `json:"id"`
			} `json:"zone"`
		} `json:"locations"`
	}
	if err := c.call("GET", "/api/v1/integration/beacons/locations", nil, &locs); err != nil || len(locs.Locations) != 3 {
		t.Fatalf("locations: %v %+v", err, locs)
	}
	located := 0
	for _, l := range locs.Locations {
		if l.Zone != nil {
			located++
		}
	}
	if located != 1 {
		t.Errorf("%d located beacons, want 1: %+v", located, locs)
	}
	var one struct {
		Zone *struct {
			ID uint64 `json:"id"`
		} `json:"zone"`
	}
	if err := c.call("GET", "/api/v1/integration/beacons/"+f.watch+"/location", nil, &one); err != nil || one.Zone == nil || one.Zone.ID != f.ward.ID {
		t.Fatalf("one location: %v %+v", err, one)
	}
	var ce *clientError
	if err := c.call("GET", "/api/v1/integration/beacons/NOPE-1/location", nil, nil); !errorAs(err, &ce) || ce.Status != http.StatusNotFound {
		t.Fatalf("unknown beacon: %v, want 404", err)
	}
	var zs struct {
		Zones []struct {
			ID       uint64   `json:"id"`
			Adjacent []uint64 `json:"adjacent"`
		} `json:"zones"`
	}
	if err := c.call("GET", "/api/v1/integration/zones", nil, &zs); err != nil || len(zs.Zones) != 2 {
		t.Fatalf("zones: %v %+v", err, zs)
	}
}

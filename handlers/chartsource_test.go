package handlers

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"beaconhub/store"
)

// Request bodies follow the documented examples of the SimpleJSON
// datasource (grafana/simple-json-datasource README: search and query) and
// of its successor simpod-json-datasource (README: /metrics and /query with
// a payload), with the example target names replaced by our metrics and the
// range moved to where the test stores readings.
const (
	simpleJSONSearch = `{ "target": "upper_50" }`
	simpleJSONQuery  = `{
  "panelId": 1,
  "range": {
    "from": "2016-10-31T06:33:44.866Z",
    "to": "2016-10-31T12:33:44.866Z",
    "raw": { "from": "now-6h", "to": "now" }
  },
  "rangeRaw": { "from": "now-6h", "to": "now" },
  "interval": "30s",
  "intervalMs": 30000,
  "targets": [
     { "target": "Temperature", "refId": "A", "type": "timeserie" },
     { "target": "Humidity", "refId": "B", "type": "timeserie" }
  ],
  "format": "json",
  "maxDataPoints": 550
}`
	simpodMetricsEmpty = `{}`
	simpodMetrics      = `{ "metric": "DescribeMetricList", "payload": { "cloud": "cf6591c5dad211eaa22100163e06c19b", "namespace": "MySQL" } }`
	simpodQuery        = `{
  "app": "dashboard",
  "requestId": "Q102",
  "timezone": "browser",
  "panelId": 2,
  "dashboardId": null,
  "range": {
    "from": "2016-10-31T06:33:44.866Z",
    "to": "2016-10-31T12:33:44.866Z",
    "raw": { "from": "now-6h", "to": "now" }
  },
  "timeInfo": "",
  "interval": "30s",
  "intervalMs": 30000,
  "targets": [
    { "datasource": "JSON", "refId": "A", "payload": { "asset_uid": "SEN-H1-1" }, "target": "Temperature", "hide": false },
    { "datasource": "JSON", "refId": "B", "payload": {}, "target": "Battery", "hide": false }
  ],
  "maxDataPoints": 20,
  "scopedVars": {},
  "startTime": 1477895624866,
  "rangeRaw": { "from": "now-6h", "to": "now" },
  "adhocFilters": []
}`
)

type chartSeriesT struct {
	Target     string       `json:"target"`
	Datapoints [][2]float64 `json:"datapoints"`
}

func TestChartsourceProtocol(t *testing.T) {
	h := newSensorHarness(t)
	from := time.Date(2016, 10, 31, 6, 33, 44, 866e6, time.UTC).UnixMilli()
	var rs []store.Reading
	for i := int64(0); i < 6*60; i++ { // one a minute over the 6 h range
		rs = append(rs, store.Reading{UID: h.fridge.AssetUID, Metric: store.MetricTemperature, TS: from + i*60e3, Value: float64(i % 10)})
	}
	rs = append(rs, store.Reading{UID: "RAW-KEY", Metric: store.MetricTemperature, TS: from + 5, Value: 3})
	h.store(rs...)

	for _, path := range []string{"/chartsource/search", "/chartsource/metrics"} {
		for _, body := range []string{simpleJSONSearch, simpodMetricsEmpty, simpodMetrics} {
			r := h.do(req{method: "POST", path: path, body: body})
			if r.Code != http.StatusOK || strings.TrimSpace(r.Body) != `["Humidity","Temperature","Battery"]` {
				t.Fatalf("%s %s: %d %s", path, body, r.Code, r.Body)
			}
		}
	}
	if r := h.do(req{method: "GET", path: "/chartsource"}); r.Code != http.StatusOK {
		t.Fatalf("health %d", r.Code)
	}

	var got []chartSeriesT
	r := h.do(req{method: "POST", path: "/chartsource/query", body: simpleJSONQuery})
	if err := json.Unmarshal([]byte(r.Body), &got); err != nil || r.Code != http.StatusOK {
		t.Fatalf("query %d %s", r.Code, r.Body)
	}
	// Temperature: the known fridge by name, the unknown key raw; humidity
	// has no series at all, so one empty series.
	if len(got) != 3 || got[0].Target != "RAW-KEY" || got[1].Target != "Temperature - Fridge 1" || got[2].Target != "Humidity" {
		t.Fatalf("targets %+v", got)
	}
	if len(got[1].Datapoints) != 360 || got[1].Datapoints[0] != [2]float64{0, float64(from)} || len(got[2].Datapoints) != 0 {
		t.Fatalf("fridge %d points, first %v", len(got[1].Datapoints), got[1].Datapoints[0])
	}

	got = nil
	r = h.do(req{method: "POST", path: "/chartsource/query", body: simpodQuery})
	if err := json.Unmarshal([]byte(r.Body), &got); err != nil || r.Code != http.StatusOK {
		t.Fatalf("simpod query %d %s", r.Code, r.Body)
	}
	if len(got) != 2 || got[0].Target != "Temperature - Fridge 1" || len(got[0].Datapoints) == 0 || len(got[0].Datapoints) > 20 {
		t.Fatalf("simpod %+v", got)
	}
	if got[1].Target != "Battery" || len(got[1].Datapoints) != 0 {
		t.Fatalf("battery %+v", got[1])
	}
	// Downsampled points are the latest of their bucket: the last is the
	// last reading of the range.
	last := got[0].Datapoints[len(got[0].Datapoints)-1]
	if last[1] != float64(from+359*60e3) {
		t.Fatalf("last point %v", last)
	}

	// A range with nothing in it gives empty series, not an error.
	empty := strings.ReplaceAll(simpleJSONQuery, "2016-10-31", "2015-10-31")
	r = h.do(req{method: "POST", path: "/chartsource/query", body: empty})
	if r.Code != http.StatusOK || strings.Contains(r.Body, "[[") {
		t.Fatalf("empty range %d %s", r.Code, r.Body)
	}
	h.do(req{method: "POST", path: "/chartsource/query", body: `{"targets":[{"target":"Pressure"}]}`}).expect(t, http.StatusBadRequest)
	// A payload asset_uid that is no uid is refused, not ignored (every
	// series came back: a black-box check); null is no filter.
	h.do(req{method: "POST", path: "/chartsource/query", body: `{"targets":[{"target":"Temperature","payload":{"asset_uid":5}}]}`}).expect(t, http.StatusBadRequest)
	h.do(req{method: "POST", path: "/chartsource/query", body: `{"targets":[{"target":"Temperature","payload":{"asset_uid":null}}]}`}).expect(t, http.StatusOK)
	// The largest range end is accepted (its +1 overflowed to before from).
	h.do(req{method: "POST", path: "/chartsource/query", body: `{"range":{"from":1,"to":9223372036854775807},"targets":[{"target":"Temperature"}]}`}).expect(t, http.StatusOK)
	h.do(req{method: "POST", path: "/chartsource/query", body: `not json`}).expect(t, http.StatusBadRequest)
}

func TestChartsourceLoopbackRule(t *testing.T) {
	h := newSensorHarness(t)
	remote := "192.0.2.10:41000"
	cases := []struct {
		name   string
		r      req
		status int
	}{
		{"ipv4 loopback", req{remote: "127.0.0.1:5000"}, 200},
		{"other loopback", req{remote: "127.9.9.9:5000"}, 200},
		{"ipv6 loopback", req{remote: "[::1]:5000"}, 200},
		{"remote without token", req{remote: remote}, 401},
		{"remote forging X-Forwarded-For", req{remote: remote, header: map[string]string{"X-Forwarded-For": "127.0.0.1", "X-Real-IP": "127.0.0.1"}}, 401},
		{"remote bad token", req{remote: remote, token: "not-a-jwt"}, 403},
		{"remote api account", req{remote: remote, token: h.token("api")}, 403},
		{"remote user", req{remote: remote, token: h.token("user")}, 200},
	}
	for _, c := range cases {
		for _, ep := range []struct{ method, path, body string }{
			{"GET", "/chartsource", ""}, {"POST", "/chartsource/search", simpleJSONSearch},
			{"POST", "/chartsource/metrics", simpodMetricsEmpty}, {"POST", "/chartsource/query", simpleJSONQuery},
		} {
			r := c.r
			r.method, r.path = ep.method, ep.path
			if ep.body != "" {
				r.body = ep.body
			}
			if got := h.do(r); got.Code != c.status {
				t.Errorf("%s %s %s: %d, want %d (%s)", c.name, ep.method, ep.path, got.Code, c.status, got.Body)
			}
		}
	}
	// The older SimpleJSON plugin tests the connection at URL + "/".
	if r := h.do(req{method: "GET", path: "/chartsource/"}); r.Code != http.StatusOK || !strings.Contains(r.Body, `"ok"`) {
		t.Errorf("GET /chartsource/: %d %s", r.Code, r.Body)
	}
	for _, p := range []string{"/chartsource/query/extra", "/chartsource/search/x", "/chartsource/annotations", "/api/v1/chartsource"} {
		if r := h.do(req{method: "POST", path: p, body: "{}"}); r.Code != http.StatusNotFound && r.Code != http.StatusMethodNotAllowed {
			t.Errorf("POST %s: %d", p, r.Code)
		}
		if r := h.do(req{method: "GET", path: p}); r.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d", p, r.Code)
		}
	}
}

// With the feature sensors off the connection test fails as the queries
// do: it said ok, and every panel then failed (a black-box check).
func TestChartsourceWithoutSensorsFailsItsConnectionTest(t *testing.T) {
	h := newHarness(t)
	for _, ep := range []struct{ method, path, body string }{
		{"GET", "/chartsource", ""}, {"GET", "/chartsource/", ""},
		{"POST", "/chartsource/search", simpleJSONSearch}, {"POST", "/chartsource/metrics", simpodMetricsEmpty},
		{"POST", "/chartsource/query", simpleJSONQuery},
	} {
		r := h.do(req{method: ep.method, path: ep.path, body: ep.body, remote: "127.0.0.1:5000"})
		if r.Code != http.StatusBadRequest || !strings.Contains(r.Body, "feature sensors is not enabled") {
			t.Errorf("%s %s without the feature: %d %s", ep.method, ep.path, r.Code, r.Body)
		}
	}
}

// A remote dashboard with the token of a site-bound account sees only the
// sensors homed in its scope, as /sensors/history shows them: the query
// answered every site's series (a black-box check). Naming an
// out-of-scope uid gives what an unknown uid gives. Loopback stays the
// box itself.
func TestChartsourceFollowsLocationScope(t *testing.T) {
	h := newSensorHarness(t)
	_, now := h.wardUser()
	query := func(remote, token, payload string) []string {
		t.Helper()
		body := `{"range":{"from":` + itoa(uint64(now-60000)) + `,"to":` + itoa(uint64(now)) + `},"targets":[{"target":"Temperature","refId":"A"` + payload + `}]}`
		r := h.do(req{method: "POST", path: "/chartsource/query", remote: remote, token: token, body: body}).expect(t, http.StatusOK)
		var out []chartSeriesT
		if err := json.Unmarshal([]byte(r.Body), &out); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range out {
			got = append(got, s.Target+":"+itoa(uint64(len(s.Datapoints))))
		}
		return got
	}
	remote, user := "192.0.2.10:41000", h.token("user")
	if got := strings.Join(query(remote, user, ""), ","); got != "Temperature - Ward fridge:1" {
		t.Errorf("ward user sees %s", got)
	}
	if got := strings.Join(query(remote, user, `,"payload":{"asset_uid":"`+h.fridge.AssetUID+`"}`), ","); got != "Temperature:0" {
		t.Errorf("ward user naming another site's sensor sees %s", got)
	}
	if got := query(remote, h.token("admin"), ""); len(got) != 2 {
		t.Errorf("admin sees %v", got)
	}
	if got := query("127.0.0.1:5000", "", ""); len(got) != 2 {
		t.Errorf("loopback sees %v", got)
	}
}

package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/auth"
	"beaconhub/appliance/sensors"

	"github.com/julienschmidt/httprouter"
)

// The chart datasource speaks Grafana's JSON datasource protocols: the
// SimpleJSON plugin (GET /, POST /search, POST /query) and its successor
// simpod-json-datasource (POST /metrics, targets carrying a payload). Its
// answers are the bare JSON those plugins parse, not the API envelope.

// chartDefaultPoints is maxDataPoints when a request omits it.
const chartDefaultPoints = 1000

// chartMaxBody bounds a chartsource request body.
const chartMaxBody = 1 << 20

// chartGuard is the loopback-or-JWT rule. The routes are registered with
// guard None because the rule depends on the peer address: a dashboard
// tool on the same box needs no account. Only r.RemoteAddr counts:
// X-Forwarded-For and friends are set by the client and would let anyone
// claim to be local.
func (s *Server) chartGuard(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
		if !isLoopback(r.RemoteAddr) {
			tok := bearer(r)
			if tok == "" || s.deps.Auth == nil {
				w.Header().Set("WWW-Authenticate", `Bearer realm="chartsource"`)
				return apperr.Unauthorized(msgAuthRequired)
			}
			claims, err := s.deps.Auth.Verify(tok)
			if err != nil || claims.MustChangePassword || claims.Role == auth.RoleAPI {
				return apperr.Forbidden(msgAuthRequired)
			}
			// The account's location scope applies (chartQuery), as on
			// /sensors/history: without it a site-bound account saw
			// every site's sensors here (a black-box check).
			r = r.WithContext(context.WithValue(r.Context(), claimsKey{}, claims))
		}
		return h(w, r, p)
	}
}

// isLoopback reports whether a RemoteAddr ("host:port") is 127.0.0.0/8 or
// ::1 (including IPv4-mapped loopback).
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func writeRawJSON(w http.ResponseWriter, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(data)
	return nil
}

// chartHealth is GET /chartsource (and /chartsource/, where the older
// SimpleJSON plugin's test asks), the plugins' "Test connection". It fails
// as the queries would when the feature sensors is off: an ok there was
// followed by every panel failing (a black-box check).
func (s *Server) chartHealth(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if _, err := s.sensorsService(); err != nil {
		return err
	}
	return writeRawJSON(w, map[string]string{"status": "ok"})
}

// chartSearch is POST /chartsource/search and its alias /metrics. Both
// plugins accept a plain array of names; the body ({"target": ...} or
// {"metric": ..., "payload": ...}) does not narrow the three metrics.
func (s *Server) chartSearch(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if _, err := s.sensorsService(); err != nil {
		return err
	}
	return writeRawJSON(w, sensors.MetricNames[1:])
}

// chartTime accepts an RFC 3339 string (what both plugins send) or Unix ms.
type chartTime int64

func (t *chartTime) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		if tm, err := time.Parse(time.RFC3339Nano, s); err == nil {
			*t = chartTime(tm.UnixMilli())
			return nil
		}
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			*t = chartTime(n)
			return nil
		}
		return apperr.InvalidField("range", "range times must be RFC 3339 or Unix ms")
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return apperr.InvalidField("range", "range times must be RFC 3339 or Unix ms")
	}
	*t = chartTime(n)
	return nil
}

type chartQuery struct {
	Range struct {
		From chartTime `json:"from"`
		To   chartTime `json:"to"`
	} `json:"range"`
	IntervalMs    int64 `json:"intervalMs"`
	MaxDataPoints int   `json:"maxDataPoints"`
	Targets       []struct {
		Target string `json:"target"`
		RefID  string `json:"refId"`
		Hide   bool   `json:"hide"`
		// Payload (successor plugin) may narrow the series to assets:
		// {"asset_uid": "S-1"} or {"asset_uid": ["S-1", "S-2"]}.
		Payload json.RawMessage `json:"payload"`
	} `json:"targets"`
}

// chartSeries is one SimpleJSON time series; datapoints are [value, ms].
type chartSeries struct {
	Target     string       `json:"target"`
	RefID      string       `json:"refId,omitempty"`
	Datapoints [][2]float64 `json:"datapoints"`
}

// payloadUIDs reads the optional asset filter of a target payload (an
// object, or a JSON string holding one, as the successor's editor sends).
// An asset_uid that is neither is refused: ignored, a panel narrowed by
// mistake to a number showed every sensor's series (a black-box check).
func payloadUIDs(raw json.RawMessage) ([]string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		raw = json.RawMessage(s)
	}
	var p struct {
		AssetUID json.RawMessage `json:"asset_uid"`
	}
	if json.Unmarshal(raw, &p) != nil || len(p.AssetUID) == 0 || string(p.AssetUID) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(p.AssetUID, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if json.Unmarshal(p.AssetUID, &many) != nil {
		return nil, apperr.InvalidField("payload", "payload.asset_uid must be an asset_uid or an array of them")
	}
	return many, nil
}

// chartQuery is POST /chartsource/query: one series per history key of
// each target metric, labelled "<metric> - <beacon name>" (the raw key when
// the beacon is unknown).
func (s *Server) chartQuery(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	svc, err := s.sensorsService()
	if err != nil {
		return err
	}
	var q chartQuery
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, chartMaxBody)).Decode(&q); err != nil {
		var mbe *http.MaxBytesError
		if _, isApp := apperr.As(err); isApp || errors.As(err, &mbe) {
			return err
		}
		return apperr.Invalid("request body must be a JSON datasource query")
	}
	from, to := int64(q.Range.From), int64(q.Range.To)
	if to == 0 {
		to = svc.Now()
	}
	if to < math.MaxInt64 {
		to++ // Grafana's range is inclusive of its end (the largest cannot be passed)
	}
	if from >= to {
		return apperr.InvalidField("range", "range.from must be before range.to")
	}
	maxPts := q.MaxDataPoints
	if maxPts <= 0 {
		maxPts = chartDefaultPoints
	}
	maxPts = min(maxPts, sensors.RowCap)
	beacons, err := svc.Beacons()
	if err != nil {
		return err
	}
	allowed := func(string) bool { return true } // loopback: the box itself
	if claimsFrom(r) != nil {
		if allowed, err = s.sensorScope(r, svc); err != nil {
			return err
		}
	}
	out := []chartSeries{}
	for _, t := range q.Targets {
		if t.Hide {
			continue
		}
		metric, err := parseMetric(strings.TrimSpace(t.Target))
		if err != nil || metric == 0 {
			return apperr.InvalidField("target", "target must be Humidity, Temperature or Battery")
		}
		name := sensors.MetricNames[metric]
		uids, err := payloadUIDs(t.Payload)
		if err != nil {
			return err
		}
		keys, err := sensors.Keys(svc.DB, uids, metric)
		if err != nil {
			return err
		}
		keys = slices.DeleteFunc(keys, func(k sensors.Key) bool { return !allowed(k.UID) })
		if len(keys) == 0 {
			out = append(out, chartSeries{Target: name, RefID: t.RefID, Datapoints: [][2]float64{}})
			continue
		}
		for _, k := range keys {
			label := k.UID
			if b, ok := beacons[k.UID]; ok && b.Name != "" {
				label = name + " - " + b.Name
			}
			rows, err := sensors.Points(svc.DB, k, from, to, maxPts, q.IntervalMs)
			if err != nil {
				return err
			}
			cs := chartSeries{Target: label, RefID: t.RefID, Datapoints: make([][2]float64, len(rows))}
			for i, row := range rows {
				cs.Datapoints[i] = [2]float64{row.Value, float64(row.TS)}
			}
			out = append(out, cs)
		}
	}
	return writeRawJSON(w, out)
}

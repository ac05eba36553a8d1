// Package handlers is BeaconHub's HTTP surface: the route table
// (routes.go, every method, path and guard on one screen), middleware and
// guards, the error writer that maps the apperr catalogue to statuses and
// the {type, message, payload} envelope, one file per resource group, and
// the static frontend.
package handlers

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"beaconhub/appliance/apperr"
)

// envelope is the shape of every JSON response.
type envelope struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Payload any    `json:"payload"`
}

func writeJSON(w http.ResponseWriter, status int, message string, payload any) {
	if payload == nil {
		payload = struct{}{}
	}
	data, err := json.Marshal(envelope{Type: "success", Message: message, Payload: payload})
	if err != nil {
		status = http.StatusInternalServerError
		data = []byte(`{"type":"error","message":"internal error","payload":{}}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

func ok(w http.ResponseWriter, payload any) error {
	writeJSON(w, http.StatusOK, "ok", payload)
	return nil
}

func created(w http.ResponseWriter, payload any) error {
	writeJSON(w, http.StatusCreated, "created", payload)
	return nil
}

var statusOf = map[apperr.Kind]int{
	apperr.KindInvalid:      http.StatusBadRequest,
	apperr.KindUnauthorized: http.StatusUnauthorized,
	apperr.KindForbidden:    http.StatusForbidden,
	apperr.KindNotFound:     http.StatusNotFound,
	apperr.KindConflict:     http.StatusConflict,
	apperr.KindTooLarge:     http.StatusRequestEntityTooLarge,
	apperr.KindTooMany:      http.StatusTooManyRequests,
	apperr.KindUnavailable:  http.StatusServiceUnavailable,
}

// writeError turns err into the error envelope. Plain errors are internal:
// logged with their text, answered with a generic message.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		err = apperr.TooLarge("request body is larger than %d bytes", mbe.Limit)
	}
	e, isApp := apperr.As(err)
	status := http.StatusInternalServerError
	msg := "internal error"
	payload := map[string]any{}
	if isApp {
		if s, ok := statusOf[e.Kind]; ok {
			status, msg = s, e.Msg
			if e.Field != "" {
				payload["field"] = e.Field
			}
			for k, v := range e.Details {
				payload[k] = v
			}
			if e.Kind == apperr.KindTooMany && e.RetryAfter > 0 {
				secs := int((e.RetryAfter + 999_999_999) / 1_000_000_000)
				w.Header().Set("Retry-After", strconv.Itoa(secs))
			}
		}
	}
	switch {
	case status == http.StatusServiceUnavailable:
		// A feature not configured, a connection limit, shutdown: states
		// the server chose, not faults, and a client polling a disabled
		// feature filled the log with errors (a review).
		log.Warn("request refused: unavailable", "route", routeOf(r), "method", r.Method, "err", err)
	case status >= 500:
		log.Error("request failed", "route", routeOf(r), "method", r.Method, "err", err)
	default:
		log.Debug("request refused", "route", routeOf(r), "method", r.Method, "status", status, "err", err)
	}
	data, _ := json.Marshal(envelope{Type: "error", Message: msg, Payload: payload})
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

func routeOf(r *http.Request) string {
	if rt, ok := r.Context().Value(routeKey{}).(string); ok {
		return rt
	}
	return r.URL.Path
}

// maxBody is the default limit for JSON request bodies.
const maxBody = 1 << 20

// decode reads a JSON body strictly: size-limited, one object, unknown
// fields rejected, nothing after it.
func decode(w http.ResponseWriter, r *http.Request, dst any) error {
	body := http.MaxBytesReader(w, r.Body, maxBody)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		if errors.Is(err, io.EOF) {
			return apperr.Invalid("request body is empty")
		}
		// A value of the wrong type names its field, as every other
		// invalid field does (docs/api.md: payload.field).
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) && ute.Field != "" {
			return apperr.InvalidField(ute.Field, "malformed JSON body: %s", jsonErrText(err))
		}
		return apperr.Invalid("malformed JSON body: %s", jsonErrText(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return apperr.Invalid("malformed JSON body: unexpected data after the object")
	}
	return nil
}

// noBody is decode for a route that takes no input: an empty body or
// {} only, so a body meant for another route is refused, not ignored
// ({"x":1} ran remint apply: a black-box check).
func noBody(w http.ResponseWriter, r *http.Request) error {
	var none struct{}
	if err := decode(w, r, &none); err != nil && !isEmptyBody(err) {
		return err
	}
	return nil
}

// jsonErrText keeps decoder messages useful but free of Go type names.
func jsonErrText(err error) string {
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		if ute.Field == "" {
			// The body itself, an array or a string where an object
			// belongs: "field  has the wrong type" named nothing.
			return "the body must be a JSON object, not " + ute.Value
		}
		if strings.HasPrefix(ute.Value, "number") && ute.Type != nil {
			switch ute.Type.Kind() {
			case reflect.Float32, reflect.Float64, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
				// A number the field's type cannot hold (1e309, or a
				// fraction or negative for an integer or count): the type
				// was right, the value not.
				return "field " + ute.Field + " is out of range or not a whole number where one is needed"
			}
		}
		return "field " + ute.Field + " has the wrong type"
	}
	s := err.Error()
	s = strings.TrimPrefix(s, "json: ")
	if len(s) > 120 {
		s = s[:120]
	}
	return s
}

// nonNil is s, or an empty list for nil: a list in a payload is [] when
// empty, never null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Package apperr is the typed error catalogue shared by the domain and HTTP
// layers: domain code says what went wrong (invalid input, not found,
// conflict...), and the HTTP error writer maps the kind to a status. The
// message is written for the client, so it never carries internal detail.
package apperr

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Kind classifies an error for the client.
type Kind int

// Error kinds and the status each maps to.
const (
	KindInternal     Kind = iota // 500, message replaced
	KindInvalid                  // 400
	KindUnauthorized             // 401
	KindForbidden                // 403
	KindNotFound                 // 404
	KindConflict                 // 409
	KindTooLarge                 // 413
	KindTooMany                  // 429
	KindUnavailable              // 503
)

// Error is a client-facing error.
type Error struct {
	Kind       Kind
	Msg        string
	Field      string         // offending field or key, when there is one
	Details    map[string]any // extra payload (e.g. incompatible_components)
	RetryAfter time.Duration  // for KindTooMany
	Err        error          // wrapped cause, never shown to the client
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

func mk(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...)}
}

// Invalid is a 400: the request is malformed or fails validation.
func Invalid(format string, args ...any) *Error { return mk(KindInvalid, format, args...) }

// InvalidField is a 400 naming the field at fault.
func InvalidField(field, format string, args ...any) *Error {
	e := mk(KindInvalid, format, args...)
	e.Field = field
	return e
}

// CleanName trims a display name (of a map, zone, location, floor,
// asset or template) and checks it: 1 to max characters, not bytes, and
// no control character. Names are drawn on e-ink displays and app
// screens and written to CSV exports and logs, where a newline or an
// escape sequence breaks the line it is in (a review stored a zone named
// "\u0000\u0007").
func CleanName(field, raw string, max int) (string, error) {
	n := strings.TrimSpace(raw)
	if n == "" || utf8.RuneCountInString(n) > max {
		return "", InvalidField(field, "%s must be 1 to %d characters", field, max)
	}
	if BreaksALine(n) {
		return "", InvalidField(field, "%s may not contain control characters or line breaks (newlines, tabs, escapes)", field)
	}
	return n, nil
}

// BreaksALine reports whether s holds a control character or a line or
// paragraph separator (U+2028, U+2029: they break a line as a newline
// does, and are not control characters to unicode).
func BreaksALine(s string) bool { return strings.IndexFunc(s, breaks) >= 0 }

func breaks(r rune) bool { return unicode.IsControl(r) || unicode.In(r, unicode.Zl, unicode.Zp) }

// MendLine turns every run of the characters BreaksALine finds into one
// space, for text stored before a rule refused them that must now be
// carried forward (a template cloned from one stored so).
func MendLine(s string) string {
	var b strings.Builder
	gap := false
	for _, r := range s {
		if breaks(r) {
			gap = true
			continue
		}
		if gap && b.Len() > 0 {
			b.WriteByte(' ')
		}
		gap = false
		b.WriteRune(r)
	}
	return b.String()
}

// Unauthorized is a 401.
func Unauthorized(format string, args ...any) *Error { return mk(KindUnauthorized, format, args...) }

// Forbidden is a 403.
func Forbidden(format string, args ...any) *Error { return mk(KindForbidden, format, args...) }

// NotFound is a 404.
func NotFound(format string, args ...any) *Error { return mk(KindNotFound, format, args...) }

// Conflict is a 409.
func Conflict(format string, args ...any) *Error { return mk(KindConflict, format, args...) }

// TooLarge is a 413.
func TooLarge(format string, args ...any) *Error { return mk(KindTooLarge, format, args...) }

// TooMany is a 429 with a retry hint.
func TooMany(retry time.Duration, format string, args ...any) *Error {
	e := mk(KindTooMany, format, args...)
	e.RetryAfter = retry
	return e
}

// Unavailable is a 503.
func Unavailable(format string, args ...any) *Error { return mk(KindUnavailable, format, args...) }

// As extracts an *Error; ok is false for plain (internal) errors.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// KindOf returns the kind of err (KindInternal for plain errors).
func KindOf(err error) Kind {
	if e, ok := As(err); ok {
		return e.Kind
	}
	return KindInternal
}

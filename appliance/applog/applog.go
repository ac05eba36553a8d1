// Package applog owns the application log (who created, changed or deleted
// what, and at verbose level logins and tool use), gated live by
// server_log_verbosity, and the process's slog setup, which redacts any
// attribute whose name looks like a secret.
package applog

import (
	"log/slog"
	"strings"

	"beaconhub/appliance/clock"
	"beaconhub/appliance/config"
	"beaconhub/store"
)

// Level of an application-log record.
type Level int

// Normal records changes to users, beacons, gateways, locations, maps,
// floors, nodes, edges, navigation tokens and settings. Verbose adds logins
// and tool use.
const (
	Normal Level = iota + 1
	Verbose
)

// Log writes application-log records.
type Log struct {
	db    *store.DB
	live  *config.Live
	clock clock.Clock
	slog  *slog.Logger
}

// New returns an application log.
func New(db *store.DB, live *config.Live, c clock.Clock, l *slog.Logger) *Log {
	return &Log{db: db, live: live, clock: c, slog: l}
}

func (l *Log) enabled(level Level) bool {
	switch l.live.Get().LogVerbosity {
	case "none":
		return false
	case "normal":
		return level == Normal
	default:
		return true
	}
}

// Record stores one entry when the current verbosity includes level. The
// caller composes message from non-secret facts only. A failure to write is
// logged, never returned: the action it describes already happened.
func (l *Log) Record(level Level, action, subject, actor, message string) {
	if l == nil || !l.enabled(level) {
		return
	}
	r := &store.LogRecord{Time: l.clock.Now().UTC(), Action: action, Subject: subject, Actor: actor, Message: message}
	if err := l.db.AppendLog(r); err != nil {
		l.slog.Error("application log write failed", "action", action, "err", err)
	}
}

// RecordAlways stores one entry whatever the current verbosity (used when
// the change being recorded is the verbosity itself).
func (l *Log) RecordAlways(_ Level, action, subject, actor, message string) {
	if l == nil {
		return
	}
	r := &store.LogRecord{Time: l.clock.Now().UTC(), Action: action, Subject: subject, Actor: actor, Message: message}
	if err := l.db.AppendLog(r); err != nil {
		l.slog.Error("application log write failed", "action", action, "err", err)
	}
}

// List returns records newest first.
func (l *Log) List(before uint64, limit int) ([]store.LogRecord, uint64, error) {
	return l.db.ListLogs(before, limit)
}

// secretish names of attributes that must never reach slog output.
var secretish = []string{"password", "passwd", "pass", "secret", "token", "authorization", "api_key", "apikey", "private"}

// IsSecretKey reports whether an attribute or field name looks like it
// carries a secret.
func IsSecretKey(k string) bool {
	k = strings.ToLower(k)
	for _, s := range secretish {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// Redact is a slog ReplaceAttr that masks secret-looking attributes.
func Redact(_ []string, a slog.Attr) slog.Attr {
	if IsSecretKey(a.Key) {
		return slog.String(a.Key, "[redacted]")
	}
	return a
}

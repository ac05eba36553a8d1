package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
)

// Live holds the running configuration. Readers call Get for the current
// snapshot (never mutate it); settings changes go through Patch, which
// validates, persists and swaps atomically, then notifies subscribers so
// subsystems that cache a value can pick up the new one at once.
type Live struct {
	mu    sync.Mutex // serialises writers
	cur   atomic.Pointer[Config]
	path  string
	extra map[string]any
	// pinned are file values of keys the environment overrides; writes
	// keep them so the environment never leaks into the file.
	pinned map[string]any
	subs   []func(old, new *Config)
}

// Pin records the file's values of environment-overridden keys.
func (l *Live) Pin(fileValues map[string]any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pinned = fileValues
}

// NewLive wraps a loaded config; path is where Patch persists (empty: memory only).
func NewLive(c *Config, extra map[string]any, path string) *Live {
	l := &Live{path: path, extra: extra}
	l.cur.Store(c)
	return l
}

// Get returns the current configuration snapshot.
func (l *Live) Get() *Config { return l.cur.Load() }

// Subscribe registers fn to run after every successful change.
func (l *Live) Subscribe(fn func(old, new *Config)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.subs = append(l.subs, fn)
}

// NotEditableError is returned when a PATCH names a key that is not UI-editable.
type NotEditableError struct{ Key string }

func (e *NotEditableError) Error() string {
	if _, ok := Lookup(e.Key); !ok {
		return fmt.Sprintf("unknown setting %s", e.Key)
	}
	return fmt.Sprintf("setting %s is read-only here; edit the configuration file and restart", e.Key)
}

// Patch applies UI-editable changes. Either every change applies or none.
// It returns the keys whose value actually changed.
func (l *Live) Patch(changes map[string]json.RawMessage) ([]string, error) {
	l.mu.Lock()
	old := l.cur.Load()
	next := old.Clone()
	keys := make([]string, 0, len(changes))
	for k := range changes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var changed []string
	for _, k := range keys {
		o, ok := Lookup(k)
		if !ok || !o.UI {
			l.mu.Unlock()
			return nil, &NotEditableError{Key: k}
		}
		dec := json.NewDecoder(bytes.NewReader(changes[k]))
		dec.UseNumber()
		var raw any
		if err := dec.Decode(&raw); err != nil {
			l.mu.Unlock()
			return nil, &ValidationError{Key: k, Msg: "is not a JSON value"}
		}
		// A masked secret sent back unchanged by a form means "keep".
		if o.Secret && raw == Mask {
			continue
		}
		if str, ok := raw.(string); ok && o.URL && str != fmt.Sprint(old.Get(k)) && str == maskURL(fmt.Sprint(old.Get(k))) {
			continue // a URL shown with its credentials masked, sent back
		}
		// A value sent back as it stands is a "keep" too: one kept at load
		// though it fails today's check (Degrade) would otherwise refuse
		// the whole form it came back in (a review).
		if v, err := coerce(o, raw); err == nil && fmt.Sprint(v) == fmt.Sprint(old.Get(k)) {
			continue
		}
		if err := next.apply(o, raw); err != nil {
			l.mu.Unlock()
			return nil, err
		}
		if fmt.Sprint(old.Get(k)) != fmt.Sprint(next.Get(k)) {
			changed = append(changed, k)
		}
	}
	if len(changed) == 0 {
		l.mu.Unlock()
		return nil, nil
	}
	if l.path != "" {
		set := make(map[string]any, len(changed))
		for _, k := range changed {
			if _, env := l.pinned[k]; !env { // the file keeps its own value of a key the environment overrides
				set[k] = next.Get(k)
			}
		}
		if err := PatchFile(l.path, set, FileValues(next, l.pinned), l.extra); err != nil {
			l.mu.Unlock()
			return nil, err
		}
	}
	l.cur.Store(next)
	subs := append([]func(old, new *Config){}, l.subs...)
	l.mu.Unlock()
	for _, fn := range subs {
		fn(old, next)
	}
	return changed, nil
}

// Groups splits the masked view into editable and read-only groups, the
// shape GET /api/v1/settings returns.
func (l *Live) Groups() (editable, readOnly map[string]any) {
	m := l.Get().Masked()
	editable, readOnly = map[string]any{}, map[string]any{}
	for _, o := range Options {
		v, ok := m[o.Key]
		if !ok {
			continue
		}
		if o.UI {
			editable[o.Key] = v
		} else {
			readOnly[o.Key] = v
		}
	}
	return editable, readOnly
}

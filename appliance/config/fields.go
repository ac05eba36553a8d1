package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"strings"
)

// fieldIndex maps each key to its Config struct field, built once.
var fieldIndex = func() map[string]int {
	m := map[string]int{}
	t := reflect.TypeOf(Config{})
	for i := 0; i < t.NumField(); i++ {
		tag := strings.Split(t.Field(i).Tag.Get("json"), ",")[0]
		m[tag] = i
	}
	for _, o := range Options {
		if _, ok := m[o.Key]; !ok {
			panic("config: option without a Config field: " + o.Key)
		}
	}
	return m
}()

// Get returns the value of key in c as a plain Go value.
func (c *Config) Get(key string) any {
	i, ok := fieldIndex[key]
	if !ok {
		return nil
	}
	v := reflect.ValueOf(c).Elem().Field(i).Interface()
	if ss, ok := v.([]string); ok {
		// Never nil: an empty list is written back as [], not null
		// (which the next load would take for a missing key).
		return append(make([]string, 0, len(ss)), ss...)
	}
	return v
}

func (c *Config) set(key string, v any) {
	reflect.ValueOf(c).Elem().Field(fieldIndex[key]).Set(reflect.ValueOf(v))
}

// ValidationError names the key and the offending value (never a secret's).
type ValidationError struct {
	Key   string
	Value string
	Msg   string
}

func (e *ValidationError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("config %s: %s", e.Key, e.Msg)
	}
	return fmt.Sprintf("config %s = %s: %s", e.Key, e.Value, e.Msg)
}

func shown(o Option, raw any) string {
	if o.Secret {
		return ""
	}
	if o.URL {
		raw = maskURLs(raw)
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return fmt.Sprint(raw)
	}
	if len(b) > 80 {
		b = append(b[:77], "..."...)
	}
	return string(b)
}

// maskURLs masks URL credentials wherever a value holds a string: a
// list or object sent where a URL belongs showed the URL in it, password
// and all, in its refusal (a review).
func maskURLs(v any) any {
	switch x := v.(type) {
	case string:
		return maskURL(x)
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = maskURLs(x[i])
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[maskURL(k)] = maskURLs(e)
		}
		return out
	}
	return v
}

// coerce turns a decoded JSON value into the option's Go type, strictly: a
// string where a number belongs is an error, not a zero.
func coerce(o Option, raw any) (any, error) {
	bad := func(want string) error {
		return &ValidationError{Key: o.Key, Value: shown(o, raw), Msg: "must be " + want}
	}
	switch o.Kind {
	case KindString:
		s, ok := raw.(string)
		if !ok {
			return nil, bad("a string")
		}
		return s, nil
	case KindBool:
		b, ok := raw.(bool)
		if !ok {
			return nil, bad("true or false")
		}
		return b, nil
	case KindInt:
		var f float64
		switch n := raw.(type) {
		case float64:
			f = n
		case int:
			f = float64(n)
		case int64:
			f = float64(n)
		case json.Number:
			x, err := n.Float64()
			if err != nil {
				return nil, bad("an integer")
			}
			f = x
		default:
			return nil, bad("an integer")
		}
		if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return nil, bad("an integer")
		}
		return int(f), nil
	case KindStrings:
		arr, ok := raw.([]any)
		if !ok {
			if ss, ok := raw.([]string); ok {
				return append([]string(nil), ss...), nil
			}
			return nil, bad("an array of strings")
		}
		out := make([]string, 0, len(arr))
		for _, e := range arr {
			s, ok := e.(string)
			if !ok {
				return nil, bad("an array of strings")
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, bad("a known type")
}

// apply coerces, validates and stores one value.
func (c *Config) apply(o Option, raw any) error {
	v, err := coerce(o, raw)
	if err != nil {
		return err
	}
	if o.Validate != nil {
		if err := o.Validate(v); err != nil {
			return &ValidationError{Key: o.Key, Value: shown(o, raw), Msg: err.Error()}
		}
	}
	c.set(o.Key, v)
	return nil
}

// applyLoaded is apply for a value loaded at start: an option with
// Degrade keeps a value that fails validation as written (res says what
// its user ignores) instead of failing the load.
func (c *Config) applyLoaded(o Option, raw any, res *LoadResult) error {
	err := c.apply(o, raw)
	var ve *ValidationError
	if err == nil || o.Degrade == nil || !errors.As(err, &ve) {
		return err
	}
	v, cerr := coerce(o, raw)
	if cerr != nil { // the wrong type: nothing to keep
		return err
	}
	why := o.Degrade(v)
	if why == "" { // a rule no release relaxed: still fatal
		return err
	}
	c.set(o.Key, v)
	res.Degraded = append(res.Degraded, o.Key+": "+why)
	return nil
}

// Defaults returns a Config with every key at its brand default.
func Defaults(b Brand) *Config {
	c := &Config{}
	for _, o := range Options {
		c.set(o.Key, o.Default(b))
	}
	return c
}

// Validate checks every key of c.
func (c *Config) Validate() error {
	for _, o := range Options {
		if o.Validate == nil {
			continue
		}
		if err := o.Validate(c.Get(o.Key)); err != nil {
			return &ValidationError{Key: o.Key, Value: shown(o, c.Get(o.Key)), Msg: err.Error()}
		}
	}
	return nil
}

// Masked returns key -> value with secrets replaced by a mask that says
// only whether the secret is set; restricted secrets are omitted entirely.
func (c *Config) Masked() map[string]any {
	out := map[string]any{}
	for _, o := range Options {
		if o.Restricted {
			continue
		}
		v := c.Get(o.Key)
		if o.Secret {
			if v.(string) == "" {
				v = ""
			} else {
				v = Mask
			}
		} else if str, ok := v.(string); ok && o.URL {
			v = maskURL(str)
		}
		out[o.Key] = v
	}
	return out
}

// Mask stands in for a set secret wherever configuration is shown.
const Mask = "********"

// maskURL masks the credentials of a URL-valued setting (an alertsys
// base or a push server given as https://user:password@host/): the
// password, or a user given alone (often a token). A review found
// GET /settings showing them in clear. Only URL options' values are
// masked (Option.URL): a footer text with a link and a mail address
// was shown masked, and an edit of it stored the mask (a review). A
// form that sends the masked URL back unchanged keeps the stored one
// (Live.Patch).
func maskURL(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	if !strings.Contains(s, "://") {
		// Mistyped ("https:/ops:pw@host/", "//ops:pw@host"), so refused,
		// and shown in the refusal: all before the last "@" may be the
		// credential (a review).
		return Mask + s[strings.LastIndexByte(s, '@'):]
	}
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return maskAuthority(s)
	}
	cred := Mask
	if _, has := u.User.Password(); has {
		cred = url.User(u.User.Username()).String() + ":" + Mask
	}
	u.User = nil
	if strings.Contains(u.String(), "@") {
		// The user part ended early ("https://ops:Pa@ss#pw@host/": an
		// "@" and a "#" in the password): the rest of it is in what
		// follows (a review found "ss#pw" shown).
		return maskAuthority(s)
	}
	// Spliced in by hand: url.URL would escape the mask's asterisks.
	scheme, rest, _ := strings.Cut(u.String(), "://")
	return scheme + "://" + cred + "@" + rest
}

// maskAuthority masks by hand a URL that does not parse (a bad escape
// in the password, a bad port) or parses with no user although it holds
// an "@" (a "/", "?" or "#" in an unescaped password ends the authority
// early: "https://ops:12#ss@host/" parses as host ops, port 12):
// everything from "://" to the last "@". Reviews found both shown in
// clear, in validation errors (start error, config check) and, for the
// second, in the settings. An "@" that really is in a path or query
// masks that much of a harmless URL too: shown, not stored.
func maskAuthority(s string) string {
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		return s
	}
	if i := strings.Index(s, "://"); i >= 0 && i < at {
		return s[:i] + "://" + Mask + s[at:]
	}
	// Credentials typed before the scheme ("ops:pw@https://host/"): all
	// before the "@" (a review found them shown).
	return Mask + s[at:]
}

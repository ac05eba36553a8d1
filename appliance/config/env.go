package config

import (
	"strconv"
	"strings"

	"github.com/spf13/viper"
)

// EnvPrefix is the prefix of environment overrides: BEACONHUB_SERVER_HTTP_PORT
// overrides server_http_port. Overrides apply to the running process only;
// the file keeps its own values (see Pinned).
const EnvPrefix = "BEACONHUB"

// applyEnv layers environment variables over the file values through
// viper's environment binding. It returns the file's values of the keys it
// overrode, so write-backs keep them.
func applyEnv(c *Config, res *LoadResult) (map[string]any, error) {
	v := viper.New()
	v.SetEnvPrefix(EnvPrefix)
	pinned := map[string]any{}
	for _, o := range Options {
		if err := v.BindEnv(o.Key); err != nil {
			return nil, err
		}
		if !v.IsSet(o.Key) {
			continue
		}
		raw, err := envValue(o, v.GetString(o.Key))
		if err != nil {
			return nil, &ValidationError{Key: o.Key, Value: "(from $" + EnvPrefix + "_" + strings.ToUpper(o.Key) + ")", Msg: err.Error()}
		}
		before := c.Get(o.Key)
		if err := c.applyLoaded(o, raw, res); err != nil {
			return nil, err
		}
		pinned[o.Key] = before
		res.EnvKeys = append(res.EnvKeys, o.Key)
	}
	return pinned, nil
}

// envValue turns an environment string into the JSON-shaped value the
// option's coercion expects.
func envValue(o Option, s string) (any, error) {
	switch o.Kind {
	case KindInt:
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return nil, errMust("an integer")
		}
		return n, nil
	case KindBool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return nil, errMust("true or false")
		}
		return b, nil
	case KindStrings:
		var out []string
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out, nil
	}
	return s, nil
}

type mustErr string

func (e mustErr) Error() string { return "must be " + string(e) }

func errMust(what string) error { return mustErr(what) }

// FileValues is c as the file holds it: the keys the environment
// overrides (LoadResult.Pinned) set back to the file's values. Whatever
// writes the file writes this, or the overrides became the file's.
func FileValues(c *Config, pinned map[string]any) *Config {
	if len(pinned) == 0 {
		return c
	}
	cp := c.Clone()
	for k, v := range pinned {
		cp.set(k, v)
	}
	return cp
}

package config

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// Paths locates the files of an install directory ("home").
type Paths struct {
	Home string
}

// ConfigFile is home/config/main.config.json.
func (p Paths) ConfigFile() string { return filepath.Join(p.Home, "config", "main.config.json") }

// LegacyFile is the pre-8.0 location in home's root.
func (p Paths) LegacyFile() string { return filepath.Join(p.Home, "main.config.json") }

// DBFile resolves server_db_path against home.
func (p Paths) DBFile(c *Config) string { return p.Resolve(c.DBPath) }

// Resolve makes a home-relative path absolute; absolute paths stay.
func (p Paths) Resolve(rel string) string {
	if filepath.IsAbs(rel) {
		return rel
	}
	return filepath.Join(p.Home, rel)
}

// LogDir is home/logs.
func (p Paths) LogDir() string { return filepath.Join(p.Home, "logs") }

// LoadResult says what loading changed on disk, for the startup log.
type LoadResult struct {
	Migrated bool // root file moved into config/
	// StrayLegacy: a root file (the pre-8.0 place) beside the one in
	// config/, which alone is read; edits made there after the upgrade
	// were ignored without a word (an upgrade check).
	StrayLegacy   bool
	Created       bool     // no file existed; one was written with defaults
	FilledKeys    []string // keys that were missing and got defaults
	GeneratedKeys []string // secrets generated on this start
	UnknownKeys   []string // keys this binary does not know (kept in the file)
	EnvKeys       []string // keys overridden by BEACONHUB_* environment variables
	// Degraded says, per key, what of a value that failed validation was
	// ignored (Option.Degrade); the file keeps the value as written.
	Degraded []string
	// Pinned holds the file's own values of the keys the environment
	// overrides; pass it to Live.Pin so settings write-backs keep them.
	Pinned map[string]any
}

// Load reads home's configuration, migrating a root-level file, filling
// missing keys from the brand defaults (generating fresh secrets where the
// default is "generate"), validating every key, and writing the file back
// atomically with mode 0600 when anything was filled in.
func Load(p Paths, b Brand) (*Config, map[string]any, LoadResult, error) {
	return load(p, b, true)
}

// Check validates like Load but writes nothing: `config check` must not
// rewrite (or re-own) a file it was only asked to look at.
func Check(p Paths, b Brand) (*Config, map[string]any, LoadResult, error) {
	return load(p, b, false)
}

func load(p Paths, b Brand, write bool) (*Config, map[string]any, LoadResult, error) {
	var res LoadResult
	path := p.ConfigFile()
	if write { // a check (config check, audit) creates nothing
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			return nil, nil, res, fmt.Errorf("create config directory: %w", err)
		}
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) && write {
		if _, err := os.Stat(p.LegacyFile()); err == nil {
			if err := os.Rename(p.LegacyFile(), path); err != nil {
				return nil, nil, res, fmt.Errorf("migrate %s into config/: %w", p.LegacyFile(), err)
			}
			res.Migrated = true
		}
	}
	raw := map[string]any{}
	if _, err := os.Stat(p.LegacyFile()); err == nil && !res.Migrated {
		if _, err := os.Stat(path); err == nil {
			res.StrayLegacy = true
		}
	}
	if data, err := os.ReadFile(path); err == nil {
		// Plain encoding/json, not viper: viper lower-cases keys, splits
		// dotted ones and drops nulls, so unknown keys would not survive
		// the write-back as they were.
		if raw, err = parseFile(data); err != nil {
			return nil, nil, res, fmt.Errorf("read %s: %w", path, err)
		}
	} else if errors.Is(err, os.ErrNotExist) {
		res.Created = true
		if !write {
			if data, err := os.ReadFile(p.LegacyFile()); err == nil {
				if raw, err = parseFile(data); err != nil {
					return nil, nil, res, fmt.Errorf("read %s: %w", p.LegacyFile(), err)
				}
				res.Created, res.Migrated = false, true
			}
		}
	} else {
		return nil, nil, res, fmt.Errorf("read %s: %w", path, err)
	}
	c, extra, err := build(raw, b, &res)
	if err != nil {
		return nil, nil, res, err
	}
	if write && (res.Created || len(res.FilledKeys) > 0 || res.Migrated) {
		if err := WriteFile(path, c, extra); err != nil {
			return nil, nil, res, err
		}
	}
	if write {
		// A file an operator created by hand may be world-readable; it
		// holds secrets.
		if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
			_ = os.Chmod(path, 0o600)
		}
	}
	// The environment is layered last and never written back.
	if res.Pinned, err = applyEnv(c, &res); err != nil {
		return nil, nil, res, err
	}
	return c, extra, res, nil
}

// parseFile decodes the file as one JSON object, numbers kept exact.
func parseFile(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	raw := map[string]any{}
	if err := dec.Decode(&raw); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("unexpected data after the JSON object")
	}
	return raw, nil
}

// build applies raw file values over defaults.
func build(raw map[string]any, b Brand, res *LoadResult) (*Config, map[string]any, error) {
	c := Defaults(b)
	extra := map[string]any{}
	known := map[string]bool{}
	for _, o := range Options {
		known[o.Key] = true
		val, ok := raw[o.Key]
		if !ok || val == nil {
			res.FilledKeys = append(res.FilledKeys, o.Key)
			if o.Generated {
				c.set(o.Key, randomSecret())
				res.GeneratedKeys = append(res.GeneratedKeys, o.Key)
			}
			continue
		}
		if err := c.applyLoaded(o, val, res); err != nil {
			return nil, nil, err
		}
		if o.Generated && c.Get(o.Key).(string) == "" {
			c.set(o.Key, randomSecret())
			res.GeneratedKeys = append(res.GeneratedKeys, o.Key)
			res.FilledKeys = append(res.FilledKeys, o.Key)
		}
	}
	for k, v := range raw {
		if !known[k] {
			extra[k] = v
			res.UnknownKeys = append(res.UnknownKeys, k)
		}
	}
	sort.Strings(res.UnknownKeys)
	return c, extra, nil
}

// randomSecret returns 18 random bytes, URL-safe encoded (24 characters).
func randomSecret() string {
	var buf [18]byte
	if _, err := rand.Read(buf[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(buf[:])
}

// RandomSecret is exported for commands that rotate a generated secret.
func RandomSecret() string { return randomSecret() }

// WriteFile writes every key of c (plus unknown keys kept from the file)
// atomically: temp file, fsync, rename, fsync of the directory. Mode 0600
// because the file holds secrets.
func WriteFile(path string, c *Config, extra map[string]any) error {
	out := map[string]any{}
	for k, v := range extra {
		out[k] = v
	}
	for _, o := range Options {
		out[o.Key] = c.Get(o.Key)
	}
	return writeJSON(path, out)
}

// PatchFile sets keys in the file at path and leaves every other key as
// the file has it now: a settings save wrote the whole running
// configuration back, undoing edits made to the file since the start
// (a non-UI key waiting for a restart, the key `mobile-key regenerate`
// wrote: a black-box check). A file that does not exist gets c whole (as
// WriteFile); one that is not a JSON object now is left alone, and the
// save refused.
func PatchFile(path string, set map[string]any, c *Config, extra map[string]any) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return WriteFile(path, c, extra)
	}
	if err != nil {
		return fmt.Errorf("read config: %w", err)
	}
	var cur map[string]json.RawMessage
	if err := json.Unmarshal(data, &cur); err != nil || cur == nil {
		return &FileEditedError{Path: path}
	}
	out := make(map[string]any, len(cur)+len(set))
	for k, v := range cur {
		out[k] = v
	}
	for k, v := range set {
		out[k] = v
	}
	return writeJSON(path, out)
}

// FileEditedError: the configuration file is not a JSON object now, so a
// settings save cannot merge into it.
type FileEditedError struct{ Path string }

func (e *FileEditedError) Error() string {
	return "the configuration file " + e.Path + " is not a JSON object now (being edited?): fix it, then save again"
}

// writeJSON writes v as indented JSON to path atomically: temp file,
// fsync, rename, fsync of the directory.
func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".main.config.json.*")
	if err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	defer os.Remove(tmp.Name())
	keepOwner(tmp, path)
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write config: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write config: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write config: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"beaconhub/appliance/buildinfo"
	"beaconhub/appliance/config"
)

func cmdVersion(stdout io.Writer) int {
	b := config.ActiveBrand()
	fmt.Fprintf(stdout, "%s %s (commit %s, built %s, brand %s)\n", b.Product, buildinfo.Version, buildinfo.Commit, buildinfo.BuildTime, b.Name)
	return 0
}

// cmdConfigCheck validates the configuration, without writing anything,
// and prints the effective values with secrets masked.
func cmdConfigCheck(args []string, stdout, stderr io.Writer) int {
	paths, cfg, _, res, code := homeCommand("config check", args, stderr, true)
	if cfg == nil {
		return code
	}
	m := cfg.Masked()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// Still exit 0 with warnings: serve starts with them. A script
	// looks for "warning".
	_, statErr := os.Stat(paths.ConfigFile())
	n := len(res.Degraded) + len(res.UnknownKeys)
	if res.StrayLegacy {
		n++
	}
	switch {
	case errors.Is(statErr, os.ErrNotExist) && !res.Migrated:
		// "valid" of a file that is not there read as if one had been
		// checked (a black-box check: a mistyped --home passed).
		fmt.Fprintf(stdout, "# %s: no such file; every key takes its default (serve writes the file)\n", paths.ConfigFile())
	case n == 0:
		fmt.Fprintf(stdout, "# %s: valid\n", paths.ConfigFile())
	case n == 1:
		fmt.Fprintf(stdout, "# %s: valid, with 1 warning below\n", paths.ConfigFile())
	default:
		fmt.Fprintf(stdout, "# %s: valid, with %d warnings below\n", paths.ConfigFile(), n)
	}
	if res.Migrated {
		// check writes nothing: serve moves it.
		fmt.Fprintln(stdout, "# read from the home directory root; serve moves it into config/")
	}
	if len(res.FilledKeys) > 0 && statErr == nil {
		// check writes nothing: serve fills them at its start.
		fmt.Fprintf(stdout, "# %d missing keys take their defaults (serve writes them into the file)\n", len(res.FilledKeys))
	}
	for _, k := range res.UnknownKeys {
		fmt.Fprintf(stdout, "# warning: unknown key %s (kept, ignored)\n", k)
	}
	for _, d := range res.Degraded {
		fmt.Fprintf(stdout, "# warning: %s\n", d)
	}
	if res.StrayLegacy {
		fmt.Fprintf(stdout, "# warning: %s is ignored: only %s is read; merge its edits there and remove it\n", paths.LegacyFile(), paths.ConfigFile())
	}
	for _, d := range cfg.Advice(config.ActiveBrand()) {
		fmt.Fprintf(stdout, "# advice: %s\n", d)
	}
	fmt.Fprintf(stdout, "# enabled subsystems: %v\n", cfg.EnabledFeatures())
	for _, k := range keys {
		v, _ := json.Marshal(m[k])
		fmt.Fprintf(stdout, "%s = %s\n", k, v)
	}
	return 0
}

// cmdMobileKey rotates the shared mobile navigation key in the file. The
// key itself is not printed: admins read it through the API.
func cmdMobileKey(args []string, stdout, stderr io.Writer) int {
	// Only an install's own file: with a mistyped --home it made a new
	// install there, said "regenerated" and exited 0, while the real
	// one kept the old key (a black-box check).
	paths, cfg, _, res, code := homeCommand("mobile-key regenerate", args, stderr, true)
	if cfg == nil {
		return code
	}
	if _, err := os.Stat(paths.ConfigFile()); err != nil && !res.Migrated {
		fmt.Fprintf(stderr, "no configuration at %s: is --home the install directory? (nothing written)\n", paths.ConfigFile())
		return 1
	}
	paths, cfg, extra, res, code := homeCommand("mobile-key regenerate", args, stderr, false)
	if cfg == nil {
		return code
	}
	// The file's values, not the environment's overrides (a review:
	// they were written into the file).
	file := config.FileValues(cfg, res.Pinned)
	file.MobileAPIKey = config.RandomSecret()
	if err := config.WriteFile(paths.ConfigFile(), file, extra); err != nil {
		fmt.Fprintf(stderr, "write configuration: %v\n", err)
		return 1
	}
	if _, pinned := res.Pinned["server_mobile_api_key"]; pinned {
		// A restart would not apply it (a review).
		fmt.Fprintf(stdout, "server_mobile_api_key regenerated in %s; it applies only once %s_SERVER_MOBILE_API_KEY is unset (that key overrides the file's)\n",
			paths.ConfigFile(), config.EnvPrefix)
		return 0
	}
	fmt.Fprintf(stdout, "server_mobile_api_key regenerated in %s; restart beaconhub to apply, then read it with GET /api/v1/navigation/mobile-key\n", paths.ConfigFile())
	return 0
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
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
	if code != 0 {
		return code
	}
	m := cfg.Masked()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(res.Degraded) > 0 {
		// Still 0: serve starts with it. A script looks for "warning".
		fmt.Fprintf(stdout, "# %s: valid, with %d warnings below (entries ignored)\n", paths.ConfigFile(), len(res.Degraded))
	} else {
		fmt.Fprintf(stdout, "# %s: valid\n", paths.ConfigFile())
	}
	if res.Migrated {
		fmt.Fprintln(stdout, "# migrated from the home directory root into config/")
	}
	if len(res.FilledKeys) > 0 {
		fmt.Fprintf(stdout, "# %d missing keys filled with defaults and written back\n", len(res.FilledKeys))
	}
	for _, k := range res.UnknownKeys {
		fmt.Fprintf(stdout, "# warning: unknown key %s (kept, ignored)\n", k)
	}
	for _, d := range res.Degraded {
		fmt.Fprintf(stdout, "# warning: %s\n", d)
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
	paths, cfg, extra, _, code := homeCommand("mobile-key regenerate", args, stderr, false)
	if code != 0 {
		return code
	}
	cfg.MobileAPIKey = config.RandomSecret()
	if err := config.WriteFile(paths.ConfigFile(), cfg, extra); err != nil {
		fmt.Fprintf(stderr, "write configuration: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "server_mobile_api_key regenerated in %s; restart beaconhub to apply, then read it with GET /api/v1/navigation/mobile-key\n", paths.ConfigFile())
	return 0
}

// Package buildinfo carries what the linker stamps into the binary
// (version, commit, build time) for `beaconhub version` and
// GET /api/v1/version.
package buildinfo

// Set with -ldflags "-X beaconhub/appliance/buildinfo.Version=...".
var (
	Version   = "8.0.0-dev"
	Commit    = "unknown"
	BuildTime = "unknown"
)

// Command beaconhub is the BeaconHub appliance: `serve` runs it, the other
// subcommands inspect or maintain an install directory.
package main

import (
	"fmt"
	"io"
	"os"

	// Embedded zone database: the digest time zone must resolve on a box
	// without system tzdata.
	_ "time/tzdata"
)

const usage = `usage: beaconhub <command> [flags]

commands:
  serve [--home DIR] [--debug] [--http-listen ADDR]
                                   run the appliance (--http-listen: the web UI and API on one address only)
  version                          print version and brand
  config check [--home DIR]        validate and print the effective configuration (secrets masked)
  mobile-key regenerate [--home DIR]  replace server_mobile_api_key (restart to apply)
  audit [--home DIR]               post-upgrade audit: list records still keyed by a MAC (exit 1 if any, 3 if it could not look)
  api-account create NAME [--home DIR]  create an integration (api role) account; prints its password once
  loadgen [--gateways N] [--beacons N] [--duration D] [--qos 0,1]
                                   ingest benchmark on loopback (full appliance vs bare broker)
  rtls-eval [--alg a,b] [--timeout D] [--set name=value]... [--without g1,g2] DATASET_DIR
                                   score the tracking algorithms on a labelled RSSI recording
  fingerprint-eval [--k N] [--windows 0s,10s] DATASET_DIR
                                   fingerprint k-NN error on a replay dataset

--home defaults to $BEACONHUB_HOME, else the current directory.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return cmdServe(args[1:], stdout, stderr)
	case "version", "--version":
		return cmdVersion(stdout)
	case "config":
		if len(args) < 2 || args[1] != "check" {
			return groupUsage(args, stdout, stderr)
		}
		return cmdConfigCheck(args[2:], stdout, stderr)
	case "mobile-key":
		if len(args) < 2 || args[1] != "regenerate" {
			return groupUsage(args, stdout, stderr)
		}
		return cmdMobileKey(args[2:], stdout, stderr)
	case "loadgen":
		return cmdLoadgen(args[1:], stdout, stderr)
	case "audit":
		return cmdAudit(args[1:], stdout, stderr)
	case "rtls-eval":
		return cmdRTLSEval(args[1:], stdout, stderr)
	case "fingerprint-eval":
		return cmdFingerprintEval(args[1:], stdout, stderr)
	case "api-account":
		if len(args) < 2 || args[1] != "create" {
			return groupUsage(args, stdout, stderr)
		}
		return cmdAPIAccount(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "unknown command %q\n\n%s", args[0], usage)
	return 2
}

// groupUsage answers a command group ("config", "mobile-key",
// "api-account") given without its subcommand: the usage, exit 0 when
// help was asked for (it was 2, as for a mistake: a black-box check),
// else 2.
func groupUsage(args []string, stdout, stderr io.Writer) int {
	if len(args) == 2 && (isHelp(args[1]) || args[1] == "help") {
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprint(stderr, usage)
	return 2
}

// isHelp reports whether arg asks for the usage, as the flag package
// reads it.
func isHelp(arg string) bool { return arg == "-h" || arg == "--help" || arg == "-help" }

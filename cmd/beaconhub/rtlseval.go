package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"beaconhub/appliance/rtls/replay"
)

// cmdRTLSEval scores every tracking algorithm on a labelled recording in
// the replay format (docs/rtls.md, docs/performance.md).
func cmdRTLSEval(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rtls-eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	algs := fs.String("alg", "", "comma-separated algorithms (default: all)")
	timeout := fs.Duration("timeout", 60*time.Second, "not-heard timeout of the engine")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: beaconhub rtls-eval [--alg a,b] [--timeout D] DATASET_DIR")
		return 2
	}
	ds, err := replay.Load(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "rtls-eval:", err)
		return 1
	}
	opts := replay.Options{Timeout: *timeout}
	if *algs != "" {
		opts.Algorithms = strings.Split(*algs, ",")
	}
	rs, err := replay.Run(ds, opts)
	if err != nil {
		fmt.Fprintln(stderr, "rtls-eval:", err)
		return 1
	}
	fmt.Fprintf(stdout, "dataset %s: %d zones, %d gateways, %d train / %d test sightings (%d outside -127..0 dBm skipped)\n\n",
		fs.Arg(0), len(ds.Site.Zones), len(ds.Site.Gateways), len(ds.Train), len(ds.Test), ds.Skipped)
	replay.Format(stdout, rs)
	return 0
}

package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"beaconhub/appliance/rtls"
	"beaconhub/appliance/rtls/replay"
)

// cmdRTLSEval scores every tracking algorithm on a labelled recording in
// the replay format (docs/rtls.md, docs/performance.md).
func cmdRTLSEval(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rtls-eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, rtlsEvalUsage)
		fs.PrintDefaults()
	}
	algs := fs.String("alg", "", "comma-separated algorithms (default: all)")
	timeout := fs.Duration("timeout", 60*time.Second, "not-heard timeout of the engine")
	without := fs.String("without", "", "comma-separated gateway ids to take out of the recording (site and rows), as if never installed")
	params := rtls.DefaultParams()
	var set []string
	fs.Func("set", "name=value: an engine parameter (docs/rtls.md, Parameters; repeatable), e.g. switch_odds=30 or mean_stay=60s", func(s string) error {
		// Read as server_rtls_params is (rtls.ParamsFrom), kept trimmed
		// for the output.
		entry := s
		if name, value, ok := strings.Cut(s, "="); ok {
			entry = strings.TrimSpace(name) + "=" + strings.TrimSpace(value)
		}
		p, err := rtls.ParamsFrom(append(slices.Clone(set), entry))
		if err != nil {
			return err
		}
		params, set = p, append(set, entry)
		return nil
	})
	pos, code := parseInterspersed(fs, args)
	if code >= 0 {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, rtlsEvalUsage)
		return 2
	}
	// The same timeout runs the engine and counts the pace note's
	// time; Run would quietly take 60 s for zero, the note would not.
	// The replay shortens silences to about the timeout, and scores the
	// warm-up in that time: under the warm-up, a silence inside it
	// shrank it (100 ms scored 14 of 50 sightings, a review).
	if *timeout < replay.DefaultWarmup {
		fmt.Fprintf(stderr, "rtls-eval: --timeout must be at least the %v warm-up, got %v\n", replay.DefaultWarmup, *timeout)
		return 2
	}
	algList, gwList := dedupe(listFlag(*algs)), dedupe(listFlag(*without))
	if err := replay.CheckAlgorithms(algList); err != nil {
		fmt.Fprintln(stderr, "rtls-eval: --alg:", err)
		return 2
	}
	dir := pos[0]
	ds, err := replay.Load(dir)
	if err != nil {
		fmt.Fprintln(stderr, "rtls-eval:", err)
		return 1
	}
	if err := ds.WithoutGateways(gwList); err != nil {
		fmt.Fprintln(stderr, "rtls-eval: --without:", err)
		return 2
	}
	opts := replay.Options{Timeout: *timeout, Params: params, Algorithms: algList}
	// The replay's store lives in a temporary directory; a run stopped
	// with Ctrl-C or by a timeout's SIGTERM left it behind.
	work, err := os.MkdirTemp("", "rtls-eval-")
	if err != nil {
		fmt.Fprintln(stderr, "rtls-eval:", err)
		return 1
	}
	defer os.RemoveAll(work)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case s := <-sigs:
			os.RemoveAll(work)
			fmt.Fprintln(stderr, "rtls-eval: stopped by", s)
			code := 130
			if n, ok := s.(syscall.Signal); ok {
				code = 128 + int(n) // the shell's convention: 130 for SIGINT, 143 for SIGTERM
			}
			os.Exit(code)
		case <-done:
		}
	}()
	opts.WorkDir = work
	// grid's motion is trained on train.csv's walk, as the radio model
	// is on its readings, and the filters' odds chosen on it, unless the
	// command line gives them.
	isSet := func(name string) bool {
		return slices.ContainsFunc(set, func(s string) bool { return strings.HasPrefix(s, name+"=") })
	}
	opts, motion, odds, err := replay.AsEval(ds, opts, isSet)
	if err != nil {
		fmt.Fprintln(stderr, "rtls-eval:", err)
		return 1
	}
	rs, err := replay.Run(ds, opts)
	if err != nil {
		fmt.Fprintln(stderr, "rtls-eval:", err)
		return 1
	}
	fmt.Fprintf(stdout, "dataset %s: %d zones, %d gateways, %d train / %d test sightings (skipped: %d outside -127..0 dBm, %d not-heard markers; unlabelled: %d test rows heard, not scored, %d train rows dropped)\n",
		dir, len(ds.Site.Zones), len(ds.Site.Gateways), len(ds.Train), len(ds.Test), ds.Skipped, ds.Markers, ds.Unlabelled, ds.UnlabelledTrain)
	for _, n := range ds.Notes {
		fmt.Fprintln(stdout, "note:", n)
	}
	// After --without, which may have taken a zone's survey rows.
	if n := replay.UnsurveyedNote(ds, replay.DefaultWarmup, *timeout); n != "" {
		fmt.Fprintln(stdout, "note:", n)
	}
	if motion != "" {
		fmt.Fprintln(stdout, "note:", motion)
	}
	if odds != "" {
		fmt.Fprintln(stdout, "note:", odds)
	}
	fmt.Fprintln(stdout, "note:", replay.PaceNote(ds, *timeout))
	if len(set) > 0 {
		fmt.Fprintln(stdout, "parameters other than the defaults:", strings.Join(set, " "))
	}
	fmt.Fprintln(stdout)
	replay.Format(stdout, rs)
	if n := replay.DownsNote(rs); n != "" {
		fmt.Fprintln(stdout)
		fmt.Fprintln(stdout, "note:", n)
	}
	scored, ready := false, false
	for _, r := range rs {
		scored = scored || r.Scored > 0
		ready = ready || r.Ready
	}
	switch {
	case !ready:
		fmt.Fprintln(stderr, "rtls-eval: no algorithm asked for applies to this recording")
		return 1
	case !scored:
		// A table of "no sighting scored" with status 0 reads as a result.
		fmt.Fprintf(stderr, "rtls-eval: no test sighting was scored: each beacon's first %v is warm-up, and test.csv holds %d labelled sightings\n",
			replay.DefaultWarmup, len(ds.Test)-ds.Unlabelled)
		// No labelled row to score is not a unit read wrong (a review:
		// a file of positive RSSI was blamed on its time unit).
		if len(ds.Test) == ds.Unlabelled {
			if len(ds.Test) == 0 && ds.Skipped+ds.Markers > 0 {
				fmt.Fprintf(stderr, "rtls-eval: every row of test.csv was skipped: of the two files' rows, %d are outside -127..0 dBm and %d are not-heard markers (empty, NaN, 0 or -127 dBm; docs/rtls.md, RSSI)\n",
					ds.Skipped, ds.Markers)
			}
			return 1
		}
		// A file read in the wrong unit looks like this: say which unit
		// was taken (a review: Unix ms 40 s apart read as microseconds).
		unit := "t_ms read as Unix ms"
		for _, n := range ds.Notes {
			if strings.Contains(n, "t_ms read as") {
				unit = n
			}
		}
		fmt.Fprintln(stderr, "rtls-eval: check the time unit:", unit)
		return 1
	}
	return 0
}

const rtlsEvalUsage = "usage: beaconhub rtls-eval [--alg a,b] [--timeout D] [--set name=value]... [--without g1,g2] DATASET_DIR"

// parseInterspersed parses args with fs, flags before or after the
// positional arguments (rtls-eval DIR --alg knn: the flag package stops
// at the first argument that is not a flag), and returns the positional
// ones. code is the exit code when the command must end now (0 for
// -h, 2 for a bad flag), else -1.
func parseInterspersed(fs *flag.FlagSet, args []string) (pos []string, code int) {
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			return nil, flagExit(err) // --help asked for: not a usage error
		}
		if fs.NArg() == 0 {
			return pos, -1
		}
		pos, rest = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
}

// dedupe keeps the first of each item: "--alg knn,knn" runs knn once.
func dedupe(items []string) []string {
	var out []string
	for _, it := range items {
		if !slices.Contains(out, it) {
			out = append(out, it)
		}
	}
	return out
}

// listFlag splits a comma-separated flag value into its trimmed,
// non-empty items ("knn, strongest" as a shell user types it).
func listFlag(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

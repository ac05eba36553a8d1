package main

import (
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"beaconhub/appliance/nav"
)

// cmdFingerprintEval measures the fingerprint k-NN model on a replay
// dataset (contracts/rssi-replay.md) where a phone heard fixed beacons:
// the gateways are the fixed transmitters (features `ble:<gateway id>`),
// the moving "beacon" is the phone. Training rows are cut into windows,
// each window one survey scan; the model is built exactly as for a
// surveyed floor and judged leave-one-out and on test.csv.
func cmdFingerprintEval(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fingerprint-eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, fingerprintEvalUsage)
		fs.PrintDefaults()
	}
	k := fs.Int("k", nav.DefaultK, "neighbours averaged")
	windows := fs.String("windows", "0s,10s,30s", "scan windows to try, comma separated (0s: one timestamp)")
	pos, code := parseInterspersed(fs, args)
	if code >= 0 {
		return code
	}
	usage := func(why string) int {
		if why != "" {
			fmt.Fprintln(stderr, "fingerprint-eval:", why)
		}
		fmt.Fprintln(stderr, fingerprintEvalUsage)
		return 2
	}
	if len(pos) != 1 {
		return usage("")
	}
	if *k < 1 {
		return usage(fmt.Sprintf("--k %d: at least one neighbour", *k))
	}
	// Every window is read before any output, so a bad one prints no
	// half a table.
	var ws []time.Duration
	for _, s := range strings.Split(*windows, ",") {
		w, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || w < 0 {
			return usage(fmt.Sprintf("--windows: %q is not a duration such as 0s or 10s", s))
		}
		ws = append(ws, w)
	}
	dir := pos[0]
	train, err := fpReadReplay(filepath.Join(dir, "train.csv"))
	if err != nil {
		fmt.Fprintln(stderr, "fingerprint-eval:", err)
		return 1
	}
	test, err := fpReadReplay(filepath.Join(dir, "test.csv"))
	if err != nil {
		fmt.Fprintln(stderr, "fingerprint-eval:", err)
		return 1
	}
	// A table of zero errors read as a perfect model (a review).
	for _, f := range []struct {
		name string
		rows []fpReplayRow
	}{{"train.csv", train}, {"test.csv", test}} {
		if len(f.rows) == 0 {
			fmt.Fprintf(stderr, "fingerprint-eval: %s: no row with a position (x, y) and a reading: nothing to measure\n", filepath.Join(dir, f.name))
			return 1
		}
	}
	fmt.Fprintf(stdout, "dataset %s: %d train rows, %d test rows, k=%d, missing_rssi=%d (errors in map units)\n",
		dir, len(train), len(test), *k, nav.DefaultMissingRSSI)
	fmt.Fprintf(stdout, "%-7s %6s %6s %9s %8s %8s %6s %9s %8s %8s %9s %7s\n",
		"window", "scans", "points", "loo_mean", "loo_p50", "loo_p90", "tests", "test_mean", "test_p50", "test_p90", "centroid", "ratio")
	for _, w := range ws {
		trainScans, testScans := fpWindowScans(train, w), fpWindowScans(test, w)
		m := nav.BuildModel(0, trainScans, *k, nav.DefaultMissingRSSI, time.Time{})
		loo := nav.EvaluateLOO(m)
		te := nav.Evaluate(m, testScans)
		base := nav.CentroidBaseline(m, testScans)
		ratio := 0.0
		if base.Mean > 0 {
			ratio = te.Mean / base.Mean
		}
		fmt.Fprintf(stdout, "%-7s %6d %6d %9.1f %8.1f %8.1f %6d %9.1f %8.1f %8.1f %9.1f %7.2f\n",
			w, len(trainScans), len(m.Samples), loo.Mean, loo.P50, loo.P90, te.N, te.Mean, te.P50, te.P90, base.Mean, ratio)
	}
	fmt.Fprintln(stdout, "loo: each surveyed point located by the others; test: test.csv scans located by the train model;")
	fmt.Fprintln(stdout, "centroid: error of always answering the mean surveyed point; ratio = test_mean / centroid")
	return 0
}

const fingerprintEvalUsage = "usage: beaconhub fingerprint-eval [--k N] [--windows 0s,10s] DATASET_DIR"

// maxPosition bounds a position's coordinates (map units): beyond it a
// value is a broken row, and squared distances would overflow to +Inf.
const maxPosition = 1e9

// fpReplayRow is one sighting of the replay format with a known position.
type fpReplayRow struct {
	t       int64
	gateway string
	beacon  string
	rssi    float64
	x, y    float64
}

// fpReadReplay reads the rows that have a position and a plausible RSSI;
// the source datasets mark "not heard" with values like -200, which are
// absences, not readings.
func fpReadReplay(path string) ([]fpReplayRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	head, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: empty file; the first line names the columns (t_ms,gateway,beacon,rssi,x,y)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimSpace(h)] = i
	}
	for _, c := range []string{"t_ms", "gateway", "beacon", "rssi", "x", "y"} {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("%s: no %s column", path, c)
		}
	}
	var out []fpReplayRow
	for line := 2; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if rec[col["x"]] == "" || rec[col["y"]] == "" {
			continue
		}
		t, e1 := strconv.ParseInt(rec[col["t_ms"]], 10, 64)
		rssi, e2 := strconv.ParseFloat(rec[col["rssi"]], 64)
		x, e3 := strconv.ParseFloat(rec[col["x"]], 64)
		y, e4 := strconv.ParseFloat(rec[col["y"]], 64)
		if err := errors.Join(e1, e2, e3, e4); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, line, err)
		}
		// ParseFloat takes NaN and Inf: a table of +Inf and NaN errors
		// followed, with exit 0 (a review).
		for _, c := range []struct {
			name string
			v    float64
		}{{"x", x}, {"y", y}, {"rssi", rssi}} {
			if math.IsNaN(c.v) || math.IsInf(c.v, 0) || math.Abs(c.v) > maxPosition {
				return nil, fmt.Errorf("%s line %d: %s %q is not a finite number within ±%g", path, line, c.name, rec[col[c.name]], float64(maxPosition))
			}
		}
		if rssi < -127 || rssi > 20 {
			continue
		}
		out = append(out, fpReplayRow{t: t, gateway: rec[col["gateway"]], beacon: rec[col["beacon"]], rssi: rssi, x: x, y: y})
	}
}

// fpWindowScans cuts consecutive rows of one beacon at one position into
// scans no longer than w (w 0: rows of one timestamp); a gateway heard
// several times in a window contributes its mean RSSI.
func fpWindowScans(rows []fpReplayRow, w time.Duration) []nav.Scan {
	var out []nav.Scan
	type acc struct {
		sum float64
		n   int
	}
	var cur map[string]*acc
	var start int64
	var last fpReplayRow
	flush := func() {
		if len(cur) == 0 {
			return
		}
		s := nav.Scan{X: last.x, Y: last.y, RSSI: make(map[string]float64, len(cur))}
		for g, a := range cur {
			s.RSSI["ble:"+g] = a.sum / float64(a.n)
		}
		out = append(out, s)
		cur = nil
	}
	for _, r := range rows {
		same := cur != nil && r.beacon == last.beacon && r.x == last.x && r.y == last.y
		if same && (r.t-start > w.Milliseconds() || (w == 0 && r.t != start)) {
			same = false
		}
		if !same {
			flush()
			cur, start = map[string]*acc{}, r.t
		}
		a := cur[r.gateway]
		if a == nil {
			a = &acc{}
			cur[r.gateway] = a
		}
		a.sum += r.rssi
		a.n++
		last = r
	}
	flush()
	return out
}

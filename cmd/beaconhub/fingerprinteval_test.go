package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFPWindowScans(t *testing.T) {
	rows := []fpReplayRow{
		{t: 0, gateway: "G1", beacon: "P", rssi: -60, x: 5, y: 5},
		{t: 0, gateway: "G2", beacon: "P", rssi: -80, x: 5, y: 5},
		{t: 4000, gateway: "G1", beacon: "P", rssi: -70, x: 5, y: 5},
		{t: 12000, gateway: "G1", beacon: "P", rssi: -50, x: 5, y: 5},  // past the 10 s window
		{t: 13000, gateway: "G1", beacon: "P", rssi: -55, x: 15, y: 5}, // moved
	}
	got := fpWindowScans(rows, 10*time.Second)
	if len(got) != 3 || got[0].RSSI["ble:G1"] != -65 || got[0].RSSI["ble:G2"] != -80 || got[1].RSSI["ble:G1"] != -50 || got[2].X != 15 {
		t.Fatalf("10 s windows %+v", got)
	}
	if one := fpWindowScans(rows, 0); len(one) != 4 || len(one[0].RSSI) != 2 {
		t.Fatalf("per-timestamp scans %+v", one)
	}
}

// TestFingerprintEvalCommand runs the command on a small dataset in the
// replay format whose beacons follow a clean path-loss model: the k-NN
// error must be well under the centroid baseline.
func TestFingerprintEvalCommand(t *testing.T) {
	dir := t.TempDir()
	gws := map[string][2]float64{"G1": {0, 0}, "G2": {100, 0}, "G3": {0, 100}, "G4": {100, 100}}
	write := func(name string, jitter float64) {
		var b strings.Builder
		b.WriteString("t_ms,gateway,beacon,rssi,zone,x,y\n")
		tm := int64(1_600_000_000_000)
		for i := 0; i <= 10; i++ {
			for j := 0; j <= 10; j++ {
				x, y := float64(i*10), float64(j*10)
				for _, g := range []string{"G1", "G2", "G3", "G4"} {
					p := gws[g]
					rssi := -40 - 20*math.Log10(1+math.Hypot(x-p[0], y-p[1])) + jitter
					fmt.Fprintf(&b, "%d,%s,PHONE,%.0f,Z1,%g,%g\n", tm, g, rssi, x, y)
				}
				fmt.Fprintf(&b, "%d,G1,PHONE,-200,Z1,%g,%g\n", tm, x, y) // "not heard" marker
				tm += 60_000
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("train.csv", 0)
	write("test.csv", 1)
	var out, errb bytes.Buffer
	if code := run([]string{"fingerprint-eval", "--windows", "0s", dir}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var w string
	var scans, points, tests int
	var looMean, looP50, looP90, testMean, testP50, testP90, centroid, ratio float64
	line := strings.Split(out.String(), "\n")[2]
	if _, err := fmt.Sscan(line, &w, &scans, &points, &looMean, &looP50, &looP90, &tests, &testMean, &testP50, &testP90, &centroid, &ratio); err != nil {
		t.Fatalf("%v in %q", err, out.String())
	}
	if scans != 121 || points != 121 || tests != 121 || looMean > 10 || testMean > 8 || ratio > 0.2 {
		t.Fatalf("figures:\n%s", out.String())
	}
	if code := run([]string{"fingerprint-eval", filepath.Join(dir, "missing")}, &out, &errb); code != 1 {
		t.Fatalf("missing dataset: exit %d", code)
	}
	// A flag may follow the directory, as for rtls-eval; -h is no error.
	out.Reset()
	if code := run([]string{"fingerprint-eval", dir, "--windows", "0s"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "window") {
		t.Fatalf("flag after the directory: exit %d: %s", code, errb.String())
	}
	if code := run([]string{"fingerprint-eval", "-h"}, &out, &errb); code != 0 {
		t.Fatalf("-h: exit %d", code)
	}
	// Bad input says what is wrong and prints no table (a review: a
	// table of 0.0 errors, or of +Inf and NaN, with exit 0).
	bad := func(name, train string, args []string, code int, want string) {
		t.Helper()
		d := t.TempDir()
		test := "t_ms,gateway,beacon,rssi,zone,x,y\n1,G1,P,-60,Z1,5,5\n"
		for f, body := range map[string]string{"train.csv": train, "test.csv": test} {
			if err := os.WriteFile(filepath.Join(d, f), []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		out.Reset()
		errb.Reset()
		if got := run(append([]string{"fingerprint-eval"}, append(args, d)...), &out, &errb); got != code || !strings.Contains(errb.String(), want) || strings.Contains(out.String(), "loo_mean") {
			t.Errorf("%s: exit %d, stderr %q, stdout %q; want exit %d and %q", name, got, errb.String(), out.String(), code, want)
		}
	}
	good := "t_ms,gateway,beacon,rssi,zone,x,y\n1,G1,P,-60,Z1,5,5\n"
	bad("header only", "t_ms,gateway,beacon,rssi,zone,x,y\n", nil, 1, "no row with a position")
	bad("empty file", "", nil, 1, "empty file")
	bad("NaN position", "t_ms,gateway,beacon,rssi,zone,x,y\n1,G1,P,-60,Z1,NaN,5\n", nil, 1, `x "NaN" is not a finite number`)
	bad("huge position", "t_ms,gateway,beacon,rssi,zone,x,y\n1,G1,P,-60,Z1,5,1e308\n", nil, 1, `y "1e308"`)
	bad("k 0", good, []string{"--k", "0"}, 2, "at least one neighbour")
	bad("bad window", good, []string{"--windows", "abc"}, 2, `"abc" is not a duration`)
}

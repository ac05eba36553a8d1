package main

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"beaconhub/appliance/rtls"
	"beaconhub/appliance/rtls/replay"
)

func TestRTLSEvalCommand(t *testing.T) {
	dir := t.TempDir()
	site := `{"map":{"width":200,"height":100},
	 "zones":[{"name":"A","x1":0,"y1":0,"x2":100,"y2":100},{"name":"B","x1":100,"y1":0,"x2":200,"y2":100}],
	 "adjacency":[["A","B"]],
	 "gateways":[{"id":"G1","x":null,"y":null},{"id":"G2","x":null,"y":null}]}`
	var csv strings.Builder
	csv.WriteString("t_ms,gateway,beacon,rssi,zone,x,y\n")
	for s := 0; s < 40; s++ {
		zone, near, far := "A", "G1", "G2"
		if s >= 20 {
			zone, near, far = "B", "G2", "G1"
		}
		fmt.Fprintf(&csv, "%d,%s,T,%d,%s,,\n%d,%s,T,%d,%s,,\n", 1000*s, near, -60-s%3, zone, 1000*s, far, -85+s%3, zone)
	}
	for name, body := range map[string]string{"site.json": site, "train.csv": csv.String(), "test.csv": csv.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"rtls-eval", "--alg", "knn,strongest", dir}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"2 zones, 2 gateways", "| knn | 9", "| strongest | ", "(1/1)", "note: scale 10 map units a metre",
		"note: zone changes of labelled time: test.csv one every 39 s (1 in 39 s); train.csv one every 39 s (1 in 39 s)", "| settled: 10 s into a stay |"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
	// Flags after the directory, names padded: as a shell user types them.
	out.Reset()
	if code := run([]string{"rtls-eval", dir, "--alg", "knn, strongest"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "| strongest | ") || strings.Contains(out.String(), "| hmm |") {
		t.Fatalf("flags after the directory: exit %d: %s%s", code, out.String(), errb.String())
	}
	// A parameter set on the command line reaches the engine: with a
	// Margin no difference can beat, strongest keeps its first zone.
	out.Reset()
	if code := run([]string{"rtls-eval", "--alg", "strongest", "--set", "margin=127", dir}, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), "margin=127") || !strings.Contains(out.String(), "(0/1)") {
		t.Fatalf("--set: exit %d: %s%s", code, out.String(), errb.String())
	}
	if code := run([]string{"rtls-eval", "--set", "switch_odd=3", dir}, &out, &errb); code != 2 {
		t.Fatalf("unknown parameter: exit %d", code)
	}
	// A training walk with positions gives grid its motion (the files
	// above have none, and no note); one set on the command line wins.
	if strings.Contains(out.String(), "note: motion") || strings.Contains(out.String(), "note: switch_odds") {
		t.Fatalf("motion measured or odds chosen without a walk:\n%s", out.String())
	}
	if code := run([]string{"rtls-eval", "--set", "k=3", "--set", "k=4", dir}, &out, &errb); code != 2 {
		t.Fatalf("a parameter set twice: exit %d", code)
	}
	// Without G2 the site has one gateway and its rows are gone; an id
	// the recording does not have, or every gateway, is refused.
	out.Reset()
	if code := run([]string{"rtls-eval", "--alg", "strongest", "--without", "G2", dir}, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), "2 zones, 1 gateways, 40 train / 40 test") || !strings.Contains(out.String(), "note: without gateways G2: 40 train and 40 test rows left out") {
		t.Fatalf("--without G2: exit %d: %s%s", code, out.String(), errb.String())
	}
	for _, bad := range []string{"G3", "G1,G2"} {
		errb.Reset()
		if code := run([]string{"rtls-eval", "--without", bad, dir}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "--without") {
			t.Fatalf("--without %s: exit %d: %s", bad, code, errb.String())
		}
	}
	// The pace note counts time with the engine's timeout, so one that
	// Run would replace with its default is refused, not half used.
	// One under the warm-up is refused too: silences are shortened to
	// about the timeout and the warm-up counted in that time (100 ms
	// scored 14 of 50 sightings, a review).
	for _, bad := range []string{"0s", "-5s", "100ms", "4s"} {
		errb.Reset()
		if code := run([]string{"rtls-eval", "--timeout", bad, dir}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "--timeout must be at least the 5s warm-up") {
			t.Fatalf("--timeout %s: exit %d: %s", bad, code, errb.String())
		}
	}
	// Usage: -h is asked for (0); an unknown algorithm is a usage error
	// (2) before anything loads; a name given twice runs once.
	errb.Reset()
	if code := run([]string{"rtls-eval", "-h"}, &out, &errb); code != 0 || !strings.Contains(errb.String(), "DATASET_DIR") || !strings.Contains(errb.String(), "-timeout") {
		t.Fatalf("-h: exit %d: %s", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"rtls-eval", "--alg", "nope", "/nonexistent"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `unknown algorithm: "nope"`) {
		t.Fatalf("--alg nope: exit %d: %s", code, errb.String())
	}
	out.Reset()
	if code := run([]string{"rtls-eval", "--alg", "strongest,strongest", "--without", "G2,G2", dir}, &out, &errb); code != 0 ||
		strings.Count(out.String(), "| strongest |") != 1 || !strings.Contains(out.String(), "without gateways G2:") {
		t.Fatalf("names twice: exit %d: %s%s", code, out.String(), errb.String())
	}
	// A gateway that hears the beacon less often than readings stay live
	// is named with the stale that fits; these files' once a second is not.
	if strings.Contains(out.String(), "readings lapse") {
		t.Fatalf("a 1 s period noted as lapsing:\n%s", out.String())
	}
	var walked strings.Builder
	walked.WriteString("t_ms,gateway,beacon,rssi,zone,x,y\n")
	for s := 0; s < 300; s++ {
		x := float64(s) // 0.1 m/s, there and back
		if s >= 150 {
			x = float64(300 - s)
		}
		zone := "A"
		if x >= 100 {
			zone = "B"
		}
		fmt.Fprintf(&walked, "%d,G1,T,%d,%s,%.0f,50\n", 1000*s, -60-int(x)/10, zone, x)
	}
	moving := variant(t, dir, "train.csv", walked.String())
	out.Reset()
	// The filters' odds are chosen on it too (strongest has none).
	if code := run([]string{"rtls-eval", "--alg", "grid,strongest", moving}, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), "note: motion: diffusion ") || !strings.Contains(out.String(), "note: switch_odds chosen on train.csv") ||
		!strings.Contains(out.String(), ": grid ") || strings.Contains(out.String(), "strongest 10") {
		t.Fatalf("walk with positions: exit %d: %s%s", code, out.String(), errb.String())
	}
	// The odds chosen are the odds run: each filter's row is the one a
	// run with its odds set gives, not the other candidate's, on a
	// recording where they matter (a tag standing 2 m either side of a
	// boundary, 7 dB of noise), and where hmm chooses 30 and grid 10.
	noisy := noisyWalk(t)
	out.Reset()
	if code := run([]string{"rtls-eval", "--alg", "hmm,grid", noisy}, &out, &errb); code != 0 {
		t.Fatalf("noisy walk: exit %d: %s", code, errb.String())
	}
	row := func(o, alg string) string { return regexp.MustCompile(`(?m)^\| ` + alg + ` \|.*$`).FindString(o) }
	fixed := map[string]string{}
	for _, odds := range []string{"10", "30"} {
		var o bytes.Buffer
		if code := run([]string{"rtls-eval", "--alg", "hmm,grid", "--set", "switch_odds=" + odds, noisy}, &o, &errb); code != 0 {
			t.Fatalf("switch_odds=%s: exit %d: %s", odds, code, errb.String())
		}
		fixed[odds] = o.String()
	}
	// And they were chosen with the motion measured, not the default:
	// the note is SelectOdds' with the measured diffusion.
	ds, err := replay.Load(noisy)
	if err != nil {
		t.Fatal(err)
	}
	d, _, _, isWalk := ds.Motion()
	p := rtls.DefaultParams()
	if err := p.Set("diffusion", fmt.Sprint(d)); !isWalk || err != nil || d == rtls.MaxDiffusion {
		t.Fatalf("motion %v (walk %v): %v", d, isWalk, err)
	}
	for _, pp := range []rtls.Params{p, rtls.DefaultParams()} {
		ch, err := replay.SelectOdds(ds, replay.Options{Algorithms: []string{"hmm", "grid"}, Params: pp})
		if err != nil {
			t.Fatal(err)
		}
		if measured := pp == p; strings.Contains(out.String(), replay.OddsNote(ch)) != measured {
			t.Fatalf("with the measured diffusion %v: %v; note %q in:\n%s", d, measured, replay.OddsNote(ch), out.String())
		}
	}
	for alg, want := range map[string]string{"hmm": "30", "grid": "10"} {
		chosen := regexp.MustCompile(`[:;] ` + alg + ` (\d+) \(`).FindStringSubmatch(out.String())
		if chosen == nil || chosen[1] != want {
			t.Fatalf("%s: odds chosen %v, want %s:\n%s", alg, chosen, want, out.String())
		}
		other := map[string]string{"10": "30", "30": "10"}[want]
		if got := row(out.String(), alg); got != row(fixed[want], alg) || got == row(fixed[other], alg) {
			t.Fatalf("%s chose %s and ran %s; with %s set: %s; with %s: %s", alg, want, got, want, row(fixed[want], alg), other, row(fixed[other], alg))
		}
	}
	out.Reset()
	if code := run([]string{"rtls-eval", "--alg", "grid", "--set", "diffusion=0.2", "--set", "switch_odds=30", moving}, &out, &errb); code != 0 ||
		strings.Contains(out.String(), "note: motion") || strings.Contains(out.String(), "note: switch_odds") || !strings.Contains(out.String(), "diffusion=0.2 switch_odds=30") {
		t.Fatalf("--set diffusion and switch_odds: exit %d: %s%s", code, out.String(), errb.String())
	}
	// A test file shorter than the warm-up scores nothing: that is an
	// error, not a table of 0.0% (0/0).
	short := variant(t, dir, "test.csv", "t_ms,gateway,beacon,rssi,zone\n0,G1,T,-60,A\n3000,G1,T,-61,A\n")
	out.Reset()
	errb.Reset()
	if code := run([]string{"rtls-eval", short}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "no test sighting was scored") || !strings.Contains(out.String(), "no sighting scored") {
		t.Fatalf("nothing scored: exit %d: %s%s", code, out.String(), errb.String())
	}
	// Only algorithms that do not apply: an error, not an empty table.
	flat := variant(t, dir, "site.json", `{"zones":[{"name":"A"},{"name":"B"}],"gateways":[{"id":"G1"},{"id":"G2"}]}`)
	errb.Reset()
	if code := run([]string{"rtls-eval", "--alg", "grid", flat}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "no algorithm asked for applies") {
		t.Fatalf("grid on zones without area: exit %d: %s", code, errb.String())
	}
	if code := run([]string{"rtls-eval", "--alg", "nope", dir}, &out, &errb); code != 2 {
		t.Fatalf("unknown algorithm exit %d", code)
	}
	// On a walk too, where the odds would be chosen first: refused
	// before any replay, with the names it knows.
	errb.Reset()
	if code := run([]string{"rtls-eval", "--alg", "grid,nope", noisy}, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), `unknown algorithm: "nope" (known: strongest,`) {
		t.Fatalf("unknown algorithm on a walk: exit %d: %s", code, errb.String())
	}
	if code := run([]string{"rtls-eval", dir, "extra"}, &out, &errb); code != 2 {
		t.Fatalf("two directories: exit %d", code)
	}
	if code := run([]string{"rtls-eval"}, &out, &errb); code != 2 {
		t.Fatalf("no dir exit %d", code)
	}
}

// TestRTLSEvalSaysWhatItMissed: a test file whose every row was skipped
// is named as such, not blamed on the time unit; a zone scored without
// a survey sample is noted with its share (both from a review).
func TestRTLSEvalSaysWhatItMissed(t *testing.T) {
	dir := t.TempDir()
	site := `{"map":{"width":200,"height":100},
	 "zones":[{"name":"A","x1":0,"y1":0,"x2":100,"y2":100},{"name":"B","x1":100,"y1":0,"x2":200,"y2":100}],
	 "gateways":[{"id":"G1","x":50,"y":50},{"id":"G2","x":150,"y":50}]}`
	rows := func(from, to int, positive bool) string {
		var b strings.Builder
		b.WriteString("t_ms,gateway,beacon,rssi,zone\n")
		for s := from; s < to; s++ {
			zone, near, far := "A", "G1", "G2"
			if s >= 20 {
				zone, near, far = "B", "G2", "G1"
			}
			r1, r2 := -60-s%3, -85+s%3
			if positive {
				r1, r2 = -r1, -r2
			}
			fmt.Fprintf(&b, "%d,%s,T,%d,%s\n%d,%s,T,%d,%s\n", 1000*s, near, r1, zone, 1000*s, far, r2, zone)
		}
		return b.String()
	}
	for name, body := range map[string]string{"site.json": site, "train.csv": rows(0, 20, false), "test.csv": rows(0, 40, false)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Scored: 35 s after the warm-up, 20 of them in B, which train.csv
	// never visits.
	var out, errb bytes.Buffer
	if code := run([]string{"rtls-eval", "--alg", "strongest", dir}, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), "note: zones with no survey samples in train.csv: B (57% of scored test sightings)") {
		t.Fatalf("exit %d: %s%s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := run([]string{"rtls-eval", "--alg", "strongest", variant(t, dir, "train.csv", rows(0, 40, false))}, &out, &errb); code != 0 || strings.Contains(out.String(), "no survey samples") {
		t.Fatalf("every zone surveyed: exit %d: %s%s", code, out.String(), errb.String())
	}
	errb.Reset()
	if code := run([]string{"rtls-eval", "--alg", "strongest", variant(t, dir, "test.csv", rows(0, 40, true))}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "every row of test.csv was skipped: of the two files' rows, 80 are outside -127..0 dBm") || strings.Contains(errb.String(), "time unit") {
		t.Fatalf("positive RSSI: exit %d: %s", code, errb.String())
	}
}

// noisyWalk writes a recording of two 10 m zones, a placed gateway in
// the middle of each, whose tag stands 2 m from the boundary on either
// side in turn (a minute each, crossing at 1 m/s), heard with 7 dB of
// noise: train.csv and test.csv are two draws of it.
func noisyWalk(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	site := `{"map":{"width":200,"height":100},
	 "zones":[{"name":"A","x1":0,"y1":0,"x2":100,"y2":100},{"name":"B","x1":100,"y1":0,"x2":200,"y2":100}],
	 "adjacency":[["A","B"]],
	 "gateways":[{"id":"G1","x":50,"y":50},{"id":"G2","x":150,"y":50}]}`
	draw := func(seed uint64) string {
		rng := rand.New(rand.NewPCG(seed, 1))
		var b strings.Builder
		b.WriteString("t_ms,gateway,beacon,rssi,zone,x,y\n")
		x := 80.0
		for s := 0; s < 600; s++ {
			if target := map[bool]float64{false: 80, true: 120}[s/64%2 == 1]; x != target {
				x += math.Copysign(math.Min(10, math.Abs(target-x)), target-x)
			}
			zone := "A"
			if x >= 100 {
				zone = "B"
			}
			for _, g := range []struct {
				id string
				x  float64
			}{{"G1", 50}, {"G2", 150}} {
				d := math.Max(math.Abs(x-g.x)/10, 0.5)
				r := math.Round(-59 - 22*math.Log10(d) + 7*rng.NormFloat64())
				fmt.Fprintf(&b, "%d,%s,T,%.0f,%s,%.0f,50\n", 1000*s+int(g.x)/10, g.id, r, zone, x)
			}
		}
		return b.String()
	}
	for name, body := range map[string]string{"site.json": site, "train.csv": draw(1), "test.csv": draw(2)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// variant copies the dataset in dir to a new directory with file name
// replaced by body.
func variant(t *testing.T, dir, name, body string) string {
	t.Helper()
	out := t.TempDir()
	for _, f := range []string{"site.json", "train.csv", "test.csv"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == name {
			b = []byte(body)
		}
		if err := os.WriteFile(filepath.Join(out, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestRTLSEvalStoppedBySignal: a replay stopped by SIGTERM (timeout(1),
// a CI job's limit) removes its temporary store and exits 143.
func TestRTLSEvalStoppedBySignal(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	site := `{"map":{"width":200,"height":100},
	 "zones":[{"name":"A","x1":0,"y1":0,"x2":100,"y2":100},{"name":"B","x1":100,"y1":0,"x2":200,"y2":100}],
	 "gateways":[{"id":"G1","x":50,"y":50},{"id":"G2","x":150,"y":50}]}`
	var csv strings.Builder
	csv.WriteString("t_ms,gateway,beacon,rssi,zone\n")
	// Long enough that the replay is still running when stopped.
	for s := 0; s < 200_000; s++ {
		fmt.Fprintf(&csv, "%d,G1,T,%d,A\n%d,G2,T,%d,A\n", 1000*s, -60-s%3, 1000*s, -80+s%3)
	}
	train := csv.String()[:4000]
	train = train[:strings.LastIndexByte(train, '\n')+1] // whole rows: a cut one is an error
	for name, body := range map[string]string{"site.json": site, "train.csv": train, "test.csv": csv.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tmp := t.TempDir()
	cmd := exec.Command(bin, "rtls-eval", dir)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Wait for the store to exist (a condition, not a time).
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m, _ := filepath.Glob(filepath.Join(tmp, "rtls-eval-*", "replay.db")); len(m) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no store after 30 s; stderr: %s", errb.String())
		}
		select {
		case err := <-done:
			t.Fatalf("exited before the store was made: %v; stderr: %s", err, errb.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("still running 30 s after SIGTERM")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 143 {
		t.Fatalf("exit %v, want 143; stderr: %s", err, errb.String())
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "rtls-eval-*")); len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
}

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"beaconhub/appliance/loadgen"
)

// cmdLoadgen runs the ingest benchmark in this process, against a full
// appliance in a temporary home and a bare mochi broker, on loopback only.
func cmdLoadgen(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	gws := fs.Int("gateways", 50, "gateway connections")
	beacons := fs.Int("beacons", 2000, "registered beacons")
	dur := fs.Duration("duration", 10*time.Second, "publishing time per scenario")
	qos := fs.String("qos", "0,1", "QoS levels to run, comma separated")
	batch := fs.Int("batch", 8, "reports per message")
	window := fs.Int("inflight", 8, "QoS 1 publishes each gateway keeps in flight (1 = wait for every PUBACK)")
	rate := fs.Float64("rate", 0, "QoS 1: offer this many reports/s in total on a fixed schedule (0 = as fast as --inflight allows)")
	warmup := fs.Duration("warmup", 0, "leave the ack latencies of the first part of each scenario out of the percentiles")
	baseline := fs.Bool("baseline", true, "also measure a bare mochi broker whose hook only counts")
	repeat := fs.Int("repeat", 1, "run the bare and full scenarios this many times, alternating, and print the median ratio")
	missing := fs.Int("missing", 0, "register this many more beacons that stay silent, each with not-seen active (a real site's usual state)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (implies --own-process=false)")
	memprofile := fs.String("memprofile", "", "write an allocation profile of the whole run to this file (implies --own-process=false)")
	mutexprofile := fs.String("mutexprofile", "", "write a mutex contention profile of the whole run to this file, and a blocking profile to it plus .block (implies --own-process=false)")
	ownProc := fs.Bool("own-process", true, "run the full appliance in a child process, so its peak memory is its own")
	child := fs.Bool("child", false, "internal: be the appliance side of --own-process")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	var qs []byte
	for _, q := range strings.Split(*qos, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(q))
		if err != nil || n < 0 || n > 1 {
			fmt.Fprintf(stderr, "bad --qos %q: use 0, 1 or 0,1\n", *qos)
			return 2
		}
		qs = append(qs, byte(n))
	}
	if *gws < 1 || *beacons < 1 || *missing < 0 || *repeat < 1 || *repeat > 50 || *batch < 1 || *batch > 500 || *window < 1 || *window > 1000 || *rate < 0 || *warmup < 0 || *warmup >= *dur {
		fmt.Fprintln(stderr, "--gateways and --beacons must be positive, --missing >= 0, --repeat 1..50, --batch 1..500, --inflight 1..1000, --rate >= 0, 0 <= --warmup < --duration")
		return 2
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	if *memprofile != "" {
		runtime.MemProfileRate = 64 << 10
		defer writeProfile(stderr, "allocs", *memprofile)
	}
	if *mutexprofile != "" {
		runtime.SetMutexProfileFraction(5)
		runtime.SetBlockProfileRate(100000)
		defer writeProfile(stderr, "block", *mutexprofile+".block")
		defer writeProfile(stderr, "mutex", *mutexprofile)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	cfg := loadgen.Config{Gateways: *gws, Beacons: *beacons, Duration: *dur, QoS: qs, Batch: *batch,
		Baseline: *baseline, Out: stdout, Seed: 1, Window: *window, Rate: *rate, Warmup: *warmup, Missing: *missing, Repeat: *repeat}
	if *child {
		if len(qs) != 1 {
			fmt.Fprintln(stderr, "--child takes exactly one --qos")
			return 2
		}
		if err := loadgen.ServeChild(ctx, cfg, qs[0], os.Stdin, stdout); err != nil {
			fmt.Fprintf(stderr, "loadgen child: %v\n", err)
			return 1
		}
		return 0
	}
	if *ownProc && *cpuprofile == "" && *mutexprofile == "" && *memprofile == "" {
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		cfg.Child = []string{exe, "loadgen", "--child", "--gateways", strconv.Itoa(*gws), "--beacons", strconv.Itoa(*beacons), "--missing", strconv.Itoa(*missing)}
	}
	_, err := loadgen.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "loadgen: %v\n", err)
		return 1
	}
	return 0
}

// writeProfile saves the named runtime profile to path.
func writeProfile(stderr io.Writer, name, path string) {
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup(name).WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "loadgen: %s profile: %v\n", name, err)
	}
}

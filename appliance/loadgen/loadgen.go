// Package loadgen measures the ingest data path: G gateways x B beacons
// publishing a realistic mix over real MQTT connections on loopback into a
// full appliance, and, in the same run, into a bare mochi broker whose hook
// only counts, so results are quoted as ratios rather than absolute times.
package loadgen

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"beaconhub/appliance"
	"beaconhub/appliance/sensors"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// Config of a run.
type Config struct {
	Gateways int
	Beacons  int
	Duration time.Duration
	QoS      []byte
	Batch    int  // reports per message (8)
	Baseline bool // also measure the bare broker
	Home     string
	Out      io.Writer
	// Window is how many QoS 1 publishes a gateway keeps in flight (1 =
	// wait for each PUBACK, the most conservative client).
	Window int
	// Rate, when above 0, paces the QoS 1 publishers: the gateways together
	// offer Rate reports/s on a fixed schedule (open loop), as real
	// gateways do, instead of sending whenever the window has room. Ack
	// latency is then measured from the scheduled send time, so a server
	// that falls behind shows it in p99 rather than by slowing the senders
	// (coordinated omission). Window caps what a gateway has in flight.
	Rate float64
	// Warmup leaves the ack latencies of publishes sent in the first part
	// of the run out of the percentiles (the first sight of every beacon,
	// the first motion event of each, a growing heap). The table prints
	// what was left out.
	Warmup time.Duration
	// Child, when set, is the command line that starts the full appliance
	// in its own process (see ServeChild), so the peak memory reported is
	// the appliance's alone, not shared with the publishers and the bare
	// broker.
	Child []string
	// Missing registers that many more beacons that never advertise and
	// starts with a not-seen condition active for each, as a site nearly
	// always has (a flat battery, a watch in a drawer): the sensor monitor
	// then decides heartbeats instead of skipping them.
	Missing int
	// Repeat runs the bare and full scenarios this many times, alternating,
	// and prints the median ratio: on a shared host one pair's ratio moves
	// by as much as a change being measured.
	Repeat    int
	Seed      int64
	KeepHome  bool
	Verbosity int
}

// Result of one scenario.
type Result struct {
	Name            string
	QoS             byte
	Reports         int64 // reports the receiver accepted
	Seconds         float64
	ReportsPerSec   float64
	AckP50, AckP99  time.Duration // QoS 1 publish -> PUBACK
	AckSamples      int           // latencies behind them (after the warm-up)
	CPUSeconds      float64       // the appliance's CPU time in the run (own process only)
	CommitP50MS     int64         // receive -> commit (sampled, QoS 0)
	CommitP99MS     int64
	AckTimeouts     int64
	PeakRSSMB       float64
	HistoryReadings int64
	DBBytes         int64
	Writer          string
}

// message is one pre-encoded publish of a gateway.
type message struct {
	pk    []byte
	pidAt int
}

// workload pre-builds every gateway's messages: 90% adv4 heartbeats of
// trackable beacons, 10% adv1 sensor reports; each advertisement is heard
// by 3-5 gateways; reports are batched per gateway and kind.
func workload(cfg Config, qos byte) [][]message {
	rng := rand.New(rand.NewSource(cfg.Seed + int64(qos)))
	type rep struct{ kind, body string }
	pending := make([]map[string][]string, cfg.Gateways)
	for i := range pending {
		pending[i] = map[string][]string{}
	}
	out := make([][]message, cfg.Gateways)
	// Enough distinct messages that each gateway cycles through a few
	// hundred before repeating, and every beacon advertises at least once:
	// beacons are taken in shuffled passes over all of them, so a run
	// touches the state of all B beacons (random picks at 10 gateways
	// reached only about 40% of 10,000, which flattered the pipeline: the
	// state of 4,000 beacons stays in cache, that of 10,000 does not).
	//
	// At least two passes, so every sensor beacon has two or more values
	// in the cycle: the messages repeat many times a second, and a sensor
	// with one value would be one reading per 2 s under the duplicate
	// rule, leaving the history writer idle. With several values the
	// repeats interleave across gateways, the rule rarely matches, and
	// nearly every adv1 report is a new reading: the writer's worst case,
	// not the hearer-deduplicated load of a real site.
	target := cfg.Gateways * 256
	made, passes := 0, 0
	var order []int
	for made < target || passes < 2 || len(order) > 0 {
		if len(order) == 0 {
			order = rng.Perm(cfg.Beacons)
			passes++
		}
		// Sensor beacons (every tenth) send adv1; the trackable ones adv4,
		// as seeded below.
		b := order[0]
		order = order[1:]
		var r rep
		if b%10 == 0 {
			r = rep{"adv1", fmt.Sprintf(`{"mac":"%s","rssi":%d,"temperature":%.1f,"humidity":%.1f,"vbatt":%d}`,
				beaconMAC(b), -40-rng.Intn(50), 2+rng.Float64()*6, 40+rng.Float64()*30, 2800+rng.Intn(300))}
		} else {
			r = rep{"adv4", fmt.Sprintf(`{"mac":"%s","rssi":%d,"beacon_is_pushed":false,"motion":%t}`,
				beaconMAC(b), -40-rng.Intn(50), rng.Intn(4) == 0)}
		}
		// A beacon is heard by the gateways around it, not by any gateway
		// of the site: each advertisement reaches 3-5 of the beacon's
		// neighbourhood of 6 gateways (a stretch of corridor). Random
		// hearers from all 200 made every motion event collect up to 64
		// gateways, a database merge each, which no building produces.
		hood := min(neighbourhood, cfg.Gateways)
		hearers := min(3+rng.Intn(3), hood)
		home := b * 7919 % cfg.Gateways
		for _, i := range rng.Perm(hood)[:hearers] {
			g := (home + i) % cfg.Gateways
			pending[g][r.kind] = append(pending[g][r.kind], r.body)
			if len(pending[g][r.kind]) == cfg.Batch {
				payload := `{"reports":[` + strings.Join(pending[g][r.kind], ",") + `]}`
				pk, off := encodePublish("gw/"+gatewayMAC(g)+"/"+r.kind, []byte(payload), qos)
				out[g] = append(out[g], message{pk, off})
				pending[g][r.kind] = nil
				made++
			}
		}
	}
	return out
}

// neighbourhood is how many gateways can hear one beacon.
const neighbourhood = 6

func beaconMAC(i int) string  { return fmt.Sprintf("C3%010X", i) }
func gatewayMAC(i int) string { return fmt.Sprintf("AC%010X", i) }

// Run executes every scenario and prints a table.
func Run(ctx context.Context, cfg Config) ([]Result, error) {
	if cfg.Batch <= 0 {
		cfg.Batch = 8
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	var results []Result
	wls := map[byte][][]message{}
	for range max(cfg.Repeat, 1) {
		for _, q := range cfg.QoS {
			if wls[q] == nil {
				wls[q] = workload(cfg, q)
			}
			if cfg.Baseline {
				r, err := runBare(ctx, cfg, q, wls[q])
				if err != nil {
					return results, err
				}
				results = append(results, r)
			}
			r, err := runFull(ctx, cfg, q, wls[q])
			if err != nil {
				return results, err
			}
			results = append(results, r)
		}
	}
	print(cfg.Out, cfg, results)
	return results, nil
}

// ratios pairs every full result with the bare one run just before it at
// the same QoS.
func ratios(rs []Result) map[byte][]float64 {
	bare := map[byte]float64{}
	out := map[byte][]float64{}
	for _, r := range rs {
		switch {
		case r.Name == "bare-mochi":
			bare[r.QoS] = r.ReportsPerSec
		case bare[r.QoS] > 0:
			out[r.QoS] = append(out[r.QoS], r.ReportsPerSec/bare[r.QoS])
		}
	}
	return out
}

func print(w io.Writer, cfg Config, rs []Result) {
	fmt.Fprintf(w, "loadgen: %d gateways x %d beacons, %d reports/message, %s per scenario, QoS 1 window %d", cfg.Gateways, cfg.Beacons, cfg.Batch, cfg.Duration, max(cfg.Window, 1))
	if cfg.Warmup > 0 {
		fmt.Fprintf(w, ", ack latency after %s of warm-up", cfg.Warmup)
	}
	if cfg.Rate > 0 {
		fmt.Fprintf(w, ", QoS 1 paced at %.0f reports/s offered (latency from the scheduled send)", cfg.Rate)
	}
	if cfg.Missing > 0 {
		fmt.Fprintf(w, ", %d silent beacons not seen", cfg.Missing)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-22s %4s %12s %9s %9s %10s %10s %9s %9s\n", "scenario", "qos", "reports/s", "ack p50", "ack p99", "commit p50", "commit p99", "ack-tmo", "peakRSS")
	for _, r := range rs {
		fmt.Fprintf(w, "%-22s %4d %12.0f %9s %9s %8dms %8dms %9d %7.0fMB\n", r.Name, r.QoS, r.ReportsPerSec,
			r.AckP50.Round(10*time.Microsecond), r.AckP99.Round(10*time.Microsecond), r.CommitP50MS, r.CommitP99MS, r.AckTimeouts, r.PeakRSSMB)
	}
	rat := ratios(rs)
	seen := map[byte]int{}
	for _, r := range rs {
		if r.Name != "bare-mochi" && seen[r.QoS] < len(rat[r.QoS]) {
			fmt.Fprintf(w, "ratio full/bare at QoS %d: %.2f\n", r.QoS, rat[r.QoS][seen[r.QoS]])
			seen[r.QoS]++
		}
		if r.CPUSeconds > 0 && r.Reports > 0 {
			fmt.Fprintf(w, "appliance CPU at QoS %d: %.2f us per report, %.2f cores busy\n", r.QoS, r.CPUSeconds*1e6/float64(r.Reports), r.CPUSeconds/r.Seconds)
		}
		if r.Writer != "" {
			fmt.Fprintf(w, "writer at QoS %d: %s\n", r.QoS, r.Writer)
		}
		if r.HistoryReadings > 0 {
			fmt.Fprintf(w, "history: %d readings stored, database %d bytes (%.1f bytes/reading incl. everything else in the file)\n",
				r.HistoryReadings, r.DBBytes, float64(r.DBBytes)/float64(r.HistoryReadings))
		}
	}
	for _, q := range cfg.QoS {
		if x := rat[q]; len(x) > 1 {
			x = slices.Clone(x)
			slices.Sort(x)
			fmt.Fprintf(w, "ratio full/bare at QoS %d over %d alternating pairs: median %.2f (%.2f-%.2f)\n", q, len(x), median(x), x[0], x[len(x)-1])
		}
	}
}

// median of sorted values.
func median(x []float64) float64 {
	n := len(x)
	if n%2 == 1 {
		return x[n/2]
	}
	return (x[n/2-1] + x[n/2]) / 2
}

// drive publishes from every gateway until the deadline and returns the
// QoS 1 ack latencies.
func drive(ctx context.Context, addr string, cfg Config, qos byte, wl [][]message) ([]time.Duration, error) {
	conns := make([]*conn, cfg.Gateways)
	for g := range conns {
		c, err := dial(addr, gatewayMAC(g), "service", "service")
		if err != nil {
			for _, x := range conns[:g] {
				x.close()
			}
			return nil, fmt.Errorf("gateway %d: %w", g, err)
		}
		conns[g] = c
	}
	deadline := time.Now().Add(cfg.Duration)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr atomic.Value
	for g := range conns {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			c, msgs := conns[g], wl[g]
			sch := pace(cfg, g)
			var local []time.Duration
			var pid uint16
			for i := 0; ctx.Err() == nil; i++ {
				if i%64 == 0 && time.Now().After(deadline) {
					break
				}
				m := msgs[i%len(msgs)]
				if qos == 0 {
					if _, err := c.bw.Write(m.pk); err != nil {
						firstErr.CompareAndSwap(nil, err)
						return
					}
					continue
				}
				if cfg.Window > 1 || cfg.Rate > 0 {
					var err error
					local, err = pipelined(ctx, c, msgs, max(cfg.Window, 1), deadline, sch)
					if err != nil {
						firstErr.CompareAndSwap(nil, err)
					}
					break
				}
				pid++
				if pid == 0 {
					pid = 1
				}
				m.pk[m.pidAt], m.pk[m.pidAt+1] = byte(pid>>8), byte(pid)
				t0 := time.Now()
				keep := !t0.Before(sch.record)
				if _, err := c.c.Write(m.pk); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				if err := c.readPuback(pid); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				if keep {
					local = append(local, time.Since(t0))
				}
			}
			_ = c.bw.Flush()
			mu.Lock()
			lat = append(lat, local...)
			mu.Unlock()
		}(g)
	}
	wg.Wait()
	for _, c := range conns {
		c.close()
	}
	if e, ok := firstErr.Load().(error); ok {
		return lat, e
	}
	return lat, nil
}

// pace returns gateway g's schedule under cfg.Rate: the interval between
// its publishes and its first send time, staggered so that the gateways do
// not all send in the same instant (every 0: unpaced), and the end of the
// warm-up, before which no latency is kept.
func pace(cfg Config, g int) schedule {
	now := time.Now()
	sch := schedule{record: now.Add(cfg.Warmup)}
	if cfg.Rate <= 0 {
		return sch
	}
	sch.every = time.Duration(float64(time.Second) * float64(cfg.Batch*cfg.Gateways) / cfg.Rate)
	sch.start = now.Add(sch.every * time.Duration(g) / time.Duration(cfg.Gateways))
	return sch
}

type schedule struct {
	every  time.Duration
	start  time.Time
	record time.Time // latencies of publishes sent before it are not kept
}

func (r *Result) setAcks(lat []time.Duration) {
	r.AckP50, r.AckP99, r.AckSamples = pct(lat, 50), pct(lat, 99), len(lat)
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[min(len(d)-1, len(d)*p/100)]
}

func runBare(ctx context.Context, cfg Config, qos byte, wl [][]message) (Result, error) {
	b, err := startBare()
	if err != nil {
		return Result{}, err
	}
	defer b.Close()
	t0 := time.Now()
	lat, err := drive(ctx, b.addr, cfg, qos, wl)
	// Let the broker finish what is in its sockets before reading the count.
	waitStable(func() int64 { return b.hook.reports.Load() })
	secs := time.Since(t0).Seconds()
	n := b.hook.reports.Load()
	r := Result{Name: "bare-mochi", QoS: qos, Reports: n, Seconds: secs, ReportsPerSec: float64(n) / secs, PeakRSSMB: peakRSSMB()}
	r.setAcks(lat)
	return r, err
}

// waitStable returns once f stops growing (bounded).
func waitStable(f func() int64) {
	last := f()
	for i := 0; i < 100; i++ {
		time.Sleep(20 * time.Millisecond) // polling a counter, not waiting for time to pass
		if v := f(); v == last {
			return
		} else {
			last = v
		}
	}
}

func runFull(ctx context.Context, cfg Config, qos byte, wl [][]message) (Result, error) {
	if len(cfg.Child) > 0 {
		return runFullChild(ctx, cfg, qos, wl)
	}
	app, cleanup, err := startFull(cfg, qos)
	if err != nil {
		return Result{}, err
	}
	defer cleanup()
	t0 := time.Now()
	lat, derr := drive(ctx, app.MQTTAddr(), cfg, qos, wl)
	r, err := collect(app, qos)
	if err != nil {
		return Result{}, err
	}
	r.Seconds = time.Since(t0).Seconds()
	r.ReportsPerSec = float64(r.Reports) / r.Seconds
	r.setAcks(lat)
	return r, derr
}

// startFull builds, seeds and starts a full appliance in a temporary (or
// the configured) home.
func startFull(cfg Config, qos byte) (*appliance.App, func(), error) {
	var cleanups []func()
	cleanup := func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}
	home := cfg.Home
	if home == "" {
		d, err := os.MkdirTemp("", "beaconhub-loadgen-")
		if err != nil {
			return nil, cleanup, err
		}
		home = d
		if !cfg.KeepHome {
			cleanups = append(cleanups, func() { os.RemoveAll(d) })
		}
	}
	home = home + "/qos" + strconv.Itoa(int(qos))
	if err := os.MkdirAll(home, 0o750); err != nil {
		cleanup()
		return nil, func() {}, err
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	app, err := appliance.New(appliance.Options{Home: home, Logger: logger, HTTPListen: "127.0.0.1:0", MQTTListen: "127.0.0.1:0", BcryptCost: 4})
	if err != nil {
		cleanup()
		return nil, func() {}, err
	}
	err = seed(app.DB(), cfg)
	if err == nil && cfg.Missing > 0 {
		// The monitor learns the active conditions when it is built: seed
		// them, then build the appliance again over the same home.
		if err = app.Shutdown(context.Background()); err == nil {
			app, err = appliance.New(appliance.Options{Home: home, Logger: logger, HTTPListen: "127.0.0.1:0", MQTTListen: "127.0.0.1:0", BcryptCost: 4})
		}
		if err != nil {
			cleanup()
			return nil, func() {}, err
		}
	}
	cleanups = append(cleanups, func() { _ = app.Shutdown(context.Background()) })
	if err == nil {
		err = app.Registry().Reload()
	}
	if err == nil {
		err = app.Start()
	}
	if err != nil {
		cleanup()
		return nil, func() {}, err
	}
	return app, cleanup, nil
}

// collect waits until the pipeline has taken everything the publishers
// sent and the writer has committed it, then reads the counters. Seconds,
// rate and ack latencies are the publisher side's to fill in.
func collect(app *appliance.App, qos byte) (Result, error) {
	p := app.Pipeline()
	waitStable(func() int64 { return p.Stats.Totals().Observed })
	if err := app.Writer().Flush(); err != nil {
		return Result{}, err
	}
	tot := p.Stats.Totals()
	c50, c99, _ := p.CommitLatency()
	ws := app.Writer().Stats()
	size, _ := app.DB().Size()
	return Result{Name: "beaconhub-full", QoS: qos, Reports: tot.Observed, CommitP50MS: c50, CommitP99MS: c99, AckTimeouts: tot.AckTimeouts,
		PeakRSSMB: peakRSSMB(), HistoryReadings: int64(ws.Readings), DBBytes: size,
		Writer: fmt.Sprintf("%d commits, %.0f readings/commit, longest commit %s, last commit %s writing %d KiB", ws.Commits, ws.AvgBatchReadings, ws.MaxCommit.Round(time.Millisecond), ws.LastCommit.Round(time.Millisecond), ws.LastCommitBytes>>10)}, nil
}

// seed registers the generated gateways and beacons; a tenth of the
// beacons are sensors (the ones the adv1 reports come from may be any).
func seed(db *store.DB, cfg Config) error {
	now := time.Now()
	for g := 0; g < cfg.Gateways; g++ {
		if err := db.CreateGateway(&store.Gateway{AssetUID: "GW-LG-" + strconv.Itoa(g+1), MAC: gatewayMAC(g), Name: "gw" + strconv.Itoa(g), CreatedAt: now}); err != nil {
			return err
		}
	}
	err := db.SeedBeacons(cfg.Beacons+cfg.Missing, func(i int) store.Beacon {
		typ := "watch"
		if i%10 == 0 && i < cfg.Beacons {
			typ = "sensor"
		}
		return store.Beacon{AssetUID: seededUID(typ, i), MAC: beaconMAC(i), Name: "b" + strconv.Itoa(i), Type: typ, Active: true, CreatedAt: now}
	})
	if err != nil || cfg.Missing == 0 {
		return err
	}
	// The silent ones (past the workload's beacons) are not seen.
	var recs []store.SensorConditionRecord
	for i := cfg.Beacons; i < cfg.Beacons+cfg.Missing; i++ {
		uid := seededUID("watch", i)
		recs = append(recs, store.SensorConditionRecord{Seq: uint64(len(recs) + 1), Key: sensors.CondNotSeen + ":" + uid, Kind: sensors.CondNotSeen,
			Subject: uid, Phase: store.HealthActive, At: now.UnixMilli(), Since: now.UnixMilli(), Message: "seeded by loadgen"})
	}
	return db.Update(func(tx *bolt.Tx) error { return store.ApplySensorConditions(tx, recs) })
}

func seededUID(typ string, i int) string {
	return fmt.Sprintf("LG-%s-%d", strings.ToUpper(typ[:3]), i+1)
}

// peakRSSMB reads the process's peak resident set size (VmHWM).
// cpuSeconds is the process's user+system CPU time so far (Linux; 0
// elsewhere). Unlike a rate, CPU per report hardly moves when other jobs
// share the machine.
func cpuSeconds() float64 {
	data, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command name; utime and stime are
	// the 14th and 15th of the line, in USER_HZ (100 on Linux).
	_, rest, ok := strings.Cut(string(data), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (u + st) / 100
}

func peakRSSMB() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.ParseFloat(f[1], 64)
				return kb / 1024
			}
		}
	}
	return 0
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

package loadgen

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"beaconhub/appliance/sensors"
)

// The load generator is the ingest benchmark; this keeps it working (not
// fast: the figures come from `beaconhub loadgen` runs).
func TestLoadgenRunsBothScenariosAtBothQoS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts brokers and an appliance")
	}
	var out bytes.Buffer
	rs, err := Run(context.Background(), Config{Gateways: 4, Beacons: 40, Duration: 300 * time.Millisecond,
		QoS: []byte{0, 1}, Baseline: true, Out: &out, Seed: 1, Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 4 {
		t.Fatalf("%d results, want bare and full at QoS 0 and 1", len(rs))
	}
	for _, r := range rs {
		if r.Reports == 0 || r.ReportsPerSec <= 0 {
			t.Fatalf("%s QoS %d measured nothing: %+v", r.Name, r.QoS, r)
		}
		if r.Name == "beaconhub-full" && r.QoS == 1 && (r.AckP50 <= 0 || r.HistoryReadings == 0) {
			t.Fatalf("full QoS 1 without ack latencies or history: %+v", r)
		}
	}
	if !strings.Contains(out.String(), "ratio full/bare at QoS 0") || !strings.Contains(out.String(), "ratio full/bare at QoS 1") {
		t.Fatalf("table without ratios:\n%s", out.String())
	}
}

// TestLoadgenPipelinedQoS1: with several publishes in flight per gateway
// every PUBACK still arrives, in order (pipelined checks the order), and
// only after its publish is durable: every acknowledged reading is stored.
func TestLoadgenPipelinedQoS1(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an appliance")
	}
	rs, err := Run(context.Background(), Config{Gateways: 3, Beacons: 40, Duration: 300 * time.Millisecond,
		QoS: []byte{1}, Out: &bytes.Buffer{}, Seed: 1, Home: t.TempDir(), Window: 6})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Reports == 0 || rs[0].AckP50 <= 0 || rs[0].HistoryReadings == 0 {
		t.Fatalf("pipelined QoS 1 measured nothing: %+v", rs)
	}
}

// TestLoadgenPacedQoS1: with a rate the publishers keep to their schedule
// (the receiver sees about the offered rate, not what the window would
// allow) and the warm-up's latencies stay out of the percentiles.
func TestLoadgenPacedQoS1(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an appliance")
	}
	const rate = 2400 // 3 gateways x 8 reports x 100 publishes/s
	rs, err := Run(context.Background(), Config{Gateways: 3, Beacons: 40, Duration: time.Second, Warmup: 500 * time.Millisecond,
		QoS: []byte{1}, Baseline: true, Out: &bytes.Buffer{}, Seed: 1, Home: t.TempDir(), Window: 32, Rate: rate})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		// Generous bounds: the run's end waits for the last PUBACKs, and
		// loaded CI machines are slow; unpaced, this workload runs
		// at tens of thousands of reports/s.
		if r.ReportsPerSec < rate/3 || r.ReportsPerSec > rate*1.5 {
			t.Fatalf("%s: %.0f reports/s, offered %d", r.Name, r.ReportsPerSec, rate)
		}
		// 300 publishes in all, about half of them after the warm-up.
		if r.AckSamples == 0 || r.AckSamples >= 250 {
			t.Fatalf("%s: %d ack latencies kept, want those after the warm-up only", r.Name, r.AckSamples)
		}
	}
}

// TestWorkloadNeighbourhood: each beacon is heard only by the gateways
// around it, as in a building, so an event collects a handful of gateways.
func TestWorkloadNeighbourhood(t *testing.T) {
	hearers := workloadHearers(t, Config{Gateways: 200, Beacons: 1000, Batch: 8, Seed: 1})
	if len(hearers) < 900 {
		t.Fatalf("only %d beacons in the workload", len(hearers))
	}
	for mac, gws := range hearers {
		if len(gws) > neighbourhood {
			t.Fatalf("beacon %s heard by %d gateways, want at most %d", mac, len(gws), neighbourhood)
		}
	}
}

// Few gateways still exercise every beacon's state, and the mix stays
// one sensor (adv1) beacon in ten.
func TestWorkloadCoversEveryBeacon(t *testing.T) {
	cfg := Config{Gateways: 10, Beacons: 10000, Batch: 8, Seed: 1}
	hearers := workloadHearers(t, cfg)
	// A beacon's last advertisements may sit in a batch left unfinished.
	if len(hearers) < cfg.Beacons*99/100 {
		t.Fatalf("%d of %d beacons in the workload", len(hearers), cfg.Beacons)
	}
	var adv1, all int
	for _, msgs := range workload(cfg, 0) {
		for _, m := range msgs {
			all++
			if strings.Contains(string(m.pk), "/adv1") {
				adv1++
			}
		}
	}
	if share := float64(adv1) / float64(all); share < 0.07 || share > 0.13 {
		t.Fatalf("adv1 share %.3f, want about 0.1", share)
	}
}

func workloadHearers(t *testing.T, cfg Config) map[string]map[int]bool {
	t.Helper()
	wl := workload(cfg, 0)
	hearers := map[string]map[int]bool{}
	for g, msgs := range wl {
		for _, m := range msgs {
			for _, mac := range regexp.MustCompile(`"mac":"([0-9A-F]+)"`).FindAllStringSubmatch(string(m.pk), -1) {
				if hearers[mac[1]] == nil {
					hearers[mac[1]] = map[int]bool{}
				}
				hearers[mac[1]][g] = true
			}
		}
	}
	return hearers
}

// TestMissingBeaconsStartNotSeen: --missing adds silent beacons that the
// rebuilt appliance starts with not-seen active, outside the workload.
func TestMissingBeaconsStartNotSeen(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an appliance")
	}
	cfg := Config{Gateways: 2, Beacons: 40, Missing: 3, Batch: 8, Seed: 1, Home: t.TempDir()}
	app, cleanup, err := startFull(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	active := app.SensorConditions().Active()
	if len(active) != 3 {
		t.Fatalf("%d active conditions, want 3 not-seen: %+v", len(active), active)
	}
	for _, c := range active {
		if c.Kind != sensors.CondNotSeen {
			t.Errorf("condition %+v, want not-seen", c)
		}
	}
	for mac := range workloadHearers(t, cfg) {
		for i := cfg.Beacons; i < cfg.Beacons+cfg.Missing; i++ {
			if mac == beaconMAC(i) {
				t.Fatalf("silent beacon %s advertises", mac)
			}
		}
	}
}

// TestRatiosPairEachFullRunWithTheBareRunBeforeIt: with --repeat the host
// drifts between pairs, so each full run is divided by the bare run just
// before it, not by one bare figure for all.
func TestRatiosPairEachFullRunWithTheBareRunBeforeIt(t *testing.T) {
	rs := []Result{
		{Name: "bare-mochi", QoS: 0, ReportsPerSec: 400},
		{Name: "beaconhub-full-proc", QoS: 0, ReportsPerSec: 200},
		{Name: "bare-mochi", QoS: 0, ReportsPerSec: 500},
		{Name: "beaconhub-full-proc", QoS: 0, ReportsPerSec: 300},
		{Name: "bare-mochi", QoS: 0, ReportsPerSec: 100},
		{Name: "beaconhub-full-proc", QoS: 0, ReportsPerSec: 70},
	}
	got := ratios(rs)[0]
	want := []float64{0.5, 0.6, 0.7}
	if len(got) != len(want) {
		t.Fatalf("ratios %v, want %v", got, want)
	}
	for i := range want {
		if d := got[i] - want[i]; d > 1e-9 || d < -1e-9 {
			t.Fatalf("ratios %v, want %v", got, want)
		}
	}
	var out bytes.Buffer
	print(&out, Config{QoS: []byte{0}, Batch: 8}, rs)
	if !strings.Contains(out.String(), "over 3 alternating pairs: median 0.60 (0.50-0.70)") {
		t.Fatalf("summary missing:\n%s", out.String())
	}
}

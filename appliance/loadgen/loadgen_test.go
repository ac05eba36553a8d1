package loadgen

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
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

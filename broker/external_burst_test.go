package broker

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"beaconhub/broker/brokertest"
)

// documentedMosquittoConf is the configuration block docs/mqtt.md gives
// for a mosquitto used as the external broker, read from the page so the
// page says what is tested.
func documentedMosquittoConf(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../docs/mqtt.md")
	if err != nil {
		t.Fatal(err)
	}
	const marker = "# BeaconHub external broker: queues\n"
	i := bytes.Index(doc, []byte(marker))
	if i < 0 {
		t.Fatalf("docs/mqtt.md has no block starting %q", marker)
	}
	block := doc[i:]
	return string(block[:bytes.Index(block, []byte("```"))])
}

// pubLines publishes one QoS 1 message per line with a single
// mosquitto_pub connection, as fast as the broker acknowledges them.
func pubLines(t *testing.T, mq *mosquitto, topic string, from, n int) {
	t.Helper()
	bin := brokertest.Need(t, "mosquitto_pub", "/usr/bin/mosquitto_pub")
	var lines strings.Builder
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&lines, "m%05d\n", i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	host, port, _ := strings.Cut(mq.addr(), ":")
	cmd := exec.CommandContext(ctx, bin, "-h", host, "-p", port, "-u", testUser, "-P", testPass, "-q", "1", "-t", topic, "-l")
	cmd.Stdin = strings.NewReader(lines.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mosquitto_pub -l: %v: %s", err, out)
	}
}

// TestExternalBurstsWithTheDocumentedMosquitto: every QoS 1 message the
// broker acknowledged to a gateway reaches the sink, with mosquitto set
// up as docs/mqtt.md says, both while BeaconHub is away (the broker
// queues for its persistent session) and while it is slow to commit (the
// broker holds messages in flight). At mosquitto's defaults (20 in
// flight, 1,000 queued) a black-box check saw 355 of a 1,500-message
// burst dropped by the broker, acknowledged and lost.
func TestExternalBurstsWithTheDocumentedMosquitto(t *testing.T) {
	conf := documentedMosquittoConf(t)
	mq := &mosquitto{t: t, m: brokertest.StartMosquittoWith(t, testUser, testPass, conf)}
	const n = 1500
	topic := "gw/" + gwMAC + "/adv1"
	id := "beaconhub-burst"

	// Away: subscribe once (the session), leave, publish, come back.
	x := startExternal(t, ExternalOptions{URL: mq.url(), Credentials: creds(testUser, testPass), ClientID: id})
	eventually(t, "connected", func() bool { return x.Stats().Connected })
	_ = x.Close()
	pubLines(t, mq, topic, 0, n)

	gate := make(chan struct{})
	x = startExternal(t, ExternalOptions{URL: mq.url(), Credentials: creds(testUser, testPass), ClientID: id})
	distinct := func() int {
		seen := map[string]bool{}
		for _, m := range x.sink.all() {
			seen[string(m.payload)] = true
		}
		return len(seen)
	}
	eventually(t, "the burst queued while away", func() bool { return distinct() == n })

	// Slow: the sink holds every message until the whole burst is
	// acknowledged to the publisher.
	x.sink.mu.Lock()
	x.sink.hook = func(msg) error { <-gate; return nil }
	x.sink.mu.Unlock()
	pubLines(t, mq, topic, n, n)
	close(gate)
	eventually(t, "the burst held in flight", func() bool { return distinct() == 2*n })
}

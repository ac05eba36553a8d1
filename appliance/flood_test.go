package appliance_test

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"beaconhub/appliance"

	paho "github.com/eclipse/paho.mqtt.golang"
)

func connect(t *testing.T, app *appliance.App, id string) paho.Client {
	t.Helper()
	c := app.Live().Get()
	opts := paho.NewClientOptions().AddBroker("tcp://" + app.MQTTAddr()).SetClientID(id).
		SetUsername(c.MQTTUser).SetPassword(c.MQTTPass).SetAutoReconnect(false)
	cl := paho.NewClient(opts)
	if tok := cl.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("connect %s: %v", id, tok.Error())
	}
	t.Cleanup(func() { cl.Disconnect(0) })
	return cl
}

// goodRun publishes n QoS 1 sensor messages and returns their ack latencies.
func goodRun(t *testing.T, cl paho.Client, n, first int, base int64) []time.Duration {
	t.Helper()
	lat := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		k := first + i // unique time and value, so no reading is a duplicate of another
		p := fmt.Sprintf(`{"reports":[{"mac":"C30000000A01","rssi":-70,"ts":%d,"temperature":%.2f}]}`, base+int64(k)*400, float64(k)/10)
		t0 := time.Now()
		tok := cl.Publish("gw/AC233FA0B1C2/adv1", 1, false, p)
		if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			t.Fatalf("good gateway publish %d not acknowledged: %v", i, tok.Error())
		}
		lat = append(lat, time.Since(t0))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat
}

// TestMalformedFloodDoesNotSlowOthers measures a good gateway's QoS 1 ack
// latency alone and while another gateway floods malformed payloads.
func TestMalformedFloodDoesNotSlowOthers(t *testing.T) {
	app := startApp(t, nil)
	good := connect(t, app, "AC233FA0B1C2")
	bad := connect(t, app, "AC233FA0B1FF")
	const n = 300
	// Within the 5-minute skew window, so the gateway's ts is kept.
	base := time.Now().UnixMilli() - 250000
	alone := goodRun(t, good, n, 0, base)

	var stop atomic.Bool
	var sent atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		garbage := []string{`not json`, `{"reports":[{"mac":"zz","rssi":5}]}`, `{"reports":[]}`, `{"reports":[{"mac":"C30000000A01","rssi":-1,"temperature":"hot"}]}`}
		for i := 0; !stop.Load(); i++ {
			tok := bad.Publish("gw/AC233FA0B1FF/adv1", 0, false, garbage[i%len(garbage)])
			if i%256 == 0 {
				tok.Wait()
			}
			sent.Add(1)
		}
	}()
	flooded := goodRun(t, good, n, n, base)
	stop.Store(true)
	wg.Wait()

	p99 := func(d []time.Duration) time.Duration { return d[len(d)*99/100] }
	p50 := func(d []time.Duration) time.Duration { return d[len(d)/2] }
	st := app.Pipeline().Stats.Snapshot()
	var badDrops int64
	for _, g := range st.Gateways {
		if g.MAC == "AC233FA0B1FF" {
			for _, v := range g.Drops {
				badDrops += v
			}
		}
	}
	t.Logf("good gateway QoS 1 ack: alone p50 %v p99 %v; during flood p50 %v p99 %v (ratio p50 %.2f); flood sent %d messages, %d counted drops",
		p50(alone), p99(alone), p50(flooded), p99(flooded), float64(p50(flooded))/float64(p50(alone)), sent.Load(), badDrops)
	if got := len(temps(t, app.DB(), "SEN-A1-1")); got != 2*n {
		t.Fatalf("good gateway readings stored = %d, want %d", got, 2*n)
	}
	if badDrops == 0 {
		t.Fatal("the flood was not counted as drops")
	}
	// Generous bound for a shared 2-core machine: the flood may cost CPU,
	// but must not stall the good gateway.
	if p99(flooded) > 50*p99(alone)+200*time.Millisecond {
		t.Fatalf("flood slowed the good gateway: p99 %v -> %v", p99(alone), p99(flooded))
	}
}

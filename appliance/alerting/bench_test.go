package alerting_test

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"beaconhub/appliance/alerting/alertsystest"
	"beaconhub/store"
)

// BenchmarkPressToAlertsys measures, through the real embedded broker, the
// time from the MQTT publish of a press (five gateways hearing it at the
// same moment, QoS 1 like real gateways) to the convene request arriving at
// a local fake alertsys, while other gateways keep up a background load of
// 20,000 reports/s. Each iteration presses a different panic beacon, so no
// press falls into another's dedup window; every iteration must yield
// exactly one event and one convene.
//
//	go test -run '^$' -bench PressToAlertsys -benchtime 200x ./appliance/alerting/
func BenchmarkPressToAlertsys(b *testing.B) {
	const (
		bgGateways   = 20
		bgPerMsg     = 10
		bgMsgsPerSec = 100 // per gateway: 20 × 100 × 10 = 20,000 reports/s
		bgBeacons    = 2000
	)
	fake := alertsystest.New()
	defer fake.Close()
	app := startAppliance(b, fake, map[string]any{"server_features": []string{"service"}})
	// Background beacons: watches sending adv4 heartbeats (a quarter with
	// motion) and sensors sending adv1 readings, as the loadgen mix.
	err := app.DB().SeedBeacons(bgBeacons, func(i int) store.Beacon {
		typ := "watch"
		if i%10 == 0 {
			typ = "sensor"
		}
		return store.Beacon{AssetUID: fmt.Sprintf("BG-%d", i), MAC: fmt.Sprintf("C4%010X", i), Type: typ, Name: "bg", Active: true}
	})
	if err != nil {
		b.Fatal(err)
	}
	err = app.DB().SeedBeacons(b.N, func(i int) store.Beacon {
		return store.Beacon{AssetUID: fmt.Sprintf("PAN-B-%d", i), MAC: fmt.Sprintf("C5%010X", i), Type: "panic", Name: "p", Active: true}
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := app.Registry().Reload(); err != nil {
		b.Fatal(err)
	}
	c := app.Live().Get()

	arrived := make(chan string, b.N+16)
	fake.OnConvene(func(cv alertsystest.Convene) { arrived <- cv.Body.Asset.AssetUID })

	// Background load.
	stop := make(chan struct{})
	var bgSent atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < bgGateways; g++ {
		id := fmt.Sprintf("AD%010X", g)
		conn := rawConnect(b, app.MQTTAddr(), id, c.MQTTUser, c.MQTTPass)
		msgs := backgroundMessages(g, id, bgPerMsg, bgBeacons)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			tick := time.NewTicker(time.Second / bgMsgsPerSec)
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				if _, err := conn.Write(msgs[i%len(msgs)]); err != nil {
					return
				}
				bgSent.Add(bgPerMsg)
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()

	gws := make([]*rawClient, 5)
	for i := range gws {
		gws[i] = rawConnect(b, app.MQTTAddr(), gatewayMAC(i+1), c.MQTTUser, c.MQTTPass)
		defer gws[i].Close()
	}
	// Let the background load settle before measuring.
	time.Sleep(time.Second) // load generation warm-up, not a wait for a condition
	startReports := app.Pipeline().Stats.Totals().Reports
	startAt := time.Now()

	toAlertsys := make([]time.Duration, 0, b.N)
	toAck := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		uid := fmt.Sprintf("PAN-B-%d", i)
		payload := fmt.Sprintf(`{"reports":[{"mac":"C5%010X","rssi":-60,"beacon_is_pushed":true,"press":"single"}]}`, i)
		t0 := time.Now()
		var pubWG sync.WaitGroup
		var firstAck atomic.Int64
		for g, gw := range gws {
			pubWG.Add(1)
			go func() {
				defer pubWG.Done()
				gw.publishQoS1("gw/"+gatewayMAC(g+1)+"/adv4", payload, uint16(i%60000+1))
				firstAck.CompareAndSwap(0, int64(time.Since(t0)))
			}()
		}
		select {
		case got := <-arrived:
			if got != uid {
				b.Fatalf("convene for %s, want %s", got, uid)
			}
			toAlertsys = append(toAlertsys, time.Since(t0))
		case <-time.After(10 * time.Second):
			b.Fatalf("press %d never reached alertsys", i)
		}
		pubWG.Wait()
		toAck = append(toAck, time.Duration(firstAck.Load()))
	}
	b.StopTimer()
	bgRate := float64(app.Pipeline().Stats.Totals().Reports-startReports) / time.Since(startAt).Seconds()

	time.Sleep(200 * time.Millisecond) // a late duplicate convene would arrive now: bounded settle, then check
	if n := len(arrived); n != 0 {
		b.Fatalf("%d extra convene calls", n)
	}
	evs, _, _ := app.DB().ListEvents(store.EventFilter{Status: store.EventAlert}, store.EventCursor{}, b.N+10, 0)
	if len(evs) != b.N {
		b.Fatalf("%d alert events for %d presses", len(evs), b.N)
	}
	p := func(ds []time.Duration, q float64) float64 {
		s := append([]time.Duration(nil), ds...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return float64(s[min(len(s)-1, int(q*float64(len(s))))].Microseconds()) / 1000
	}
	b.ReportMetric(p(toAlertsys, 0.50), "p50-alertsys-ms")
	b.ReportMetric(p(toAlertsys, 0.99), "p99-alertsys-ms")
	b.ReportMetric(p(toAck, 0.50), "p50-puback-ms")
	b.ReportMetric(p(toAck, 0.99), "p99-puback-ms")
	b.ReportMetric(bgRate, "bg-reports/s")
	b.ReportMetric(0, "ns/op") // the per-op time is the pacing, not a cost
}

// backgroundMessages pre-encodes a gateway's QoS 0 publishes.
func backgroundMessages(g int, gw string, perMsg, beacons int) [][]byte {
	rng := rand.New(rand.NewSource(int64(g)))
	var out [][]byte
	for m := 0; m < 64; m++ {
		kind := "adv4"
		if m%10 == 0 {
			kind = "adv1"
		}
		body := `{"reports":[`
		for r := 0; r < perMsg; r++ {
			if r > 0 {
				body += ","
			}
			bi := rng.Intn(beacons)
			if kind == "adv1" {
				bi = bi / 10 * 10 // sensors are every tenth beacon
				body += fmt.Sprintf(`{"mac":"C4%010X","rssi":%d,"temperature":%.1f,"humidity":%.1f,"vbatt":2900}`, bi, -40-rng.Intn(50), 2+rng.Float64()*6, 40+rng.Float64()*30)
			} else {
				if bi%10 == 0 {
					bi++
				}
				body += fmt.Sprintf(`{"mac":"C4%010X","rssi":%d,"beacon_is_pushed":false,"motion":%t}`, bi, -40-rng.Intn(50), rng.Intn(4) == 0)
			}
		}
		body += "]}"
		out = append(out, encodePublish("gw/"+gw+"/"+kind, []byte(body), 0, 0))
	}
	return out
}

// A minimal MQTT 3.1.1 client: the benchmark must spend its CPU on the
// server, not on a client library.
type rawClient struct {
	net.Conn
	r *bufio.Reader
}

func appendLen(b []byte, n int) []byte {
	for {
		d := byte(n % 128)
		n /= 128
		if n > 0 {
			d |= 0x80
		}
		b = append(b, d)
		if n == 0 {
			return b
		}
	}
}

func appendStr(b []byte, s string) []byte {
	return append(binary.BigEndian.AppendUint16(b, uint16(len(s))), s...)
}

func rawConnect(b testing.TB, addr, id, user, pass string) *rawClient {
	b.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	body := appendStr(nil, "MQTT")
	body = append(body, 4, 0xC2, 0, 0) // level 4; user, password, clean session; no keepalive
	body = appendStr(appendStr(appendStr(body, id), user), pass)
	pkt := appendLen([]byte{0x10}, len(body))
	if _, err := conn.Write(append(pkt, body...)); err != nil {
		b.Fatal(err)
	}
	c := &rawClient{Conn: conn, r: bufio.NewReader(conn)}
	var ack [4]byte
	if _, err := io.ReadFull(c.r, ack[:]); err != nil || ack[0] != 0x20 || ack[3] != 0 {
		b.Fatalf("CONNACK %x %v", ack, err)
	}
	return c
}

func encodePublish(topic string, payload []byte, qos byte, id uint16) []byte {
	rem := 2 + len(topic) + len(payload)
	if qos > 0 {
		rem += 2
	}
	b := appendLen([]byte{0x30 | qos<<1}, rem)
	b = appendStr(b, topic)
	if qos > 0 {
		b = binary.BigEndian.AppendUint16(b, id)
	}
	return append(b, payload...)
}

// publishQoS1 sends one publish and waits for its PUBACK.
func (c *rawClient) publishQoS1(topic, payload string, id uint16) {
	if _, err := c.Write(encodePublish(topic, []byte(payload), 1, id)); err != nil {
		return
	}
	var ack [4]byte
	_, _ = io.ReadFull(c.r, ack[:])
}

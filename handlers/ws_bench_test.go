package handlers

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"beaconhub/appliance/auth"
	"beaconhub/appliance/rtls"

	"github.com/gorilla/websocket"
)

// BenchmarkWSFanout measures the live feed under the load: 500
// WebSocket subscribers on 127.0.0.1, engine track events paced at a
// fixed rate, latency from the event (the report's decision) to the
// frame decoded by the client. "hub" goes through wsHub (one encode, a
// PreparedMessage, bounded queues, writer goroutines); "direct" is the
// baseline: the same frame bytes written by the emitting goroutine
// straight to each subscriber's connection, no hub. Reported: p50/p99
// latency in µs and the emitter's cost per event (what ingest pays).
//
//	spread: 10,000 beacons, 500 clients x 20 beacons each, every beacon
//	        changes once a second (10,000 events/s, ~1 frame each);
//	hot:    500 clients all following the same 10 beacons, 100 events/s
//	        (50,000 frames/s).
func BenchmarkWSFanout(b *testing.B) {
	for _, sc := range []fanoutScenario{
		{name: "spread", beacons: 10000, perClient: 20, rate: 10000},
		{name: "hot", beacons: 10, perClient: 10, rate: 100},
	} {
		for _, mode := range []string{"hub", "direct"} {
			b.Run(sc.name+"/"+mode, func(b *testing.B) { runFanout(b, sc, mode == "hub") })
		}
	}
}

type fanoutScenario struct {
	name      string
	beacons   int
	perClient int
	rate      int // events per second
}

const fanoutClients = 500

type directConn struct {
	mu sync.Mutex
	c  *websocket.Conn
}

func runFanout(b *testing.B, sc fanoutScenario, viaHub bool) {
	fake := newFakeTracker()
	srv := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	// No ping (and so no session re-check) within a run: this server has
	// no accounts to check the session against.
	hub := newWSHub(srv, fake, WSOptions{SendBuffer: 1024, PingInterval: time.Hour})
	defer hub.close()

	channelsOf := func(i int) []string {
		out := make([]string, 0, sc.perClient)
		for k := 0; k < sc.perClient; k++ {
			out = append(out, chanTrack+"B"+strconv.Itoa((i*sc.perClient+k)%sc.beacons))
		}
		return out
	}
	var dmu sync.Mutex
	direct := map[string][]*directConn{}
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := w
		if viaHub {
			rw = &coalescingWriter{ResponseWriter: w} // as the product's /ws does
		}
		conn, err := up.Upgrade(rw, r, nil)
		if err != nil {
			return
		}
		i, _ := strconv.Atoi(r.URL.Query().Get("i"))
		if viaHub {
			c := hub.serve(conn, &wsSession{claims: &auth.Claims{Role: auth.RoleAdmin}, scope: scope{all: true}})
			for _, ch := range channelsOf(i) {
				hub.add(c, ch, strings.TrimPrefix(ch, chanTrack), false, func() {})
			}
			return
		}
		dc := &directConn{c: conn}
		dmu.Lock()
		for _, ch := range channelsOf(i) {
			direct[ch] = append(direct[ch], dc)
		}
		dmu.Unlock()
		go func() { // answer pings/close like a served client would
			for {
				if _, _, err := conn.ReadMessage(); err != nil {
					return
				}
			}
		}()
	}))
	var writes atomic.Int64
	ts.Listener = countingListener{ts.Listener, &writes}
	ts.Start()
	defer ts.Close()
	url := "ws" + strings.TrimPrefix(ts.URL, "http")

	pool := dialBenchClients(b, url, fanoutClients, func(data []byte) (time.Duration, bool) {
		var f struct {
			Data struct {
				Since int64 `json:"since"`
			} `json:"data"`
		}
		if json.Unmarshal(data, &f) == nil && f.Data.Since > 0 {
			return time.Duration(time.Now().UnixNano() - f.Data.Since), true
		}
		return 0, false
	})
	defer pool.close() // on a failure; a normal end has closed them already
	// Every subscription is in place before events flow.
	waitSubs := time.Now().Add(10 * time.Second)
	for {
		n := 0
		if viaHub {
			hub.mu.RLock()
			n = len(hub.clients)
			hub.mu.RUnlock()
		} else {
			dmu.Lock()
			for _, cs := range direct {
				n += len(cs)
			}
			dmu.Unlock()
			n /= sc.perClient
		}
		if n == fanoutClients {
			break
		}
		if time.Now().After(waitSubs) {
			b.Fatalf("%d of %d clients subscribed", n, fanoutClients)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, bounded by the deadline
	}

	// One iteration: one second of events at the scenario's rate, paced
	// in 10 ms slices.
	perSlice := max(sc.rate/100, 1)
	var emitCost time.Duration
	events := 0
	w0 := writes.Load()
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		tick := time.NewTicker(10 * time.Millisecond)
		for s := 0; s < 100; s++ {
			<-tick.C
			t0 := time.Now()
			for k := 0; k < perSlice; k++ {
				uid := "B" + strconv.Itoa(events%sc.beacons)
				loc := rtls.Location{AssetUID: uid, Zone: 1, ZoneName: "Hall", MapID: 1, Since: time.Now().UnixNano(), Updated: 1}
				if viaHub {
					fake.emit(rtls.Event{AssetUID: uid, Location: loc})
				} else {
					ch := chanTrack + uid
					data, _ := json.Marshal(trackFrame{Type: "track", Channel: ch, Data: loc})
					for _, dc := range direct[ch] {
						dc.mu.Lock()
						_ = dc.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
						_ = dc.c.WriteMessage(websocket.TextMessage, data)
						dc.mu.Unlock()
					}
				}
				events++
			}
			emitCost += time.Since(t0)
		}
		tick.Stop()
	}
	b.StopTimer()
	sent := writes.Load() - w0
	// Let the last frames land, then close every client.
	time.Sleep(200 * time.Millisecond) // settling after the measured window; not a correctness wait
	lat := pool.close()
	slices.Sort(lat)
	if len(lat) == 0 {
		b.Fatal("no frames received")
	}
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(emitCost.Nanoseconds())/float64(events), "emit-ns/event")
	b.ReportMetric(float64(len(lat))/float64(events), "frames/event")
	b.ReportMetric(float64(sent)/float64(len(lat)), "writes/frame")
	b.ReportMetric(float64(hub.dropped.Load()), "dropped")
}

// benchClients are a benchmark's WebSocket clients, each reading on its
// own goroutine and keeping the latencies measure finds in its frames.
type benchClients struct {
	conns []*websocket.Conn
	wg    sync.WaitGroup
	mu    sync.Mutex
	lat   []time.Duration
	done  bool
}

// dialBenchClients connects n clients to url (each with ?i=<index>, which
// the benchmark's server reads to subscribe it). measure gets every
// frame a client decodes and says what latency, if any, it shows.
func dialBenchClients(b *testing.B, url string, n int, measure func(data []byte) (time.Duration, bool)) *benchClients {
	p := &benchClients{conns: make([]*websocket.Conn, 0, n)}
	for i := 0; i < n; i++ {
		c, _, err := websocket.DefaultDialer.Dial(url+"?i="+strconv.Itoa(i), nil)
		if err != nil {
			p.close()
			b.Fatal(err)
		}
		p.conns = append(p.conns, c)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			var mine []time.Duration
			defer func() { p.mu.Lock(); p.lat = append(p.lat, mine...); p.mu.Unlock() }()
			for {
				_, data, err := c.ReadMessage()
				if err != nil {
					return
				}
				if d, ok := measure(data); ok {
					mine = append(mine, d)
				}
			}
		}()
	}
	return p
}

// close closes every client, waits for their readers and returns the
// latencies kept (once; later calls return nil).
func (p *benchClients) close() []time.Duration {
	if p.done {
		return nil
	}
	p.done = true
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.wg.Wait()
	return p.lat
}

// BenchmarkWSHubOnEvent is what the engine's listener costs the ingest
// path: for a beacon nobody follows (the common case) and for one with
// subscribers (a channel send to the dispatcher, which drains it here
// into a client queue that a goroutine empties).
func BenchmarkWSHubOnEvent(b *testing.B) {
	fake := newFakeTracker()
	srv := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	hub := newWSHub(srv, fake, WSOptions{SendBuffer: 1 << 16})
	defer hub.close()
	c := &wsClient{hub: hub, q: newWSQueue(1<<16, 1), done: make(chan struct{}), read: make(chan struct{}), subs: map[string]bool{}}
	hub.add(c, chanTrack+"WATCHED", "WATCHED", false, func() {})
	stop := make(chan struct{})
	defer close(stop)
	go func() { // the writer's part: empty the queue as it fills
		var batch []queuedFrame
		for {
			select {
			case <-c.q.wake:
				batch = c.q.take(batch[:0])
				clear(batch)
			case <-stop:
				return
			}
		}
	}()
	ev := func(uid string) rtls.Event {
		return rtls.Event{AssetUID: uid, Location: rtls.Location{AssetUID: uid, Zone: 1, ZoneName: "Hall", MapID: 1}}
	}
	unwatched, watched := ev("NOBODY"), ev("WATCHED")
	b.Run("unwatched", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			hub.onEvent(unwatched)
		}
	})
	// Emitted back to back, far faster than any engine decides, so the
	// dispatcher (which encodes) falls behind and the queue fills: lost/op
	// says how many took the drop path, which is the same non-blocking
	// select.
	b.Run("watched", func(b *testing.B) {
		b.ReportAllocs()
		lost0 := hub.lost.Load()
		for i := 0; i < b.N; i++ {
			hub.onEvent(watched)
		}
		b.StopTimer()
		b.ReportMetric(float64(hub.lost.Load()-lost0)/float64(b.N), "lost/op")
	})
}

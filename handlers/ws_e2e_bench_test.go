package handlers

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/auth"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/ingest"
	"beaconhub/appliance/ingest/ingesttest"
	"beaconhub/appliance/rtls"
	"beaconhub/appliance/rtls/rtlsbench"

	"github.com/gorilla/websocket"
)

// BenchmarkWSEndToEnd measures the whole live path in one process, at the
// issue's size: 10,000 watch beacons, each heard by its 20 nearest of 200
// gateways once a (fake-clock) second, 200,000 reports/s, through the
// real ingest pipeline into a real rtls.Engine ("strongest" and "hmm"),
// whose track events go through the product's wsHub to 500 real
// gorilla/websocket clients on 127.0.0.1, each following 20 beacons
// (every beacon followed exactly once: 10,000 subscriptions).
//
// World: BenchmarkEngine's (appliance/rtls/rtlsbench builds the site for
// both; the beacons and publishes are made here): a 10 x 10 grid of 10 m
// zones on a 1000 x 1000 px map, 200 placed gateways, 3 survey samples
// per zone, publishes of up to 100 reports as the gateways send them,
// RSSI with 3 dB noise.
// Both algorithms emit a track event (and so a frame) only on a zone
// change, and static beacons settle within seconds, so half the beacons
// (every second one, so each client follows 10 of them) walk at 1.4 m/s,
// turning a little each second and bouncing off the walls; the other half
// stand still, their reports replayed from three noise draws in turn.
// frames/s says how much traffic the latencies are drawn from.
//
// Server: wired as BenchmarkWSFanout wires its fake tracker: a bare
// Server, newWSHub with the engine behind a two-method adapter
// (e2eTracker), an httptest handler that upgrades through
// coalescingWriter, serves each connection with an admin session and
// subscribes it with hub.add. The subscribe messages (auth, the registry
// check, the snapshot) are not on the measured path and are skipped, so
// no store is needed.
//
// Pacing: one second of reports per fake second, handed to
// HandlePublish by one goroutine, spread over the second in 10 ms slices
// as BenchmarkWSFanout paces its events, on an absolute wall schedule (a
// slice that starts late is reported as late-ms); the fake clock advances
// 1 s / publishes after each. One goroutine publishes where the product
// has one read loop per gateway: that makes attribution exact (below) and
// leaves the second core to the hub, the connections and the clients.
//
// Attribution: engine listeners run synchronously inside HandlePublish,
// on the publishing goroutine. A timing listener, registered before the
// hub's (so it runs first for every event), takes the time of the
// decision and records per beacon (Location.Updated, Location.Zone) ->
// when the current publish was handed to HandlePublish, in a ring of the
// beacon's last 8 events. A client that decodes a track frame looks its
// (asset_uid, updated, zone_id) up in that ring: the frame's latency is
// now minus the handing of the very publish whose report made the
// decision. Consecutive events of a beacon differ in zone, so the key is
// unique unless a beacon goes A -> B -> A within one fake millisecond;
// should two match, the earlier publish is taken (a latency is never
// understated). A frame found in no ring counts as unmatched.
//
// Baseline, in the same run: after 8 unmeasured seconds (every beacon
// located, sent to its client, and past strongest's 3 s dwell), 12
// measured seconds follow in the order live, base, base, live, ...: live
// with the hub listening, base with the hub's listener removed from the
// engine (same pipeline, same engine, same publishes, the WebSocket path
// replaced by nothing; the clients stay connected, idle). The order
// cancels a drift, gives each phase each noise draw twice, and splits
// evenly the engine's 6 s cadence (its tag offset estimate runs every
// third 2 s window for every beacon, and the beacons all began together).
//
// Metrics (µs are wall time, from the publish handed to HandlePublish):
//
//	p50-µs, p99-µs       report -> frame decoded by a client (live seconds)
//	p99-decide-µs        report -> engine listener call (live seconds)
//	base-p99-decide-µs   report -> engine listener call (baseline seconds)
//	ratio                p99-µs / base-p99-decide-µs
//	frames/s             track frames decoded per live second
//	decisions/s          track events per live second
//	base-decisions/s     track events per baseline second
//	dropped              clients the hub cut as too slow
//	lost                 events the hub dropped (dispatcher queue full)
//	unmatched            track frames not attributable to a publish
//	late-ms              worst lateness of a pacing slice (0: the box kept
//	                     the schedule)
//
// Run: go test -run '^$' -bench WSEndToEnd -benchtime 1x ./handlers/
// (an iteration is 12 s; setup and warm-up add about 10 s). Figures
// assume 2 cores: on a larger box add -cpu 2.
func BenchmarkWSEndToEnd(b *testing.B) {
	if e2eW == nil {
		e2eW = buildE2EWorld()
	}
	for _, alg := range []string{rtls.AlgStrongest, rtls.AlgFilter} {
		b.Run(alg, func(b *testing.B) { runE2E(b, e2eW, alg) })
	}
}

const (
	e2eBeacons   = 10000
	e2eGateways  = 200
	e2eHeard     = 20  // gateways hearing each beacon
	e2ePerMsg    = 100 // reports per publish
	e2eClients   = 500
	e2ePerClient = e2eBeacons / e2eClients
	e2eWalkEvery = 2    // every second beacon walks
	e2eSpeed     = 14.0 // px/s: 1.4 m/s at 10 px/m
	e2eDraws     = 3    // noise draws of the standing beacons' reports
	e2eWarm      = 8    // unmeasured seconds
	e2eMeasured  = 12   // measured seconds per iteration (a multiple of 4)
	e2eWalk      = e2eWarm + e2eMeasured
	e2eSlice     = 10 * time.Millisecond
	e2eRingN     = 8
)

type e2ePublish struct {
	client, topic string
	payload       []byte
}

// e2eWorld holds the publishes per gateway: the standing beacons' in
// e2eDraws noise draws, the walkers' for each of e2eWalk seconds of their
// walk (played back and forth, so a walk never jumps).
type e2eWorld struct {
	site    rtls.Site
	samples []rtls.Sample
	reg     *ingesttest.Registry
	static  [e2eDraws][e2eGateways][]e2ePublish
	walk    [e2eWalk][e2eGateways][]e2ePublish
}

// second returns the publishes of second g, gateway by gateway, into out.
func (w *e2eWorld) second(g int, out []*e2ePublish) []*e2ePublish {
	k := g % (2 * (e2eWalk - 1))
	if k >= e2eWalk {
		k = 2*(e2eWalk-1) - k
	}
	out = out[:0]
	for gw := 0; gw < e2eGateways; gw++ {
		for i := range w.static[g%e2eDraws][gw] {
			out = append(out, &w.static[g%e2eDraws][gw][i])
		}
		for i := range w.walk[k][gw] {
			out = append(out, &w.walk[k][gw][i])
		}
	}
	return out
}

var e2eW *e2eWorld

func e2eUID(i int) string { return fmt.Sprintf("WAT-%05d", i) }

// e2eIndex is e2eUID's inverse (-1 for any other uid).
func e2eIndex(uid string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(uid, "WAT-"))
	if err != nil || n < 0 || n >= e2eBeacons {
		return -1
	}
	return n
}

func buildE2EWorld() *e2eWorld {
	rng := rand.New(rand.NewPCG(42, 7))
	bw := rtlsbench.New(rng, e2eGateways)
	w := &e2eWorld{site: bw.Site, samples: bw.Samples, reg: bw.Reg}
	gws, gwMACs := bw.GW, bw.GWMAC
	rssi := rtlsbench.RSSI
	type heard struct {
		mac  string
		x, y float64
	}
	idx := make([]int, e2eGateways)
	nearest := func(x, y float64) []int { return bw.Nearest(x, y, e2eHeard, idx) }
	// publishes turns who hears whom into each gateway's publishes.
	publishes := func(perGW [][]heard, out *[e2eGateways][]e2ePublish) {
		for g, hs := range perGW {
			client := ingest.MAC(gwMACs[g]).String()
			for start := 0; start < len(hs); start += e2ePerMsg {
				buf := []byte(`{"reports":[`)
				for i, h := range hs[start:min(start+e2ePerMsg, len(hs))] {
					if i > 0 {
						buf = append(buf, ',')
					}
					buf = fmt.Appendf(buf, `{"mac":%q,"rssi":%d,"beacon_is_pushed":false}`, h.mac, rssi(gws[g], h.x, h.y, rng.NormFloat64()*3))
				}
				buf = append(buf, "]}"...)
				out[g] = append(out[g], e2ePublish{client, "gw/" + client + "/adv4", buf})
			}
		}
	}
	type walker struct {
		mac          string
		x, y, course float64
	}
	var walkers []walker
	standing := make([][]heard, e2eGateways)
	for b := 0; b < e2eBeacons; b++ {
		mac := [6]byte{0xC3, 0, 0, 0, byte(b >> 8), byte(b)}
		w.reg.Beacons[mac] = &assets.Asset{UID: e2eUID(b), Type: "watch", Kind: "beacon", Seen: &assets.Seen{}}
		x, y := rng.Float64()*1000, rng.Float64()*1000
		if b%e2eWalkEvery == 0 {
			walkers = append(walkers, walker{ingest.MAC(mac).String(), x, y, rng.Float64() * 2 * math.Pi})
			continue
		}
		for _, g := range nearest(x, y) {
			standing[g] = append(standing[g], heard{ingest.MAC(mac).String(), x, y})
		}
	}
	for d := range w.static {
		publishes(standing, &w.static[d])
	}
	for s := range w.walk {
		perGW := make([][]heard, e2eGateways)
		for i := range walkers {
			wk := &walkers[i]
			for _, g := range nearest(wk.x, wk.y) {
				perGW[g] = append(perGW[g], heard{wk.mac, wk.x, wk.y})
			}
			// a step for the next second, off the walls
			wk.course += rng.NormFloat64() * 0.3
			wk.x += e2eSpeed * math.Cos(wk.course)
			wk.y += e2eSpeed * math.Sin(wk.course)
			if wk.x < 0 || wk.x > 1000 {
				wk.x, wk.course = math.Max(0, math.Min(1000, wk.x)), math.Pi-wk.course
			}
			if wk.y < 0 || wk.y > 1000 {
				wk.y, wk.course = math.Max(0, math.Min(1000, wk.y)), -wk.course
			}
		}
		publishes(perGW, &w.walk[s])
	}
	return w
}

// e2eTracker is the engine as a Tracker: last-seen is ingest's, and the
// site never changes here.
type e2eTracker struct{ *rtls.Engine }

func (e2eTracker) LastSeen(string) int64 { return 0 }
func (e2eTracker) Reload() error         { return nil }

var _ Tracker = e2eTracker{}

// e2eEvent is one track event as the timing listener saw it.
type e2eEvent struct {
	updated  int64  // Location.Updated (fake-clock ms)
	zone     uint64 // Location.Zone
	handed   int64  // ns since t0 at which its publish was handed to HandlePublish
	measured bool   // emitted in a live measured second
}

// e2eRing holds a beacon's last events.
type e2eRing struct {
	mu   sync.Mutex
	ev   [e2eRingN]e2eEvent
	next int
}

func (r *e2eRing) put(e e2eEvent) {
	r.mu.Lock()
	r.ev[r.next] = e
	r.next = (r.next + 1) % e2eRingN
	r.mu.Unlock()
}

// find returns the event a frame of (updated, zone) carries; of several,
// the earliest handed.
func (r *e2eRing) find(updated int64, zone uint64) (e2eEvent, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var best e2eEvent
	found := false
	for _, e := range r.ev {
		if e.handed != 0 && e.updated == updated && e.zone == zone && (!found || e.handed < best.handed) {
			best, found = e, true
		}
	}
	return best, found
}

type e2eFrame struct {
	Type string `json:"type"`
	Data struct {
		AssetUID string `json:"asset_uid"`
		Zone     uint64 `json:"zone_id"`
		Updated  int64  `json:"updated"`
	} `json:"data"`
}

const (
	e2eWarming = iota
	e2eLive
	e2eBase
)

func runE2E(b *testing.B, w *e2eWorld, alg string) {
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	clk := clock.NewFake(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	eng := rtls.New(rtls.Options{Clock: clk, Logger: discard})
	defer eng.Close()
	eng.Configure(w.site, w.samples)
	if err := eng.Start(alg); err != nil {
		b.Fatal(err)
	}
	p := ingest.New(ingest.Options{Registry: w.reg, Writer: ingesttest.Writer{}, Clock: clk, Logger: discard})
	p.AddSubscriber(eng)

	srv := &Server{log: discard}
	// No ping (and so no session re-check) within a run, as in
	// runFanout: this server has no accounts.
	hub := newWSHub(srv, e2eTracker{eng}, WSOptions{SendBuffer: 1024, PingInterval: time.Hour})
	defer hub.close()
	hub.cancel() // it listens again below, after the timing listener

	t0 := time.Now()
	rings := make([]e2eRing, e2eBeacons)
	// Only the publishing goroutine touches these: the engine calls its
	// listeners inside HandlePublish, and the fake clock fires its
	// timers (the engine's sweep) inside Advance.
	var (
		phase            = e2eWarming
		handed           int64
		decLive, decBase []time.Duration
	)
	cancelTiming := eng.Listen(func(ev rtls.Event) {
		if ev.Debug {
			return
		}
		d := time.Duration(int64(time.Since(t0)) - handed)
		if i := e2eIndex(ev.AssetUID); i >= 0 {
			rings[i].put(e2eEvent{updated: ev.Location.Updated, zone: ev.Location.Zone, handed: handed, measured: phase == e2eLive})
		}
		switch phase {
		case e2eLive:
			decLive = append(decLive, d)
		case e2eBase:
			decBase = append(decBase, d)
		}
	}, nil)
	defer cancelTiming()
	listening := false
	listen := func(on bool) {
		switch {
		case on && !listening:
			hub.cancel = eng.Listen(hub.onEvent, hub.wantsDebug)
		case !on && listening:
			hub.cancel()
		}
		listening = on
	}
	listen(true)

	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := up.Upgrade(&coalescingWriter{ResponseWriter: w}, r, nil) // as the product's /ws does
		if err != nil {
			return
		}
		i, _ := strconv.Atoi(r.URL.Query().Get("i"))
		c := hub.serve(conn, &wsSession{claims: &auth.Claims{Role: auth.RoleAdmin}, scope: scope{all: true}})
		if c == nil {
			return
		}
		for k := 0; k < e2ePerClient; k++ {
			uid := e2eUID(i*e2ePerClient + k)
			hub.add(c, chanTrack+uid, uid, false, func() {})
		}
	}))
	ts.Start() // on 127.0.0.1
	defer ts.Close()
	url := "ws" + strings.TrimPrefix(ts.URL, "http")

	var unmatched atomic.Int64
	pool := dialBenchClients(b, url, e2eClients, func(data []byte) (time.Duration, bool) {
		var f e2eFrame
		if json.Unmarshal(data, &f) != nil || f.Type != "track" {
			return 0, false // "ready"
		}
		now := int64(time.Since(t0))
		i := e2eIndex(f.Data.AssetUID)
		if i < 0 {
			unmatched.Add(1)
			return 0, false
		}
		ev, ok := rings[i].find(f.Data.Updated, f.Data.Zone)
		switch {
		case !ok:
			unmatched.Add(1)
		case ev.measured:
			return time.Duration(now - ev.handed), true
		}
		return 0, false
	})
	defer pool.close() // on a failure; a normal end has closed them already
	// Every subscription is in place before reports flow.
	waitSubs := time.Now().Add(20 * time.Second)
	for {
		hub.mu.RLock()
		n, chans := len(hub.clients), len(hub.chans)
		hub.mu.RUnlock()
		if n == e2eClients && chans == e2eBeacons {
			break
		}
		if time.Now().After(waitSubs) {
			b.Fatalf("%d of %d clients, %d of %d channels", n, e2eClients, chans, e2eBeacons)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, bounded by the deadline
	}

	// One second of reports per fake second, on an absolute wall
	// schedule of 10 ms slices.
	slicesPerSec := int(time.Second / e2eSlice)
	var (
		late   time.Duration
		ps     []*e2ePublish
		second int
	)
	origin := time.Now()
	play := func() {
		ps = w.second(second, ps)
		step := time.Second / time.Duration(len(ps))
		start := origin.Add(time.Duration(second) * time.Second)
		second++
		for s := 0; s < slicesPerSec; s++ {
			if d := time.Until(start.Add(time.Duration(s) * e2eSlice)); d > 0 {
				time.Sleep(d) // pacing against the wall clock
			} else {
				late = max(late, -d)
			}
			for _, pb := range ps[s*len(ps)/slicesPerSec : (s+1)*len(ps)/slicesPerSec] {
				handed = int64(time.Since(t0))
				if err := p.HandlePublish(pb.client, pb.topic, pb.payload, 0); err != nil {
					b.Fatal(err)
				}
				clk.Advance(step)
			}
		}
	}
	for i := 0; i < e2eWarm; i++ {
		play()
	}
	late = 0
	dropped0, lost0 := hub.dropped.Load(), hub.lost.Load()

	liveSecs, baseSecs := 0, 0
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		for s := 0; s < e2eMeasured; s++ {
			if s%4 == 0 || s%4 == 3 { // live, base, base, live
				phase = e2eLive
				listen(true)
				liveSecs++
			} else {
				phase = e2eBase
				listen(false)
				baseSecs++
			}
			play()
		}
	}
	b.StopTimer()
	phase = e2eWarming
	listen(true) // hub.close cancels it
	// The last measured second is live: let its last frames land.
	time.Sleep(500 * time.Millisecond) // settling after the measured window; not a correctness wait
	lat := pool.close()

	if len(lat) == 0 || len(decLive) == 0 || len(decBase) == 0 {
		b.Fatalf("no data: %d frames, %d live and %d baseline decisions", len(lat), len(decLive), len(decBase))
	}
	q := func(l []time.Duration, num, den int) float64 {
		slices.Sort(l)
		return float64(l[len(l)*num/den].Nanoseconds()) / 1e3
	}
	p99, base := q(lat, 99, 100), q(decBase, 99, 100)
	b.ReportMetric(q(lat, 1, 2), "p50-µs")
	b.ReportMetric(p99, "p99-µs")
	b.ReportMetric(q(decLive, 99, 100), "p99-decide-µs")
	b.ReportMetric(base, "base-p99-decide-µs")
	b.ReportMetric(p99/base, "ratio")
	b.ReportMetric(float64(len(lat))/float64(liveSecs), "frames/s")
	b.ReportMetric(float64(len(decLive))/float64(liveSecs), "decisions/s")
	b.ReportMetric(float64(len(decBase))/float64(baseSecs), "base-decisions/s")
	b.ReportMetric(float64(hub.dropped.Load()-dropped0), "dropped")
	b.ReportMetric(float64(hub.lost.Load()-lost0), "lost")
	b.ReportMetric(float64(unmatched.Load()), "unmatched")
	b.ReportMetric(float64(late.Milliseconds()), "late-ms")
}

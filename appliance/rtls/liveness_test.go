package rtls

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/ingest"
)

// shortRange is the sensitivity of the site in these tests: a gateway
// hears its own zone and the four next to it, not the diagonal ones, so
// silence says where a tag is not.
const shortRange = -86

// surveyShort is surveyWithin heard at shortRange.
func surveyShort(s Site, n int, noise float64, rng *rand.Rand) []Sample {
	out := surveyWithin(s, n, 30, noise, rng)
	for _, sm := range out {
		for g, r := range sm.RSSI {
			if r < shortRange {
				delete(sm.RSSI, g)
			}
		}
	}
	return out
}

// standShort is standAt heard at shortRange, with gateway dead (if any)
// silent.
func standShort(h *harness, s Site, uid string, x, y float64, dead [6]byte, n int, rng *rand.Rand) {
	for range n {
		for _, g := range s.Gateways {
			if r := modelRSSI(g.X, g.Y, x, y) + (rng.Float64()*2-1)*4; g.MAC != dead && r >= shortRange {
				h.sight(uid, g.MAC, r)
			}
		}
		h.clk.Advance(time.Second)
	}
}

// A tag standing under a gateway that went down: a survey of 200
// windows a zone says that gateway always hears the zone, so its silence
// is strong evidence the tag is elsewhere. Counted, it put the tag in a
// neighbouring zone in 10 stands of 20 for grid and 1 for fusion (the
// zone filters weigh the neighbours' readings more here). Judged down,
// the gateway's silence stops counting and every stand is placed under
// it.
//
// grid's standing belief (on by default) makes one difference: it takes
// the silence in full until the judgement, where the moving one forgets
// it as it spreads, so the first tag, standing 1.5 m inside the dead
// gateway's zone, may be next door after a minute, before the gateway
// is judged down (during the second stand). For grid alone every stand
// that ends after the judgement is right, and the first tag, back, is
// placed under the gateway within seconds; fusion, and grid without
// standing ("+moving"), get every stand right.
func TestADeadGatewaysSilenceStopsCounting(t *testing.T) {
	longReplay(t)
	s := gridSite(3, 3, true)
	samples := surveyShort(s, 200, 4, rand.New(rand.NewPCG(70, 71)))
	dead := gwMAC(5) // the centre zone's
	for _, alg := range []string{AlgBayes, AlgFilter, AlgGrid, AlgFusion, AlgGrid + "+moving", AlgFusion + "+moving"} {
		t.Run(alg, func(t *testing.T) {
			var logs bytes.Buffer
			p := DefaultParams()
			if a, ok := strings.CutSuffix(alg, "+moving"); ok {
				alg, p = a, noStanding()
			}
			// Only grid alone needs the first stands forgiven; fusion,
			// standing too, gets every stand right.
			gridStands := alg == AlgGrid && p.StandFor > 0
			h := tracking(t, Options{Params: p, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, s, samples, alg)
			rng := rand.New(rand.NewPCG(72, 73))
			wrong := 0
			var first [2]float64
			for i := range 20 {
				uid := "WAT-" + string(rune('A'+i))
				x, y := 105+rng.Float64()*90, 105+rng.Float64()*90 // within 4.5 m of the centre
				// The first stands judge the gateway down; every stand
				// is scored after a minute, as a tag standing there.
				standShort(h, s, uid, x, y, dead, 60, rng)
				if h.zone(uid) != 5 && (!gridStands || h.e.model.Load().live.nDown.Load() > 0) {
					wrong++
				}
				if i == 0 {
					first = [2]float64{x, y}
				}

			}
			st := h.e.Status()
			if js, _ := json.Marshal(st); !strings.Contains(string(js), `"gateways_down":["`+assets.FormatMAC(dead)+`"]`) {
				t.Fatalf("status %s, want gateways_down [%s]", js, assets.FormatMAC(dead))
			}
			if wrong > 0 {
				t.Fatalf("%d of 20 stands under the dead gateway named another zone", wrong)
			}
			if standsIn(alg, p) {
				standShort(h, s, "WAT-A", first[0], first[1], dead, 15, rng)
				if z := h.zone("WAT-A"); z != 5 {
					t.Fatalf("the first tag back under the dead gateway for 15 s: zone %d", z)
				}
			}
			if n := strings.Count(logs.String(), "gateway judged down"); n != 1 {
				t.Fatalf("%d 'judged down' lines, want 1:\n%s", n, logs.String())
			}
			// One report and it is up again: its silence counts again.
			h.sight("WAT-A", dead, -50)
			if js, _ := json.Marshal(h.e.Status()); !strings.Contains(string(js), `"gateways_down":[]`) {
				t.Fatalf("status %s after it reported, want gateways_down []", js)
			}
			m := h.e.model.Load()
			if g := m.gwIdx[dead]; m.live.ev[g].Load() != 0 || m.live.isDown(g) {
				t.Fatalf("evidence %d after a report, want 0", m.live.ev[g].Load())
			}
			if !strings.Contains(logs.String(), "gateway reports again") {
				t.Fatalf("no 'reports again' line:\n%s", logs.String())
			}
		})
	}
}

// An idle gateway is not a dead one: a tag standing for an hour in a
// corner leaves the gateways that never hear that corner silent
// throughout, and those that do hear it keep reporting; none is judged
// down, and none gathers any evidence.
func TestAnIdleGatewayIsNotJudgedDown(t *testing.T) {
	s := gridSite(3, 3, true)
	h := tracking(t, Options{}, s, surveyShort(s, 5, 2, rand.New(rand.NewPCG(74, 75))), AlgBayes)
	rng := rand.New(rand.NewPCG(76, 77))
	standShort(h, s, "WAT-1", 50, 50, [6]byte{}, 3600, rng)
	if h.zone("WAT-1") != 1 {
		t.Fatalf("zone %d, want 1", h.zone("WAT-1"))
	}
	m := h.e.model.Load()
	for _, g := range s.Gateways {
		gi := m.gwIdx[g.MAC]
		if m.live.isDown(gi) {
			t.Fatalf("gateway %s judged down", assets.FormatMAC(g.MAC))
		}
		if id := g.MAC[5]; id != 1 && id != 2 && id != 4 && m.live.ev[gi].Load() != 0 {
			t.Fatalf("gateway of zone %d, which never hears zone 1, gathered %d", id, m.live.ev[gi].Load())
		}
	}
}

// Without a survey nothing says who should have heard, so nothing is
// ever judged down (buildLiveness): the tag under the dead gateway is
// as the algorithms without silence place it.
func TestNoSurveyJudgesNoGatewayDown(t *testing.T) {
	s := gridSite(3, 3, true)
	h := tracking(t, Options{}, s, nil, AlgBayes)
	standShort(h, s, "WAT-1", 150, 150, gwMAC(5), 600, rand.New(rand.NewPCG(78, 79)))
	if st := h.e.Status(); len(st.GatewaysDown) != 0 {
		t.Fatalf("gateways down %v without a survey", st.GatewaysDown)
	}
}

// The zone filters' side: with the gateway judged down, each zone's
// log-likelihood gains back exactly what the gateway's silence charged
// it (cover times its "not heard" term there), and nothing else moves.
func TestADeadGatewaysSilenceLeavesTheFiltersEvidence(t *testing.T) {
	s := gridSite(3, 3, true)
	h := tracking(t, Options{}, s, surveyShort(s, 50, 4, rand.New(rand.NewPCG(80, 81))), AlgBayes)
	dead := gwMAC(5)
	standShort(h, s, "WAT-1", 150, 150, dead, 3, rand.New(rand.NewPCG(82, 83)))
	m := h.e.model.Load()
	g, nz := m.gwIdx[dead], len(m.zones)
	if m.live.isDown(g) {
		t.Fatal("judged down after 3 s")
	}
	now := h.clk.Now().UnixMilli() - 1000
	viewBeacon(h.e, "WAT-1", func(b *beacon) int {
		cover := b.cover(&h.e.p, now)
		mt := m.missAt(b.off.a)
		if cover <= 0 {
			t.Fatalf("cover %v", cover)
		}
		lm := func(z int) float64 { return m.em[g*nz+z].logMiss }
		if mt != nil { // a tag offset's table
			lm = func(z int) float64 { return float64(mt.lm[g*nz+z]) }
		}
		ll0, ll1 := make([]float64, nz), make([]float64, nz)
		logLikelihood(m, &h.e.p, b, now, cover, ll0)
		m.live.down[g].Store(true)
		m.live.nDown.Add(1)
		defer func() { m.live.down[g].Store(false); m.live.nDown.Add(-1) }()
		logLikelihood(m, &h.e.p, b, now, cover, ll1)
		for z := range nz {
			want := -cover * lm(z)
			if d := ll1[z] - ll0[z]; math.Abs(d-want) > 1e-9 || want <= 0 {
				t.Fatalf("zone %d: down moved the log-likelihood by %v, want %v (> 0)", z, d, want)
			}
		}
		return 0
	})
}

// grid's tag offset estimate reads each silent anchor's "not heard"
// term; a silent anchor judged down must not weigh in: under a dead
// gateway its silence reads as a tag too quiet to be heard. Changing
// the dead gateway's tables changes nothing while it is down, and
// changes the estimate's scores once it is up.
func TestADeadGatewaysSilenceLeavesTheOffsetEstimate(t *testing.T) {
	s := gridSite(3, 3, true)
	h := tracking(t, Options{}, s, surveyShort(s, 50, 4, rand.New(rand.NewPCG(84, 85))), AlgGrid)
	dead := gwMAC(5)
	standShort(h, s, "WAT-1", 160, 140, dead, 3, rand.New(rand.NewPCG(86, 87)))
	m := h.e.model.Load()
	g := m.grid
	gi := m.gwIdx[dead]
	if !m.anchor(gi) || !m.readsLaw() {
		t.Fatalf("dead gateway anchor %v, law read %v", m.anchor(gi), m.readsLaw())
	}
	score := func() [3]float64 {
		var l [3]float64
		now := h.clk.Now().UnixMilli() - 1000
		viewBeacon(h.e, "WAT-1", func(b *beacon) bool {
			if !scoreCells(m, &h.e.p, b, now, 1, 0, nil, &offsetScratch{}, &l) {
				t.Fatal("nothing scored")
			}
			return true
		})
		return l
	}
	// Tilt the dead gateway's "not heard" terms cell by cell, in every
	// offset's table (its share of the anchors' sum with them).
	tilt := func() {
		n := len(g.ocells)
		for _, tb := range g.offs {
			for j := range n {
				d := float32(j%5) * -0.3
				tb.olm[gi*n+j] += d
				tb.oanchors[j] += d
			}
		}
	}
	m.live.down[gi].Store(true)
	m.live.nDown.Add(1)
	l0 := score()
	tilt()
	if l1 := score(); math.Abs(l1[0]-l0[0])+math.Abs(l1[1]-l0[1])+math.Abs(l1[2]-l0[2]) > 1e-4 { // float32 tables
		t.Fatalf("down, the dead gateway's tables moved the scores: %v -> %v", l0, l1)
	}
	m.live.down[gi].Store(false)
	m.live.nDown.Add(-1)
	if l2 := score(); math.Abs(l2[1]-l0[1]) < 0.1 {
		t.Fatalf("up, its tables moved the score by less than 0.1 (%v -> %v): the test cannot tell", l0, l2)
	}
}

// k-NN reads an unheard gateway as heard at Floor, so under a dead
// gateway every stand is far from its own zone's samples: it named a
// neighbour for all 20. Its decisions then never charge the dead
// gateway (liveness.go: the evidence is read in the zone the running
// algorithm decides), so with knn running nothing judges it down; once
// judged (here by hand; under fusion by fusion's decisions, whose k-NN
// vote this is too) its dimension is left out and every stand is right.
func TestKNNLeavesOutADeadGateway(t *testing.T) {
	s := gridSite(3, 3, true)
	samples := surveyShort(s, 200, 4, rand.New(rand.NewPCG(70, 71)))
	dead := gwMAC(5)
	for _, judged := range []bool{false, true} {
		h := tracking(t, Options{}, s, samples, AlgKNN)
		m := h.e.model.Load()
		if judged {
			m.live.down[m.gwIdx[dead]].Store(true)
			m.live.nDown.Add(1)
		}
		rng := rand.New(rand.NewPCG(72, 73))
		wrong := 0
		for i := range 20 {
			uid := "WAT-" + string(rune('A'+i))
			standShort(h, s, uid, 105+rng.Float64()*90, 105+rng.Float64()*90, dead, 20, rng)
			if h.zone(uid) != 5 {
				wrong++
			}
		}
		if judged && wrong > 0 || !judged && wrong < 10 {
			t.Fatalf("judged down %v: %d of 20 stands named another zone", judged, wrong)
		}
		if st := h.e.Status(); len(st.GatewaysDown) != map[bool]int{false: 0, true: 1}[judged] {
			t.Fatalf("judged down %v: gateways down %v", judged, st.GatewaysDown)
		}
	}
}

// talker stands for the pipeline's word on gateways: when each last
// sent anything (Options.GatewaySeen: the receive time, raised only, as
// ingest.LastSeen keeps it, and restored across a restart) and how many
// messages it sent since the start (Options.GatewayMessages).
type talker struct {
	mu   sync.Mutex
	word map[[6]byte]int64
	n    map[[6]byte]int64
}

// said sets mac's word from before the start (a restored last-seen).
func (k *talker) said(mac [6]byte, at int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.word == nil {
		k.word = map[[6]byte]int64{}
	}
	k.word[mac] = max(k.word[mac], at)
}

// say is a message from mac received at at.
func (k *talker) say(mac [6]byte, at int64) {
	k.said(mac, at)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.n == nil {
		k.n = map[[6]byte]int64{}
	}
	k.n[mac]++
}

func (k *talker) seen(mac [6]byte) int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.word[mac]
}

func (k *talker) msgs(mac [6]byte) int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.n[mac]
}

// options sets o's GatewaySeen and GatewayMessages to k's.
func (k *talker) options(o Options) Options {
	o.GatewaySeen, o.GatewayMessages = k.seen, k.msgs
	return o
}

// A gateway that still sends anything (Options.GatewaySeen: a status
// heartbeat, beacons the engine does not track) is not down, however
// silent it is to the tracked tags; once it stops it is judged down, and
// once it talks again the sweep brings it back without a report of a
// tracked beacon.
func TestATalkingGatewayIsNotJudgedDown(t *testing.T) {
	s := gridSite(3, 3, true)
	dead := gwMAC(5)
	var k talker
	var logs bytes.Buffer
	h := newHarness(t, k.options(Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}))
	h.e.Configure(s, surveyShort(s, 200, 4, rand.New(rand.NewPCG(90, 91))))
	if err := h.e.Start(AlgBayes); err != nil {
		t.Fatal(err)
	}
	m := h.e.model.Load()
	g := m.gwIdx[dead]
	rng := rand.New(rand.NewPCG(92, 93))
	for range 120 { // heartbeats every second: talking throughout
		k.say(dead, h.clk.Now().UnixMilli())
		standShort(h, s, "WAT-1", 150, 150, dead, 1, rng)
	}
	if m.live.isDown(g) || strings.Contains(logs.String(), "judged down") {
		t.Fatalf("a talking gateway judged down:\n%s", logs.String())
	}
	standShort(h, s, "WAT-1", 150, 150, dead, 60, rng) // the heartbeats stop
	if !m.live.isDown(g) {
		t.Fatalf("silent for a minute and not judged down (evidence %d)", m.live.ev[g].Load())
	}
	k.say(dead, h.clk.Now().UnixMilli()) // one heartbeat
	h.clk.Advance(h.e.sweepEvery())      // runs the sweep
	if m.live.isDown(g) {
		t.Fatal("talking again, still judged down after a sweep")
	}
	if !strings.Contains(logs.String(), "gateway talks again") {
		t.Fatalf("no 'talks again' line:\n%s", logs.String())
	}
}

// grid takes a down gateway's silence out at a scan's first update; if
// the gateway reports later in the same scan (it is back), that report
// must not be refunded a charge that was never made. Twin engines, one
// with the gateway judged down before the scan, end with the same
// belief: its silence is net zero in both (a review found them e^0.39
// apart). bayes recomputes from its prior at every refinement.
func TestAGatewayBackWithinAScanIsRefundedNothing(t *testing.T) {
	for _, alg := range []string{AlgGrid, AlgBayes} {
		t.Run(alg, func(t *testing.T) {
			s := gridSite(3, 3, true)
			samples := surveyShort(s, 50, 4, rand.New(rand.NewPCG(84, 85)))
			dead := gwMAC(5)
			var hs [2]*harness
			for i := range hs {
				h := tracking(t, Options{}, s, samples, alg)
				standShort(h, s, "WAT-1", 160, 140, dead, 10, rand.New(rand.NewPCG(86, 87)))
				hs[i] = h
			}
			m := hs[0].e.model.Load()
			g := m.gwIdx[dead]
			m.live.down[g].Store(true)
			m.live.nDown.Add(1)
			for _, h := range hs {
				for _, gw := range s.Gateways {
					if r := modelRSSI(gw.X, gw.Y, 160, 140); gw.MAC != dead && r >= shortRange {
						h.sight("WAT-1", gw.MAC, r)
					}
				}
				h.sight("WAT-1", dead, modelRSSI(150, 150, 160, 140)) // same ms: refines
			}
			if m.live.isDown(g) {
				t.Fatal("still down after its report")
			}
			get := func(h *harness) []float64 {
				v, _ := viewBeacon(h.e, "WAT-1", func(b *beacon) []float64 {
					if alg == AlgGrid {
						out := make([]float64, len(b.cells))
						for i, c := range b.cells {
							out[i] = float64(c)
						}
						return out
					}
					return append([]float64(nil), b.belief...)
				})
				return v
			}
			a, b := get(hs[0]), get(hs[1])
			worst := 0.0
			for i := range a {
				if a[i] > 1e-6 || b[i] > 1e-6 {
					worst = math.Max(worst, math.Abs(math.Log(a[i]/b[i])))
				}
			}
			if worst > 1e-3 {
				t.Errorf("beliefs differ by up to e^%.3f", worst)
			}
		})
	}
}

// Many slow advertisers (every 2.5-3 s) and many 1 Hz ones in the
// centre zone, every gateway up and publishing one batch a second: none
// is ever judged down. Summed over the tags between a gateway's
// batches, the silences of scans that began before its batch came
// charged it past downNats (a review: 167 times in 3 minutes with 100
// tags; with each beacon's own evidence window, 129 with 300), until a
// gateway that reported within Stale stopped counting as silent.
func TestSlowTagsTakeNoHealthyGatewayDown(t *testing.T) {
	for _, tc := range []struct {
		k        int
		advEvery int64
	}{{100, 3000}, {300, 2500}, {80, 1000}} {
		t.Run(fmt.Sprintf("k%d_adv%d", tc.k, tc.advEvery), func(t *testing.T) {
			s := gridSite(3, 3, true)
			var logs bytes.Buffer
			h := tracking(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, s, surveyShort(s, 50, 4, rand.New(rand.NewPCG(90, 91))), AlgBayes)
			rng := rand.New(rand.NewPCG(92, 93))
			type tag struct {
				uid   string
				x, y  float64
				phase int64
			}
			tags := make([]tag, tc.k)
			for i := range tags {
				tags[i] = tag{uid: fmt.Sprintf("WAT-%03d", i), x: 110 + rng.Float64()*80, y: 110 + rng.Float64()*80, phase: int64(i) * tc.advEvery / int64(tc.k)}
			}
			type ev struct {
				at int64
				gw int // -1: an advert of tag tg
				tg int
			}
			const dur = 180_000
			var evs []ev
			for i, tg := range tags {
				for at := tg.phase; at < dur; at += tc.advEvery {
					evs = append(evs, ev{at, -1, i})
				}
			}
			for gi := range s.Gateways {
				for at := int64(gi*111 + 7); at < dur; at += 1000 {
					evs = append(evs, ev{at, gi, 0})
				}
			}
			sort.SliceStable(evs, func(i, j int) bool { return evs[i].at < evs[j].at })
			pending := make([][]ingest.Observation, len(s.Gateways))
			start := h.clk.Now()
			maxEv := int64(0)
			m := h.e.model.Load()
			for _, e := range evs {
				if d := start.Add(time.Duration(e.at) * time.Millisecond).Sub(h.clk.Now()); d > 0 {
					h.clk.Advance(d)
				}
				if e.gw < 0 {
					tg := tags[e.tg]
					for gi, g := range s.Gateways {
						if r := modelRSSI(g.X, g.Y, tg.x, tg.y) + (rng.Float64()*2-1)*4; r >= shortRange {
							pending[gi] = append(pending[gi], ingest.Observation{Report: ingest.Report{RSSI: int8(math.Round(r)), TS: h.clk.Now().UnixMilli()}, Asset: h.beacon(tg.uid, "watch")})
						}
					}
					continue
				}
				if len(pending[e.gw]) == 0 {
					continue
				}
				for _, g := range s.Gateways {
					if v := m.live.ev[m.gwIdx[g.MAC]].Load(); v > maxEv {
						maxEv = v
					}
				}
				b := &ingest.Batch{Gateway: s.Gateways[e.gw].MAC, Kind: ingest.KindAdv4, Received: h.clk.Now().UnixMilli(), Obs: pending[e.gw]}
				h.e.Observe(b, &ingest.Writes{})
				pending[e.gw] = nil
			}
			n := strings.Count(logs.String(), "judged down")
			t.Logf("k=%d adv=%dms: %d 'judged down' lines in %ds, max evidence %.1f nats", tc.k, tc.advEvery, n, dur/1000, float64(maxEv)/1e6)
			if n > 0 {
				t.Errorf("%d false 'judged down'", n)
			}
		})
	}
}

// A gateway the survey names but the site no longer has is silent for
// good: it is never judged down (it was, and listed down for good). And
// Start forgets every judgement: rtls-eval runs several algorithms on
// one engine, and one run's judgement carried into the next.
func TestRemovedGatewaysAndRestartsJudgeNothing(t *testing.T) {
	s := gridSite(3, 3, true)
	samples := surveyShort(s, 50, 4, rand.New(rand.NewPCG(70, 71)))
	removed := s
	removed.Gateways = append(append([]Gateway(nil), s.Gateways[:4]...), s.Gateways[5:]...)
	h := tracking(t, Options{}, removed, samples, AlgBayes)
	standShort(h, s, "WAT-1", 150, 150, gwMAC(5), 60, rand.New(rand.NewPCG(1, 2)))
	if st := h.e.Status(); len(st.GatewaysDown) != 0 {
		t.Fatalf("a gateway the site no longer has listed down: %v", st.GatewaysDown)
	}
	h.e.Configure(s, samples)
	if err := h.e.Start(AlgBayes); err != nil {
		t.Fatal(err)
	}
	standShort(h, s, "WAT-1", 150, 150, gwMAC(5), 60, rand.New(rand.NewPCG(3, 4)))
	if st := h.e.Status(); len(st.GatewaysDown) != 1 {
		t.Fatalf("gateways down %v, want the dead one", st.GatewaysDown)
	}
	if err := h.e.Start(AlgFilter); err != nil {
		t.Fatal(err)
	}
	m := h.e.model.Load()
	if st := h.e.Status(); len(st.GatewaysDown) != 0 || m.live.ev[m.gwIdx[gwMAC(5)]].Load() != 0 {
		t.Fatalf("after Start: gateways down %v, evidence %d", st.GatewaysDown, m.live.ev[m.gwIdx[gwMAC(5)]].Load())
	}
}

// standsIn reports whether alg keeps grid's standing belief under p.
func standsIn(alg string, p Params) bool {
	return p.StandFor > 0 && (alg == AlgGrid || alg == AlgFusion)
}

// corridorRooms is three zones in a row, Room 1, the Corridor (2) and
// Room 3, each with its gateway at its centre, surveyed 8 times a zone
// (±2 dB) with the readings of corridorAt: the corridor's gateway hears
// the corridor loud and neither room, and the rooms' gateways hear the
// corridor about as they hear their rooms. Its gateway is what tells
// the corridor from a room.
func corridorRooms() (Site, []Sample) { return corridorRoomsAt(corridorAt) }

// corridorRoomsAt is corridorRooms surveyed with the readings of at.
func corridorRoomsAt(at map[uint64][3]float64) (Site, []Sample) {
	s := gridSite(3, 1, true)
	rng := rand.New(rand.NewPCG(1, 2))
	var samples []Sample
	for z := uint64(1); z <= 3; z++ {
		for range 8 {
			sm := Sample{Zone: z, RSSI: map[[6]byte]float64{}}
			for g, r := range at[z] {
				if r != 0 {
					sm.RSSI[gwMAC(g+1)] = r + (rng.Float64()*2-1)*2
				}
			}
			samples = append(samples, sm)
		}
	}
	return s, samples
}

// corridorAt is what gateways 1-3 hear in each zone of corridorRooms
// (0: not heard).
var corridorAt = map[uint64][3]float64{1: {-70, 0, -78}, 2: {-73, -54, -73}, 3: {-78, 0, -70}}

// nearRooms is corridorAt with rooms whose gateways read d dB off the
// corridor's (a room's own d louder, the far one's d quieter).
func nearRooms(d float64) map[uint64][3]float64 {
	return map[uint64][3]float64{1: {-73 + d, 0, -73 - d}, 2: corridorAt[2], 3: {-73 - d, 0, -73 + d}}
}

// corridorRun is one run on corridorRooms: tags tags, every reading off
// dB louder than the survey tag's and within ±noise dB.
type corridorRun struct {
	tags       int
	off, noise float64
}

func (c corridorRun) String() string {
	return fmt.Sprintf("%d tags, %+.0f dB, ±%.0f dB", c.tags, c.off, c.noise)
}

// hear has gateways 1-3 of corridorRooms hear c's tags for n seconds
// with the readings rssi gives at second i (0: not heard).
func (c corridorRun) hear(h *harness, n int, rng *rand.Rand, rssi func(i int) [3]float64) {
	for i := range n {
		for k := range c.tags {
			for g, r := range rssi(i) {
				if r != 0 {
					h.sight(fmt.Sprintf("WAT-%d", k+1), gwMAC(g+1), r+c.off+(rng.Float64()*2-1)*c.noise)
				}
			}
		}
		h.clk.Advance(time.Second)
	}
}

// corridorRuns are the runs the two corridor tests play, each with every
// algorithm that reads silence.
var corridorRuns = []corridorRun{{1, 0, 2}, {1, 0, 4}, {1, 0, 6}, {3, 0, 4}, {1, -8, 4}, {1, 8, 4}}

// The corridor's gateway goes down under tags standing in the corridor.
// Its silence tells every algorithm that reads silence the tag left: hmm
// and bayes put it in a room within 5 s, knn and fusion within 30 (grid
// held it), before Stale let the silence count against the corridor,
// and it was never judged down (a review: the tags stayed in the room).
// Its silence is now charged against the zone the tag held when it last
// heard it, while the other readings fit that zone: it is judged down
// within two minutes of one tag (48-83 s; four at ±6 dB of noise), 40 s
// of three (20-24), and the tags are back in the corridor. Under noise
// of ±6 dB, a rule that
// gave up on one window's evidence, or on too little summed (restGiveUp),
// missed it for good under bayes in a few runs of twenty: the seeds
// below are runs it missed.
func TestAGatewayDyingUnderATagIsJudgedDown(t *testing.T) {
	s, samples := corridorRooms()
	type seeded struct {
		corridorRun
		seed uint64
	}
	runs := []seeded{{corridorRun{1, 0, 6}, 5}, {corridorRun{1, 0, 6}, 10}, {corridorRun{1, 0, 6}, 13}, {corridorRun{1, -8, 4}, 10}}
	for _, c := range corridorRuns {
		runs = append(runs, seeded{c, 3})
	}
	for _, c := range runs {
		for _, alg := range []string{AlgKNN, AlgFilter, AlgBayes, AlgGrid, AlgFusion} {
			t.Run(fmt.Sprintf("%v, seed %d/%s", c.corridorRun, c.seed, alg), func(t *testing.T) {
				var logs bytes.Buffer
				h := tracking(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, s, samples, alg)
				rng := rand.New(rand.NewPCG(c.seed, 4))
				c.hear(h, 60, rng, func(int) [3]float64 { return corridorAt[2] })
				if z := h.zone("WAT-1"); z != 2 {
					t.Fatalf("zone %d in the corridor, want 2", z)
				}
				dead := corridorAt[2]
				dead[1] = 0
				m := h.e.model.Load()
				g := m.gwIdx[gwMAC(2)]
				within, wrongs := 120, 12
				if c.tags > 1 {
					within = 40
				}
				if c.noise > 4 { // ±6 dB: bayes misplaces the tag now and then anyway
					within, wrongs = 240, 30
				}
				for i := 0; i < within && !m.live.isDown(g); i++ {
					c.hear(h, 1, rng, func(int) [3]float64 { return dead })
				}
				if !m.live.isDown(g) {
					t.Fatalf("the corridor's gateway not judged down %d s after it died (evidence %.1f nats)", within, float64(m.live.ev[g].Load())/1e6)
				}
				c.hear(h, 30, rng, func(int) [3]float64 { return dead }) // back to the corridor
				wrong := 0
				for range 120 {
					c.hear(h, 1, rng, func(int) [3]float64 { return dead })
					if h.zone("WAT-1") != 2 {
						wrong++
					}
				}
				if wrong > wrongs {
					t.Fatalf("%d s of 120 out of the corridor with its gateway judged down", wrong)
				}
				if n := strings.Count(logs.String(), "judged down"); n != 1 {
					t.Fatalf("%d 'judged down' lines, want 1", n)
				}
			})
		}
	}
}

// The same site with the corridor's gateway up and nothing but the
// tags about, so it reports nothing once they are gone: tags that walk
// out of the corridor into Room 3, its gateway's readings fading, or
// that are carried in at once and heard there as Room 3 is, stay there
// for half an hour, and the corridor's gateway is not judged down. The
// rule that charges a gateway's silence against the zone the tag held
// must not read a tag that left as a gateway that died: charged whenever
// the other readings fitted the corridor by noise, one or three tags at
// ±4-6 dB took it down within minutes (a review); without its check of
// the other readings at all, the carried tag did at once.
func TestATagLeavingTheCorridorTakesNoGatewayDown(t *testing.T) {
	longReplay(t)
	s, samples := corridorRooms()
	leaving(t, s, samples, corridorAt, corridorRuns, []string{AlgKNN, AlgFilter, AlgBayes, AlgGrid, AlgFusion})
}

// The same with rooms whose gateways read only 2-3 dB off the
// corridor's: judged window by window, one tag at ±4 dB that had left
// took the healthy corridor gateway down within six minutes under knn,
// hmm, bayes and fusion (a review), and, its silence then ignored, was
// shown in the corridor for minutes. The rule sums the evidence since
// the gateway last heard the tag (reading.rest). grid is left out: it
// holds the tag in the corridor on such a site, and judged the gateway
// down from there before the rule (the first rule charges the zone the
// algorithm decides).
func TestATagLeavingForANearRoomTakesNoGatewayDown(t *testing.T) {
	longReplay(t)
	for _, d := range []float64{2, 3} {
		at := nearRooms(d)
		s, samples := corridorRoomsAt(at)
		leaving(t, s, samples, at, []corridorRun{{1, 0, 4}, {3, 0, 4}, {1, 0, 6}, {3, 0, 6}}, []string{AlgKNN, AlgFilter, AlgBayes, AlgFusion})
	}
}

// leaving has c's tags stand a minute in the corridor of the site s
// surveyed as at, then walk (10 s) or be carried into Room 3 and stay
// half an hour under each of algs: the corridor's gateway, up but idle
// once they are gone, must not be judged down, and they must be in
// Room 3.
func leaving(t *testing.T, s Site, samples []Sample, at map[uint64][3]float64, runs []corridorRun, algs []string) {
	t.Helper()
	walk := func(i int) [3]float64 { // 10 s from the corridor into Room 3
		c, r := at[2], at[3]
		f := min(float64(i)/10, 1)
		out := [3]float64{c[0] + f*(r[0]-c[0]), c[1] - f*40, c[2] + f*(r[2]-c[2])}
		if out[1] < -86 {
			out[1] = 0
		}
		return out
	}
	at3 := func(int) [3]float64 { return at[3] }
	for _, c := range runs {
		for _, alg := range algs {
			for _, way := range []string{"walked", "carried"} {
				t.Run(fmt.Sprintf("%v/%s/%s/%v", at[1], c, alg, way), func(t *testing.T) {
					var logs bytes.Buffer
					h := tracking(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, s, samples, alg)
					rng := rand.New(rand.NewPCG(5, 6))
					c.hear(h, 60, rng, func(int) [3]float64 { return at[2] })
					if way == "walked" {
						c.hear(h, 10, rng, walk)
					}
					c.hear(h, 1800, rng, at3)
					if z := h.zone("WAT-1"); z != 3 {
						t.Fatalf("zone %d after half an hour in Room 3", z)
					}
					if n := strings.Count(logs.String(), "judged down"); n != 0 {
						t.Fatalf("%d 'judged down' lines:\n%s", n, logs.String())
					}
				})
			}
		}
	}
}

// A site edit after the corridor's gateway died (a room renamed) builds
// a new model, which judges afresh: the zone the tag held when the
// gateway last heard it was kept as the model's index and forgotten at
// the edit, so the gateway was never judged down again and the tag
// stayed out of the corridor (a review). It is kept as the zone's id.
func TestAGatewayDeadAcrossASiteEditIsJudgedAgain(t *testing.T) {
	s, samples := corridorRooms()
	dead := corridorAt[2]
	dead[1] = 0
	c := corridorRun{1, 0, 2}
	for _, edit := range []int{20, 150} {
		for _, alg := range []string{AlgKNN, AlgFilter, AlgBayes, AlgGrid, AlgFusion} {
			t.Run(fmt.Sprintf("edit at +%ds/%s", edit, alg), func(t *testing.T) {
				h := tracking(t, Options{}, s, samples, alg)
				rng := rand.New(rand.NewPCG(3, 4))
				c.hear(h, 60, rng, func(int) [3]float64 { return corridorAt[2] })
				c.hear(h, edit, rng, func(int) [3]float64 { return dead })
				s2 := s
				s2.Zones = append([]Zone(nil), s.Zones...)
				s2.Zones[0].Name = "Room 1 (renamed)"
				h.e.SetSite(s2)
				m := h.e.model.Load()
				c.hear(h, 120, rng, func(int) [3]float64 { return dead })
				if !m.live.isDown(m.gwIdx[gwMAC(2)]) {
					t.Fatal("not judged down in the two minutes after the edit")
				}
				c.hear(h, 30, rng, func(int) [3]float64 { return dead })
				wrong := 0
				for range 120 {
					c.hear(h, 1, rng, func(int) [3]float64 { return dead })
					if h.zone("WAT-1") != 2 {
						wrong++
					}
				}
				if wrong > 12 {
					t.Fatalf("%d s of 120 out of the corridor with its gateway judged down", wrong)
				}
			})
		}
	}
}

// The corridor's gateway dies under a tag and is judged down; the tag
// stands on, walks into Room 3 (rooms 2 dB off the corridor), and the
// gateway comes back (it reports a tag passing) and is idle from then
// on. The evidence the tag's other readings banked for the corridor
// while the gateway was dead kept charging it, healthy, after the tag
// had left, and it was judged down again within a minute of its return
// (hmm, fusion: a review). The sum is capped (reading.rest).
func TestAGatewayBackAfterItsTagLeftIsNotJudgedAgain(t *testing.T) {
	at := nearRooms(2)
	s, samples := corridorRoomsAt(at)
	dead := at[2]
	dead[1] = 0
	for _, noise := range []float64{2, 4} {
		for _, alg := range []string{AlgFilter, AlgFusion} {
			for seed := uint64(1); seed <= 5; seed++ {
				t.Run(fmt.Sprintf("±%.0f dB/%s/seed %d", noise, alg, seed), func(t *testing.T) {
					var logs bytes.Buffer
					h := tracking(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, s, samples, alg)
					rng := rand.New(rand.NewPCG(seed, 4))
					c := corridorRun{1, 0, noise}
					c.hear(h, 60, rng, func(int) [3]float64 { return at[2] })
					m := h.e.model.Load()
					g := m.gwIdx[gwMAC(2)]
					for i := 0; i < 300 && !m.live.isDown(g); i++ {
						c.hear(h, 1, rng, func(int) [3]float64 { return dead })
					}
					if !m.live.isDown(g) {
						t.Fatal("not judged down in 5 minutes")
					}
					c.hear(h, 20, rng, func(int) [3]float64 { return dead })
					c.hear(h, 10, rng, func(i int) [3]float64 { // into Room 3
						f := float64(i) / 10
						return [3]float64{dead[0] + f*(at[3][0]-dead[0]), 0, dead[2] + f*(at[3][2]-dead[2])}
					})
					c.hear(h, 60, rng, func(int) [3]float64 { return at[3] })
					before := strings.Count(logs.String(), "judged down")
					h.sight("WAT-B", gwMAC(2), -55) // back: a tag passes the corridor
					c.hear(h, 1800, rng, func(int) [3]float64 { return at[3] })
					if n := strings.Count(logs.String(), "judged down") - before; n != 0 {
						t.Fatalf("the corridor's gateway, back and idle, judged down %d times", n)
					}
				})
			}
		}
	}
}

// A sweep running while a gateway is being judged must read the
// judgement's own record: written after the judgement's flag, a sweep in
// between read the previous count (0 at a first judgement) and brought
// a gateway that had ever talked back at once (a review). The sweep is
// run from inside the judgement's read of the message count, the moment
// it used to fall in.
func TestASweepDuringAJudgementKeepsItsRecord(t *testing.T) {
	s := gridSite(3, 3, true)
	dead := gwMAC(5)
	var k talker
	var armed, inSweep bool
	var h *harness
	o := k.options(Options{})
	o.GatewayMessages = func(mac [6]byte) int64 {
		if armed && mac == dead && !inSweep {
			// Another gateway down at that moment (a sweep looks only
			// while one is).
			lv := h.e.model.Load().live
			if other := h.e.model.Load().gwIdx[gwMAC(1)]; !lv.down[other].Load() {
				lv.down[other].Store(true)
				lv.nDown.Add(1)
			}
			inSweep = true
			h.e.reviveTalking()
			inSweep = false
		}
		return k.msgs(mac)
	}
	var logs bytes.Buffer
	o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	h = newHarness(t, o)
	h.e.Configure(s, surveyShort(s, 200, 4, rand.New(rand.NewPCG(90, 91))))
	if err := h.e.Start(AlgBayes); err != nil {
		t.Fatal(err)
	}
	m := h.e.model.Load()
	g := m.gwIdx[dead]
	rng := rand.New(rand.NewPCG(92, 93))
	for range 120 { // heartbeats every second: talking throughout
		k.say(dead, h.clk.Now().UnixMilli())
		standShort(h, s, "WAT-1", 150, 150, dead, 1, rng)
	}
	armed = true
	standShort(h, s, "WAT-1", 150, 150, dead, 60, rng) // the heartbeats stop
	if !m.live.isDown(g) || strings.Contains(logs.String(), "talks again") {
		t.Fatalf("judged down %v; a sweep during the judgement:\n%s", m.live.isDown(g), logs.String())
	}
}

// A last word in the clock's future (from before a restart the clock
// came up behind) says nothing of now: a dead gateway is judged down
// about as soon as with its word in the past, not when the clock has
// caught up with the word (5 min 15 s with the word 5 min ahead: a
// review); one whose message count keeps moving is not judged.
func TestAWordInTheFutureDelaysNoJudgement(t *testing.T) {
	s := gridSite(3, 3, true)
	dead := gwMAC(5)
	judgedAfter := func(ahead time.Duration, talks bool) time.Duration {
		var k talker
		h := newHarness(t, k.options(Options{}))
		h.e.Configure(s, surveyShort(s, 200, 4, rand.New(rand.NewPCG(90, 91))))
		if err := h.e.Start(AlgBayes); err != nil {
			t.Fatal(err)
		}
		m := h.e.model.Load()
		g := m.gwIdx[dead]
		k.said(dead, h.clk.Now().Add(ahead).UnixMilli())
		rng := rand.New(rand.NewPCG(92, 93))
		start := h.clk.Now()
		for h.clk.Now().Sub(start) < 4*time.Minute {
			if talks {
				k.say(dead, h.clk.Now().Add(ahead).UnixMilli()) // still ahead
			}
			standShort(h, s, "WAT-1", 150, 150, dead, 1, rng)
			if m.live.isDown(g) {
				return h.clk.Now().Sub(start)
			}
		}
		return -1
	}
	base := judgedAfter(-time.Minute, false)
	if base < 0 {
		t.Fatal("a dead gateway with its word a minute old is not judged in 4 minutes")
	}
	d5 := judgedAfter(5*time.Minute, false)
	t.Logf("judged after %v with the word a minute old, %v with it 5 min ahead", base, d5)
	if d := d5; d < 0 || d > 2*base+30*time.Second {
		t.Fatalf("word 5 min ahead: judged after %v (word in the past: %v)", d, base)
	}
	if d := judgedAfter(5*time.Minute, true); d >= 0 {
		t.Fatalf("a gateway talking with its word 5 min ahead judged down after %v", d)
	}
}

// talking with a last word in the clock's future: the first look is
// talking, an unmoved count at a later look (10 s or more on) is not,
// a moved one is, and a look the clock has gone back past starts over.
func TestTalkingByCountWhenTheWordIsAhead(t *testing.T) {
	lv := &liveness{talkN: make([]int64, 1), talkAt: make([]int64, 1)}
	ahead := int64(300_000)
	look := func(now, n int64) bool { return lv.talking(0, now, now+ahead, n, true) }
	for i, c := range []struct {
		now, n int64
		want   bool
	}{
		{100_000, 5, true},  // first look
		{105_000, 5, true},  // within 10 s of it
		{140_000, 5, false}, // unmoved for 40 s
		{141_000, 6, true},  // moved
		{160_000, 6, false}, // unmoved again
		{50_000, 6, true},   // the clock went back past the last look
		{70_000, 6, false},
	} {
		if got := look(c.now, c.n); got != c.want {
			t.Fatalf("look %d at %d with count %d: talking %v", i, c.now, c.n, got)
		}
	}
	if !lv.talking(0, 100_000, 95_000, 0, true) || lv.talking(0, 100_000, 80_000, 0, true) {
		t.Fatal("a word in the past decides by its time")
	}
}

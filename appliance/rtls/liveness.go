package rtls

import (
	"context"
	"iter"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/ingest"
)

// A gateway that goes down (a power cut, a pulled cable) falls silent,
// and every algorithm that reads silence as evidence (grid, the zone
// filters, fusion) reads it as the tags having moved away from it: a tag
// standing under a dead gateway is pushed into a neighbouring zone for
// as long as the gateway stays down. On the generated recordings, with
// the busiest gateway cut halfway through the test, hmm lost up to 9.5
// points and grid 1.7 (docs/performance.md).
//
// Down has to be told from idle. The gateway contract's status heartbeat
// is optional, and "silent for a while" misreads a site with few tags,
// whose far gateways are silent for minutes while every tag is
// elsewhere. So the evidence is the silence of a gateway where the
// survey says it would have heard: each beacon, once a second, adds for
// every gateway that usually hears the zone it is in, and loud (at least
// hearShare of the survey's windows, loudMargin above its quietest
// reading), and has neither heard it for its window nor reported
// anything for Stale, -log P(not heard in a window) of the zone (at
// most maxMissNats), in proportion to the time, the sum fading over
// evidenceFade; and so for a gateway
// that last heard it in a zone it usually hears, when the beacon has
// since been moved to a zone it does not and its other readings do not
// say it left (silence). An idle gateway far
// from every tag gathers nothing, however long it is silent. Any report
// reaching the engine from the gateway (of any registered beacon) wipes
// its evidence and brings it back at once; at downNats it is judged
// down, and until its next report its silence is no longer counted by
// any algorithm that reads silence. A gateway still sending anything at
// all (Options.GatewaySeen) is never judged down.
//
// A wrong "down" costs little (the gateway's silence is ignored until it
// next reports, as an algorithm that does not read silence would); a
// missed one costs what the silence costs. The threshold is high all the
// same: a tag reported in the wrong zone for a while charges the
// gateways of that zone.

// liveness is a model's site-wide judgement of which gateways are down,
// shared by every beacon (atomics: beacons are updated in parallel by
// the gateways' read loops). It lives and dies with the model: a new site
// or survey judges afresh.
type liveness struct {
	// evidence per gateway that it is down, in micro-nats, since its
	// last report, fading with evidenceFade: evAt is when it was last
	// added to (Unix ms).
	ev, evAt []atomic.Int64
	// last is each gateway's last report reaching the engine (Unix ms):
	// one that reported lately is up, whatever a beacon did not hear. A
	// review had 100 tags advertising every 3 s charge healthy gateways
	// between their reports past downNats, 167 times in 3 minutes.
	last  []atomic.Int64
	down  []atomic.Bool
	nDown atomic.Int32
	// downAt is when each gateway was last judged down (Unix ms), and
	// downMsgs Options.GatewayMessages then: one that sent more since
	// is back (reviveTalking).
	downAt, downMsgs []atomic.Int64
	judgeMu          sync.Mutex // judge
	// talkN and talkAt are each gateway's message count as talking
	// last read it and when (the engine's clock) it was seen to move,
	// under talkMu.
	talkMu        sync.Mutex
	talkN, talkAt []int64
	// linked is whether each gateway's connection to the broker was open
	// at the last look (judgeLinks): silence (quiet: both "where the tag
	// was" and the held rule) does not judge such a gateway, its closing
	// does.
	linked []atomic.Bool
	// hears[z] are the gateways that usually hear zone z, with what a
	// window of their silence there says.
	hears [][]hearer
	// loud is the smoothed reading (dBm, less the tag offset where the
	// algorithm estimates one) at or above which a gateway counts as
	// hearing a beacon loud (loudElsewhere): loudMargin above the
	// survey's quietest, as for hears.
	loud float64
	// scratch is restMargin's buffer (a zone's length) per shard of
	// the engine's beacon state, made at its first use.
	scratch [assets.NShards][]float64
}

type hearer struct {
	g    int
	nats float64
}

const (
	// downNats is the evidence at which a gateway is judged down: some
	// 10 windows of silence under a tag in a zone it hears 95% of the
	// time, twice as many where it hears 78%.
	downNats = 30
	// hearShare: a gateway hears a zone when the survey heard it there
	// in at least this share of the windows.
	hearShare = 0.5
	// loudMargin (dB): a gateway counts for a zone only if it hears it
	// this far above the survey's quietest reading (model.sens), so a
	// tag quieter than the survey tag (offset.go) is still heard there.
	// Without it, a tag 7 dB quieter left the gateways at the edge of
	// its range silent, they were judged down, and the evidence its
	// offset estimate reads went with their silence
	// (TestTagOffsetKeepsScanOrder).
	loudMargin = 15
	// maxMissNats caps a window's evidence (P(not heard) 5%), so one
	// zone surveyed briefly (where a gateway never missed) does not
	// decide alone.
	maxMissNats = 3.0
)

// buildLiveness reads which gateways usually hear each zone off the
// filter's emission tables: without a survey they say nothing of
// silence (buildEmissions), and nothing is ever judged down.
func (m *model) buildLiveness() {
	nz, ng := len(m.zones), len(m.gwMAC)
	lv := newLiveness(ng, nz)
	lv.loud = m.sens + loudMargin
	// Only the site's gateways: one the survey names but the site no
	// longer has is silent for good and was listed down for good.
	for g := range m.nSiteGW {
		if !m.hasEm[g] {
			continue
		}
		for z := range nz {
			e := &m.em[g*nz+z]
			if e.logMiss >= 0 || math.Exp(e.logHit) < hearShare || e.mu < m.sens+loudMargin {
				continue
			}
			lv.hears[z] = append(lv.hears[z], hearer{g: g, nats: math.Min(-e.logMiss, maxMissNats)})
		}
	}
	m.live = lv
}

func newLiveness(ng, nz int) *liveness {
	return &liveness{ev: make([]atomic.Int64, ng), evAt: make([]atomic.Int64, ng), last: make([]atomic.Int64, ng), down: make([]atomic.Bool, ng),
		downAt: make([]atomic.Int64, ng), downMsgs: make([]atomic.Int64, ng), talkN: make([]int64, ng), talkAt: make([]int64, ng), linked: make([]atomic.Bool, ng), hears: make([][]hearer, nz)}
}

// heard is a report from gateway g: it is up. It reports whether g was
// judged down until now.
func (lv *liveness) heard(g int, now int64) bool {
	// Later only, as read loops race; but a wall clock stepped back
	// would otherwise keep every gateway "just heard" until it caught up.
	if l := lv.last[g].Load(); l < now || beforeStepBack(l, now) {
		lv.last[g].Store(now)
	}
	if lv.ev[g].Load() != 0 {
		lv.ev[g].Store(0)
	}
	if lv.down[g].Load() && lv.down[g].CompareAndSwap(true, false) {
		lv.nDown.Add(-1)
		return true
	}
	return false
}

// judge sets g down, judged at now when it had sent n messages
// (Options.GatewayMessages; 0 without), unless it is down already, and
// reports whether it did. The record is written before the flag, under
// judgeMu, so a sweep that sees g down reads its record: set after the
// flag, a sweep in between read the last judgement's count (0 at the
// first) and brought a gateway that ever talked back at once (a review).
func (lv *liveness) judge(g int, now, n int64) bool {
	lv.judgeMu.Lock()
	defer lv.judgeMu.Unlock()
	if lv.down[g].Load() {
		return false
	}
	lv.downAt[g].Store(now)
	lv.downMsgs[g].Store(n)
	lv.down[g].Store(true)
	lv.nDown.Add(1)
	return true
}

// isDown says whether g's silence is to be ignored.
func (lv *liveness) isDown(g int) bool { return lv.nDown.Load() > 0 && lv.down[g].Load() }

// downs yields the gateways judged down (none, without a look at each,
// while nothing is down).
func (lv *liveness) downs() iter.Seq[int] {
	return func(yield func(int) bool) {
		if lv.nDown.Load() == 0 {
			return
		}
		for g := range lv.down {
			if lv.down[g].Load() && !yield(g) {
				return
			}
		}
	}
}

// silentDown yields the gateways judged down that have not heard b in
// the last w ms: those whose silence grid, the zone filters and the tag
// offset estimate take out of what they charged.
func (m *model) silentDown(b *beacon, w, now int64) iter.Seq[int] {
	return func(yield func(int) bool) {
		for g := range m.live.downs() {
			if !b.heardWithin(g, w, now) && !yield(g) {
				return
			}
		}
	}
}

// silence charges, for beacon b decided in its zone at now, the gateways
// that usually hear that zone and have not heard b for a window (see
// above); it returns the gateways it judged down (nil mostly). A gateway
// whose evidence is due but that is still sending anything at all (seen,
// Options.GatewaySeen) is not judged: its evidence starts over.
//
// It charges too a gateway that last heard b in a zone it usually
// hears, when b has since been moved to a zone it does not and the rest
// of b's readings fit the zone it held at least as well (restMargin): the
// zone filters and knn read a gateway's silence as the tag having left,
// and moved the tags under a dead corridor gateway into the next room
// within seconds, before Stale let its silence count against the
// corridor, so it was never judged down and they stayed there (a
// review). A tag that did leave is heard by the others as its new zone
// is: summed over the windows since, the rest comes to fit it clearly
// (restGiveUp), or a gateway that does not hear the old zone hears it
// loud (loudElsewhere), and that silence is charged no more until the
// gateway hears the tag again.
// Where nothing but that gateway tells the two zones apart, a tag
// leaving and a gateway dying look alike, and neither rule can tell: a
// tag that left the corridor for a room's doorway, whose readings lie
// halfway back towards the corridor's survey, took the healthy idle
// corridor gateway down (a review). So this second rule leaves alone a
// gateway whose connection to the broker is open (liveness.linked): a
// dead one drops it, and judgeLinks judges that; what it then misses is
// a gateway whose radio died while its connection stayed open.
func (m *model) silence(p *Params, b *beacon, now int64, seen, msgs func([6]byte) int64) []int {
	lv := m.live
	dt := now - b.liveAt
	if b.liveAt == 0 || dt < evidencePeriod {
		if b.liveAt == 0 {
			b.liveAt = now
		}
		return nil
	}
	b.liveAt = now
	win := b.window(p, now)
	f := math.Min(float64(dt), float64(win)) / float64(win) * b.cover(p, now)
	var out []int
	charge := func(g int, nats float64) {
		if lv.add(g, int64(f*nats*1e6), now) < downNats*1e6 {
			return
		}
		// The count read once, for the look and the judgement: a message
		// between two reads would be taken as sent before the judgement,
		// and the gateway held down until its next (a review).
		n, counted := int64(0), msgs != nil
		if counted {
			n = msgs(m.gwMAC[g])
		}
		if seen != nil && lv.talking(g, now, seen(m.gwMAC[g]), n, counted) {
			lv.ev[g].Store(0)
			return
		}
		if lv.down[g].Load() {
			return
		}
		if lv.judge(g, now, n) {
			out = append(out, g)
		}
	}
	here := lv.hearers(b.zone)
	for _, h := range here {
		if lv.quiet(p, b, h.g, win, now) {
			charge(h.g, h.nats)
		}
	}
	if b.zone < 0 {
		return out
	}
	for i := range b.rds {
		r := &b.rds[i]
		if r.held == 0 || uint64(r.held) == b.zoneID || r.g < 0 || !lv.quiet(p, b, r.g, win, now) {
			continue
		}
		z, ok := m.zoneIdx[uint64(r.held)]
		if !ok { // deleted by a site edit
			r.held = 0
			continue
		}
		nats, ok := hearerOf(lv.hearers(z), r.g)
		if _, counted := hearerOf(here, r.g); !ok || counted {
			continue
		}
		// The hypothesis "b is still in z, and r.g is dead" holds while
		// the rest of b's readings, summed over the windows since r.g
		// last heard b, fit z at least as well as b's zone; once they
		// fit b's zone clearly, it is dropped until r.g hears b again.
		// Judged window by window, it was charged whenever one window
		// fitted z by noise, and a tag that had left for a room only a
		// few dB from the corridor took a healthy idle gateway down
		// within minutes; and one noisy window gave it up for good
		// under a gateway that was dead (two reviews).
		if lv.loudElsewhere(b, z, win, now) {
			r.held = 0
			continue
		}
		// Capped at the give-up's size: evidence banked while the
		// gateway was dead kept charging it, back and idle, after b had
		// left, and it was judged down again within a minute (a
		// review). Dropping the sum once the gateway reported anything
		// after it last heard b instead dropped it at the death itself
		// whenever the gateway's last batch lacked b (a second review).
		r.rest = min(r.rest+float32(f*m.restMargin(p, b, r.g, z, now)), restGiveUp)
		switch {
		case r.rest < -restGiveUp:
			r.held = 0
		case r.rest >= 0:
			charge(r.g, nats)
		}
	}
	return out
}

// restGiveUp (nats) is how clearly the rest of a beacon's readings,
// summed since the silent gateway last heard it (each window weighed by
// the share of it that is new, as the charge is), must fit its new zone
// over the one it held to say it left: 1000 to 1. The model trusts a
// window more than live noise larger than the survey's deserves: at
// 30 to 1 one tag under a dead gateway at ±6 dB gave up for good in 3
// runs of 20 (bayes; 1 at 150 to 1); at 1000 to 1 none did, and tags
// that left for a room a few dB from the corridor took no gateway down
// in 2 hours back and forth (1-5 tags, ±4-6 dB, ±8 dB offsets); at
// 3000 to 1 UCI's walking tag had grid judge one down.
const restGiveUp = 6.9

// restMargin is how much better b's readings in its evidence window,
// less the silence of gateway g, fit zone z (held when g last heard b)
// than the zone b is in now, in the zone filters' terms (nats): at 0 or
// more, nothing but g's silence says the tag left z. (Any slack for
// "nearly as well" had UCI's one walking tag judge its gateways down
// behind it: 8 times at 10 to 1, none at even odds.)
func (m *model) restMargin(p *Params, b *beacon, g, z int, now int64) float64 {
	nz := len(m.zones)
	ll := m.live.scratch[b.shard]
	if ll == nil { // under b's shard lock: a shard's is never shared
		ll = make([]float64, nz)
		m.live.scratch[b.shard] = ll
	}
	zs := [2]int32{int32(z), int32(b.zone)}
	cover, mt := b.cover(p, now), m.missAt(b.off.a)
	windowLL(m, p, b, now, cover, b.off.a, m.em, mt, nil, zs[:], ll)
	rest := func(z int) float64 { return ll[z] - cover*m.logMissIn(mt, g*nz+z) }
	return rest(z) - rest(b.zone)
}

// loudElsewhere says whether a gateway that does not usually hear zone
// z loud (hears) hears b loud now: b has gone somewhere else, whatever
// the zone filters' terms make of the rest (restMargin), which read a
// gateway the survey heard in few windows of a zone with little
// conviction: a tag carried from a room to one with its own gateway,
// heard there at -55 dB, was charged against the room it left until
// that room's gateway was judged down (TestFusionHeardByGridNowAndThen:
// 33 zone changes in ten stays, 18 with this check).
func (lv *liveness) loudElsewhere(b *beacon, z int, win, now int64) bool {
	for i := range b.rds {
		r := &b.rds[i]
		if r.g < 0 || r.ema < lv.loud || !r.fresh(win, now) {
			continue
		}
		if _, ok := hearerOf(lv.hears[z], r.g); !ok {
			return true
		}
	}
	return false
}

// evidenceFade (ms) is the time constant at which a gateway's evidence
// fades between charges: a dead gateway under one tag is judged within
// two minutes, while the charges an idle one gathers now and then (a
// tag misplaced by noise for a window) added up, never fading, until
// it was judged down half an hour after the tags had left (a review).
// The cost: evidence gathered slower than downNats per evidenceFade
// (0.05 nats a second) is never judged, as a dead gateway whose tags
// only pass by one at a time (docs/rtls.md).
const evidenceFade = 10 * 60_000

// add adds d micro-nats to g's evidence at now, the evidence so far
// faded by evidenceFade since it was last added to, and returns the sum.
// Beacons charge in parallel: a charge lost to a race is retried, and
// two that fade from the same time fade one span twice (a few percent
// of evidence gathered a second apart: nothing).
func (lv *liveness) add(g int, d, now int64) int64 {
	for {
		old, at := lv.ev[g].Load(), lv.evAt[g].Load()
		v := old
		if at > 0 && now > at {
			v = int64(float64(old) * math.Exp(-float64(now-at)/evidenceFade))
		}
		if lv.ev[g].CompareAndSwap(old, v+d) {
			// Forward only, and past a backward clock step: left at a
			// time the clock had stepped back from, the evidence did
			// not fade until the clock caught up (a review).
			for a := lv.evAt[g].Load(); a < now || beforeStepBack(a, now); a = lv.evAt[g].Load() {
				if lv.evAt[g].CompareAndSwap(a, now) {
					break
				}
			}
			return v + d
		}
	}
}

// hearers are the gateways that usually hear zone z (none for -1).
func (lv *liveness) hearers(z int) []hearer {
	if z < 0 || z >= len(lv.hears) {
		return nil
	}
	return lv.hears[z]
}

// hearerOf finds g among hs, with what a window of its silence says.
func hearerOf(hs []hearer, g int) (float64, bool) {
	for _, h := range hs {
		if h.g == g {
			return h.nats, true
		}
	}
	return 0, false
}

// quiet says whether g's silence to b may be charged at now: it is not
// judged down already, its connection to the broker is not open
// (linked: judgeLinks judges it when it closes), it has not heard b for
// the window win, and has reported nothing for Stale. A last report
// more than clockStep in the future is from before a backward clock
// step: it says nothing of now.
func (lv *liveness) quiet(p *Params, b *beacon, g int, win, now int64) bool {
	l := lv.last[g].Load()
	return !lv.down[g].Load() && !lv.linked[g].Load() && !b.heardWithin(g, win, now) && (now-l >= p.Stale.Milliseconds() || beforeStepBack(l, now))
}

// heardWithin says whether gateway g heard b in the last w ms.
func (b *beacon) heardWithin(g int, w, now int64) bool {
	for i := range b.rds {
		if r := &b.rds[i]; r.g == g && r.fresh(w, now) {
			return true
		}
	}
	return false
}

// talkingWithin is how recently a gateway must have sent anything to
// count as talking (Options.GatewaySeen): gateways batch their reports,
// some every few seconds.
const talkingWithin = 10_000

// wordSlack is how far in the future a gateway's last word may be and
// still be taken as of now: receive times are taken before the locks
// the engine's clock is read under.
const wordSlack = 1000

// talking says whether gateway g, whose last word was at seen and whose
// message count is n (counted: there is a count), is talking. The word
// says so when it is within talkingWithin of now, unless it lies in the
// clock's future (from before a restart the clock came up behind, or a
// step back): then it says nothing of now, and a dead gateway went
// unjudged until the clock caught up (a review: 5 min behind, judged
// after 5 min 15 s instead of 41 s). Then the count says it, looked at
// each time the gateway's evidence reaches the judgement: talking if it
// moved since the last look (however long ago that was), or if this is
// the first look or the last was less than talkingWithin ago; so a dead
// gateway is judged at its second look with an unmoved count (1 min
// 20 s in the review's case). Without a count the word is believed.
func (lv *liveness) talking(g int, now, seen, n int64, counted bool) bool {
	d := now - seen
	if d >= -wordSlack || !counted {
		return d < talkingWithin
	}
	// One look at a time: read loops charge concurrently, and a look
	// between another's reads of the pair took its old time with its
	// new count and judged a talking gateway down (a review).
	lv.talkMu.Lock()
	defer lv.talkMu.Unlock()
	at := lv.talkAt[g]
	if n != lv.talkN[g] || at == 0 || at > now {
		// Moved since the last look, or not looked at yet (or the clock
		// went back past that look): talking now, as far as can be
		// told. Its evidence starts over, and the next look, when it has
		// gathered again, tells whether the count has moved since.
		lv.talkN[g], lv.talkAt[g] = n, now
		return true
	}
	return now-at < talkingWithin
}

// reviveTalking brings back every gateway judged down that has sent
// anything since (a status heartbeat, a beacon the engine does not
// track): run by the timeout sweep, as such messages do not reach
// Observe. Talk is counted (Options.GatewayMessages), not read off the
// last word's time: a word from before a restart that the clock came
// up behind, or from before the clock stepped back, reads as newer than
// the judgement, and newer messages do not move it (reviews: a gateway
// dead across such a restart was brought back for good at the next
// sweep; a talking one was held down until the clock caught up).
func (e *Engine) reviveTalking() {
	msgs := e.opts.GatewayMessages
	if msgs == nil {
		return
	}
	m := e.model.Load()
	now := e.clock.Now().UnixMilli()
	seen := e.opts.GatewaySeen
	for g := range m.live.downs() {
		mac := m.gwMAC[g]
		if msgs(mac) <= m.live.downMsgs[g].Load() {
			continue
		}
		// Heard when it last spoke, where the clock can say so.
		at := now
		if seen != nil {
			if t := seen(mac); t > m.live.downAt[g].Load() && t <= now {
				at = t
			}
		}
		if m.live.heard(g, at) {
			e.log.Info("rtls: gateway talks again; its silence counts again", "gateway", assets.FormatMAC(mac))
		}
	}
}

// A gateway that loses power or its network link drops its connection
// to the broker: the broker sees it closed at once (a reset) or within
// one and a half keep-alive periods (mochi's deadline), whatever tags
// are about. That is the surest word there is that it hears nothing, and
// unlike silence it does not depend on a tag coming by: a gateway that
// died with no tag under it was seldom judged down from silence, and a
// rule that weighed the silence of a gateway no tag it ever heard came
// by took healthy idle ones down behind tags standing between survey
// points (a review, thirtieth session: reverted). So the sweep judges
// down a gateway whose connection has stayed closed for linkGrace,
// when it had been open for linkProof or more and nothing has reached
// the engine from it since, and brings it back once it connects again.
const (
	// linkGrace (ms): a gateway that reconnects within it (a broker
	// restart, a Wi-Fi roam) is not judged.
	linkGrace = 20_000
	// linkProof (ms): a connection is read as the gateway's only when
	// it lasted this long (ingest.LastingConnection says why).
	linkProof = int64(ingest.LastingConnection / time.Millisecond)
	// restartGrace (ms): a gateway whose connection lasted before the
	// appliance restarted and that has not connected since is judged
	// down after this long. Longer than linkGrace: MQTT clients back
	// off between attempts (paho doubles from 1 s), so one that saw the
	// appliance gone for a minute may wait about as long again.
	restartGrace = 120_000
)

// judgeLinks judges down every gateway the running algorithm uses
// (placed, or in the survey) whose connection to the broker closed
// (Options.GatewayLink, above), and brings back one judged down whose
// connection is open: run by the sweep, and at once on a new model or
// run, which judge afresh. Nothing is judged while tracking is stopped:
// under judgeMu, which Start and Stop hold around their reset, a
// judgement begun before a Stop cannot land after its reset.
func (e *Engine) judgeLinks() {
	link := e.opts.GatewayLink
	if link == nil {
		return
	}
	e.judgeMu.Lock()
	defer e.judgeMu.Unlock()
	if e.run.Load() == nil {
		return
	}
	m := e.model.Load()
	lv := m.live
	now := e.clock.Now().UnixMilli()
	seen, msgs := e.opts.GatewaySeen, e.opts.GatewayMessages
	for g := range m.nSiteGW {
		mac := m.gwMAC[g]
		l, ok := link(mac)
		// Read once: a message between a check and the judgement's
		// record would be taken as sent before it, and the gateway held
		// down until its next (a review).
		var n int64
		if msgs != nil {
			n = msgs(mac)
		}
		up, since := l.Connected, l.Since
		lv.linked[g].Store(ok && up)
		switch {
		case !ok || !m.gwPlaced[g] && !m.hasEm[g]:
		case lv.down[g].Load():
			// Open: whatever judged it (a closed connection, or silence
			// before the sweep saw this one open), it is up.
			if up && lv.heard(g, since) {
				e.log.Info("rtls: gateway connected again; its silence counts again", "gateway", assets.FormatMAC(mac))
			}
		// Closed for linkGrace (GatewayLink.For: on the monotonic clock,
		// so a wall clock stepped forward does not age it), or since a
		// time the wall clock has since stepped back from (waiting for it to come round again took an
		// hour after a one-hour step: a review); nothing from the
		// gateway since, the close's own millisecond included (its last
		// batch and the close came off one read loop: a review), by the
		// engine's reports or by the pipeline's word (which a new model
		// does not forget).
		//
		// Or not connected since the appliance started, when its
		// connection lasted before (ingest.Stats.RestoreLinks): a
		// gateway that died across the restart, or before it. Nothing
		// can have come from it since through the embedded broker; one
		// talking through a client id that is not its MAC has sent
		// messages since the start, which is what is asked: the last
		// word's time is from before the restart, in a clock that may
		// have come up behind it (reviews: then never judged; or a
		// talking one judged when tracking started late).
		case !up && !l.Restored && l.Lasted >= linkProof && (l.For >= linkGrace || beforeStepBack(since, now)) &&
			lv.last[g].Load() <= since && (seen == nil || seen(mac) <= since),
			!up && l.Restored && l.For >= restartGrace && lv.last[g].Load() <= since && (msgs == nil || n == 0):
			if lv.judge(g, now, n) {
				e.judgedDown.Add(1)
				e.linkJudged(mac, since, l.Restored)
			}
		}
	}
}

// linkJudged logs a judgement from a closed connection: a warning the
// first time for that closure, then (a site edit, a start: a new
// judgement of the same closure) at debug level, so that one power cut
// is one warning (a review counted six for one closure and five edits).
func (e *Engine) linkJudged(mac [6]byte, since int64, restored bool) {
	e.linkMu.Lock()
	first := e.linkWarned[mac] != since
	if first {
		if e.linkWarned == nil {
			e.linkWarned = map[[6]byte]int64{}
		}
		e.linkWarned[mac] = since
	}
	e.linkMu.Unlock()
	level := slog.LevelDebug
	if first {
		level = slog.LevelWarn
	}
	if restored {
		e.log.Log(context.Background(), level, "rtls: gateway judged down: it kept a connection to the broker before the appliance started and has not connected since; its silence no longer counts until it reports or connects again",
			"gateway", assets.FormatMAC(mac), "started_at", since)
		return
	}
	e.log.Log(context.Background(), level, "rtls: gateway judged down: its connection to the broker closed; its silence no longer counts until it reports or connects again",
		"gateway", assets.FormatMAC(mac), "closed_at", since)
}

// reset forgets every judgement (Start, Stop): a run starts with every
// gateway up, so one run's judgement does not carry into the next
// (rtls-eval runs several algorithms on one engine). Each flag it
// clears takes one off the count, as a report's does (heard), and under
// judgeMu, as a judgement sets one: storing 0 raced a report clearing
// one, left the count at -1, and the next judgement's gateway counted
// as up in isDown (its silence charged again).
func (lv *liveness) reset() {
	lv.judgeMu.Lock()
	defer lv.judgeMu.Unlock()
	for g := range lv.ev {
		lv.ev[g].Store(0)
		lv.evAt[g].Store(0)
		lv.last[g].Store(0)
		if lv.down[g].CompareAndSwap(true, false) {
			lv.nDown.Add(-1)
		}
	}
}

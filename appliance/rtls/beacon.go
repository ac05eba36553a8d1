package rtls

import (
	"math"
	"math/bits"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/ingest"
)

// reading is one gateway's view of one beacon.
type reading struct {
	mac [6]byte
	g   int  // model gateway index, -1 when the model does not know it
	raw int8 // last raw dBm, as heard
	// rest: see held (here, in raw's padding: the struct's size is
	// paid by every loop over a beacon's readings).
	rest float32
	ema  float64 // smoothed dBm, minus the tag offset
	last int64   // Unix ms of the last sighting
	// counted is the last sighting grid has counted, prev the sighting
	// before last (grid.go): each reading counts once however many
	// updates see it.
	counted, prev int64
	// credit is the evidence (in readings of one evidencePeriod) grid may
	// still count from this gateway: it accrues with time, at most
	// maxCredit, and each counted reading spends what it uses. gap is
	// the moving average of the time between its readings (ms, 0 before
	// the second): a reading is worth at most that much of a period, so
	// a silence that fills the bank is not spent by the next second of
	// a fast gateway's readings.
	credit, gap float32
	// The last histN raw readings and their times (Unix ms modulo 2^32;
	// the ring is emptied after a silence of Stale, so no age in it
	// comes near 49 days), newest at hist[(hn-1)%histN]: the evidence
	// window's mean (windowMean).
	hist  [histN]int8
	histT [histN]uint32
	hn    uint32 // readings pushed since the ring was emptied
	// held is the id of the zone the beacon held at this gateway's last
	// sighting (0 none, or given up): liveness charges the gateway's
	// silence against it when the beacon has since been moved to a zone
	// the gateway does not hear, while rest, the sum since of how much
	// better the other readings fit it than the beacon's zone (nats, a
	// window a second: restMargin), is not negative. An id, not an
	// index: a site edit keeps it; 32 bits, in hn's padding (a zone id
	// past them, four billion zones created, is not held).
	held uint32
}

// stay is a beacon's zone and since which a refined decision may go back
// to.
type stay struct {
	zone   int
	zoneID uint64
	since  int64
	open   bool
}

// histN bounds the readings a window mean averages: every reading of a
// 2 s window up to 8 reports a second, the latest 16 above that.
const histN = 16

// beacon is the live state of one tracked beacon.
type beacon struct {
	uid string
	// shard is the index of the engine's shard that holds the beacon
	// (uid's hash, assets.NShards): the per-shard scratch buffers of grid
	// and the tag offset estimate are picked by it, without hashing the
	// uid again at every decision.
	shard uint32
	gen   uint64 // model generation the algorithm state belongs to
	rds   []reading

	heard int64 // Unix ms of the last sighting
	// tag is the device whose reports the state holds (the MAC heard);
	// detached the one a device replace took off, skipped until
	// detachedAt + detachedGrace.
	tag, detached ingest.MAC
	detachedAt    int64
	// heardSaved is the heard last handed to the store (saveHeard).
	heardSaved int64
	decided    int64 // Unix ms of the last decision (rate limit)
	// refineUntil: a decision taken at a scan's first report is refined
	// by the rest of that scan's reports until then (due, refining).
	refineUntil int64

	seq    uint64 // Seq of the last track event (Location.Seq)
	zone   int    // model zone index, -1 unknown
	zoneID uint64 // the same zone by id, which survives a model swap
	since  int64
	// fixed is when the zone was last set from unknown, or decided
	// afresh after a silence (resumed): sightings in that same
	// millisecond are the same scan and may still revise it freely.
	fixed int64
	// zonedAt is the last sighting by a gateway in a zone (model.zoned),
	// strongest's evidence; resumed is when a zone's gateway heard the
	// beacon again after a gap in that evidence longer than its
	// readings count (beacon.stale): silent, or heard only by gateways
	// in no zone (a hold; a review found the phantom stay there too).
	// strongest fixes it afresh then, as from unknown (dueFixOrRefix).
	zonedAt, resumed int64
	pos              position
	open             bool // an interval is open in the store
	// heldFrom, while strongest or centroid hold the zone of a beacon
	// heard only by gateways that place it nowhere, is the zone
	// gateway's last sighting of it (holdRunsOut), where its stay ends
	// (stayEnd); 0 while the zone has evidence of its own.
	heldFrom int64
	// tentative: the stay was entered by the decision still being
	// refined (Engine.decide); prev is the stay it ended.
	tentative bool
	prev      stay
	// untracked: RegistryReloaded ended the stay because the registry
	// no longer tracks the beacon; Observe asks the registry again
	// before tracking a report of it.
	untracked bool

	cand      int // candidate zone waiting out Dwell
	candSince int64

	// strongest gateway
	gw, challenger  int // index into rds, -1 none
	challengerSince int64
	// adjacency filter
	prior, belief, scratch []float64
	stepped                int64
	burst, lastSight       int64 // Unix ms the current run of sightings began, and its latest
	// scans (beacon.track): when the current one began, the intervals
	// (start to start) before the last three, whether the current one
	// came in more than one millisecond, and that for the last eight
	// (bit 0 the latest)
	scanStart int64
	scanGaps  [3]int64
	split     bool
	splits    uint8
	weight    float64 // evidence weight of the current update
	// k-NN scratch
	votes []float64
	// grid: belief per cell (moving, and standing when Params.StandFor
	// is on: together they sum to 1), its zone masses, when it last
	// moved, and the silence charged at the last update (grid keeps its
	// own step time: fusion runs it next to the zone filter, which keeps
	// stepped)
	cells    []float32
	still    []float32
	gmass    []float64
	gstepped int64
	absentW  float32
	// downOut are the gateways judged down whose silence grid's last
	// charging update took out (stepGrid): a refining report of one
	// (back up within the scan) is refunded no charge it was not made.
	downOut []int32
	// liveAt is when this beacon last charged silent gateways
	// (liveness.silence).
	liveAt int64
	// fusion: the pooled posterior. post is the zone posterior the
	// running algorithm decides on when it is not belief (grid's gmass,
	// fusion's pooled); the tag offset estimate reads it.
	pooled, post []float64
	// off is how much louder than the survey tag this tag is heard
	// (offset.go); it survives resets, being the tag's, not the model's.
	off tagOffset
	// goff is fusion's second estimate, its grid half's against grid's
	// law (learnOffsets); off is then its zone filter's.
	goff tagOffset
}

func newBeacon(uid string) *beacon {
	return &beacon{uid: uid, shard: assets.UIDHash(uid) % assets.NShards, zone: -1, cand: -1, gw: -1, challenger: -1}
}

// reset drops everything that was computed against another model or
// algorithm; the smoothed readings survive (their gateway indexes are
// re-resolved).
func (b *beacon) reset(m *model) {
	b.gen = m.gen
	for i := range b.rds {
		g, ok := m.gwIdx[b.rds[i].mac]
		if !ok {
			g = -1
		}
		b.rds[i].g = g
		b.rds[i].counted = 0 // a new belief counts the window's readings again
		if g >= 0 && m.zoned(g) {
			// A gateway the edit placed in a zone: its sightings are
			// evidence of a zone now (zonedAt; kept when one is
			// unplaced: those sightings did place it then).
			b.zonedAt = max(b.zonedAt, b.rds[i].last)
		}
	}
	b.cand, b.gw, b.challenger = -1, -1, -1
	b.prior, b.belief, b.scratch, b.votes, b.cells, b.still = nil, nil, nil, nil, nil, nil
	b.gmass, b.pooled, b.post = nil, nil, nil
	b.decided, b.refineUntil, b.liveAt = 0, 0, 0
	// A decision on the old model is final: prev's zone index is the old
	// model's, and a report in the same millisecond would otherwise pass
	// for its refinement (a review).
	b.tentative = false
	// Zone indexes are per model: find the zone again by id. A zone that
	// no longer exists becomes unknown; its interval (still open) is
	// closed by the next decision or the timeout.
	if z, ok := b.zoneIn(m); ok {
		b.zone = z
	} else {
		b.zone = -1
	}
}

// sight folds one sighting into the gateway's moving average and returns
// its reading.
func (b *beacon) sight(m *model, p *Params, mac [6]byte, rssi int8, now int64) *reading {
	x := float64(rssi) - b.off.a
	var rd *reading
	for i := range b.rds {
		if b.rds[i].mac == mac {
			rd = &b.rds[i]
			break
		}
	}
	if rd == nil {
		g, ok := m.gwIdx[mac]
		if !ok {
			g = -1
		}
		b.rds = append(b.rds, reading{mac: mac, g: g, ema: x, last: now})
		rd = &b.rds[len(b.rds)-1]
	} else if now-rd.last >= p.Stale.Milliseconds() {
		rd.ema = x // after a silence the old average says nothing
		rd.hn = 0
	} else if dt := now - rd.last; dt > 0 {
		// A slow average of the gaps, each clipped to half to twice
		// it, starting at a period: one silence must not make a fast
		// gateway's readings look slow, nor a reading delivered twice
		// a few ms apart make a 1 Hz gateway's look fast (averaging
		// 27 ms, it counted 2.3 s of evidence in 60; a review).
		if d := float32(dt); rd.gap == 0 {
			rd.gap = max(d, evidencePeriod)
		} else {
			rd.gap += (min(max(d, rd.gap/2), 2*rd.gap) - rd.gap) / 8
		}
		a := 1 - math.Exp(-float64(dt)/float64(p.SmoothTau.Milliseconds()))
		rd.ema += a * (x - rd.ema)
	} else {
		// Same millisecond (two copies of one advertisement): average.
		rd.ema = (rd.ema + x) / 2
	}
	rd.raw = rssi
	rd.held, rd.rest = 0, 0
	if b.zone >= 0 && b.zoneID <= math.MaxUint32 {
		rd.held = uint32(b.zoneID)
	}
	rd.hist[rd.hn%histN], rd.histT[rd.hn%histN] = rssi, uint32(now)
	rd.hn++
	if now > rd.last {
		rd.prev, rd.last = rd.last, now
	}
	if now > b.heard {
		b.heard = now
	}
	return rd
}

// liveWithin reports whether rd counts as heard at now, stale being its
// beacon's (beacon.stale, taken once per decision). strongest, centroid
// and knn read the smoothed readings of the gateways heard so.
func (rd *reading) liveWithin(stale, now int64) bool {
	return rd.g >= 0 && now-rd.last < stale
}

// stale is how long b's readings count as heard (liveWithin): Stale, or,
// for a beacon whose last three scans all came Stale or more apart (a
// slow advertiser: a BLE tag every 10 s, the standard's longest
// interval), half as long again as the shortest of those intervals, up
// to maxSlowStale. With Stale alone each of its scans began with no
// reading live: strongest replaced its incumbent with whichever gateway
// reported first, or kept it for ever when that was the incumbent (a
// review: a beacon scanned every 15 s was never followed), and centroid
// and knn saw one gateway at a time. A silence or a missed scan is one
// long interval among short ones and changes nothing.
func (b *beacon) stale(p *Params) int64 {
	return staleFor(p, min(b.scanGaps[0], b.scanGaps[1], b.scanGaps[2]))
}

// staleFor is how long (ms) the readings of a beacon scanned every
// interval ms count as heard (beacon.stale).
func staleFor(p *Params, interval int64) int64 {
	s := p.Stale.Milliseconds()
	if interval < s {
		return s
	}
	return max(s, min(interval+interval/2, maxSlowStale))
}

// maxSlowStale bounds a slow advertiser's stale (ms): below the default
// timeout, so a beacon that stops is still found unknown by it.
const maxSlowStale = 30_000

// fresh reports whether rd's last raw reading is within the window w
// (beacon.window): the filters take their evidence from the readings of
// one survey window (windowMean), not from the moving average, because
// they do their own smoothing over time and overlapping averages would
// count the same reading many times.
func (rd *reading) fresh(w, now int64) bool {
	return rd.g >= 0 && now-rd.last < w
}

// windowMean is the mean of rd's raw readings in the window w (dBm, as
// heard): the statistic a survey sample records (the mean of each
// gateway's readings over SampleWindow), so the evidence is read on the
// scale the model was learned on. The last raw reading alone is noisier
// than that mean by a factor that grows with the report rate, and read
// against spreads fitted on means a 5 Hz tag's filter flipped 15 times
// a minute (TestEvidenceIsTheWindowMean). Call only when rd is fresh.
func (rd *reading) windowMean(w, now int64) float64 {
	v, _ := rd.windowMeanN(w, now)
	return v
}

// windowMeanN is windowMean and how many readings it averages (1 when it
// falls back on the last raw one).
func (rd *reading) windowMeanN(w, now int64) (float64, int) {
	sum, n := 0, 0
	for i := uint32(0); i < min(rd.hn, histN); i++ {
		k := (rd.hn - 1 - i) % histN
		if int64(uint32(now)-rd.histT[k]) >= w {
			break
		}
		sum += int(rd.hist[k])
		n++
	}
	if n == 0 {
		return float64(rd.raw), 1
	}
	return float64(sum) / float64(n), n
}

// track follows b's scans; Observe calls it for every report, before
// anything reads the window. A scan is a run of reports less than
// scanSettle apart.
func (b *beacon) track(now int64) {
	if b.heard == 0 {
		b.scanStart = now
		return
	}
	if now-b.heard >= scanSettle {
		// From the last scan's start, not its end: the window must
		// reach back a whole interval to hold a scan that takes half a
		// second or more (gateways publishing on their own timers), and
		// a tag every 2.2 s has silences of 1.9 s between its scans.
		b.splits = b.splits<<1 | boolBit(b.split)
		b.scanGaps = [3]int64{now - b.scanStart, b.scanGaps[0], b.scanGaps[1]}
		b.scanStart, b.split = now, false
	} else if now != b.scanStart {
		b.split = true
	}
}

func boolBit(v bool) uint8 {
	if v {
		return 1
	}
	return 0
}

// window is how far back (ms) the readings of b's evidence reach: one
// SampleWindow, or, for a slow advertiser whose gateways report one by
// one, its last whole scan as well (the shortest of its last three scan
// intervals plus scanSettle, at most Stale). Such a beacon decides at
// the first report of each scan (DecideEvery), when a 2 s window holds
// that one report and nothing of the scan before: every other gateway
// then counted as not hearing it, and a tag advertising every 3 s got 4
// of 12 stays right (TestSlowStaggeredAdvertiserIsTracked).
//
// "Slow advertiser whose gateways report one by one" means: two of its
// last three scans came in more than one millisecond (one gateway
// batch, or the replay's one-millisecond scans, are not), its last three
// scan intervals were all a window or more and less than Stale (a
// missed scan or a silence is one long interval among short ones), and
// its current scan began less than two scanSettle ago (a tag reporting
// without pause has one scan that never ends). A review found the first
// version, which took the last interval of any beacon ever seen
// reporting in two milliseconds, giving a 5 Hz tag a 6 s window for
// minutes after one silence (TestEvidenceWindowOnlyForSlowScans).
func (b *beacon) window(p *Params, now int64) int64 {
	w := p.SampleWindow.Milliseconds()
	if bits.OnesCount8(b.splits&7) < 2 || now-b.scanStart >= 2*scanSettle {
		return w
	}
	lo, hi := b.scanGaps[0], b.scanGaps[0]
	for _, g := range b.scanGaps[1:] {
		lo, hi = min(lo, g), max(hi, g)
	}
	if lo < w || hi >= p.Stale.Milliseconds() {
		return w
	}
	return min(lo+scanSettle, p.Stale.Milliseconds())
}

// due applies the DecideEvery rate limit. A beacon without a zone is
// always due, so the first fix is immediate; so is a sighting in the same
// millisecond as the last decision, because sightings stamped alike are
// one scan (several gateways' copies of one advertisement) and should
// decide together rather than leave all but the first to the next round;
// and, for the same reason, one within refineSpan of a decision taken at
// its scan's first report (refining).
func (b *beacon) due(p *Params, now int64) bool { return b.dueFor(p, now, false, false) }

// dueFirstFix is due for strongest, centroid and knn, whose hysteresis
// (margin, Dwell) holds on to a first fix: theirs is refined for
// firstFixSpan. The zone filters weigh each report as it comes and need
// no such window; refined, their first fix could move to a zone not
// adjacent to the one announced.
func (b *beacon) dueFirstFix(p *Params, now int64) bool { return b.dueFor(p, now, true, false) }

// dueFixOrRefix is dueFirstFix for strongest, which also fixes afresh
// a beacon heard again after a silence (resumed): its incumbent
// gateway's reading is stale then, and the scan's first report takes
// over alone, where centroid and knn keep the zone they hold until
// Dwell. Refixing theirs too cost walk B a fifth more flips (a beacon
// missing half its reports) for the same accuracy.
func (b *beacon) dueFixOrRefix(p *Params, now int64) bool { return b.dueFor(p, now, true, true) }

func (b *beacon) dueFor(p *Params, now int64, firstFix, refix bool) bool {
	// A scan's first report may come a little earlier in its second
	// than the last one's did: it opens the scan's decision if it is
	// within refineSpan of due, or the decisions would drift off the
	// scans' starts and every scan be decided on its middle.
	every := p.DecideEvery.Milliseconds()
	if now == b.scanStart {
		every -= refineSpan
	}
	if firstFix && b.zone >= 0 && b.fixed == b.decided && now >= b.decided && now < b.refineUntil {
		// Still refining a first fix, however short DecideEvery, and in
		// its own millisecond too: a new decision there brought the
		// hysteresis back (reviews: after 150 ms; at a second report
		// stamped like the first).
		return true
	}
	again := refix && b.zone >= 0 && b.resumed == now
	if b.zone >= 0 && !again && b.refining(now) {
		// Refining the decision taken at its scan's first report,
		// whatever DecideEvery: at 0 every report was a decision of
		// its own, and hmm stored a stay of a few ms for each hop a
		// scan's reports moved it (a review).
		return true
	}
	if b.zone >= 0 && !again && p.DecideEvery > 0 && now != b.decided && now-b.decided < every {
		return false
	}
	b.decided, b.refineUntil = now, 0
	switch {
	case firstFix && b.zone < 0:
		b.refineUntil = now + firstFixSpan
	case again:
		// Heard again after a silence: the zone it held has no live
		// evidence, and the scan's first report, a far gateway's
		// perhaps, decided alone; the hysteresis then kept that
		// decision, recorded, for about 4 s (a review). A fix, as
		// from unknown: refined for firstFixSpan.
		b.refineUntil, b.fixed = now+firstFixSpan, now
	case now == b.scanStart:
		b.refineUntil = now + refineSpan
	}
	return true
}

// firstFixSpan: under strongest, centroid and knn (dueFirstFix) a
// decision taken while the beacon has no zone (its first fix, or one
// after a timeout or an unknown spell), and under strongest the first
// after a silence longer than its readings count (resumed,
// dueFixOrRefix), is refined by the reports of the next second,
// whatever scan they belong to. Gateways
// publish batches on their own timers, so one advertisement's reports
// come up to a second apart; the first fix went to whichever gateway
// reported first, and strongest's hysteresis kept it there, recorded,
// for about 4 s (a review, with reports 200 ms apart).
const firstFixSpan = 1000

// refineSpan: a decision taken at the first report of a scan is refined
// by the reports that follow it within this many milliseconds, as one
// taken in a millisecond is by the rest of that millisecond. Gateways
// publishing on their own spread one scan's reports over tens of
// milliseconds; deciding on the first alone left the rest of the scan
// to the next decision a second later (hmm on walk A seed 101 with
// scans spread over 20 ms: 66.9% against 71.1% with whole scans; now
// 71.0%, TestSpreadScansKeepTheirEvidence). A beacon heard without
// pause has no scan starts after its first, so it is never refined:
// this costs nothing where reports are spread evenly (the benchmark
// world), and as much as scans in one millisecond where they come in
// bursts.
const refineSpan = 100

// refining reports whether the report at now refines the decision
// taken at its scan's first report rather than making a new one (the
// algorithms then neither predict nor charge silence again: the update
// is the one that decision began).
func (b *beacon) refining(now int64) bool { return now != b.decided && now < b.refineUntil }

// placingQuiet reports whether no gateway that places b anywhere
// (model.zoned) has heard it for as long as its readings count (Stale,
// or a slow advertiser's longer stale): none ever (zonedAt 0) included.
// Observe asks before a report, for strongest's refix (resumed), and
// after it, before letting any algorithm find or move the beacon.
func (b *beacon) placingQuiet(p *Params, now int64) bool {
	gap := now - b.zonedAt
	return gap >= p.Stale.Milliseconds() && gap >= b.stale(p)
}

// refusesUnplaced says whether decision z is refused because no gateway
// that places the beacon anywhere (model.zoned) has heard it within its
// stale (placingQuiet): knn and the filters read the surveyed gateways'
// silence alone as a zone, and moved a beacon heard only by gateways
// that count for nothing to a room it never went near, or found it
// there (a review). It keeps the zone it has, as strongest and centroid
// hold it, until the timeout (expire); unknown stays unknown. A
// refinement may still go back to the zone held before its scan
// (heldBefore): refused, the scan's move would stand on the refinement
// that undid it.
func (b *beacon) refusesUnplaced(p *Params, z int, now int64) bool {
	return z >= 0 && z != b.zone && z != b.heldBefore(now) && b.placingQuiet(p, now)
}

// heldBefore is the zone b held before the decision that now refines
// (Engine.decide's refinement: its millisecond, or refineUntil), when
// that decision changed it; b.zone otherwise. The zone filter steps one
// hop from it: stepping from b.zone, each report of a scan moved one hop
// more, and the refinements, renaming the one stay the scan opened,
// stored a jump of several (a review: Z1, then Z4).
func (b *beacon) heldBefore(now int64) int {
	if b.tentative && b.since >= b.decided && (now == b.decided || now < b.refineUntil) {
		return b.prev.zone
	}
	return b.zone
}

// confirm applies Dwell: it returns the zone to report given the newest
// prediction z.
func (b *beacon) confirm(p *Params, z int, now int64) int {
	if z == b.zone || b.zone < 0 || z < 0 || b.firstScan(now) {
		b.cand = -1
		if z < 0 {
			return b.zone
		}
		return z
	}
	if z != b.cand {
		b.cand, b.candSince = z, now
	}
	if now-b.candSince >= p.Dwell.Milliseconds() {
		b.cand = -1
		return z
	}
	return b.zone
}

// holdRunsOut reports whether the zone strongest and centroid hold for a
// beacon heard only by gateways they cannot use has run out: no gateway
// the model counts (ok) heard it less than holdMs before now (liveWithin;
// the timeout sweep's boundary, intervals.go). Either way the hold's
// evidence ended at that gateway's last sighting (heldFrom), where the
// stay ends however the hold ends: run out, a stop, a timeout, a crash.
func (b *beacon) holdRunsOut(now, holdMs int64, ok func(g int) bool) bool {
	var last int64
	live := false
	for i := range b.rds {
		rd := &b.rds[i]
		if rd.g < 0 || !ok(rd.g) {
			continue
		}
		live = live || rd.liveWithin(holdMs, now)
		last = max(last, rd.last)
	}
	b.heldFrom = last
	return !live
}

// stayEnd is when the beacon's stay ends if it ends at now: now, or,
// while strongest or centroid hold its zone with no evidence for it
// (heldFrom), the zone gateway's last sighting, as a silent beacon's
// stay ends at its last; never before the stay began.
func (b *beacon) stayEnd(now int64) int64 {
	if b.heldFrom > 0 {
		return min(max(b.heldFrom, b.since), now)
	}
	// Heard since only by gateways that place it nowhere: its zone's
	// evidence ended at the last placing sighting, however the stay
	// ends (a stop, a crash's repair, a device replace, a rename; the
	// timeout alone closed there: a review).
	if b.zone >= 0 && b.zonedAt > 0 && b.zonedAt < now {
		return min(max(b.zonedAt, b.since), now)
	}
	return now
}

// firstScan reports whether now is the instant of the first fix.
// A first fix taken at a spread scan's first report is the scan's too:
// the reports refining it may still revise it freely.
func (b *beacon) firstScan(now int64) bool {
	return b.zone >= 0 && (b.fixed == now || b.fixed == b.decided && b.refining(now))
}

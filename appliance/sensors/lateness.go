package sensors

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"beaconhub/appliance/ingest"
	"beaconhub/store"
)

// Late readings. A gateway that was slow to deliver (a reconnect that
// flushes what it queued, a congested uplink) hands over readings older
// than those another gateway delivered for the same sensor a moment
// before; judged in arrival order, a fridge back at 5 °C read 12 °C
// again and paged staff. Readings cannot be ordered by their ts alone:
// gateways' clocks may be 5 minutes off the server's (the contract), and
// a rule that skipped readings older by ts than the newest judged hid a
// gateway's genuine readings while another's clock ran ahead, and all of
// them after the server's clock stepped back (a review; reverted).
//
// So each gateway's clock offset is estimated from what it delivers: the
// least (receive time - ts) over its recent readings is its clock's
// offset plus its quickest delivery. A reading's estimated server time is
// its ts plus that offset. It is late when it was delivered more than
// lateAfter after that time (slower than its gateway delivers at best)
// and is older, by that estimate, than the sensor's last judged reading
// by more than lateAfter: a late reading with nothing newer is still
// judged. Readings without a ts of the gateway's clock (the receive
// time) are never late, so the server's clock stepping back hides none;
// nor are those of a gateway not yet estimated. A reading on time by its
// own gateway with a lead of maxLead or more marks a clock step: judging
// goes on from it.
//
// One gateway's readings are not exempt: a cache upload carries a
// sensor's readings newest first, and a QoS 1 redelivery repeats an old
// one after a fresh one (both paged: reviews). The price: a gateway
// whose clock stepped back by X (under 5 min) has its readings look X
// old until its estimate follows (at most two estimate buckets), so they
// are taken for late while older than the last judged by more than
// lateAfter: for about X, also when it is the only one hearing the
// sensor (judging then waits that long).
//
// The estimates are kept in the store (each closed bucket's, and a new
// gateway's first), so a gateway flushing what it queued right after a
// restart is measured against its clock before it, not against the
// flush; and each sensor's last judged time starts at its latest stored
// reading (NewMonitor). A reading whose ts was more than 5 minutes off
// the server's clock has the receive time (the contract) and cannot be
// told late: a stall of more than 5 minutes, less the gateway's clock
// lag, goes unnoticed.
const (
	lateAfter   = 30_000     // ms
	maxLead     = 5 * 60_000 // ms: the contract's clock trust window
	offsetSpan  = 5 * 60_000 // ms: one estimate bucket
	maxGateways = 20_000     // gateways whose offsets are kept
)

// gwClock is one gateway's offset estimate: the least (receive - ts) in
// the current bucket and in the last earlier bucket that had readings,
// so a gateway back after an outage starts from what it was. Atomics:
// read on every reading batch of the gateway, written at a new least or
// bucket; two batches of one gateway at once (a reconnect overlapping
// the old connection) at worst blur the estimate for a bucket.
type gwClock struct {
	mu        sync.Mutex // the bucket's turn
	bucket    atomic.Int64
	cur, prev atomic.Int64 // noDelay when none
}

const noDelay = math.MaxInt64

func newGWClock() *gwClock {
	c := &gwClock{}
	c.cur.Store(noDelay)
	c.prev.Store(noDelay)
	return c
}

// estimate is a gateway's offset estimate after a batch, and what to
// keep in the store, if anything (a bucket closed, or a gateway's first).
type estimate struct {
	off        int64
	ok         bool
	keep       int64
	shouldKeep bool
}

// note adds the batch's least delay d (if has) at receive time now.
func (c *gwClock) note(now, d int64, has bool) (e estimate) {
	if b := now / offsetSpan; c.bucket.Load() != b {
		c.mu.Lock()
		if c.bucket.Load() != b {
			if cur := c.cur.Load(); cur != noDelay {
				c.prev.Store(cur)
				e.keep, e.shouldKeep = cur, true
			}
			c.cur.Store(noDelay)
			c.bucket.Store(b)
		}
		c.mu.Unlock()
	}
	if has {
		for cur := c.cur.Load(); d < cur; cur = c.cur.Load() {
			if c.cur.CompareAndSwap(cur, d) {
				if cur == noDelay && c.prev.Load() == noDelay {
					e.keep, e.shouldKeep = d, true // a gateway never estimated before
				}
				break
			}
		}
	}
	e.off = min(c.cur.Load(), c.prev.Load())
	e.ok = e.off != noDelay
	return e
}

// gwClocks holds the gateways' estimates. A map under a read lock: a
// sync.Map would box the array key on every lookup.
type gwClocks struct {
	mu sync.RWMutex
	m  map[ingest.MAC]*gwClock
}

func (g *gwClocks) get(gw ingest.MAC) *gwClock {
	g.mu.RLock()
	c := g.m[gw]
	g.mu.RUnlock()
	if c != nil {
		return c
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if c = g.m[gw]; c == nil {
		if g.m == nil {
			g.m = map[ingest.MAC]*gwClock{}
		}
		if len(g.m) >= maxGateways {
			return nil // a flood of gateway ids: their readings are judged as they come
		}
		c = newGWClock()
		g.m[gw] = c
	}
	return c
}

// offset notes a reading batch's delays and returns the gateway's
// offset estimate, if any. Readings without a ts from the gateway's
// clock (none given, or outside the trust window: the receive time) say
// nothing of it.
func (g *gwClocks) offset(b *ingest.Batch) estimate {
	d, has := int64(0), false
	for i := range b.Obs {
		o := &b.Obs[i]
		if o.Has&ingest.HasTS == 0 || o.Has&(ingest.HasHumidity|ingest.HasTemperature) == 0 {
			continue
		}
		if x := b.Received - o.TS; !has || x < d {
			d, has = x, true
		}
	}
	if !has {
		return estimate{} // its readings have the receive time: nothing to estimate
	}
	c := g.get(b.Gateway)
	if c == nil {
		return estimate{}
	}
	return c.note(b.Received, d, has)
}

// keptFor is how long a gateway's stored estimate is seeded at start: a
// gateway not heard for that long has its estimate forgotten.
const keptFor = 30 * 24 * 3600_000 // ms

// seed starts the gateways' estimates from the store's (the last of the
// previous run), as their previous bucket, most recent first.
func (g *gwClocks) seed(kept map[[6]byte]store.GatewayClock) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = make(map[ingest.MAC]*gwClock, min(len(kept), maxGateways))
	}
	macs := slices.SortedFunc(maps.Keys(kept), func(a, b [6]byte) int { return cmp.Compare(kept[b].At, kept[a].At) })
	for _, mac := range macs {
		if len(g.m) >= maxGateways {
			return
		}
		c := newGWClock()
		c.prev.Store(kept[mac].Off)
		g.m[mac] = c
	}
}

// late decides whether a reading of st estimated at est (server time, ms)
// and received then is late (see above); a newer one that is not becomes
// the last judged. Call under the asset's shard lock.
func (st *assetState) late(est, received int64) bool {
	lead := st.judgedAt - est
	if received-est > lateAfter && lead > lateAfter {
		return true
	}
	// The newest judged: an older reading judged (not late enough) is not
	// what later ones are measured against. A lead this long from a
	// reading on time by its own gateway's clock is a clock step: judging
	// goes on from it.
	if est > st.judgedAt || lead >= maxLead {
		st.judgedAt = est
	}
	return false
}

// estimated is a reading's time on the server's clock: its ts corrected
// by its gateway's offset; the receive time when it has no ts of its own
// or the gateway is not estimated.
func estimated(o *ingest.Observation, received, off int64, known bool) int64 {
	if !known || o.Has&ingest.HasTS == 0 {
		return received
	}
	return o.TS + off
}

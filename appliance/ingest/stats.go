package ingest

import (
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"beaconhub/appliance/clock"
)

// Stats counts what the pipeline saw, per gateway and per drop reason, and
// keeps the 1- and 15-minute rates that the status snapshot shows. The
// counting runs in broker read loops: a message without drops from a known
// gateway takes no lock (hot), anything else one short lock.
type Stats struct {
	clock clock.Clock

	messages    atomic.Int64
	reports     atomic.Int64
	processed   atomic.Int64
	observed    atomic.Int64
	ackTimeouts atomic.Int64

	mu    sync.Mutex
	drops [numDropReasons]int64
	// gateways maps MAC -> *gwStats. Entries are added under mu; the
	// per-message counting looks them up without it (a global lock per
	// message showed up as contention between 200 read loops).
	gateways sync.Map
	ngw      int // entries in gateways
	others   int // connected clients whose id is not a gateway MAC
	// restored are the gateways whose connection lasted before the
	// restart (RestoreLinks), with when it was restored: Link
	// reports them closed since then until they connect again.
	restored map[MAC]time.Time
	// lastingWritten is lastingIfChanged's last answer, joined.
	lastingWritten string

	ring rateRing
}

type gwStats struct {
	statused    bool // a status message came: IP, FW and Uptime are its
	messages    atomic.Int64
	reports     atomic.Int64
	lastSeen    atomic.Int64
	Drops       map[string]int64
	AckTimeouts int64
	IP          string
	FW          string
	Uptime      int64
	Connected   bool
	Remote      string
	// open holds the client ids of the gateway's open connections to
	// the embedded broker: ids that spell its MAC differently
	// (AC233FA0B1C2, ac:23:3f:a0:b1:c2) are different clients to the
	// broker, both open at once, and the first to close had the gateway
	// read as gone (a review). By id, not a count: a connection taken
	// over by a newer one with the same id is reported connected twice
	// and closed once (broker/embedded.go). connectedAt and closedAt are
	// when the set last stopped and started being empty (zero: never).
	open                  map[string]struct{}
	connectedAt, closedAt time.Time
}

func newStats(c clock.Clock) *Stats {
	return &Stats{clock: c}
}

func (s *Stats) lookup(m MAC) (*gwStats, bool) {
	v, ok := s.gateways.Load(m)
	if !ok {
		return nil, false
	}
	return v.(*gwStats), true
}

// gw returns m's counters, creating them while fewer than maxGateways
// are kept (nil past that); call with mu held. Every way in is capped:
// status messages and connections under fresh MACs grew the table past
// 100,000 and /status/mqtt to 17 MB, where only reports were capped (a
// black-box check).
func (s *Stats) gw(m MAC) *gwStats {
	g, ok := s.lookup(m)
	if !ok {
		if s.ngw >= maxGateways {
			return nil
		}
		g = &gwStats{}
		s.gateways.Store(m, g)
		s.ngw++
	}
	return g
}

func (g *gwStats) count(reports int, now int64) {
	g.messages.Add(1)
	g.reports.Add(int64(reports))
	for {
		cur := g.lastSeen.Load()
		if now <= cur || g.lastSeen.CompareAndSwap(cur, now) {
			return
		}
	}
}

// maxGateways bounds per-gateway state a flood of random topics could grow.
const maxGateways = 20000

func (s *Stats) message(m *Message, now int64) {
	s.messages.Add(1)
	s.reports.Add(int64(len(m.Reports)))
	if len(m.Drops) == 0 {
		if g, ok := s.lookup(m.Gateway); ok {
			g.count(len(m.Reports), now)
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range m.Drops {
		s.drops[d.Reason]++
	}
	if m.Gateway == (MAC{}) {
		return
	}
	g := s.gw(m.Gateway)
	if g == nil {
		return
	}
	g.count(len(m.Reports), now)
	if len(m.Drops) > 0 {
		if g.Drops == nil {
			g.Drops = map[string]int64{}
		}
		for _, d := range m.Drops {
			g.Drops[d.Reason.String()]++
		}
	}
}

func (s *Stats) ackTimeout(m MAC) {
	s.ackTimeouts.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.lookup(m); ok {
		g.AckTimeouts++
	}
}

func (s *Stats) countProcessed(obs int) {
	s.processed.Add(1)
	s.observed.Add(int64(obs))
}

func (s *Stats) status(m MAC, st GatewayStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.gw(m)
	if g == nil {
		return
	}
	if st.IP != "" {
		g.IP = st.IP
	}
	if st.FW != "" {
		g.FW = st.FW
	}
	g.Uptime = st.Uptime
	g.statused = true
}

// ClientConnected implements broker.ConnObserver.
func (s *Stats) ClientConnected(clientID, remote string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := ParseMAC(clientID); ok {
		g := s.gw(m)
		if g == nil {
			return // its disconnect finds no entry either
		}
		g.Connected, g.Remote = true, remote
		if len(g.open) == 0 {
			g.connectedAt = s.clock.Now()
		}
		if g.open == nil {
			g.open = map[string]struct{}{}
		}
		g.open[clientID] = struct{}{}
		return
	}
	s.others++
}

// PacketTooLarge implements broker.OversizeObserver: a payload the broker
// could not read for its size is a too_large drop, of the gateway the
// client id names (the topic was never read).
func (s *Stats) PacketTooLarge(clientID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drops[DropTooLarge]++
	if m, ok := ParseMAC(clientID); ok {
		if g := s.gw(m); g != nil {
			if g.Drops == nil {
				g.Drops = map[string]int64{}
			}
			g.Drops[DropTooLarge.String()]++
		}
	}
}

// ClientDisconnected implements broker.ConnObserver.
func (s *Stats) ClientDisconnected(clientID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := ParseMAC(clientID); ok {
		if g, ok := s.lookup(m); ok {
			if _, open := g.open[clientID]; open {
				delete(g.open, clientID)
				if len(g.open) == 0 {
					g.Connected = false
					g.closedAt = s.clock.Now()
				}
			}
		}
		return
	}
	if s.others > 0 {
		s.others--
	}
}

// GatewayLink is a gateway's connection to the embedded broker, as the
// broker's connection observer (ClientConnected, ClientDisconnected)
// saw it: the tracking engine reads a closed one as the gateway down
// (rtls.Options.GatewayLink).
type GatewayLink struct {
	Connected bool
	// Since is when the connection opened (Connected) or closed (Unix
	// ms, the pipeline's clock).
	Since int64
	// Lasted is how long the closed connection had been open (ms; 0
	// while connected), by the clock's monotonic reading where it has
	// one: a wall clock stepped back while it was open made it 0.
	Lasted int64
	// Restored: the gateway has not connected since the pipeline
	// started, and its connection before the restart lasted
	// LastingConnection or more (Since is the start; Lasted 0).
	Restored bool
	// For is how long (ms) the gateway has been as Link says (open,
	// closed, or not back since the start), by the clock's monotonic
	// reading where it has one, so that a wall clock stepped forward
	// does not age it (a review: stepped an hour forward after a
	// restart, gateways still reconnecting were judged down). Never
	// negative: a start the wall clock has stepped back from (a clock
	// without a monotonic reading, as in tests) moves to the step.
	For int64
}

// LastingConnection is how long a gateway's connection must have lasted
// to be read as the gateway's own: gateways that connect for each batch
// of reports and leave again (as mosquitto_pub does) are closed most of
// the time, and were judged down between batches they were not.
const LastingConnection = time.Minute

// Link is gateway m's connection to the embedded broker; false when it
// never connected since the start (or the broker is external, which
// reports no connections).
func (s *Stats) Link(m MAC) (GatewayLink, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.lookup(m)
	now := s.clock.Now()
	if !ok || g.connectedAt.IsZero() {
		at, ok := s.restored[m]
		if !ok {
			return GatewayLink{}, false
		}
		if now.Before(at) {
			at = now
			s.restored[m] = at
		}
		return GatewayLink{Since: at.UnixMilli(), Restored: true, For: now.Sub(at).Milliseconds()}, true
	}
	if len(g.open) > 0 {
		return GatewayLink{Connected: true, Since: g.connectedAt.UnixMilli(), For: max(0, now.Sub(g.connectedAt).Milliseconds())}, true
	}
	return GatewayLink{Since: g.closedAt.UnixMilli(), Lasted: max(0, g.closedAt.Sub(g.connectedAt).Milliseconds()),
		For: max(0, now.Sub(g.closedAt).Milliseconds())}, true
}

// RestoreLinks records the gateways whose connection lasted before a
// restart (store.LoadLastingLinks), as of at: each is reported closed
// since at (Link, Restored) until it connects. MACs that do not parse
// are skipped.
func (s *Stats) RestoreLinks(macs []string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.restored = make(map[MAC]time.Time, len(macs))
	for _, v := range macs {
		if m, ok := ParseMAC(v); ok {
			s.restored[m] = at
		}
	}
	s.lastingWritten = strings.Join(s.lastingLocked(), ",")
}

// lastingIfChanged returns the gateways whose latest connection lasted
// LastingConnection or more (open or closed), with those restored that
// have not connected since, sorted; changed is false when that is what
// it returned last time (nothing to store).
func (s *Stats) lastingIfChanged() (macs []string, changed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	macs = s.lastingLocked()
	key := strings.Join(macs, ",")
	if key == s.lastingWritten {
		return nil, false
	}
	s.lastingWritten = key
	return macs, true
}

func (s *Stats) lastingLocked() []string {
	now := s.clock.Now()
	var out []string
	s.gateways.Range(func(k, v any) bool {
		g := v.(*gwStats)
		switch {
		case g.connectedAt.IsZero():
		case len(g.open) > 0 && now.Sub(g.connectedAt) >= LastingConnection,
			len(g.open) == 0 && g.closedAt.Sub(g.connectedAt) >= LastingConnection:
			out = append(out, k.(MAC).String())
		}
		return true
	})
	for m := range s.restored {
		if g, ok := s.lookup(m); !ok || g.connectedAt.IsZero() {
			out = append(out, m.String())
		}
	}
	sort.Strings(out)
	return out
}

// Totals are the lifetime counters.
type Totals struct {
	Messages, Reports, Processed, Observed, AckTimeouts int64
}

// Totals returns the lifetime counters.
func (s *Stats) Totals() Totals {
	return Totals{s.messages.Load(), s.reports.Load(), s.processed.Load(), s.observed.Load(), s.ackTimeouts.Load()}
}

// Tick samples the counters for the rate windows; the owner calls it every
// rateStep (the appliance schedules it on its clock).
func (s *Stats) Tick() {
	s.ring.add(s.clock.Now(), s.messages.Load(), s.reports.Load())
}

// GatewaySnapshot is one gateway's row of the status snapshot.
type GatewaySnapshot struct {
	MAC       string `json:"mac"`
	Connected bool   `json:"connected"`
	LastSeen  int64  `json:"last_seen"`
	// IP, FW and Uptime are null until the gateway's first status
	// message (they were left out: a black-box check).
	IP          *string          `json:"ip"`
	FW          *string          `json:"fw"`
	Uptime      *int64           `json:"uptime"`
	Messages    int64            `json:"messages"`
	Reports     int64            `json:"reports"`
	Drops       map[string]int64 `json:"drops"`
	AckTimeouts int64            `json:"ack_timeouts"`
}

// Snapshot is the pipeline part of GET /api/v1/status/mqtt.
type Snapshot struct {
	Messages      int64             `json:"messages_total"`
	Reports       int64             `json:"reports_total"`
	MessagesRate  Rates             `json:"messages_per_second"`
	ReportsRate   Rates             `json:"reports_per_second"`
	Drops         map[string]int64  `json:"drops"`
	AckTimeouts   int64             `json:"ack_timeouts"`
	OtherClients  int               `json:"other_clients"`
	Gateways      []GatewaySnapshot `json:"gateways"`
	GatewaysTotal int               `json:"gateways_total"`
	Connected     int               `json:"gateways_connected"`
}

// Rates are averages over the last 1 and 15 minutes.
type Rates struct {
	M1  float64 `json:"1m"`
	M15 float64 `json:"15m"`
}

// Snapshot copies the counters.
func (s *Stats) Snapshot() Snapshot {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Snapshot{Messages: s.messages.Load(), Reports: s.reports.Load(), AckTimeouts: s.ackTimeouts.Load(),
		Drops: map[string]int64{}, OtherClients: s.others, Gateways: []GatewaySnapshot{}} // [] with none, not null (a black-box check)
	for _, r := range DropReasons() {
		out.Drops[r.String()] = s.drops[r]
	}
	out.MessagesRate, out.ReportsRate = s.ring.rates(now, out.Messages, out.Reports)
	s.gateways.Range(func(k, v any) bool {
		m, g := k.(MAC), v.(*gwStats)
		drops := map[string]int64{}
		for reason, n := range g.Drops {
			drops[reason] = n
		}
		gs := GatewaySnapshot{MAC: m.String(), Connected: g.Connected, LastSeen: g.lastSeen.Load(),
			Messages: g.messages.Load(), Reports: g.reports.Load(), Drops: drops, AckTimeouts: g.AckTimeouts}
		if g.statused {
			ip, fw, up := g.IP, g.FW, g.Uptime
			gs.IP, gs.FW, gs.Uptime = &ip, &fw, &up
		}
		out.Gateways = append(out.Gateways, gs)
		if g.Connected {
			out.Connected++
		}
		return true
	})
	sort.Slice(out.Gateways, func(i, j int) bool { return out.Gateways[i].MAC < out.Gateways[j].MAC })
	out.GatewaysTotal = len(out.Gateways)
	return out
}

// RateStep is how often Tick should run.
const RateStep = 5 * time.Second

// rateRing keeps 15 minutes of counter samples.
type rateRing struct {
	mu      sync.Mutex
	samples [15*60/5 + 1]sample
	n, head int
}

type sample struct {
	at       time.Time
	msgs, rp int64
}

func (r *rateRing) add(at time.Time, msgs, rp int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.samples[r.head] = sample{at, msgs, rp}
	r.head = (r.head + 1) % len(r.samples)
	if r.n < len(r.samples) {
		r.n++
	}
}

// rates compares the current totals with the oldest sample inside each
// window (or the oldest there is, right after start).
func (r *rateRing) rates(now time.Time, msgs, rp int64) (Rates, Rates) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var m, p Rates
	calc := func(window time.Duration) (float64, float64) {
		var best *sample
		for i := 0; i < r.n; i++ {
			sm := &r.samples[(r.head-1-i+len(r.samples))%len(r.samples)]
			if now.Sub(sm.at) > window {
				break
			}
			best = sm
		}
		if best == nil {
			return 0, 0
		}
		secs := now.Sub(best.at).Seconds()
		if secs <= 0 {
			return 0, 0
		}
		return float64(msgs-best.msgs) / secs, float64(rp-best.rp) / secs
	}
	m.M1, p.M1 = calc(time.Minute)
	m.M15, p.M15 = calc(15 * time.Minute)
	return m, p
}

package push

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"beaconhub/appliance/clock"
	"beaconhub/appliance/config"
	"beaconhub/appliance/httpwait"
	"beaconhub/appliance/status"
)

// DefaultBackoff is the pause after a 429 without a Retry-After the
// publisher understands.
const DefaultBackoff = 30 * time.Second

// MaxBackoff caps the pause a 429's Retry-After can ask for. Nothing is
// posted to a pausing server, so an uncapped "Retry-After: 3600" (a
// proxy in front of ntfy, say) held every SOS for an hour while the
// dashboard said the last delivery was fine (a review). A minute is
// one extra attempt a minute to a server that really is rate limiting,
// and a press that waits at most that long for it.
const MaxBackoff = time.Minute

// Result of one publish attempt.
type Result int

// Results. Failed and the two rate-limit results are retryable;
// Rejected (a 4xx other than 429) is not: re-sending cannot help.
const (
	Sent Result = iota
	RateLimited
	Backoff // not attempted: the server's 429 backoff is running
	Failed
	Rejected
	Disabled
)

// Recorder receives real publishes for the dashboard's delivery probe.
type Recorder interface {
	RecordDelivery(at time.Time, resp status.Response, err error)
}

// Publisher posts rendered messages through the bounded transport and
// owns the 429 backoff of each push server, shared by every sender to it.
// Per server: the vendor's ops server rate-limiting its copies must not
// pause the site's staff alerts on their own server.
type Publisher struct {
	live *config.Live
	clk  clock.Clock
	tr   *status.Transport
	rec  Recorder
	log  *slog.Logger

	mu sync.Mutex
	// sends holds one lock per server: one POST at a time to a server
	// keeps its topics in order, and a server that hangs holds up only
	// the posts to it.
	sends map[string]*sync.Mutex
	seq   uint64
	// seqLimit is the floor persisted for the next process: every number
	// issued is below it, so a restart starts above anything sent, even
	// after a burst ran seq ahead of the clock, within its millisecond or
	// with the clock set back. It is reserved at start and renewed in the
	// background, by the minute tick and by the numbers, so it stays at
	// least half a reserve ahead of both: a press never waits for a store
	// write (a review: it waited behind other transactions), and a quiet
	// spell does not leave the clock past it (a review). saveSeq is nil
	// until push.New wires it; seqSaving is closed when the renewal in
	// flight is done; seqClosed stops renewals at shutdown.
	seqLimit  uint64
	seqSaving chan struct{}
	seqClosed bool
	saveSeq   func(uint64) error
	// backoffUntil is the end of each server's 429 pause, by base URL;
	// nothing is posted to it before.
	backoffUntil map[string]time.Time
	lastRan      string // transport that actually ran last
}

// NewPublisher builds a publisher; rec may be nil.
func NewPublisher(live *config.Live, clk clock.Clock, tr *status.Transport, rec Recorder, log *slog.Logger) *Publisher {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Publisher{live: live, clk: clk, tr: tr, rec: rec, log: log, lastRan: tr.Name()}
}

// Transport names the transport that ran last ("curl" or "go").
func (p *Publisher) Transport() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastRan
}

// seqReserve is how far past the numbers issued the persisted floor is
// set: a write per five minutes of clock (or per 300,000 messages).
const seqReserve = uint64(10 * time.Minute / time.Millisecond)

// NextSeq numbers records. It is max(previous+1, now in ms) and never
// below the floor a previous run persisted, so it keeps increasing across
// restarts with one write per half a reserve, not per message.
func (p *Publisher) NextSeq() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq = max(p.seq+1, uint64(p.clk.Now().UnixMilli()))
	p.renewSeqLocked()
	return p.seq
}

// keepSeqAhead renews the floor when the clock nears it (the push
// service's minute tick): numbers after a quiet spell follow the clock,
// and must find the floor ahead of it.
func (p *Publisher) keepSeqAhead() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.renewSeqLocked()
}

// renewSeqLocked starts a renewal, with p.mu held, when the numbers or
// the clock are within half a reserve of the floor and none is in flight.
func (p *Publisher) renewSeqLocked() {
	base := max(p.seq, uint64(p.clk.Now().UnixMilli()))
	if p.saveSeq == nil || p.seqSaving != nil || p.seqClosed || base+seqReserve/2 < p.seqLimit {
		return
	}
	done := make(chan struct{})
	p.seqSaving = done
	go p.renewSeq(p.saveSeq, base+seqReserve, done)
}

// renewSeq persists limit as the new floor. A store that fails for
// minutes leaves the numbers past the floor, and a restart then may
// repeat some of this run's (logged).
func (p *Publisher) renewSeq(save func(uint64) error, limit uint64, done chan struct{}) {
	err := save(limit)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seqSaving = nil
	close(done)
	if err != nil {
		p.log.Warn("push: sequence floor not saved", "err", err)
		return
	}
	p.seqLimit = max(p.seqLimit, limit)
}

// closeSeq stops renewals and waits for the one in flight, so the store
// may close after it (push's Done).
//
// Then the floor comes down to just past the last number issued: the
// next start numbers from there (or the clock), not from a block ahead.
// Left at the reserve, every clean restart moved seq ten minutes further
// past the clock (a black-box check saw 45 minutes after four restarts);
// only a crash leaves the reserve, which is what it is for.
func (p *Publisher) closeSeq() {
	p.mu.Lock()
	p.seqClosed = true
	done := p.seqSaving
	p.mu.Unlock()
	if done != nil {
		<-done
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.saveSeq == nil || p.seq == 0 {
		return
	}
	if err := p.saveSeq(p.seq + 1); err != nil {
		p.log.Warn("push: sequence floor not lowered at stop; the next start numbers from the reserve", "err", err)
		return
	}
	p.seqLimit = p.seq + 1
}

// useSeqFloor starts numbering at the floor a previous run saved and
// reserves the next block before any number is issued (at start, when
// no press waits on it), then keeps renewing it through save.
func (p *Publisher) useSeqFloor(floor uint64, save func(uint64) error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if floor > 0 {
		p.seq = max(p.seq, floor-1)
	}
	p.seqLimit = floor
	limit := max(p.seq, uint64(p.clk.Now().UnixMilli())) + seqReserve
	if err := save(limit); err != nil {
		p.log.Error("push: sequence floor not saved at start; after the next restart record seq may repeat this run's", "err", err)
	} else {
		p.seqLimit = limit
	}
	p.saveSeq = save
}

func (p *Publisher) sendLock(base string) *sync.Mutex {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := backoffKey(base)
	l := p.sends[k]
	if l == nil {
		if p.sends == nil {
			p.sends = map[string]*sync.Mutex{}
		}
		l = &sync.Mutex{}
		p.sends[k] = l
	}
	return l
}

// BackoffUntil is the end of base's current 429 pause (zero when none).
func (p *Publisher) BackoffUntil(base string) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.backoffUntil[backoffKey(base)]
}

// backoffKey names the server base posts to, however the configuration
// spells it: one server has one 429 pause, one send lock and one
// recovery (the ops queue follows a recovered staff server only when
// both keys match; a review found "HTTP://" or an upper-case host
// taken for another server). Scheme and host are case-insensitive and
// a default port is the same as none (RFC 3986, 6.2.2-6.2.3); the path
// is kept, less its trailing slashes, and so are the user (another
// account may have its own limits) and an IPv6 zone (interface names
// are case-sensitive).
func backoffKey(base string) string {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return strings.TrimRight(base, "/")
	}
	scheme, host, port := strings.ToLower(u.Scheme), u.Hostname(), u.Port()
	if i := strings.IndexByte(host, '%'); i >= 0 {
		host = strings.ToLower(host[:i]) + host[i:]
	} else {
		host = strings.ToLower(host)
	}
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if port != "" {
		host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	user := ""
	if u.User != nil {
		user = u.User.String() + "@"
	}
	return scheme + "://" + user + host + strings.TrimRight(u.EscapedPath(), "/")
}

// retryAfter is the pause a 429's Retry-After asks for (seconds or an
// HTTP date, RFC 9110 10.2.3), DefaultBackoff when it says neither, and
// never more than MaxBackoff nor less than MinBackoff: a pause of 0 ("0",
// a date passed) left the retry to the doubling delay, and repeated 429s
// held an SOS 2 minutes apart (a review).
func retryAfter(h string, now time.Time) time.Duration {
	d, ok := httpwait.RetryAfter(h, now)
	if !ok {
		d = DefaultBackoff
	}
	return min(max(d, MinBackoff), MaxBackoff)
}

// MinBackoff is the least pause after a 429.
const MinBackoff = time.Second

// Pause starts base's 429 pause for a 429 met outside Post (a status
// probe), as long as retryAfter (a Retry-After header, maybe empty)
// asks, bounded as Post's; a pause already longer stays. It returns the
// pause's end.
func (p *Publisher) Pause(base, retryAfterHeader string) time.Time {
	now := p.clk.Now()
	until := p.pauseUntil(base, now.Add(retryAfter(retryAfterHeader, now)))
	p.log.Warn("push server rate limiting a status probe; backing off", "until", until.UTC())
	return until
}

// pauseUntil starts or lengthens base's 429 pause to until (a pause
// already longer stays) and returns its end.
func (p *Publisher) pauseUntil(base string, until time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.backoffUntil == nil {
		p.backoffUntil = map[string]time.Time{}
	}
	k := backoffKey(base)
	if p.backoffUntil[k].After(until) {
		return p.backoffUntil[k]
	}
	p.backoffUntil[k] = until
	return until
}

// Resume ends base's 429 pause: the server has just accepted a post
// (the dashboard's recheck), so what waits for it may go.
func (p *Publisher) Resume(base string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.backoffUntil, backoffKey(base))
}

// Post sends one rendered message to base (a server URL). staff says
// whether it feeds the delivery probe (vendor ops copies do not).
func (p *Publisher) Post(ctx context.Context, base string, r Rendered, staff bool) Result {
	send := p.sendLock(base)
	send.Lock()
	defer send.Unlock()
	now := p.clk.Now()
	p.mu.Lock()
	wait := now.Before(p.backoffUntil[backoffKey(base)])
	p.mu.Unlock()
	if wait {
		return Backoff
	}
	body, _ := json.Marshal(r)
	hdr := map[string]string{"Content-Type": "application/json"}
	if tok := p.live.Get().PushPublishToken; tok != "" {
		hdr["Authorization"] = "Bearer " + tok
	}
	resp, err := p.tr.Do(ctx, status.Request{Method: http.MethodPost, URL: strings.TrimRight(base, "/") + "/", Header: hdr, Body: body})
	if staff && p.rec != nil {
		p.rec.RecordDelivery(p.clk.Now(), resp, err)
	}
	p.mu.Lock()
	if resp.Transport != "" {
		p.lastRan = resp.Transport
	}
	p.mu.Unlock()
	switch {
	case err != nil:
		p.log.Warn("push publish failed", "topic", r.Topic, "err", err)
		return Failed
	case resp.Status == http.StatusTooManyRequests:
		d := retryAfter(resp.Header.Get("Retry-After"), p.clk.Now())
		p.pauseUntil(base, p.clk.Now().Add(d))
		p.log.Warn("push server rate limiting; backing off", "for", d)
		return RateLimited
	case resp.Status >= 200 && resp.Status < 300:
		return Sent
	case resp.Status >= 500:
		return Failed
	default:
		p.log.Error("push server rejected message", "topic", r.Topic, "status", resp.Status)
		return Rejected
	}
}

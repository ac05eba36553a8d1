package push

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"beaconhub/appliance/clock"
	"beaconhub/appliance/config"
	"beaconhub/store"
)

// maxRetry bounds each in-memory retry queue of immediate alerts; past
// it the oldest is dropped (and logged), so a dead push server cannot
// grow memory without limit.
const maxRetry = 1000

// Retry lanes. The site's staff alerts and the vendor's ops copies wait
// apart: each queue is retried in order and stops at its first failure,
// so with one queue an unreachable ops server (a site without internet)
// held every later SOS behind the ops copy at its head.
const (
	laneStaff = iota
	laneOps
	lanes
)

func laneOf(q queued) int {
	if q.Staff {
		return laneStaff
	}
	return laneOps
}

// retryQueue is one lane's messages waiting for their server.
type retryQueue struct {
	items []queued
	timer clock.Timer
	delay time.Duration
}

// queued is an immediate message waiting in the retry queue.
type queued struct {
	Base  string   `json:"base"`
	R     Rendered `json:"r"`
	Staff bool     `json:"staff"`
	// At is when the alert became known (heldSince, Unix ms), so a
	// delivery long after it says so (post); 0 in queues saved before it
	// existed.
	At int64 `json:"at,omitempty"`
}

// LateAfter is how long after its moment a message counts as late: its
// body then starts with a line saying when it happened. An SOS held by
// an outage is still delivered (a late alarm can be checked, a lost one
// cannot), but nobody should read a two-hour-old press as happening now.
// The machine record keeps its original time either way.
const LateAfter = time.Minute

// retryName is the state blob mirroring the retry queues (both lanes in
// one list, told apart by Staff), so an alert waiting for the push
// server survives a restart.
const retryName = "retry"

// seqName is the state blob holding the record sequence's floor: every
// seq issued is below it (Publisher.NextSeq).
const seqName = "seq"

// Service is the push subsystem: it receives condition transitions and
// committed events, applies each category's cadence and publishes.
// Sources call the On* methods, which only hand work to one worker
// goroutine, so a slow push server never stalls ingest or the writer.
type Service struct {
	live *config.Live
	clk  clock.Clock
	db   *store.DB
	pub  *Publisher
	log  *slog.Logger
	// Alias, if set, is the current uid of a former one (a remint's or a
	// merge's), "" when uid is none: reconcile follows a rename a crash
	// kept from push instead of taking the old key for a recovery.
	Alias func(uid string) string
	// Identify resolves a condition subject (asset_uid or MAC) to a
	// device; nil leaves only the subject.
	Identify func(subject string) Device

	staff, opsw *worker // see worker

	mu       sync.Mutex
	st       *state
	retry    [lanes]retryQueue
	outTimer clock.Timer
	outDelay time.Duration
	digTimer clock.Timer
	remTimer clock.Timer
	// postMu guards the posts in flight (postCtx, endPosts).
	postMu     sync.Mutex
	posts      map[*context.CancelFunc]struct{}
	postsEnded bool
	graceTimer clock.Timer
	stopped    bool
	// deferSave, under mu, makes save a no-op while reconcile runs,
	// except after a message went out (sentUnsaved, set by immediate): a
	// save per transition (the whole state each time) held an SOS 51 s
	// behind 10,000 conditions found at a start, and a save only at the
	// end made a crash during it repeat every alert it had sent (both
	// reviews). What is saved after a post is what a restart must not
	// announce again; the rest (bulk tracking, suppressed transitions)
	// waits for the end.
	deferSave, sentUnsaved bool
	// absorbed (worker only) holds the condition keys of merge sources
	// whose survivor had the same condition: a late transition decided
	// under the source's uid is dropped, not moved onto the survivor.
	absorbed map[string]bool
	// handed is when the staff worker's running job was handed to it
	// (do): what push received waited from then, behind other jobs'
	// posts, and heldSince counts from it. Staff worker only.
	handed int64
	// ctx bounds every POST; cancelled at stop so shutdown never waits
	// for a slow push server.
	ctx  context.Context
	done chan struct{} // closed when the worker has exited
}

// New builds the service and loads persisted cadence state.
func New(live *config.Live, clk clock.Clock, db *store.DB, pub *Publisher, log *slog.Logger) (*Service, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Service{live: live, clk: clk, db: db, pub: pub, log: log, ctx: context.Background(), done: make(chan struct{}),
		staff: newWorker(), opsw: newWorker(), absorbed: map[string]bool{}}
	st, err := loadState(db)
	if err != nil {
		return nil, err
	}
	s.st = st
	var saved []queued
	if _, err := db.PushState(retryName, &saved); err != nil {
		return nil, err
	}
	for _, q := range saved {
		l := &s.retry[laneOf(q)]
		l.items = append(l.items, q)
	}
	var floor uint64
	if _, err := db.PushState(seqName, &floor); err != nil {
		return nil, err
	}
	pub.useSeqFloor(floor, func(v uint64) error { return db.PutPushState(seqName, v) })
	return s, nil
}

// Start runs the worker, re-sends the durable outbox left by a previous
// run and arms the digest scheduler. ctx ends it.
func (s *Service) Start(ctx context.Context) {
	s.ctx = ctx
	go s.staff.run()
	go s.opsw.run()
	go func() {
		<-s.staff.done
		<-s.opsw.done
		s.pub.closeSeq() // a floor renewal in flight lands before the store closes
		close(s.done)
	}()
	go func() {
		<-ctx.Done()
		s.endPosts()
		s.mu.Lock()
		s.stopped = true
		for _, t := range []clock.Timer{s.retry[laneStaff].timer, s.retry[laneOps].timer, s.outTimer, s.digTimer, s.remTimer} {
			if t != nil {
				t.Stop()
			}
		}
		s.mu.Unlock()
		// Pending jobs still run, then the workers end. Their posts fail
		// at once on the cancelled context, so an alert among them lands
		// in the persisted retry queue (sent at the next start) instead
		// of being dropped with the job.
		s.staff.end()
		s.opsw.end()
	}()
	s.do(s.flushOutbox)
	s.do(func() { s.runRetry(laneStaff) }) // alerts a previous run could not deliver
	s.replayEvents()                       // and presses it never got to
	s.do(s.reconcile)                      // and condition transitions
	s.do(s.tellPending)                    // and last words it owed
	for _, cat := range []string{CatBatteries, CatNotSeen, CatCalibration, CatHealth} {
		// A switch to individual mode whose follow-up a crash cut short
		// (it is a no-op otherwise: a review).
		s.do(func() { s.toIndividual(cat) })
	}
	s.opsw.do(func() { s.runRetry(laneOps) })
	s.do(s.catchUpDigest)
	s.live.Subscribe(s.settingsChanged)
	s.armReminder()
}

// do hands fn to the staff worker.
func (s *Service) do(fn func()) {
	at := s.clk.Now().UnixMilli()
	s.staff.do(func() {
		s.handed = at
		fn()
	})
}

// Done is closed once the service has stopped after its context ended:
// no timer or job of it runs any more, so the store may close.
func (s *Service) Done() <-chan struct{} { return s.done }

// Idle waits until every handed-off job ran (tests and the QR handler).
func (s *Service) Idle() {
	s.staff.idle()
	s.opsw.idle()
}

// immediate publishes now; retryable failures go to the retry queue,
// except test sends, which are never queued.
func (s *Service) immediate(m Message) {
	cfg := s.live.Get()
	if !cfg.PushEnabled || cfg.PushServerURL == "" {
		return
	}
	s.mu.Lock()
	owed := len(s.st.Told) > 0
	s.mu.Unlock()
	if owed && m.Record.Kind != KindMoment {
		// Last words owed (a uid change's) go before anything newer about
		// the same subjects: sent after, a fridge's "Back in range" under
		// its new uid was followed by the remint's "still active" (a
		// review). Not before a press: its subject is never one of
		// theirs, and it must not wait for them.
		s.tellPending()
	}
	m.Record.Seq = s.pub.NextSeq()
	q := queued{Base: cfg.PushServerURL, R: m.Render(Topic(cfg.ServerID, m.Category)), Staff: true, At: s.heldSince(m)}
	s.mu.Lock()
	s.sentUnsaved = true
	waiting := len(s.retry[laneStaff].items) > 0
	s.mu.Unlock()
	if waiting && m.Category != CatTest {
		s.enqueueRetry(q) // keep order behind earlier failures
		if m.Record.Kind == KindMoment {
			// A press gets an attempt now, not at the doubling delay (up
			// to 2 min): a server whose publish failed while its health
			// check passed never resolved push_down, and a press waited
			// for the timer (a review).
			s.retryNow()
		}
		return
	}
	res := s.post(q)
	if res == Sent {
		s.mu.Lock()
		s.st.LastDelivery = s.clk.Now().UnixMilli() // persisted with the next state write
		s.mu.Unlock()
	}
	switch {
	case res == Sent || res == Rejected:
	case m.Category == CatTest:
		// Never queued: a drill sent late is worse than none. Said, so a
		// drill that never arrived can be told from a lost alert (a
		// black-box check found one dropped in a 429 pause, silently).
		s.log.Info("push: test send not delivered, not retried", "subject", m.Record.Subject, "result", int(res))
	default:
		s.enqueueRetry(q)
	}
}

// ops sends the vendor copy, gated only by ops_enabled and a topic.
func (s *Service) ops(m Message) {
	cfg := s.live.Get()
	if !cfg.PushOpsEnabled || cfg.PushOpsTopic == "" || cfg.PushOpsServerURL == "" {
		return
	}
	m = OpsCopy(cfg.ServerID, m)
	m.Record.Seq = s.pub.NextSeq()
	s.mu.Lock()
	s.sentUnsaved = true // a reconcile saves after it (staff push may be off)
	s.mu.Unlock()
	q := queued{Base: cfg.PushOpsServerURL, R: m.Render(cfg.PushOpsTopic), At: s.heldSince(m)}
	s.opsw.do(func() { s.postOps(q) })
}

// postOps runs on the ops worker: it posts an ops copy, or queues it
// behind those already waiting.
func (s *Service) postOps(q queued) {
	s.mu.Lock()
	waiting := len(s.retry[laneOps].items) > 0
	s.mu.Unlock()
	if waiting {
		// Behind the copies already waiting, in order, and without an
		// attempt of its own: each attempt at a server that drops packets
		// holds the ops worker until the transport's timeout.
		s.enqueueRetry(q)
		return
	}
	if res := s.post(q); res != Sent && res != Rejected {
		s.enqueueRetry(q)
	}
}

// post sends one immediate message, first marking it late when it is
// (LateAfter).
func (s *Service) post(q queued) Result {
	at := q.At
	if at == 0 {
		// Queued by a version before At: a press still knows its moment.
		if rec, err := ParseRecord(q.R.Message); err == nil && rec.Kind == KindMoment {
			at = rec.At
		}
	}
	ctx, done := s.postCtx()
	defer done()
	return s.pub.Post(ctx, q.Base, s.markLate(q.R, at), q.Staff)
}

// PostGrace is how long a post under way when push stops may still take
// to be answered. Cancelled at once, a post the server had already taken
// failed here, went to the retry queue and was sent again at the next
// start: staff got it twice (a black-box check). A post not begun by the
// stop fails at once, as before, and waits in the queue.
const PostGrace = 5 * time.Second

// postCtx is the context of one post: s.ctx while push runs; once it
// ends, the post keeps its own until PostGrace later (one timer for every
// post in flight, armed at the stop, on the service's clock), and a post
// begun after the stop gets s.ctx itself and fails at once. done ends it,
// and stops the timer when it was the last (a review saw a timer per post
// left armed when the stop met a post's end).
func (s *Service) postCtx() (ctx context.Context, done func()) {
	s.postMu.Lock()
	defer s.postMu.Unlock()
	if s.ctx.Err() != nil || s.postsEnded {
		return s.ctx, func() {}
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(s.ctx))
	if s.posts == nil {
		s.posts = map[*context.CancelFunc]struct{}{}
	}
	key := &cancel
	s.posts[key] = struct{}{}
	return ctx, func() {
		s.postMu.Lock()
		delete(s.posts, key)
		if len(s.posts) == 0 && s.graceTimer != nil {
			s.graceTimer.Stop()
			s.graceTimer = nil
		}
		s.postMu.Unlock()
		cancel()
	}
}

// endPosts is the stop's side of postCtx: no post begins any more, and
// those in flight are cancelled PostGrace from now.
func (s *Service) endPosts() {
	s.postMu.Lock()
	defer s.postMu.Unlock()
	s.postsEnded = true
	if len(s.posts) == 0 {
		return
	}
	s.graceTimer = s.clk.AfterFunc(PostGrace, func() {
		s.postMu.Lock()
		defer s.postMu.Unlock()
		for cancel := range s.posts {
			(*cancel)()
		}
		s.graceTimer = nil
	})
}

// markLate starts r's body with the late line when it goes out
// LateAfter or more after at (Unix ms; 0 unknown).
func (s *Service) markLate(r Rendered, at int64) Rendered {
	if at <= 0 {
		return r
	}
	if age := s.clk.Now().Sub(time.UnixMilli(at)); age >= LateAfter {
		r.Message = lateLine(time.UnixMilli(at), age, s.siteZone()) + "\n" + r.Message
	}
	return r
}

// heldSince is the time from which push answers for a message's delay:
// a press's own time (the server's clock when alerting created the
// event, so a press replayed at start counts from then), else when the
// transition was handed to push (do), however long it then waited
// behind other posts. A condition's record time can be a gateway's
// reading time, up to the accepted clock skew off the server's clock or
// buffered by the gateway: that is not push's delay, and a fresh alert
// must not read "late" because a gateway's clock is.
func (s *Service) heldSince(m Message) int64 {
	if m.Record.Kind == KindMoment && m.Record.At > 0 {
		return m.Record.At
	}
	if s.handed > 0 {
		return s.handed
	}
	return s.clk.Now().UnixMilli()
}

// siteZone is the site's time zone (digest buckets, human-readable
// times): the digest time zone, the one zone the configuration names;
// UTC if it does not load.
func (s *Service) siteZone() *time.Location {
	loc, err := time.LoadLocation(s.live.Get().PushDigestTimezone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// lateLine is the first body line of a late message.
func lateLine(at time.Time, age time.Duration, loc *time.Location) string {
	return "Delivered late: this happened at " + at.In(loc).Format("2006-01-02 15:04:05 MST") + ", " + ago(age) + " before delivery."
}

// ago renders a delay for people: minutes, hours and minutes, or days.
func ago(d time.Duration) string {
	m := int(d / time.Minute)
	switch {
	case m < 60:
		return strconv.Itoa(max(m, 1)) + " min"
	case m < 48*60:
		if m%60 == 0 {
			return strconv.Itoa(m/60) + " h"
		}
		return strconv.Itoa(m/60) + " h " + strconv.Itoa(m%60) + " min"
	default:
		return strconv.Itoa(m/(24*60)) + " days"
	}
}

func (s *Service) enqueueRetry(q queued) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lane := laneOf(q)
	l := &s.retry[lane]
	if len(l.items) >= maxRetry {
		// The oldest message that is not a button press goes first: a
		// long outage must not cost the SOS waiting at the head.
		i := slices.IndexFunc(l.items, func(x queued) bool { return !buttonTopic(x.R.Topic) })
		if i < 0 {
			i = 0
		}
		s.log.Error("push retry queue full; dropping a message", "topic", l.items[i].R.Topic)
		l.items = slices.Delete(l.items, i, i+1)
	}
	l.items = slices.Insert(l.items, pressSlot(l.items, q), q) // at len(items): appended
	s.saveRetryLocked()
	s.armRetryLocked(lane)
}

// pressSlot is where q joins the queue: at the end, except that a button
// press goes ahead of every other message, behind the presses already
// waiting (in their order) and never before the head, which runRetry may
// be posting with the lock released. Over a long queue to a slow server
// an SOS waited for every sensor and health message queued before it (a
// review). Other messages keep their order: a condition's resolve never
// overtakes its activation.
func pressSlot(items []queued, q queued) int {
	if !buttonTopic(q.R.Topic) || len(items) < 2 {
		return len(items)
	}
	i := 1
	for i < len(items) && buttonTopic(items[i].R.Topic) {
		i++
	}
	return i
}

// pressWaiting says whether a press waits in the staff queue.
func (s *Service) pressWaiting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.ContainsFunc(s.retry[laneStaff].items, func(q queued) bool { return buttonTopic(q.R.Topic) })
}

// buttonTopic reports whether a topic is a button press's (SOS, watches).
func buttonTopic(topic string) bool {
	return strings.HasSuffix(topic, "-"+CatSOS) || strings.HasSuffix(topic, "-"+CatWatches)
}

// saveRetryLocked mirrors the queues to the store (only while a push
// server fails, so the write rate is bounded by the retry cadence).
func (s *Service) saveRetryLocked() {
	all := make([]queued, 0, len(s.retry[laneStaff].items)+len(s.retry[laneOps].items))
	for l := range s.retry {
		all = append(all, s.retry[l].items...)
	}
	if err := s.db.PutPushState(retryName, all); err != nil {
		s.log.Error("persist push retry queue", "err", err)
	}
}

// armRetryLocked schedules a lane's next retry: when its server's 429
// backoff ends if one runs, else with a doubling delay (2 s .. 2 min).
// Not the later of the two: the delay doubled across repeated 429s and
// held a press 2 min where the server had asked for one (a review).
func (s *Service) armRetryLocked(lane int) {
	l := &s.retry[lane]
	if l.timer != nil || s.stopped || len(l.items) == 0 {
		return
	}
	d := s.pub.BackoffUntil(l.items[0].Base).Sub(s.clk.Now())
	if d <= 0 {
		l.delay = min(max(2*l.delay, 2*time.Second), 2*time.Minute)
		d = l.delay
	}
	w := s.laneWorker(lane)
	l.timer = s.clk.AfterFunc(d, func() { w.do(func() { s.runRetry(lane) }) })
}

// retryNow sends the staff queue at once, instead of at its timer,
// unless its server asked to be left alone (a 429's backoff); the ops
// queue too when it posts to the same server (the health check probes
// the staff server only).
func (s *Service) retryNow() {
	s.mu.Lock()
	defer s.mu.Unlock()
	staff, _, _ := s.laneServer(laneStaff)
	for lane := range s.retry {
		l := &s.retry[lane]
		if s.stopped || l.timer == nil || len(l.items) == 0 || s.pub.BackoffUntil(l.items[0].Base).After(s.clk.Now()) {
			continue
		}
		if base, _, _ := s.laneServer(lane); backoffKey(base) != backoffKey(staff) { // as the publisher spells a server
			continue
		}
		if !l.timer.Stop() {
			continue // fired: its run is on the way
		}
		// The stopped timer stays in l.timer until the run clears it, so
		// nothing arms a second one meanwhile: a message queued before
		// the run (the resolve of push_down itself) did, and two chains
		// of retries ran on the lane (a review).
		l.delay = 0
		s.laneWorker(lane).do(func() { s.runRetry(lane) })
	}
}

// laneWorker is the worker that posts a lane's messages.
func (s *Service) laneWorker(lane int) *worker {
	if lane == laneOps {
		return s.opsw
	}
	return s.staff
}

// runRetry sends a lane's queue in order, up to its first failure.
func (s *Service) runRetry(lane int) {
	l := &s.retry[lane]
	s.mu.Lock()
	l.timer = nil
	s.mu.Unlock()
	for {
		s.mu.Lock()
		if len(l.items) == 0 {
			l.delay = 0
			s.mu.Unlock()
			return
		}
		q := l.items[0]
		base, topic, open := s.laneServer(lane)
		if !open {
			// Held, not dropped: re-enabled, they go out marked late.
			s.armRetryLocked(lane)
			s.mu.Unlock()
			return
		}
		// The head of the queue goes to the server in force, and its
		// 429 backoff is that server's (armRetryLocked reads it).
		l.items[0].Base = base
		q.Base = base
		if topic != "" {
			l.items[0].R.Topic = topic
			q.R.Topic = topic
		}
		s.mu.Unlock()
		res := s.post(q)
		s.mu.Lock()
		if res == Sent || res == Rejected {
			l.items = l.items[1:]
			s.saveRetryLocked()
			s.mu.Unlock()
			continue
		}
		s.armRetryLocked(lane)
		s.mu.Unlock()
		return
	}
}

// laneServer is the server a lane posts to now, the topic when the lane
// has one for every message (ops; "" for staff, whose topics depend on
// the message), and whether it may post: the settings in force, not
// those a message was queued under. A queue persisted while push was on
// kept posting, to the old server, after an operator turned push off or
// moved it to another (a review); ops copies kept a topic changed at a
// restart.
func (s *Service) laneServer(lane int) (base, topic string, open bool) {
	cfg := s.live.Get()
	if lane == laneOps {
		return cfg.PushOpsServerURL, cfg.PushOpsTopic, cfg.PushOpsEnabled && cfg.PushOpsTopic != "" && cfg.PushOpsServerURL != ""
	}
	return cfg.PushServerURL, "", cfg.PushEnabled && cfg.PushServerURL != ""
}

// RetryQueued is the number of immediate messages waiting, both lanes.
func (s *Service) RetryQueued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.retry[laneStaff].items) + len(s.retry[laneOps].items)
}

// Held is the number of staff alerts waiting for the push server and
// the end of that server's 429 pause (zero when none runs), for the
// dashboard: a press held back must not read as "last delivery ok".
func (s *Service) Held() (n int, pausedUntil time.Time) {
	s.mu.Lock()
	n = len(s.retry[laneStaff].items)
	s.mu.Unlock()
	if u := s.pub.BackoffUntil(s.live.Get().PushServerURL); u.After(s.clk.Now()) {
		pausedUntil = u
	}
	return n, pausedUntil
}

// ServerLimited is told that the staff push server answered a status
// probe with 429: the global pause starts (spec: any 429 of the push
// server) and its end is returned for the probe's message.
func (s *Service) ServerLimited(retryAfter string) time.Time {
	return s.pub.Pause(s.live.Get().PushServerURL, retryAfter)
}

// ServerAccepted is told that the staff push server has just accepted a
// post outside the queues (the dashboard's recheck): its 429 pause is
// over and what waits for it goes now. The recheck ignored the pause
// while the queued SOS kept waiting it out (a review).
func (s *Service) ServerAccepted() {
	s.pub.Resume(s.live.Get().PushServerURL)
	s.retryNow()
}

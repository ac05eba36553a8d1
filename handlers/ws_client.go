package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	rdebug "runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/auth"
	"beaconhub/appliance/rtls"

	"github.com/gorilla/websocket"
)

// wsClient is one connection: a reader goroutine (auth, subscribe,
// unsubscribe, pongs) and a writer goroutine (queued frames, pings, and
// the periodic re-check of the session), the two joined by done. subs is
// guarded by the hub's lock; authMu orders the reader's subscribe
// decisions against the writer's re-check, so no subscription is granted
// on rights the re-check has just withdrawn.
type wsClient struct {
	hub  *wsHub
	conn *websocket.Conn
	q    *wsQueue
	done chan struct{}
	// read is closed when the reader has ended: after a close frame the
	// writer waits for it (the peer's close reply ends the read) before
	// closing the socket.
	read chan struct{}
	once sync.Once
	// closeCode and closeText are the close frame the writer sends.
	closeCode atomic.Int32
	closeText atomic.Value
	// draining is set by a shutdown (shutDraining), whose close first
	// sends what is queued; drainBy (Unix ns) is when that flush stops
	// starting socket writes and sends the close. Not every 1001 drains:
	// a pong timeout closes with it too.
	draining atomic.Bool
	drainBy  atomic.Int64
	// cut is set (by the writer, which alone reads it) when a batch was
	// stopped between socket writes because the connection is closing:
	// no later batch is begun, or the client would read past a gap.
	cut bool

	subs   map[string]bool
	authMu sync.Mutex
	sess   atomic.Pointer[wsSession] // nil until authenticated
	// checked is when the session was last verified (guarded by authMu).
	checked time.Time
	// recheckNow asks the writer to judge the subscriptions again (a
	// subscribe that verified the session).
	recheckNow chan struct{}
	// pending: counted in the hub's pending until authenticated or gone
	// (serve sets it; only the reader touches it after).
	pending bool
}

// authenticated takes c out of the hub's pending count, once.
func (c *wsClient) authenticated() {
	if c.pending {
		c.pending = false
		c.hub.pending.Add(-1)
	}
}

// wsSession is who a connection speaks for. The token is kept so the
// session can be verified again: a role, a location scope, a password
// change or the token's own expiry changes what the feed may show, and
// HTTP applies such a change at once (docs/api.md).
type wsSession struct {
	tok    string
	claims *auth.Claims
	scope  scope
}

// offerTrack queues a live track frame of channel ch without ever
// blocking (the hub's dispatcher calls it for every subscriber). A queue
// past any bound wsQueue can reach is a defect, not a slow client; the
// client is cut rather than let it grow.
func (c *wsClient) offerTrack(ch string, f outFrame, seq uint64) {
	select {
	case <-c.done:
		return
	default:
	}
	merged, stale, ok := c.q.track(ch, f, seq)
	switch {
	case stale: // older than what the client has or will have: not sent
	case !ok:
		c.hub.dropped.Add(1)
		c.hub.log.Error("websocket queue past its bound; client cut", "frames", c.q.len())
		c.shut(websocket.CloseAbnormalClosure, "")
		_ = c.conn.NetConn().Close()
	case merged:
		c.hub.merged.Add(1)
	default:
		c.hub.frames.Add(1)
	}
}

// drainOver reports whether the connection is closing and has nothing
// more to send: closing for another reason than the server's shutdown,
// or past the shutdown's DrainWait.
func (c *wsClient) drainOver() bool {
	select {
	case <-c.done:
		return !c.draining.Load() || time.Now().UnixNano() >= c.drainBy.Load()
	default:
		return false
	}
}

// shut ends the connection once, with the given close frame.
func (c *wsClient) shut(code int, text string) { c.end(code, text, false) }

// shutDraining ends the connection for the server's shutdown: 1001,
// after what is queued, for up to DrainWait.
func (c *wsClient) shutDraining(text string) { c.end(websocket.CloseGoingAway, text, true) }

func (c *wsClient) end(code int, text string, drain bool) {
	c.once.Do(func() {
		if drain {
			c.drainBy.Store(time.Now().Add(c.hub.opts.DrainWait).UnixNano())
			c.draining.Store(true)
		}
		c.closeCode.Store(int32(code))
		c.closeText.Store(text)
		close(c.done)
	})
}

// reply queues an answer to the client's own message, once the queue
// has room (the reader calls it: a client sending faster than it reads
// is held back at its socket).
func (c *wsClient) reply(m serverMsg) {
	if !c.waitRoom() {
		return
	}
	c.replyNow(m)
}

// waitRoom waits until the queue has room for a reply. The time spent
// waiting was the server's, not the client's, so an authenticated
// client's read deadline starts again: a client that reads but whose
// queue is long is not cut as silent.
func (c *wsClient) waitRoom() bool {
	if !c.q.waitRoom(c.done) {
		return false
	}
	if c.sess.Load() != nil {
		_ = c.conn.SetReadDeadline(time.Now().Add(c.hub.opts.PongWait))
	}
	return true
}

// replyNow queues a reply without waiting for room: for a caller that
// has waited already and must not wait again (subscribe, under authMu).
func (c *wsClient) replyNow(m serverMsg) {
	c.q.reply(m.Channel, outFrame{raw: marshalMsg(m)})
	c.hub.frames.Add(1)
}

// errClosing stops a batch between socket writes once the connection is
// closing; the writer then goes on to its close frame.
var errClosing = errors.New("websocket closing")

// isTimeout tells a write that missed its deadline (a client not
// reading) from a connection that failed.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func (c *wsClient) writer() {
	o := c.hub.opts
	ping := time.NewTicker(o.PingInterval)
	var batch []queuedFrame
	defer func() {
		ping.Stop()
		_ = c.conn.Close()
		c.hub.wg.Done()
	}()
	defer c.survive("writer")
	for {
		select {
		case <-c.q.wake:
			if !c.flush(&batch, nil) {
				return
			}
		case <-c.recheckNow:
			if fs := c.recheck(); len(fs) > 0 && !c.flush(&batch, fs) {
				return
			}
		case <-ping.C:
			if err := c.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(o.WriteWait)); err != nil {
				if isTimeout(err) { // too slow, as in flush
					c.hub.dropped.Add(1)
				}
				c.shut(websocket.CloseAbnormalClosure, "")
				return
			}
			if fs := c.recheck(); len(fs) > 0 {
				// What is queued goes first: a frame a dropped channel
				// queued before the drop still arrives before its
				// "unsubscribed", and nothing of it after (the hub no
				// longer routes to it).
				if !c.flush(&batch, fs) {
					return
				}
			}
		case <-c.done:
			// The server stopping: its last frames (each beacon's zone
			// 0 as tracking stops) go before the close frame.
			if c.draining.Load() && !c.flush(&batch, nil) {
				return
			}
			if c.closeCode.Load() != websocket.CloseAbnormalClosure {
				// Short: a peer that does not take a close frame at once
				// is not worth holding the goroutines for.
				wait := min(o.WriteWait, o.CloseWait)
				if c.writeClose(wait) == nil {
					// The closing handshake: the socket closes when the
					// peer has replied (its close frame ends the reader),
					// or after wait. Closed at once, it took the peer's
					// pong to a ping sent just before as a reason to reset
					// the connection, and the peer read "broken pipe"
					// instead of the close frame (one run in nine of
					// TestWSSessionFollowsAccountChanges on a busy host).
					t := time.NewTimer(wait)
					select {
					case <-c.read:
					case <-t.C:
					}
					t.Stop()
				}
			}
			return
		}
	}
}

// writeClose sends the close frame shut recorded, within wait.
func (c *wsClient) writeClose(wait time.Duration) error {
	text, _ := c.closeText.Load().(string)
	msg := websocket.FormatCloseMessage(int(c.closeCode.Load()), text)
	return c.conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(wait))
}

// flush takes every queued frame into *batch (reused between calls) and
// writes them, then extra. It reports false when the connection failed
// and the writer must end; a connection that is closing reports true,
// and the writer's next turn sends the close frame.
func (c *wsClient) flush(batch *[]queuedFrame, extra []outFrame) bool {
	if f := beforeFlush.Load(); f != nil {
		(*f)()
	}
	*batch = c.q.take((*batch)[:0])
	err := c.writeFrames(*batch, extra)
	clear(*batch) // the frames, not the slice, may be large
	if err == nil || err == errClosing {
		return true
	}
	if isTimeout(err) {
		c.hub.dropped.Add(1)
	}
	c.shut(websocket.CloseAbnormalClosure, "")
	return false
}

// writeFrames writes batch, then extra, in as few socket writes as the
// connection allows (coalescingConn: at most maxCoalesce each), each
// under its own WriteWait deadline: under a burst the writer wakes once
// and pays one syscall per 64 KiB, not one per frame. A long batch stops
// between socket writes once the connection is closing.
func (c *wsClient) writeFrames(batch []queuedFrame, extra []outFrame) error {
	// A batch taken after a shutdown's drain ended, or after any batch
	// was stopped for a close (cut), is not begun: a writer that had
	// stopped a batch there took the next from the queue and wrote 64
	// KiB of it, past a gap, before it looked again (a flaky test; a
	// pong timeout's close did so in one run of ten). Other closes
	// still send what a batch holds up to the next 64 KiB: the replies
	// before a 1009, say.
	if c.cut || c.drainOver() && c.draining.Load() {
		return errClosing
	}
	wait := c.hub.opts.WriteWait
	_ = c.conn.SetWriteDeadline(time.Now().Add(wait))
	cc, _ := c.conn.NetConn().(*coalescingConn)
	if cc != nil {
		cc.hold()
	}
	put := func(f outFrame) error {
		if err := c.write(f); err != nil {
			return err
		}
		if cc != nil && cc.full() {
			if err := cc.release(); err != nil {
				return err
			}
			// Closing: the rest of a long batch is moot, but for a
			// shutdown's, whose last frames (each beacon's zone 0) are
			// what it owes the client, until DrainWait has passed. They
			// stopped here after 64 KiB (a review: 438 of 700 zone-0
			// frames reached a client); bounded only by each write's
			// deadline, a client reading just fast enough held its
			// writer past the hub's wait and got no close before the
			// process exited (a second review).
			if c.drainOver() {
				c.cut = true
				return errClosing
			}
			_ = c.conn.SetWriteDeadline(time.Now().Add(wait))
			cc.hold()
		}
		return nil
	}
	var err error
	for i := 0; err == nil && i < len(batch); i++ {
		err = put(batch[i].f)
	}
	for i := 0; err == nil && i < len(extra); i++ {
		err = put(extra[i])
	}
	if cc != nil {
		if rerr := cc.release(); err == nil {
			err = rerr
		}
	}
	return err
}

func (c *wsClient) write(f outFrame) error {
	if f.pm != nil {
		return c.conn.WritePreparedMessage(f.pm)
	}
	return c.conn.WriteMessage(websocket.TextMessage, f.raw)
}

func (c *wsClient) reader() {
	o := c.hub.opts
	// chose: the reader ends the connection itself (refused auth), with
	// the socket still readable, so it waits for the peer's close frame.
	chose := false
	defer func() {
		if chose {
			c.awaitPeerClose()
		}
		close(c.read)
		c.shut(websocket.CloseNormalClosure, "")
		c.authenticated() // or gone
		c.hub.remove(c)
		c.hub.wg.Done()
	}()
	defer c.survive("reader")
	// Only an authenticated client earns a longer read deadline: pongs
	// may be sent unsolicited, and one every few seconds must not hold an
	// unauthenticated connection (and its two goroutines) open past
	// AuthWait.
	c.conn.SetPongHandler(func(string) error {
		if c.sess.Load() == nil {
			return nil
		}
		return c.conn.SetReadDeadline(time.Now().Add(o.PongWait))
	})
	if s := c.sess.Load(); s == nil {
		_ = c.conn.SetReadDeadline(time.Now().Add(o.AuthWait))
	} else {
		_ = c.conn.SetReadDeadline(time.Now().Add(o.PongWait))
		c.reply(serverMsg{Type: "ready", Role: s.claims.Role})
	}
	for {
		data, err := c.readMessage()
		if errors.Is(err, errTooBig) {
			c.shut(websocket.CloseMessageTooBig, "message too big")
			chose = true
			return
		}
		if errors.Is(err, errBinary) {
			data = nil // judged below, with malformed JSON
		} else if err != nil {
			var ne net.Error
			switch {
			case c.sess.Load() == nil:
				c.shut(websocket.ClosePolicyViolation, "authentication required")
			case errors.As(err, &ne) && ne.Timeout():
				// Said, not 1000 with no reason: a client could not
				// tell a liveness cut from a clean close (a review).
				c.shut(websocket.CloseGoingAway, fmt.Sprintf("no pong within %s", o.PongWait))
			}
			return
		}
		authed := c.sess.Load() != nil
		if authed {
			_ = c.conn.SetReadDeadline(time.Now().Add(o.PongWait))
		}
		var m clientMsg
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		err = dec.Decode(&m)
		if err == nil && len(bytes.TrimSpace(data[dec.InputOffset():])) > 0 {
			// One message, one JSON object: trailing data means the
			// client is not saying what it thinks it says.
			err = errTrailing
		}
		if err == nil && m.Type == "" {
			err = errNoType // null, {}: no message at all
		}
		if err != nil {
			if !authed {
				// docs/websocket.md: anything but an auth message first
				// closes the connection.
				c.shut(websocket.ClosePolicyViolation, "authentication required")
				chose = true
				return
			}
			c.reply(serverMsg{Type: "error", Message: "malformed message: expected a JSON text frame holding an object with type"})
			continue
		}
		if !c.handle(m) {
			chose = true
			return
		}
	}
}

var (
	errTrailing = errors.New("data after the JSON object")
	errTooBig   = errors.New("message too big")
	errBinary   = errors.New("a binary frame")
	errNoType   = errors.New("no message type")
)

// readMessage reads one client message of at most maxWSMessage bytes.
// gorilla's SetReadLimit bounds it too, but on overflow gorilla writes
// the 1009 close frame itself, ahead of the writer's queue, and replies
// already queued (ready, pongs) were lost (a review). Here the writer
// sends the close after them, as for every close the server chooses.
func (c *wsClient) readMessage() ([]byte, error) {
	kind, r, err := c.conn.NextReader()
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(r, maxWSMessage+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxWSMessage {
		return nil, errTooBig
	}
	if kind != websocket.TextMessage {
		// Read whole, then refused as malformed: every frame is JSON
		// text (docs/websocket.md), and a binary one was acted on.
		return nil, errBinary
	}
	return data, nil
}

// awaitPeerClose reads and discards until the peer answers the close
// frame the writer sends (or errs), for at most CloseWait: the closing
// handshake docs/websocket.md promises. Returning at once let the writer
// cut the socket right after its close frame, and a client could read a
// reset instead of the reason.
func (c *wsClient) awaitPeerClose() {
	_ = c.conn.SetReadDeadline(time.Now().Add(c.hub.opts.CloseWait))
	for {
		if _, _, err := c.conn.NextReader(); err != nil {
			return
		}
	}
}

// handle acts on one client message; false ends the connection.
func (c *wsClient) handle(m clientMsg) bool {
	if m.Type == "auth" {
		if c.sess.Load() != nil {
			c.reply(serverMsg{Type: "error", Message: "already authenticated"})
			return true
		}
		s, err := c.hub.srv.wsSessionFor(m.Token)
		if err != nil {
			if apperr.KindOf(err) != apperr.KindForbidden {
				c.hub.log.Error("websocket auth", "err", err)
				c.shut(websocket.CloseInternalServerErr, "internal error")
				return false
			}
			c.shut(websocket.ClosePolicyViolation, "authentication failed")
			return false
		}
		c.authMu.Lock()
		c.sess.Store(s)
		c.checked = time.Now()
		c.authMu.Unlock()
		c.authenticated()
		_ = c.conn.SetReadDeadline(time.Now().Add(c.hub.opts.PongWait))
		c.reply(serverMsg{Type: "ready", Role: s.claims.Role})
		return true
	}
	if c.sess.Load() == nil {
		c.shut(websocket.ClosePolicyViolation, "authentication required")
		return false
	}
	switch m.Type {
	case "subscribe":
		c.subscribe(m.Channel)
	case "unsubscribe":
		if m.Channel == "" {
			c.reply(serverMsg{Type: "error", Message: "unsubscribe needs a channel"})
			return true
		}
		c.hub.removeSub(c, m.Channel)
		c.reply(serverMsg{Type: "unsubscribed", Channel: m.Channel})
	case "ping":
		c.reply(serverMsg{Type: "pong"})
	default:
		c.reply(serverMsg{Type: "error", Message: "unknown message type; use subscribe, unsubscribe or ping"})
	}
	return true
}

// subscribe checks the channel against the caller's rights as they are
// now (the session verified again unless that was done within
// WSOptions.SubscribeRecheck) and adds it.
func (c *wsClient) subscribe(ch string) {
	// Room first, before authMu: the writer takes authMu for its
	// periodic re-check, so waiting for it to drain the queue while
	// holding authMu could stall both for good. The replies below then
	// do not wait (at most two frames past the bound per message).
	if !c.waitRoom() {
		return
	}
	c.authMu.Lock()
	defer c.authMu.Unlock()
	// The writer's re-check may have ended the session while this
	// waited for room or for authMu; it stamped checked first, so the
	// refresh below would not run and nothing else would notice.
	s := c.sess.Load()
	if s == nil {
		return
	}
	if time.Since(c.checked) >= c.hub.opts.SubscribeRecheck {
		if s = c.refresh(); s == nil {
			return
		}
		// The subscriptions held are judged again too, by the writer
		// as at a ping: only the session was, and a beacon moved out of
		// the caller's sight stayed followed until the next ping, 25 s
		// (a review).
		select {
		case c.recheckNow <- struct{}{}:
		default:
		}
	}
	uid, debug, refusal, note, err := c.allowed(s, ch)
	if err != nil {
		c.hub.log.Error("websocket subscribe", "err", err)
		c.replyNow(serverMsg{Type: "error", Channel: ch, Message: "the channel could not be checked now; try again"})
		return
	}
	if refusal != "" {
		c.replyNow(serverMsg{Type: "error", Channel: ch, Message: refusal})
		return
	}
	// The subscription and its "subscribed" together under the hub's
	// lock: no live frame of the channel can be queued between the two,
	// so the reply always comes first.
	if !debug {
		c.q.expectSnapshot(ch)
	}
	subscribed := outFrame{raw: marshalMsg(serverMsg{Type: "subscribed", Channel: ch, Message: note})}
	if refusal := c.hub.add(c, ch, uid, debug, func() { c.hub.frames.Add(1); c.q.reply(ch, subscribed) }); refusal != "" {
		c.q.forget(ch)
		c.replyNow(serverMsg{Type: "error", Channel: ch, Message: refusal})
		return
	}
	if f := afterSubscribe.Load(); f != nil {
		(*f)()
	}
	if debug {
		return
	}
	// Read after the subscription began: any event emitted since is
	// routed to the client, and one queued before the snapshot makes it
	// redundant (wsQueue.snapshot).
	loc, seen := c.hub.t.Location(uid)
	if !seen {
		if note != "" { // not tracked: the reply said it stays silent
			c.q.forget(ch)
			return
		}
		// Not located since the engine started: the snapshot says
		// unknown, or a client resubscribing after a restart kept
		// showing the zone it had (a review). Any live frame is newer:
		// its Seq is 0 (queued as 1), and the engine numbers a state's
		// events from 1<<32.
		loc = rtls.Location{AssetUID: uid}
	}
	// Counted before it is queued: the writer may send it, and the
	// client read it, before a count after could run (a test taking
	// the count after reading the snapshot was off by one on a busy
	// host).
	c.hub.frames.Add(1)
	if f, err := encodeFrame(trackFrame{Type: "track", Channel: ch, Data: loc, Snapshot: true}, 1); err != nil || !c.q.snapshot(ch, f, loc.Seq) {
		c.hub.frames.Add(^uint64(0))
		c.q.forget(ch)
	}
}

// survive, deferred last in each of the connection's goroutines (so it
// runs before their own cleanup, which then ends the connection), turns
// a panic into an error log and a 1011 close. net/http recovers a
// handler's panics, but not those of goroutines a handler starts: one
// client's bug would otherwise take down the process, and with it the
// alerts.
func (c *wsClient) survive(where string) {
	if v := recover(); v != nil {
		c.hub.log.Error("websocket connection ended by a panic", "goroutine", where, "panic", fmt.Sprint(v), "stack", string(rdebug.Stack()))
		c.shut(websocket.CloseInternalServerErr, "internal error")
		if where == "writer" && c.closeCode.Load() != websocket.CloseAbnormalClosure {
			// The writer's loop sends the close frame, and it is gone:
			// send it here, or the client reads 1006, not 1011.
			_ = c.writeClose(c.hub.opts.CloseWait)
		}
	}
}

// beforeFlush, nil outside tests, runs in the writer before each flush.
var beforeFlush atomic.Pointer[func()]

// afterSubscribe, nil outside tests, runs between a subscription and its
// snapshot: a test widens that window to pin the order of the frames.
var afterSubscribe atomic.Pointer[func()]

// recheckListed, nil outside tests, runs after a re-check has listed the
// subscriptions it judges: a client's unsubscribe may come then.
var recheckListed atomic.Pointer[func()]

// allowed checks channel ch against session s: track-debug- is for
// admins only; a non-admin may follow only active trackable beacons
// inside its scope; an admin any registered beacon; nobody a former uid.
// It returns the beacon's uid, whether ch is a debug channel, the refusal
// ("" when allowed) and, for an allowed channel of a beacon the engine
// does not locate, a note saying it stays silent; err when the registry
// could not be read, so the rights are unknown rather than withdrawn.
func (c *wsClient) allowed(s *wsSession, ch string) (uid string, debug bool, refusal, note string, err error) {
	uid, debug = strings.CutPrefix(ch, chanDebug)
	if !debug {
		var isTrack bool
		if uid, isTrack = strings.CutPrefix(ch, chanTrack); !isTrack {
			uid = ""
		}
	}
	if uid == "" {
		return "", debug, "unknown channel; use track-<asset_uid> or track-debug-<asset_uid>", "", nil
	}
	admin := s.claims.Role == auth.RoleAdmin
	if debug && !admin {
		return uid, debug, "debug channels are for admins only", "", nil
	}
	reg, err := c.hub.srv.registry()
	if err != nil {
		return uid, debug, "", "", err
	}
	b, err := reg.Beacon(uid)
	if err != nil && apperr.KindOf(err) != apperr.KindNotFound {
		return uid, debug, "", "", err
	}
	if err == nil && b.MergedInto != 0 {
		// A merged-away beacon keeps its record under its uid: judged
		// as itself (inactive) it was "not visible" to a user and "not
		// tracked" to an admin, whose open subscription then stayed
		// silent for good (a review). Its frames go out on the
		// survivor's channel, said below as for a remint.
		if b, err = reg.MergedSurvivor(b); err != nil && apperr.KindOf(err) != apperr.KindNotFound {
			return uid, debug, "", "", err
		}
	}
	if err != nil || (!admin && (!isTrackable(&b) || !s.scope.allows(b.LocationID))) {
		return uid, debug, "no trackable beacon " + uid + " visible to you", "", nil
	}
	if b.AssetUID != uid {
		// A former uid (remint, merge): the registry resolves it, but
		// frames go out on the channel of the uid the engine reports
		// under, so this channel would stay silent. Said plainly, and
		// at the re-check to a subscription the rename overtook.
		prefix := chanTrack
		if debug {
			prefix = chanDebug
		}
		return uid, debug, "beacon " + uid + " is now " + b.AssetUID + "; subscribe to " + prefix + b.AssetUID, "", nil
	}
	if !isTrackable(&b) {
		// An admin may follow it, but the engine never reads its
		// reports: the channel stays silent, which looked like a radio
		// fault (a review). The subscribed reply says why.
		return uid, debug, "", "beacon " + uid + " is not tracked: the engine locates only active beacons of type " + strings.Join(rtls.TrackableTypes(), ", ") + "; this channel stays silent until it is one", nil
	}
	return uid, debug, "", "", nil
}

// refresh verifies the session again (token, account, role, scope) and
// stores the result; a session that no longer verifies ends the
// connection (1008) and refresh returns nil. Called with authMu held.
func (c *wsClient) refresh() *wsSession {
	old := c.sess.Load()
	if old == nil {
		return nil
	}
	c.checked = time.Now()
	s, err := c.hub.srv.wsSessionFor(old.tok)
	if err != nil {
		if apperr.KindOf(err) != apperr.KindForbidden {
			// The store, not the session, failed: keep the rights the
			// connection had rather than cut every client at once.
			c.hub.log.Error("websocket session re-check", "err", err)
			return old
		}
		c.shut(websocket.ClosePolicyViolation, "session ended: sign in again")
		// Nothing may be granted on the ended session while the close
		// is under way (the reader ends at the next message).
		c.sess.Store(nil)
		return nil
	}
	c.sess.Store(s)
	return s
}

// recheck runs on the writer every PingInterval: it verifies the session
// again and drops the subscriptions its rights no longer cover, so a
// demotion, a narrowed location scope, a deleted or deactivated beacon,
// a password change or an expired token reach an open feed within one
// ping period. It returns an "unsubscribed" frame (with the reason) per
// dropped channel for the writer to send itself: queued through offer,
// more of them than the queue holds would cut the client as a slow
// reader. A subscription whose beacon cannot be read (a store failure)
// is kept.
func (c *wsClient) recheck() []outFrame {
	c.authMu.Lock()
	defer c.authMu.Unlock()
	s := c.refresh()
	if s == nil {
		return nil
	}
	c.hub.mu.RLock()
	chans := make([]string, 0, len(c.subs))
	for ch := range c.subs {
		chans = append(chans, ch)
	}
	c.hub.mu.RUnlock()
	if f := recheckListed.Load(); f != nil {
		(*f)()
	}
	slices.Sort(chans)
	var out []outFrame
	var failed error
	for _, ch := range chans {
		_, _, refusal, _, err := c.allowed(s, ch)
		if err != nil {
			failed = err
			continue
		}
		// Announced only if this removed it: the client's own
		// unsubscribe may have come between the listing and here, and
		// answered already (a review: two "unsubscribed").
		if refusal != "" && c.hub.removeSub(c, ch) {
			out = append(out, outFrame{raw: marshalMsg(serverMsg{Type: "unsubscribed", Channel: ch, Message: refusal})})
		}
	}
	if failed != nil {
		c.hub.log.Error("websocket session re-check", "err", failed)
	}
	return out
}

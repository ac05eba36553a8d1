package handlers

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"beaconhub/appliance/rtls"

	"github.com/gorilla/websocket"
)

// wsHub fans engine events out to WebSocket clients. The engine calls
// onEvent on the ingest path, so that only checks for subscribers and
// hands the event to the hub's dispatcher through a bounded queue, never
// blocking (one channel send, whatever the number of subscribers). The
// dispatcher encodes the frame once (for several subscribers a
// PreparedMessage, framed once for all of them) and offers it to each subscriber's bounded queue; a
// client whose queue is full is dropped.
type wsHub struct {
	srv  *Server
	t    Tracker
	opts WSOptions
	log  *slog.Logger

	mu      sync.RWMutex
	chans   map[string]map[*wsClient]struct{} // channel -> subscribers
	debug   map[string]int                    // asset_uid -> debug subscribers
	debugN  atomic.Int64                      // sum of debug, read without the lock
	clients map[*wsClient]struct{}
	closed  bool

	// placed, nil outside tests, runs in the handshake once it holds its
	// place, so a test can hold handshakes there together.
	placed func()
	cancel func()
	wg     sync.WaitGroup

	in   chan rtls.Event // ingest -> dispatcher
	quit chan struct{}
	done chan struct{} // dispatcher ended
	// over holds, per track channel, the newest event that found in
	// full; overSig (capacity 1) tells the dispatcher. A zone change is
	// state, and a channel's last frame must be its newest (docs/websocket.md):
	// dropped, as a debug event (one sighting among many) still is, a
	// subscriber kept showing a zone the beacon had left until its next
	// change (a review: one debug subscriber's chatty beacon cost other
	// users' zone changes). One entry per channel bounds it.
	overMu  sync.Mutex
	over    map[string]rtls.Event
	overSig chan struct{}

	frames  atomic.Uint64 // frames queued to clients
	merged  atomic.Uint64 // track frames that replaced an older one of their channel in a queue
	dropped atomic.Uint64 // clients cut as too slow (a write past its deadline)
	pending atomic.Int32  // clients still to authenticate by their first message
	conns   atomic.Int32  // places taken: clients served and handshakes in flight
	lost    atomic.Uint64 // debug events dropped because the dispatcher lagged
	// coalesced counts track events that found the queue full and
	// replaced an older one of their channel waiting in over.
	coalesced atomic.Uint64
}

// hubQueue bounds the events waiting for the dispatcher: a few seconds of
// zone changes of a large site; more means the hub cannot keep up at all.
const hubQueue = 1 << 15

const (
	chanTrack = "track-"
	chanDebug = "track-debug-"
)

func newWSHub(s *Server, t Tracker, o WSOptions) *wsHub {
	h := &wsHub{srv: s, t: t, opts: o.withDefaults(), log: s.log,
		chans: map[string]map[*wsClient]struct{}{}, debug: map[string]int{}, clients: map[*wsClient]struct{}{},
		in: make(chan rtls.Event, hubQueue), quit: make(chan struct{}), done: make(chan struct{}),
		over: map[string]rtls.Event{}, overSig: make(chan struct{}, 1)}
	go h.dispatch()
	h.cancel = t.Listen(h.onEvent, h.wantsDebug)
	return h
}

// trackFrame is what a track or track-debug subscriber receives.
type trackFrame struct {
	Type     string `json:"type"` // "track" or "track-debug"
	Channel  string `json:"channel"`
	Data     any    `json:"data"`
	Snapshot bool   `json:"snapshot,omitempty"`
}

type debugData struct {
	AssetUID string             `json:"asset_uid"`
	RSSI     []rtls.GatewayRSSI `json:"rssi"`
	OffsetDB float64            `json:"offset_db"`
	Standing *float64           `json:"standing,omitempty"`
}

func channelOf(ev *rtls.Event) (ch, uid string) {
	uid = ev.AssetUID
	if uid == "" {
		uid = ev.Location.AssetUID
	}
	if ev.Debug {
		return chanDebug + uid, uid
	}
	return chanTrack + uid, uid
}

// onEvent is the engine Listener: non-blocking by construction. Events
// nobody subscribed to stop here, before any copy or encoding.
func (h *wsHub) onEvent(ev rtls.Event) {
	ch, _ := channelOf(&ev)
	h.mu.RLock()
	n := len(h.chans[ch])
	h.mu.RUnlock()
	if n == 0 {
		return
	}
	select {
	case h.in <- ev:
	default:
		if ev.Debug {
			h.lost.Add(1)
			return
		}
		h.overMu.Lock()
		if old, has := h.over[ch]; !has || old.Location.Seq < ev.Location.Seq {
			if has {
				h.coalesced.Add(1)
			}
			h.over[ch] = ev
		}
		h.overMu.Unlock()
		signal(h.overSig)
	}
}

// dispatch encodes queued events and offers them to their subscribers.
// Overflowed track events may go out before older ones still queued in
// in: a client's queue keeps the newest of a channel by Seq and drops
// an older one that comes after it (wsQueue.track).
func (h *wsHub) dispatch() {
	defer close(h.done)
	for {
		select {
		case ev := <-h.in:
			h.fanout(&ev)
		case <-h.overSig:
			h.fanoutOver()
		case <-h.quit:
			return
		}
	}
}

// fanoutOver sends the track events that overflowed the queue.
func (h *wsHub) fanoutOver() {
	h.overMu.Lock()
	over := h.over
	if len(over) == 0 {
		h.overMu.Unlock()
		return
	}
	h.over = map[string]rtls.Event{}
	h.overMu.Unlock()
	for _, ev := range over {
		h.fanout(&ev)
	}
}

func (h *wsHub) fanout(ev *rtls.Event) {
	ch, uid := channelOf(ev)
	h.mu.RLock()
	defer h.mu.RUnlock()
	subs := h.chans[ch]
	if len(subs) == 0 {
		return
	}
	f := trackFrame{Type: "track", Channel: ch, Data: ev.Location}
	if ev.Debug {
		d := debugData{AssetUID: uid, RSSI: ev.RSSI, OffsetDB: math.Round(ev.Offset*10) / 10}
		if ev.Standing != nil {
			st := math.Round(*ev.Standing*100) / 100
			d.Standing = &st
		}
		f.Type, f.Data = "track-debug", d
	}
	out, err := encodeFrame(f, len(subs))
	if err != nil {
		h.log.Error("websocket frame", "asset_uid", uid, "err", err)
		return
	}
	var seq uint64 // debug frames are not ordered: each is a sighting
	if !ev.Debug {
		seq = ev.Location.Seq
	}
	for c := range subs {
		c.offerTrack(ch, out, seq)
	}
}

// outFrame is one queued text frame: raw bytes for a single recipient, or
// a PreparedMessage when several share it (gorilla frames it once per
// connection type instead of once per connection; building one costs a
// few KiB, which a single recipient does not repay).
type outFrame struct {
	pm  *websocket.PreparedMessage
	raw []byte
}

func encodeFrame(v any, recipients int) (outFrame, error) {
	data, err := json.Marshal(v)
	if err != nil || recipients <= 1 {
		return outFrame{raw: data}, err
	}
	pm, err := websocket.NewPreparedMessage(websocket.TextMessage, data)
	return outFrame{pm: pm}, err
}

// wantsDebug is the engine's debug filter: raw RSSI is produced only for
// beacons someone watches.
func (h *wsHub) wantsDebug(uid string) bool {
	if h.debugN.Load() == 0 {
		return false // the usual case, asked on every sighting
	}
	h.mu.RLock()
	n := h.debug[uid]
	h.mu.RUnlock()
	return n > 0
}

// serve runs a connected client until it or the hub goes away; it
// returns the client (nil when the hub is closed). A client without a
// session must hold a place reserved in pending, which serve takes over;
// every client holds one reserved in conns, likewise.
func (h *wsHub) serve(conn *websocket.Conn, sess *wsSession) *wsClient {
	c := &wsClient{hub: h, conn: conn, q: newWSQueue(h.opts.SendBuffer, h.opts.MaxSubs),
		done: make(chan struct{}), read: make(chan struct{}), subs: map[string]bool{}, recheckNow: make(chan struct{}, 1)}
	if sess != nil {
		c.sess.Store(sess)
		c.checked = time.Now()
	} else {
		c.pending = true // its place in pending was reserved by the handler
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		c.authenticated()
		h.conns.Add(-1)
		_ = conn.Close()
		return nil
	}
	h.clients[c] = struct{}{}
	h.wg.Add(2)
	h.mu.Unlock()
	go c.writer()
	go c.reader()
	return c
}

// add subscribes c to ch and calls then, still under the lock (so before
// any frame of ch can be routed to c); it returns the refusal when a
// limit stops it ("" when subscribed).
func (h *wsHub) add(c *wsClient, ch, uid string, debug bool, then func()) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c.subs[ch] {
		then()
		return ""
	}
	if len(c.subs) >= h.opts.MaxSubs {
		return "too many subscriptions on this connection"
	}
	if debug && h.debug[uid] == 0 && len(h.debug) >= h.opts.MaxDebug {
		return fmt.Sprintf("at most %d beacons' debug channels are followed at once, over all connections (each costs the ingest path an event per report); unsubscribe one first", h.opts.MaxDebug)
	}
	c.subs[ch] = true
	m := h.chans[ch]
	if m == nil {
		m = map[*wsClient]struct{}{}
		h.chans[ch] = m
	}
	m[c] = struct{}{}
	if debug {
		h.debug[uid]++
		h.debugN.Add(1)
	}
	then()
	return ""
}

// removeSub ends c's subscription to ch and reports whether it held one.
func (h *wsHub) removeSub(c *wsClient, ch string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.unsubLocked(c, ch)
}

func (h *wsHub) unsubLocked(c *wsClient, ch string) bool {
	if !c.subs[ch] {
		return false
	}
	delete(c.subs, ch)
	if m := h.chans[ch]; m != nil {
		delete(m, c)
		if len(m) == 0 {
			delete(h.chans, ch)
		}
	}
	if uid, ok := strings.CutPrefix(ch, chanDebug); ok {
		h.debugN.Add(-1)
		if h.debug[uid]--; h.debug[uid] <= 0 {
			delete(h.debug, uid)
		}
	}
	return true
}

// remove forgets a client whose goroutines are ending.
func (h *wsHub) remove(c *wsClient) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range c.subs {
		h.unsubLocked(c, ch)
	}
	if _, ok := h.clients[c]; ok {
		delete(h.clients, c)
		h.conns.Add(-1)
	}
}

// wsStats are the live feed's counters (in GET /api/v1/tracking/status).
type wsStats struct {
	Clients  int    `json:"clients"`
	Channels int    `json:"channels"`
	Frames   uint64 `json:"frames"`          // frames queued to clients since start
	Merged   uint64 `json:"merged_frames"`   // track frames that replaced an older queued one of their channel
	Dropped  uint64 `json:"dropped_clients"` // clients cut as too slow
	Lost     uint64 `json:"lost_events"`     // debug events dropped because the dispatcher lagged
	// Coalesced: track events that waited aside (the dispatcher behind)
	// and were replaced by a newer one of their channel.
	Coalesced uint64 `json:"coalesced_events"`
}

func (h *wsHub) stats() *wsStats {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return &wsStats{Clients: len(h.clients), Channels: len(h.chans), Frames: h.frames.Load(), Merged: h.merged.Load(), Dropped: h.dropped.Load(), Lost: h.lost.Load(), Coalesced: h.coalesced.Load()}
}

// FeedStats are the live feed's counters for a debug snapshot; nil
// without a feed (tracking off at start).
func (s *Server) FeedStats() any {
	if s.hub == nil {
		return nil
	}
	return s.hub.stats()
}

func (h *wsHub) clientCount() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.clients)
}

func (h *wsHub) isClosed() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.closed
}

// close stops listening to the engine, says goodbye (1001) to every
// client after its queue and waits for their goroutines: each is bounded
// by DrainWait for the queue, WriteWait for the socket write under way
// and CloseWait for the close, within the wait of 2*WriteWait below (the
// defaults: 5 + 10 + 2 x 1 s).
func (h *wsHub) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	h.mu.Unlock()
	h.cancel()
	close(h.quit)
	<-h.done
	// What the dispatcher had not taken still goes out, before the close
	// frame (the writer sends its queue first): the engine closes before
	// the hub, and its last events are each beacon's zone 0. Closed
	// first, the hub sent 1001 without them (a review).
	for drained := false; !drained; {
		select {
		case ev := <-h.in:
			h.fanout(&ev)
		default:
			drained = true
		}
	}
	h.fanoutOver()
	h.mu.Lock()
	for c := range h.clients {
		c.shutDraining("server shutting down")
	}
	h.mu.Unlock()
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * h.opts.WriteWait):
		h.log.Warn("websocket clients did not finish closing in time")
	}
}

// Close stops the WebSocket hub: call it after the HTTP server has shut
// down (hijacked connections are not the server's to close).
func (s *Server) Close() {
	if s.hub != nil {
		s.hub.close()
	}
}

package handlers

import (
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"beaconhub/appliance/rtls"
	"beaconhub/store"

	"github.com/gorilla/websocket"
)

// TestWSSubscribeWhileSessionEnds: a subscribe already past the reader's
// "authenticated?" check when the writer's periodic re-check ends the
// session (the token expired) found no session and a fresh re-check
// stamp, skipped the refresh and dereferenced the missing session: a
// panic in the reader goroutine, which took the whole process down.
// Any session end (expiry, password change, deletion) while a dashboard
// was subscribing could do it. Rounds make the race likely to be hit.
func TestWSSubscribeWhileSessionEnds(t *testing.T) {
	for range 20 {
		r := newWSRig(t, WSOptions{PingInterval: 5 * time.Millisecond})
		c, _, err := r.dial(bearerHeader(r.token("user")))
		if err != nil {
			t.Fatal(err)
		}
		next(t, c, "ready")
		stop := make(chan struct{})
		go func() { // a dashboard (re)subscribing its beacons
			for {
				select {
				case <-stop:
					return
				default:
				}
				if c.WriteJSON(map[string]any{"type": "subscribe", "channel": "track-" + r.f.watch}) != nil {
					return
				}
			}
		}()
		go func() { // and reading its frames
			for {
				if _, _, err := c.ReadMessage(); err != nil {
					return
				}
			}
		}()
		start := r.srv.hub.frames.Load()
		waitFor(t, "subscribes flowing", func() bool { return r.srv.hub.frames.Load() > start+20 })
		r.clock.Advance(30 * 24 * time.Hour) // the access token expires
		waitFor(t, "session ended", func() bool { return r.srv.hub.clientCount() == 0 })
		close(stop)
		c.Close()
	}
}

// TestWSPanicEndsOnlyItsConnection: a panic in a connection's goroutine
// (here forced through a test hook in the reader, then in the writer) is
// logged and closes that connection with 1011; the process and the other
// clients go on.
func TestWSPanicEndsOnlyItsConnection(t *testing.T) {
	t.Run("reader", func(t *testing.T) { panicEndsOnlyItsConnection(t, &afterSubscribe) })
	t.Run("writer", func(t *testing.T) { panicEndsOnlyItsConnection(t, &beforeFlush) })
}

func panicEndsOnlyItsConnection(t *testing.T, hook *atomic.Pointer[func()]) {
	r := newWSRig(t, WSOptions{})
	other := r.connect(t, r.admin)
	c := r.connect(t, r.admin)
	var once atomic.Bool
	boom := func() {
		if once.CompareAndSwap(false, true) {
			panic("forced by the test")
		}
	}
	hook.Store(&boom)
	send(t, c, map[string]any{"type": "subscribe", "channel": "track-" + r.f.watch})
	waitFor(t, "the hook ran", once.Load)
	hook.Store(nil)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		_, _, err := c.ReadMessage()
		if err == nil {
			continue
		}
		if !websocket.IsCloseError(err, websocket.CloseInternalServerErr) {
			t.Fatalf("the panicking connection ended with %v, want close 1011", err)
		}
		break
	}
	waitFor(t, "panic logged", func() bool {
		return strings.Contains(r.logBuf.String(), "websocket connection ended by a panic")
	})
	send(t, other, map[string]any{"type": "ping"})
	next(t, other, "pong")
}

// writeFailingListener makes every socket write fail with a timeout once
// failing is set: what a full socket buffer does to a write with a
// deadline, without waiting for the buffers to fill.
type writeFailingListener struct {
	net.Listener
	failing *atomic.Bool
}

func (l writeFailingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &writeFailingConn{Conn: c, failing: l.failing}, nil
}

type writeFailingConn struct {
	net.Conn
	failing *atomic.Bool
}

func (c *writeFailingConn) Write(p []byte) (int, error) {
	if c.failing.Load() {
		return 0, os.ErrDeadlineExceeded
	}
	return c.Conn.Write(p)
}

// TestWSPingPastDeadlineCountsAsDropped: a client cut because the ping
// missed its write deadline is too slow like one whose frames did, and
// dropped_clients counts it.
func TestWSPingPastDeadlineCountsAsDropped(t *testing.T) {
	var failing atomic.Bool
	r := newWSRigOn(t, WSOptions{PingInterval: 30 * time.Millisecond}, func(l net.Listener) net.Listener {
		return writeFailingListener{l, &failing}
	})
	r.connect(t, r.token("user"))
	failing.Store(true)
	waitFor(t, "client cut", func() bool { return r.srv.hub.clientCount() == 0 })
	if d := r.srv.hub.dropped.Load(); d != 1 {
		t.Fatalf("dropped_clients = %d after a ping past its deadline, want 1", d)
	}
}

// TestWSTrailingDataIsAnError: a message is one JSON object; anything
// after it makes the message malformed, answered with an error rather
// than acted on in part.
func TestWSTrailingDataIsAnError(t *testing.T) {
	r := newWSRig(t, WSOptions{})
	c := r.connect(t, r.admin)
	for _, msg := range []string{
		`{"type":"subscribe","channel":"track-` + r.f.watch + `"} {"type":"unsubscribe"}`,
		`{"type":"ping"} garbage`,
		`{"type":"ping"}}`,
		`{"type":"ping"} ]`,
	} {
		if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		if m := readFrame(t, c); m["type"] != "error" {
			t.Fatalf("%s answered %v, want an error frame", msg, m)
		}
	}
	send(t, c, map[string]any{"type": "ping"}) // a whole one still works
	next(t, c, "pong")
	// Nor is a binary frame, a message without a type or an unsubscribe
	// without a channel acted on (a review: each was).
	for _, f := range []struct {
		kind int
		msg  string
	}{{websocket.BinaryMessage, `{"type":"ping"}`}, {websocket.TextMessage, `null`}, {websocket.TextMessage, `{}`},
		{websocket.TextMessage, `{"type":"unsubscribe"}`}} {
		if err := c.WriteMessage(f.kind, []byte(f.msg)); err != nil {
			t.Fatal(err)
		}
		if m := readFrame(t, c); m["type"] != "error" {
			t.Fatalf("%s (frame type %d) answered %v, want an error frame", f.msg, f.kind, m)
		}
	}
}

// TestWSRefusedAuthClosesWithHandshake: when the server refuses a client
// (a bad first-message token), it sends its close frame and then waits
// for the client's before closing the socket, as docs/websocket.md says.
// Before, the socket closed microseconds after the close frame, and a
// client could read a reset instead of the reason.
func TestWSRefusedAuthClosesWithHandshake(t *testing.T) {
	r := newWSRig(t, WSOptions{CloseWait: 30 * time.Second})
	c, _, err := r.dial(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	send(t, c, map[string]any{"type": "auth", "token": "nope"})
	// Raw bytes, so that the client library does not answer the close.
	nc := c.NetConn()
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	head := make([]byte, 2)
	if _, err := io.ReadFull(nc, head); err != nil {
		t.Fatal(err)
	}
	if head[0] != 0x88 { // FIN + close opcode
		t.Fatalf("first frame %#x, want a close frame", head[0])
	}
	body := make([]byte, head[1]&0x7f)
	if _, err := io.ReadFull(nc, body); err != nil {
		t.Fatal(err)
	}
	if code := int(body[0])<<8 | int(body[1]); code != websocket.ClosePolicyViolation {
		t.Fatalf("close code %d, want 1008", code)
	}
	// The server now waits for the client's close: the socket stays open.
	_ = nc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, err := nc.Read(make([]byte, 16)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("after its close frame the server sent %d bytes / closed the socket (%v) before the client replied", n, err)
	}
	if err := c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, ""), time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Read(make([]byte, 16)); err != io.EOF {
		t.Fatalf("after the client's close: %v, want the socket closed", err)
	}
	waitFor(t, "client removed", func() bool { return r.srv.hub.clientCount() == 0 })
}

// TestWSSnapshotNeverFollowedByOlder: an event the hub's dispatcher still
// held when a client (re)subscribed may reach the client before or after
// the snapshot; either way the channel's last frame must be the engine's
// newest state. Before frames carried the engine's order (Location.Seq),
// the snapshot was skipped when the older event came first, or the older
// event followed it, and a dashboard showed a stale zone until the
// beacon next moved.
func TestWSSnapshotNeverFollowedByOlder(t *testing.T) {
	r := newWSRig(t, WSOptions{})
	c := r.connect(t, r.admin)
	ch, other := "track-"+r.f.watch, "track-"+r.f.panicB
	send(t, c, map[string]any{"type": "subscribe", "channel": other})
	next(t, c, "subscribed")
	old := rtls.Location{AssetUID: r.f.watch, Zone: 1, ZoneName: "OLD", Seq: 1}
	nw := rtls.Location{AssetUID: r.f.watch, Zone: 2, ZoneName: "NEW", Seq: 2}
	r.fake.set(nw) // the engine is at NEW; OLD is still on its way
	lagging := func() {
		r.fake.emit(rtls.Event{AssetUID: r.f.watch, Location: old})
		// A marker on another channel, behind OLD in the dispatcher.
		// Numbered as the engine numbers a state's events: above the
		// snapshot of a beacon not located (1).
		r.fake.emit(rtls.Event{AssetUID: r.f.panicB, Location: rtls.Location{AssetUID: r.f.panicB, Zone: 1, ZoneName: "MARK", Seq: 1 << 32}})
	}
	afterSubscribe.Store(&lagging)
	defer afterSubscribe.Store(nil)
	send(t, c, map[string]any{"type": "subscribe", "channel": ch})
	// The pong follows the snapshot (one reader, in order), and MARK
	// follows OLD (one dispatcher, in order): with both read, every
	// frame of ch there will be is in.
	send(t, c, map[string]any{"type": "ping"})
	var zones []string
	for pong, mark := false, false; !pong || !mark; {
		m := readFrame(t, c)
		switch {
		case m["type"] == "pong":
			pong = true
		case m["type"] != "track":
		case m["channel"] == other:
			mark = mark || m["data"].(map[string]any)["zone"] == "MARK"
		case m["channel"] == ch:
			zones = append(zones, m["data"].(map[string]any)["zone"].(string))
		}
	}
	if len(zones) == 0 || zones[len(zones)-1] != "NEW" {
		t.Fatalf("frames of %s: %v; the engine is at NEW", ch, zones)
	}
}

// TestWSDebugBeaconsAreBounded: the beacons whose raw RSSI is followed
// are bounded over all connections, since each costs the ingest path an
// event per report (a review followed 300 and slowed ingest two to four
// times). Another subscriber of a beacon already followed costs nothing
// more and is taken; an unsubscribe frees a place.
func TestWSDebugBeaconsAreBounded(t *testing.T) {
	r := newWSRig(t, WSOptions{MaxDebug: 2})
	a, b := r.connect(t, r.admin), r.connect(t, r.admin)
	for _, uid := range []string{r.f.watch, r.f.panicB} {
		send(t, a, map[string]any{"type": "subscribe", "channel": chanDebug + uid})
		next(t, a, "subscribed")
	}
	send(t, b, map[string]any{"type": "subscribe", "channel": chanDebug + r.f.annex})
	if m := next(t, b, "error"); !strings.Contains(m["message"].(string), "at most 2 beacons' debug channels") {
		t.Fatalf("a third beacon's debug channel: %v", m)
	}
	send(t, b, map[string]any{"type": "subscribe", "channel": chanDebug + r.f.watch})
	next(t, b, "subscribed")
	send(t, b, map[string]any{"type": "subscribe", "channel": chanTrack + r.f.annex}) // track channels are not bounded so
	next(t, b, "subscribed")
	send(t, a, map[string]any{"type": "unsubscribe", "channel": chanDebug + r.f.panicB})
	next(t, a, "unsubscribed")
	send(t, b, map[string]any{"type": "subscribe", "channel": chanDebug + r.f.annex})
	next(t, b, "subscribed")
}

// TestWSZoneChangeSurvivesAFullHubQueue: with the hub's dispatcher
// behind by a whole queue of one chatty beacon's debug events, another
// beacon's zone change still reaches its subscriber, newest state last;
// only debug events are dropped. It was dropped with them, and the
// user's client showed the beacon unknown until its next change (a
// review on the running binary).
func TestWSZoneChangeSurvivesAFullHubQueue(t *testing.T) {
	r := newWSRig(t, WSOptions{})
	user := r.connect(t, r.token("user"))
	send(t, user, map[string]any{"type": "subscribe", "channel": "track-" + r.f.watch})
	next(t, user, "subscribed")
	unknownSnapshot(t, user, r.f.watch)
	admin := r.connect(t, r.admin)
	send(t, admin, map[string]any{"type": "subscribe", "channel": "track-debug-" + r.f.panicB})
	next(t, admin, "subscribed")

	h := r.srv.hub
	var dbg *wsClient
	h.mu.RLock()
	for c := range h.clients {
		if _, ok := h.chans["track-debug-"+r.f.panicB][c]; ok {
			dbg = c
		}
	}
	h.mu.RUnlock()
	if dbg == nil {
		t.Fatal("the debug subscriber is not registered")
	}
	debugEv := rtls.Event{Debug: true, AssetUID: r.f.panicB, RSSI: []rtls.GatewayRSSI{{Gateway: "AC233FA0B1C2", RSSI: -70}}}
	zone := func(seq uint64, z store.Zone) rtls.Event {
		return rtls.Event{AssetUID: r.f.watch, Location: rtls.Location{AssetUID: r.f.watch, Zone: z.ID, ZoneName: z.Name, MapID: r.f.m.ID, Seq: seq}}
	}
	dbg.q.mu.Lock() // the dispatcher stops at its first offer to the admin
	r.fake.emit(debugEv)
	waitFor(t, "the dispatcher holding the first event", func() bool { return len(h.in) == 0 })
	for range hubQueue {
		r.fake.emit(debugEv)
	}
	lost := h.lost.Load()
	r.fake.emit(zone(1, r.f.ward)) // no room: waits aside
	r.fake.emit(zone(2, r.f.hall)) // replaces it
	r.fake.emit(debugEv)           // dropped
	dbg.q.mu.Unlock()
	m := next(t, user, "track")
	if d := m["data"].(map[string]any); d["zone"] != "Hall" {
		t.Fatalf("the user got %v, want the newest state, Hall", m)
	}
	// Nothing older follows it.
	send(t, user, map[string]any{"type": "ping"})
	_ = user.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, data, err := user.ReadMessage()
	if err != nil || !strings.Contains(string(data), `"pong"`) {
		t.Fatalf("after the newest state: %s %v", data, err)
	}
	if h.lost.Load() != lost+1 || h.coalesced.Load() != 1 {
		t.Fatalf("lost %d, coalesced %d: want one debug event lost and one zone change replaced", h.lost.Load()-lost, h.coalesced.Load())
	}
}

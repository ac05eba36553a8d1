package handlers

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"beaconhub/appliance/auth"

	"github.com/gorilla/websocket"
)

// wsClient is one connection: a reader goroutine (auth, subscribe,
// unsubscribe, pongs) and a writer goroutine (queued frames, pings), the
// two joined by done. subs is guarded by the hub's lock; claims and scope
// are set and read by the reader only.
type wsClient struct {
	hub  *wsHub
	conn *websocket.Conn
	send chan outFrame
	done chan struct{}
	once sync.Once
	// closeCode and closeText are the close frame the writer sends.
	closeCode atomic.Int32
	closeText atomic.Value

	subs   map[string]bool
	claims *auth.Claims
	scope  scope
}

// offer queues a frame without ever blocking; a full queue drops the
// client, since a reader that slow would only fall further behind.
func (c *wsClient) offer(f outFrame) {
	select {
	case <-c.done:
		return
	default:
	}
	select {
	case c.send <- f:
		c.hub.frames.Add(1)
	default:
		c.hub.dropped.Add(1)
		// A client this far behind would not read a close frame either:
		// cut the TCP connection now so both goroutines end at once
		// instead of after a write deadline (closing a socket does not
		// block the ingest path).
		c.shut(websocket.CloseAbnormalClosure, "")
		_ = c.conn.NetConn().Close()
	}
}

// shut ends the connection once, with the given close frame.
func (c *wsClient) shut(code int, text string) {
	c.once.Do(func() {
		c.closeCode.Store(int32(code))
		c.closeText.Store(text)
		close(c.done)
	})
}

func (c *wsClient) reply(m serverMsg) {
	c.offer(outFrame{raw: marshalMsg(m)})
}

func (c *wsClient) writer() {
	o := c.hub.opts
	ping := time.NewTicker(o.PingInterval)
	defer func() {
		ping.Stop()
		_ = c.conn.Close()
		c.hub.wg.Done()
	}()
	for {
		select {
		case f := <-c.send:
			_ = c.conn.SetWriteDeadline(time.Now().Add(o.WriteWait))
			if err := c.writeBurst(f); err != nil {
				c.shut(websocket.CloseAbnormalClosure, "")
				return
			}
		case <-ping.C:
			if err := c.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(o.WriteWait)); err != nil {
				c.shut(websocket.CloseAbnormalClosure, "")
				return
			}
		case <-c.done:
			text, _ := c.closeText.Load().(string)
			if code := int(c.closeCode.Load()); code != websocket.CloseAbnormalClosure {
				// Short: a peer that does not take a close frame at once
				// is not worth holding the goroutines for.
				_ = c.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(min(o.WriteWait, time.Second)))
			}
			return
		}
	}
}

// writeBurst writes f and every frame queued behind it, in one socket
// write when the connection coalesces (coalescingConn): under a burst the
// writer wakes once and pays one syscall, not one per frame.
func (c *wsClient) writeBurst(f outFrame) error {
	cc, _ := c.conn.NetConn().(*coalescingConn)
	if cc == nil {
		return c.write(f)
	}
	cc.hold()
	err := c.write(f)
	for err == nil && !cc.full() {
		select {
		case f = <-c.send:
			err = c.write(f)
			continue
		default:
		}
		break
	}
	if rerr := cc.release(); err == nil {
		err = rerr
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
	defer func() {
		c.shut(websocket.CloseNormalClosure, "")
		c.hub.remove(c)
		c.hub.wg.Done()
	}()
	c.conn.SetReadLimit(maxWSMessage)
	c.conn.SetPongHandler(func(string) error { return c.conn.SetReadDeadline(time.Now().Add(o.PongWait)) })
	if c.claims == nil {
		_ = c.conn.SetReadDeadline(time.Now().Add(o.AuthWait))
	} else {
		_ = c.conn.SetReadDeadline(time.Now().Add(o.PongWait))
		c.reply(serverMsg{Type: "ready", Role: c.claims.Role})
	}
	for {
		_, data, err := c.conn.ReadMessage()
		if err != nil {
			if c.claims == nil {
				c.shut(websocket.ClosePolicyViolation, "authentication required")
			}
			return
		}
		if c.claims != nil {
			_ = c.conn.SetReadDeadline(time.Now().Add(o.PongWait))
		}
		var m clientMsg
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			c.reply(serverMsg{Type: "error", Message: "malformed message: expected a JSON object with type"})
			continue
		}
		if !c.handle(m) {
			return
		}
	}
}

// handle acts on one client message; false ends the connection.
func (c *wsClient) handle(m clientMsg) bool {
	if m.Type == "auth" {
		if c.claims != nil {
			c.reply(serverMsg{Type: "error", Message: "already authenticated"})
			return true
		}
		claims, err := c.hub.srv.wsVerify(m.Token)
		if err != nil {
			c.shut(websocket.ClosePolicyViolation, "authentication failed")
			return false
		}
		sc, err := c.hub.srv.scopeFor(claims)
		if err != nil {
			c.hub.log.Error("websocket scope", "err", err)
			c.shut(websocket.CloseInternalServerErr, "internal error")
			return false
		}
		c.claims, c.scope = claims, sc
		_ = c.conn.SetReadDeadline(time.Now().Add(c.hub.opts.PongWait))
		c.reply(serverMsg{Type: "ready", Role: claims.Role})
		return true
	}
	if c.claims == nil {
		c.shut(websocket.ClosePolicyViolation, "authentication required")
		return false
	}
	switch m.Type {
	case "subscribe":
		c.subscribe(m.Channel)
	case "unsubscribe":
		c.hub.removeSub(c, m.Channel)
		c.reply(serverMsg{Type: "unsubscribed", Channel: m.Channel})
	case "ping":
		c.reply(serverMsg{Type: "pong"})
	default:
		c.reply(serverMsg{Type: "error", Message: "unknown message type; use subscribe, unsubscribe or ping"})
	}
	return true
}

// subscribe checks the channel against the caller's role and scope:
// track-debug- is for admins only; a non-admin may follow only active
// trackable beacons inside its scope; an admin any beacon.
func (c *wsClient) subscribe(ch string) {
	fail := func(msg string) { c.reply(serverMsg{Type: "error", Channel: ch, Message: msg}) }
	uid, debug := strings.CutPrefix(ch, chanDebug)
	if !debug {
		var isTrack bool
		if uid, isTrack = strings.CutPrefix(ch, chanTrack); !isTrack || uid == "" {
			fail("unknown channel; use track-<asset_uid> or track-debug-<asset_uid>")
			return
		}
	}
	admin := c.claims.Role == auth.RoleAdmin
	if debug && !admin {
		fail("debug channels are for admins only")
		return
	}
	reg, err := c.hub.srv.registry()
	if err != nil {
		fail("the asset registry is not running")
		return
	}
	b, err := reg.Beacon(uid)
	if err != nil || (!admin && (!isTrackable(&b) || !c.scope.allows(b.LocationID))) {
		fail("no trackable beacon " + uid + " visible to you")
		return
	}
	if !c.hub.add(c, ch, uid, debug) {
		fail("too many subscriptions on this connection")
		return
	}
	c.reply(serverMsg{Type: "subscribed", Channel: ch})
	if !debug {
		if loc, seen := c.hub.t.Location(uid); seen {
			if f, err := encodeFrame(trackFrame{Type: "track", Channel: ch, Data: loc, Snapshot: true}, 1); err == nil {
				c.offer(f)
			}
		}
	}
}

package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/auth"

	"github.com/gorilla/websocket"
	"github.com/julienschmidt/httprouter"
)

// The live feed at /ws (docs/websocket.md). A client authenticates with a
// JWT in one of three ways, checked in this order:
//
//  1. an `Authorization: Bearer <jwt>` header on the upgrade request;
//  2. a `Sec-WebSocket-Protocol` entry `bearer.<jwt>` next to
//     `beaconhub.v1` (browsers cannot set headers on a WebSocket); the
//     server selects `beaconhub.v1` and never echoes the token;
//  3. a first message `{"type":"auth","token":"<jwt>"}` within AuthWait.
//
// Credentials that are present but invalid refuse the upgrade with 403; a
// connection that does not authenticate in time is closed with 1008.

// Subprotocol is the protocol name a browser client offers.
const Subprotocol = "beaconhub.v1"

const bearerProtocolPrefix = "bearer."

// WSOptions tune the WebSocket feed; zero fields take the defaults.
type WSOptions struct {
	PingInterval time.Duration // server ping period (default 25s)
	PongWait     time.Duration // read deadline, extended by each pong or message (default 60s)
	WriteWait    time.Duration // deadline of one frame write (default 10s)
	AuthWait     time.Duration // time for the first-message auth (default 10s)
	CloseWait    time.Duration // how long a server-sent close waits for the peer's (default 1s)
	DrainWait    time.Duration // at a shutdown, how long a client's queue may take to go out before its close (default WriteWait/2)
	// SubscribeRecheck is how stale a session may be when a subscribe is
	// judged (default 1s). A verification costs about 50 µs (a signature
	// and two store reads); a dashboard subscribing to a thousand
	// beacons, times every client reconnecting after a restart, would
	// otherwise cost the box seconds of CPU in one burst.
	SubscribeRecheck time.Duration
	SendBuffer       int // frames a client queues one by one before track frames merge per channel (default 256)
	MaxSubs          int // channels per client (default 1000)
	// MaxDebug bounds the beacons whose raw RSSI is followed at once,
	// over every connection (default 50): each costs the ingest path an
	// event per report, and a review following 300 in a burst of
	// reports made ingest two to four times slower.
	MaxDebug   int
	MaxConns   int // connections at once, authenticated or not (default 4096)
	MaxPending int // of which not yet authenticated (default MaxConns/8)
}

func (o WSOptions) withDefaults() WSOptions {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.PingInterval, 25*time.Second)
	def(&o.PongWait, 60*time.Second)
	def(&o.WriteWait, 10*time.Second)
	def(&o.AuthWait, 10*time.Second)
	def(&o.CloseWait, time.Second)
	def(&o.SubscribeRecheck, time.Second)
	// Half: a socket write begun just before it may take WriteWait, and
	// the close frame and the peer's reply min(WriteWait, CloseWait)
	// each, all within the hub's wait of 2*WriteWait.
	def(&o.DrainWait, o.WriteWait/2)
	if o.SendBuffer <= 0 {
		o.SendBuffer = 256
	}
	if o.MaxSubs <= 0 {
		o.MaxSubs = 1000
	}
	if o.MaxDebug <= 0 {
		o.MaxDebug = 50
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 4096
	}
	if o.MaxPending <= 0 {
		o.MaxPending = max(o.MaxConns/8, 1)
	}
	return o
}

// maxWSMessage bounds a client frame (subscribe requests are tiny; an auth
// message carries a JWT).
const maxWSMessage = 8 << 10

// ws: GET /ws. The route's guard is None because authentication happens
// here, in any of the three ways above.
func (s *Server) ws(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if _, err := s.tracker(); err != nil {
		return err
	}
	if s.hub == nil || s.hub.isClosed() {
		return apperr.Unavailable("the server is shutting down")
	}
	if !websocket.IsWebSocketUpgrade(r) {
		return apperr.Invalid("this endpoint speaks WebSocket only")
	}
	// Each connection holds two goroutines and its buffers, and one not
	// yet authenticated holds them for AuthWait: a bound keeps a flood
	// of sockets from taking the box's memory (a review). The place is
	// reserved before the upgrade, so a refusal is a plain 503 and
	// handshakes in flight together cannot all pass the bound (checked
	// and then counted, they did). serve keeps the place and gives it
	// back when the client goes.
	if n, ok := reserve(&s.hub.conns, s.hub.opts.MaxConns); !ok {
		return apperr.Unavailable("too many live feed connections (%d); try again later", n)
	}
	served := false
	defer func() {
		if !served {
			s.hub.conns.Add(-1)
		}
	}()
	if s.hub.placed != nil {
		s.hub.placed()
	}
	tok, offered := bearer(r), false
	// A bearer credential present but empty (the header, or the
	// subprotocol) is invalid, refused as such: it was taken for none,
	// and the connection waited for a first-message auth (a review).
	// Another scheme is not ours and is ignored: a browser behind a
	// reverse proxy with Basic auth sends its Basic credentials on the
	// upgrade too, and first-message auth must still work there.
	h := r.Header.Get("Authorization")
	presented := len(h) >= 6 && strings.EqualFold(h[:6], "bearer")
	for _, p := range websocket.Subprotocols(r) {
		if strings.HasPrefix(p, bearerProtocolPrefix) {
			presented = true
			if tok == "" {
				tok = strings.TrimPrefix(p, bearerProtocolPrefix)
			}
		}
		offered = offered || p == Subprotocol
	}
	if presented && tok == "" {
		return apperr.Forbidden("authentication required: the upgrade's credentials are not a bearer token")
	}
	var sess *wsSession
	if tok != "" {
		ss, err := s.wsSessionFor(tok)
		if err != nil {
			return err
		}
		sess = ss
	}
	// Those still to authenticate by their first message have a bound of
	// their own, so a flood of them (each held for AuthWait) cannot take
	// every place from clients that log in.
	// The place is reserved here, before the upgrade, so handshakes in
	// flight together cannot all pass the check (serve keeps it; a
	// failed upgrade gives it back).
	if sess == nil {
		if n, ok := reserve(&s.hub.pending, s.hub.opts.MaxPending); !ok {
			return apperr.Unavailable("too many live feed connections waiting to authenticate (%d); try again later", n)
		}
	}
	up := websocket.Upgrader{
		ReadBufferSize:  1024,
		WriteBufferSize: 4096,
		// A JWT is never ambient (no cookie), so a foreign page cannot
		// ride a user's session: any origin may connect.
		CheckOrigin: func(*http.Request) bool { return true },
		Error: func(w http.ResponseWriter, _ *http.Request, status int, reason error) {
			writeJSONError(w, status, "websocket handshake failed")
		},
	}
	var hdr http.Header
	if offered {
		hdr = http.Header{"Sec-WebSocket-Protocol": {Subprotocol}}
	}
	conn, err := up.Upgrade(&coalescingWriter{ResponseWriter: w}, r, hdr)
	if err != nil {
		if sess == nil {
			s.hub.pending.Add(-1)
		}
		return nil // the upgrader has answered
	}
	served = true
	s.hub.serve(conn, sess)
	return nil
}

// reserve takes one of limit places counted in n, with a compare-and-swap
// so that callers racing for the last place cannot both get it; it
// returns the count it found.
func reserve(n *atomic.Int32, limit int) (int32, bool) {
	for {
		v := n.Load()
		if int(v) >= limit {
			return v, false
		}
		if n.CompareAndSwap(v, v+1) {
			return v + 1, true
		}
	}
}

// wsSessionFor verifies tok for the feed and resolves the location scope
// of its user. An *apperr.Error of kind Forbidden means the token or
// account does not (or no longer) allow the feed; any other error is the
// store's.
func (s *Server) wsSessionFor(tok string) (*wsSession, error) {
	c, err := s.wsVerify(tok)
	if err != nil {
		return nil, err
	}
	sc, err := s.scopeFor(c)
	if err != nil {
		return nil, err
	}
	return &wsSession{tok: tok, claims: c, scope: sc}, nil
}

// wsVerify checks a token for the feed: any role but api, and not an
// account that must change its password first.
func (s *Server) wsVerify(tok string) (*auth.Claims, error) {
	if s.deps.Auth == nil {
		return nil, apperr.Forbidden(msgAuthRequired)
	}
	c, err := s.deps.Auth.Verify(tok)
	if err != nil {
		if apperr.KindOf(err) != apperr.KindForbidden {
			return nil, err // the store failed, not the token
		}
		return nil, apperr.Forbidden(msgAuthRequired)
	}
	if c.MustChangePassword {
		return nil, apperr.Forbidden(msgMustChange)
	}
	if c.Role == auth.RoleAPI {
		return nil, apperr.Forbidden("the live feed is not available to api accounts")
	}
	return c, nil
}

// scopeFor is scopeOf for claims that did not come through a guard.
func (s *Server) scopeFor(c *auth.Claims) (scope, error) {
	r, _ := http.NewRequest(http.MethodGet, "/ws", nil)
	return s.scopeOf(r.WithContext(contextWithClaims(r, c)))
}

func contextWithClaims(r *http.Request, c *auth.Claims) context.Context {
	return context.WithValue(r.Context(), claimsKey{}, c)
}

// clientMsg is any frame a client sends.
type clientMsg struct {
	Type    string `json:"type"`
	Channel string `json:"channel,omitempty"`
	Token   string `json:"token,omitempty"`
}

// serverMsg is a control frame the server sends (track frames are
// prepared by the hub).
type serverMsg struct {
	Type    string `json:"type"`
	Channel string `json:"channel,omitempty"`
	Message string `json:"message,omitempty"`
	Role    string `json:"role,omitempty"`
	Data    any    `json:"data,omitempty"`
}

func marshalMsg(m serverMsg) []byte {
	b, _ := json.Marshal(m) // serverMsg always marshals
	return b
}

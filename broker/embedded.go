package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

const (
	// DefaultMaxClients is used when EmbeddedOptions.MaxClients is 0.
	DefaultMaxClients = 5000

	// MaxPayload is the largest payload the broker accepts. The decoder
	// drops payloads above 64 KiB and counts them per gateway; the broker
	// must let them through to be counted instead of cutting the gateway off.
	MaxPayload = 1 << 20

	// maxPacketSize bounds what mochi will allocate for one packet (it
	// allocates the announced length before reading it; unbounded by
	// default, so a single bogus header could ask for 256 MiB). The slack
	// above MaxPayload covers the longest legal topic (64 KiB) and v5
	// properties.
	maxPacketSize = MaxPayload + 128<<10

	topicPrefix = "gw/"
	listenerID  = "beaconhub-tcp"
)

// nackV5 is the DISCONNECT reason an MQTT 5 gateway is given when its QoS
// 1 message could not be made durable (see refuse).
var nackV5 = packets.Code{Code: packets.ErrUnspecifiedError.Code, Reason: "not stored, resend"}

// refuse closes a gateway's connection without acknowledging a QoS 1
// publish that was not stored: the gateway resends it, and everything
// unacknowledged after it, when it reconnects. The gateway contract asks
// exactly this ("the gateway must get no ack and resend"). A PUBACK with a
// failure reason code, which MQTT 5 allows, was sent here at first; but it
// completes the QoS 1 exchange and releases the packet id, and a gateway
// need not publish the message again after one. An MQTT 5 gateway is told
// why in a DISCONNECT first; MQTT 3.1.1 has no server DISCONNECT.
func refuse(cl *mqtt.Client, err error) {
	if cl.Properties.ProtocolVersion == 5 {
		_ = cl.WritePacket(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Disconnect},
			ReasonCode: nackV5.Code, Properties: packets.Properties{ReasonString: nackV5.Reason}})
	}
	cl.Stop(fmt.Errorf("sink: %w", err))
}

// EmbeddedOptions configures the embedded broker.
type EmbeddedOptions struct {
	Listen      string // e.g. ":1883" or "127.0.0.1:0"; "" means ":1883"
	Credentials Credentials
	Sink        Sink
	Observer    ConnObserver // may be nil
	Logger      *slog.Logger // broker logs go through slog; nil discards
	MaxClients  int          // 0 = DefaultMaxClients
	// MaxPending bounds a connection's QoS 1 publishes waiting for their
	// commit when Sink is an AsyncSink (0 = DefaultMaxPending); AckWait is
	// how long a publish may wait for a slot before the connection is
	// closed (0 = 30 s).
	MaxPending int
	AckWait    time.Duration
}

// Embedded is the MQTT broker BeaconHub runs in-process for its gateways.
type Embedded struct {
	opts   EmbeddedOptions
	log    *slog.Logger
	server *mqtt.Server
	c      counters

	// wrapListener lets tests inject accept errors.
	wrapListener func(net.Listener) net.Listener

	mu      sync.Mutex
	ln      *tcpListener
	started bool

	closing   atomic.Bool
	closeOnce sync.Once

	// obsMu serialises observer calls; live maps a client id to the
	// connection currently owning it, so the disconnect of a connection
	// that was taken over does not mark the gateway offline.
	obsMu sync.Mutex
	live  map[string]*mqtt.Client

	async  AsyncSink // nil when Sink acknowledges synchronously
	ackers sync.Map  // *mqtt.Client -> *acker, while connected
}

// ClientReadBuffer is the read buffer of each client connection. A gateway
// streams many small publishes; mochi's 2 KiB default holds about four of
// them per read syscall. 16 KiB: QoS 0 at 200 gateways took 20% less CPU
// per report (14 MiB more for 1,000 connections).
const ClientReadBuffer = 16 << 10

// NewEmbedded validates opts and prepares (but does not start) the broker.
func NewEmbedded(opts EmbeddedOptions) (*Embedded, error) {
	if opts.Sink == nil {
		return nil, errors.New("broker: EmbeddedOptions.Sink is required")
	}
	if opts.Credentials == nil {
		return nil, errors.New("broker: EmbeddedOptions.Credentials is required")
	}
	if opts.Listen == "" {
		opts.Listen = ":1883"
	}
	if opts.MaxClients < 0 {
		return nil, fmt.Errorf("broker: MaxClients %d is negative", opts.MaxClients)
	}
	if opts.MaxClients == 0 {
		opts.MaxClients = DefaultMaxClients
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = DefaultMaxPending
	}
	if opts.AckWait <= 0 {
		opts.AckWait = 30 * time.Second
	}
	e := &Embedded{
		opts: opts,
		log:  loggerOrDiscard(opts.Logger).With("component", "mqtt"),
		live: make(map[string]*mqtt.Client),
	}
	e.async, _ = opts.Sink.(AsyncSink)

	caps := mqtt.NewDefaultServerCapabilities()
	caps.MaximumClients = int64(opts.MaxClients)
	caps.MaximumPacketSize = maxPacketSize
	// Gateways publish at QoS 0/1 and a QoS 1 PUBACK is our durability
	// promise. Capping at 1 means the sink only ever sees 0 or 1, so no
	// QoS 2 message can slip through the "wait for durable" path. (MQTT 5
	// clients are told in CONNACK; a 3.1.1 client sending QoS 2 anyway
	// gets a PUBACK instead of a PUBREC, which the contract rules out.)
	caps.MaximumQos = 1
	// MQTT 5 clients learn how many QoS 1 publishes may be in flight.
	caps.ReceiveMaximum = uint16(min(opts.MaxPending, 65535))
	// Nothing is ever sent to gateways except acks, which mochi writes
	// directly. The default queue (8192 pointers = 64 KiB per client) would
	// cost ~320 MiB at 5000 gateways for nothing.
	caps.MaximumClientWritesPending = 64
	// Sessions hold nothing useful here (no subscriptions, no outbound
	// messages); don't keep ones of vanished clients forever.
	caps.MaximumSessionExpiryInterval = 24 * 60 * 60
	// Not RetainAvailable=0: mochi would then refuse CONNECTs carrying a
	// retained will, which is common gateway firmware behaviour. Retain
	// flags are stripped in the ingest hook instead.

	e.server = mqtt.New(&mqtt.Options{
		Capabilities:            caps,
		Logger:                  newMochiLogger(loggerOrDiscard(opts.Logger)),
		SysTopicResendInterval:  60, // nobody may subscribe to $SYS; keep the busywork low
		InlineClient:            false,
		ClientNetReadBufferSize: ClientReadBuffer,
	})
	if err := e.server.AddHook(&authHook{e: e}, nil); err != nil {
		return nil, fmt.Errorf("broker: add auth hook: %w", err)
	}
	if err := e.server.AddHook(&ingestHook{e: e}, nil); err != nil {
		return nil, fmt.Errorf("broker: add ingest hook: %w", err)
	}
	return e, nil
}

// Start binds the listener and starts serving. It returns once the listener
// is bound (or with the bind error).
func (e *Embedded) Start() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started {
		return errors.New("broker: embedded broker already started")
	}
	if e.closing.Load() {
		return errors.New("broker: embedded broker is closed")
	}
	raw, err := net.Listen("tcp", e.opts.Listen)
	if err != nil {
		e.c.setError("listen: " + err.Error())
		return fmt.Errorf("broker: listen on %s: %w", e.opts.Listen, err)
	}
	if e.wrapListener != nil {
		raw = e.wrapListener(raw)
	}
	ln := newTCPListener(listenerID, raw, e.log, e.acceptError)
	ln.disconnect = e.disconnectAll
	if err := e.server.AddListener(ln); err != nil {
		_ = raw.Close()
		return fmt.Errorf("broker: add listener: %w", err)
	}
	if err := e.server.Serve(); err != nil {
		_ = raw.Close()
		return fmt.Errorf("broker: serve: %w", err)
	}
	e.ln = ln
	e.started = true
	e.log.Info("mqtt broker listening", "addr", ln.Address(), "max_clients", e.opts.MaxClients)
	return nil
}

func (e *Embedded) acceptError(err error) {
	e.c.setError("accept: " + err.Error())
	e.log.Warn("mqtt accept failed; retrying", "error", err)
}

// Addr is the bound address ("" before Start).
func (e *Embedded) Addr() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ln == nil {
		return ""
	}
	return e.ln.Address()
}

// Close stops accepting, disconnects all clients and waits until every hook
// call, including sink calls waiting for durability, has returned. Calling it
// more than once is harmless.
func (e *Embedded) Close() error {
	e.closeOnce.Do(func() {
		e.closing.Store(true)
		// mochi's Close calls our listener's Close, which does the
		// disconnect-and-wait; the order inside it matters (see there).
		_ = e.server.Close()
		e.mu.Lock()
		started := e.started
		e.mu.Unlock()
		if started {
			e.log.Info("mqtt broker stopped")
		}
	})
	return nil
}

// disconnectAll sends every connected client the shutdown DISCONNECT and
// stops it, from our own list of live clients (see tcpListener.Close for
// why not mochi's).
func (e *Embedded) disconnectAll() {
	e.obsMu.Lock()
	cls := make([]*mqtt.Client, 0, len(e.live))
	for _, cl := range e.live {
		cls = append(cls, cl)
	}
	e.obsMu.Unlock()
	for _, cl := range cls {
		_ = e.server.DisconnectClient(cl, packets.ErrServerShuttingDown)
	}
}

// Stats returns a snapshot of the broker counters.
func (e *Embedded) Stats() Stats {
	s := Stats{Mode: "embedded"}
	e.mu.Lock()
	if e.ln != nil {
		s.Listen = e.ln.Address()
		s.Listening = e.started && !e.closing.Load()
	}
	e.mu.Unlock()
	e.c.fill(&s)
	return s
}

// authHook authenticates CONNECTs and applies the topic ACL.
type authHook struct {
	mqtt.HookBase
	e *Embedded
}

func (h *authHook) ID() string { return "beaconhub-auth" }

func (h *authHook) Provides(b byte) bool {
	return b == mqtt.OnConnectAuthenticate || b == mqtt.OnACLCheck
}

func (h *authHook) OnConnectAuthenticate(cl *mqtt.Client, pk packets.Packet) bool {
	user, pass := h.e.opts.Credentials()
	// Missing flags mean anonymous; compare anyway so timing is the same.
	ok := credentialsMatch(pk.Connect.Username, pk.Connect.Password, user, pass) &&
		pk.Connect.UsernameFlag && pk.Connect.PasswordFlag
	if !ok {
		h.e.c.authFailures.Add(1)
		reason := "bad username or password"
		if !pk.Connect.UsernameFlag {
			reason = "anonymous"
		}
		if user == "" || pass == "" {
			reason = "broker credentials not configured"
		}
		h.e.c.setError(fmt.Sprintf("auth: %s refused (%s)", cl.ID, reason))
		// The username is not secret and helps find a misconfigured
		// gateway; the password is never logged.
		h.e.log.Debug("mqtt connect refused", "client", cl.ID, "remote", cl.Net.Remote,
			"username", string(pk.Connect.Username), "reason", reason)
	}
	return ok
}

// OnACLCheck lets remote clients publish only under gw/ and subscribe to
// nothing: BeaconHub consumes in-process through the ingest hook, so a
// subscriber could only be someone reading other gateways' data.
//
// What the client sees on a denied publish is mochi's doing: QoS 0 is
// dropped silently; QoS 1 gets a PUBACK with 0x87 (MQTT 5) or, for 3.1.1,
// which has no negative PUBACK, the connection is closed. A denied subscribe
// gets SUBACK 0x80 (3.1.1) / 0x87 (5).
func (h *authHook) OnACLCheck(cl *mqtt.Client, topic string, write bool) bool {
	if write && strings.HasPrefix(topic, topicPrefix) {
		return true
	}
	h.e.c.aclDenials.Add(1)
	what := "subscribe"
	if write {
		what = "publish"
	}
	h.e.log.Debug("mqtt acl denied", "client", cl.ID, "op", what, "topic", topic)
	return false
}

// ingestHook feeds publishes to the sink and tracks connections.
type ingestHook struct {
	mqtt.HookBase
	e *Embedded
}

func (h *ingestHook) ID() string { return "beaconhub-ingest" }

func (h *ingestHook) Provides(b byte) bool {
	switch b {
	case mqtt.OnPublish, mqtt.OnSessionEstablished, mqtt.OnDisconnect, mqtt.OnWill:
		return true
	}
	return false
}

// OnPublish runs in the publishing client's read loop, before mochi sends
// the PUBACK (processPublish calls the hooks and only writes the PUBACK
// after they return nil). What mochi does with the return value:
//
//   - nil: carries on with the returned packet: retain (if flagged),
//     PUBACK for QoS 1, forward to subscribers.
//   - packets.ErrRejectPacket: processPublish returns nil straight away:
//     no PUBACK, no retain, no forwarding, connection stays up (and one
//     allocation: mochi boxes the packet for a debug log line).
//   - nil with pk.Ignore set: as nil, but nothing is forwarded or retained;
//     every QoS 0 publish ends so once the sink has it.
//   - packets.CodeSuccessIgnore: like nil but not forwarded; PUBACK sent.
//   - any packets.Code, MQTT 5 client, QoS > 0: a PUBACK carrying that
//     reason code is written instead of the success PUBACK.
//   - anything else (a plain error; or a Code for a 3.1.1 client; or for
//     QoS 0): mochi logs it and then continues exactly as for nil, i.e. it
//     SENDS THE SUCCESS PUBACK. Returning a plain error is therefore the
//     one wrong choice here.
//
// So on a sink error for QoS 1 we close the connection (refuse) and return
// ErrRejectPacket: no PUBACK is written, and the gateway resends the
// message when it reconnects.
//
// Retain: a retained copy would only ever be replayed to subscribers, and no
// one may subscribe, so the flag is stripped rather than the publish refused
// (refusing would make firmware that sets it by habit lose data).
func (h *ingestHook) OnPublish(cl *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	if cl.Net.Inline {
		// No inline client is enabled; if one ever is, what it publishes
		// is ours and must not come back in as gateway data.
		return pk, nil
	}
	pk.FixedHeader.Retain = false
	qos := pk.FixedHeader.Qos
	if qos == 1 && h.e.async != nil {
		if v, ok := h.e.ackers.Load(cl); ok {
			return h.publishAsync(cl, v.(*acker), pk)
		}
	}
	err := deliver(h.e.opts.Sink, &h.e.c, h.e.log, cl.ID, pk.TopicName, pk.Payload, qos)
	if qos == 0 {
		// Consumed: Ignore keeps mochi from searching its topic tree for
		// subscribers nobody may be (5% of the CPU at QoS 0). Not
		// ErrRejectPacket: mochi boxes the whole packet for a debug log
		// line on every rejection, an allocation per publish.
		pk.Ignore = true
		return pk, nil
	}
	if err == nil {
		return pk, nil
	}
	// Closing the socket before returning guarantees nothing else is
	// written. Anything the gateway pipelined after this message is left
	// unread and unacknowledged, so it is resent too.
	refuse(cl, err)
	return pk, packets.ErrRejectPacket
}

// publishAsync hands a QoS 1 publish to the AsyncSink and tells mochi not
// to acknowledge it (ErrRejectPacket: no PUBACK, no retain, no forwarding,
// and nobody may subscribe anyway; its per-publish debug-log allocation
// measured below noise at QoS 1): the acker writes the PUBACK once the
// publish is durable. When the connection already has MaxPending
// publishes waiting and none commits within AckWait, the store is stuck:
// the connection is closed (a negative PUBACK now would overtake the
// pending ones, which MQTT forbids) and the gateway resends on reconnect.
func (h *ingestHook) publishAsync(cl *mqtt.Client, a *acker, pk packets.Packet) (packets.Packet, error) {
	if !a.acquire(h.e.opts.AckWait) {
		h.e.c.messages.Add(1)
		h.e.c.sinkResult(h.e.log, cl.ID, pk.TopicName, 1, errAckWait)
		if tc, ok := h.e.opts.Sink.(AckTimeoutCounter); ok {
			tc.AckTimedOut(pk.TopicName)
		}
		cl.Stop(fmt.Errorf("sink: %w", errAckWait))
		return pk, packets.ErrRejectPacket
	}
	deliverAsync(h.e.async, &h.e.c, h.e.log, a, cl.ID, pk.TopicName, pk.Payload, pk.PacketID)
	return pk, packets.ErrRejectPacket
}

// OnSessionEstablished fires once a client is authenticated and its
// CONNACK sent; every call is paired with exactly one OnDisconnect (mochi's
// OnConnect, by contrast, fires before authentication).
//
// Counters move after the observer has been told, so that anyone who sees
// Stats.Clients change can rely on the observer being up to date.
func (h *ingestHook) OnSessionEstablished(cl *mqtt.Client, _ packets.Packet) {
	h.e.log.Debug("mqtt client connected", "client", cl.ID, "remote", cl.Net.Remote,
		"protocol", cl.Properties.ProtocolVersion)
	if h.e.async != nil {
		h.e.ackers.Store(cl, newAcker(cl, h.e.opts.MaxPending))
	}
	h.e.obsMu.Lock()
	h.e.live[cl.ID] = cl
	if h.e.opts.Observer != nil {
		h.e.opts.Observer.ClientConnected(cl.ID, cl.Net.Remote)
	}
	h.e.obsMu.Unlock()
	h.e.c.connects.Add(1)
	h.e.c.clients.Add(1)
}

func (h *ingestHook) OnDisconnect(cl *mqtt.Client, err error, _ bool) {
	if err == nil {
		err = cl.StopCause() // e.g. our own "sink:" stop, or a takeover
	}
	h.e.log.Debug("mqtt client disconnected", "client", cl.ID, "remote", cl.Net.Remote, "error", err)
	if errors.Is(err, packets.ErrPacketTooLarge) {
		h.e.log.Warn("mqtt packet over the size limit: connection closed", "client", cl.ID, "remote", cl.Net.Remote, "limit_bytes", maxPacketSize)
		h.e.c.setError(fmt.Sprintf("client %s sent a packet over %d bytes", cl.ID, maxPacketSize))
		if o, ok := h.e.opts.Observer.(OversizeObserver); ok {
			o.PacketTooLarge(cl.ID)
		}
	}
	if v, ok := h.e.ackers.LoadAndDelete(cl); ok {
		close(v.(*acker).stop)
	}
	h.e.obsMu.Lock()
	// A connection taken over by a newer one with the same id must not
	// mark the gateway offline.
	if h.e.live[cl.ID] == cl {
		delete(h.e.live, cl.ID)
		if h.e.opts.Observer != nil {
			h.e.opts.Observer.ClientDisconnected(cl.ID)
		}
	}
	h.e.obsMu.Unlock()
	h.e.c.clients.Add(-1)
}

// OnWill strips retain from last-will messages for the same reason as in
// OnPublish. Wills never reach the sink (mochi does not run OnPublish for
// them); a gateway going away is reported through ConnObserver instead.
func (h *ingestHook) OnWill(_ *mqtt.Client, will mqtt.Will) (mqtt.Will, error) {
	will.Retain = false
	return will, nil
}

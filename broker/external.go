package broker

import (
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	pahopackets "github.com/eclipse/paho.mqtt.golang/packets"
)

const (
	subscribeFilter = "gw/#"

	backoffInitial = time.Second
	backoffMax     = 60 * time.Second

	// Messages are spread over lanes by gateway so that one gateway's
	// messages stay in order while different gateways' QoS 1 messages wait
	// for durability concurrently (and share group commits). Bounded queues
	// push back on paho, and through it on the broker's inflight window.
	laneCount = 16
	laneDepth = 32

	externalConnectTimeout = 10 * time.Second
	disconnectQuiesce      = 250 // ms
)

// ExternalOptions configures the client used when gateways talk to an
// external broker.
type ExternalOptions struct {
	URL         string      // mqtt://host:port or tcp://host:port (mqtts/ssl/tls for TLS)
	Credentials Credentials // nil: use the URL's user info, if any
	Sink        Sink
	Logger      *slog.Logger

	// ClientID defaults to "beaconhub-<random>". The session is persistent
	// (clean session false) so the broker keeps gw/# messages for us while
	// we reconnect; pass a stable id (e.g. derived from the appliance
	// serial) so that a restart of BeaconHub resumes that session instead
	// of leaving it orphaned on the broker.
	ClientID string

	// retryDelay replaces the jittered backoff in tests.
	retryDelay func(failures int) time.Duration
}

// External consumes gw/# from an external broker and feeds the sink.
//
// Acknowledgement: paho runs with auto-ack disabled. A QoS 1 message is
// acked (paho Message.Ack, i.e. PUBACK to the broker) only after the sink
// returned nil for it, which for QoS 1 means the message is durable. On a
// sink error the message is left unacked and the connection is recycled,
// because an MQTT 3.1.1 broker redelivers unacked messages only on
// reconnect, and each one left hanging would also hold one of the broker's
// inflight slots for us.
type External struct {
	opts       ExternalOptions
	log        *slog.Logger
	server     *url.URL // without user info
	redacted   string
	creds      Credentials
	clientID   string
	retryDelay func(int) time.Duration
	c          counters

	client    atomic.Pointer[paho.Client] // current session's client
	connected atomic.Bool                 // subscribed on the current session
	kick      chan struct{}               // a worker asks for a reconnect
	lanes     []chan paho.Message

	stop      chan struct{}
	done      chan struct{}
	workers   sync.WaitGroup
	startOnce sync.Once
	closeOnce sync.Once
	started   atomic.Bool
}

// NewExternal validates opts. It does not connect.
func NewExternal(opts ExternalOptions) (*External, error) {
	if opts.Sink == nil {
		return nil, errors.New("broker: ExternalOptions.Sink is required")
	}
	server, userinfo, err := parseBrokerURL(opts.URL)
	if err != nil {
		return nil, err
	}
	x := &External{
		opts:       opts,
		log:        loggerOrDiscard(opts.Logger).With("component", "mqtt-external"),
		server:     server,
		redacted:   server.String(),
		creds:      opts.Credentials,
		clientID:   opts.ClientID,
		retryDelay: opts.retryDelay,
		kick:       make(chan struct{}, 1),
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
	}
	if x.creds == nil && userinfo != nil {
		user := userinfo.Username()
		pass, _ := userinfo.Password()
		x.creds = func() (string, string) { return user, pass }
	}
	if x.clientID == "" {
		var b [6]byte
		_, _ = crand.Read(b[:])
		x.clientID = "beaconhub-" + hex.EncodeToString(b[:]) // 22 chars: fits MQTT 3.1's 23
	}
	if x.retryDelay == nil {
		x.retryDelay = jitteredBackoff
	}
	x.lanes = make([]chan paho.Message, laneCount)
	for i := range x.lanes {
		x.lanes[i] = make(chan paho.Message, laneDepth)
	}
	return x, nil
}

// parseBrokerURL accepts mqtt://, tcp:// (plain) and mqtts://, ssl://,
// tls:// (TLS with system roots), adds the default port, and splits off the
// user info so that it never reaches logs or Stats.
func parseBrokerURL(raw string) (*url.URL, *url.Userinfo, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url's error quotes the input, which may contain a password.
		return nil, nil, errors.New("broker: external broker URL is not a valid URL")
	}
	var port string
	switch strings.ToLower(u.Scheme) {
	case "mqtt", "tcp":
		port = "1883"
	case "mqtts", "ssl", "tls":
		port = "8883"
	default:
		return nil, nil, fmt.Errorf("broker: external broker URL scheme %q not supported (use mqtt:// or mqtts://)", u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, nil, errors.New("broker: external broker URL has no host")
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), port)
	}
	clean := &url.URL{Scheme: strings.ToLower(u.Scheme), Host: host}
	return clean, u.User, nil
}

// jitteredBackoff doubles from 1 s to 60 s and picks uniformly from the
// upper half of the interval, so a fleet of appliances that lost the same
// broker does not reconnect in lockstep.
func jitteredBackoff(failures int) time.Duration {
	d := backoffInitial << min(failures, 6) // 2^6 s > 60 s
	d = min(d, backoffMax)
	return d/2 + rand.N(d/2+1)
}

// Start begins connecting in the background and returns immediately.
func (x *External) Start() error {
	select {
	case <-x.stop:
		return errors.New("broker: external client is closed")
	default:
	}
	already := true
	x.startOnce.Do(func() {
		already = false
		x.started.Store(true)
		for _, lane := range x.lanes {
			x.workers.Add(1)
			go x.work(lane)
		}
		go x.run()
	})
	if already {
		return errors.New("broker: external client already started")
	}
	x.log.Info("mqtt external client starting", "url", x.redacted, "client_id", x.clientID)
	return nil
}

// Close disconnects and waits for in-flight sink calls to return. Messages
// still queued are dropped unacknowledged; the broker keeps them in our
// session and redelivers them on the next connect.
func (x *External) Close() error {
	x.closeOnce.Do(func() {
		close(x.stop)
		if x.started.Load() {
			<-x.done
			x.workers.Wait()
			x.log.Info("mqtt external client stopped")
		}
	})
	return nil
}

// Stats returns a snapshot; Connected is true only while the session is up
// and subscribed.
func (x *External) Stats() Stats {
	s := Stats{Mode: "external", URL: x.redacted}
	if cl := x.client.Load(); cl != nil {
		s.Connected = x.connected.Load() && (*cl).IsConnectionOpen()
	}
	x.c.fill(&s)
	return s
}

func (x *External) stopping() bool {
	select {
	case <-x.stop:
		return true
	default:
		return false
	}
}

// run is the reconnect loop. paho's own auto-reconnect is not used: it
// sleeps without jitter and cannot be interrupted, and doing it here gives
// one place that knows whether the session is really usable.
func (x *External) run() {
	defer close(x.done)
	failures := 0
	for {
		established := x.session()
		if x.stopping() {
			return
		}
		// A session that came up resets the backoff, unless it was torn
		// down because the sink keeps failing: reconnecting then cannot
		// help quickly, and hammering the broker would not either.
		if established && !x.c.sinkFailing.Load() {
			failures = 0
		}
		d := x.retryDelay(failures)
		failures++
		x.log.Debug("mqtt external reconnecting", "in", d)
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-x.stop:
			t.Stop()
			return
		}
	}
}

// session connects, subscribes and then waits until the connection is lost,
// a worker asks for a reconnect, or Close is called. Each session gets its
// own paho client so that a late event (a lost-connection callback, an ack)
// from a previous connection cannot be mistaken for one of this connection.
func (x *External) session() (established bool) {
	select { // a kick from the previous session is stale now
	case <-x.kick:
	default:
	}
	lost := make(chan error, 1)
	o := paho.NewClientOptions()
	o.AddBroker(x.server.String())
	o.SetClientID(x.clientID)
	if x.creds != nil {
		o.SetCredentialsProvider(func() (string, string) { return x.creds() })
	}
	o.SetProtocolVersion(4)
	o.SetCleanSession(false)
	o.SetAutoReconnect(false)
	o.SetConnectRetry(false)
	o.SetConnectTimeout(externalConnectTimeout)
	o.SetKeepAlive(30 * time.Second)
	o.SetPingTimeout(10 * time.Second)
	o.SetWriteTimeout(10 * time.Second)
	o.SetAutoAckDisabled(true)
	// Ordered: paho calls onMessage from one goroutine in arrival order,
	// and onMessage only enqueues, so per-gateway order survives.
	o.SetOrderMatters(true)
	// Default handler rather than a per-subscription one: with a
	// persistent session the broker may deliver queued messages right
	// after CONNACK, before our SUBSCRIBE is even sent.
	o.SetDefaultPublishHandler(x.onMessage)
	o.SetConnectionLostHandler(func(_ paho.Client, err error) {
		select {
		case lost <- err:
		default:
		}
	})
	cl := paho.NewClient(o)
	x.client.Store(&cl)
	defer func() {
		x.connected.Store(false)
		cl.Disconnect(disconnectQuiesce)
	}()

	tok := cl.Connect()
	if !x.wait(tok) {
		return false
	}
	if err := tok.Error(); err != nil {
		x.connectFailed(err)
		return false
	}
	x.c.connects.Add(1)

	sub := cl.Subscribe(subscribeFilter, 1, nil)
	if !x.wait(sub) {
		return false
	}
	if err := sub.Error(); err != nil {
		x.c.setError("subscribe: " + err.Error())
		x.log.Warn("mqtt external subscribe failed", "url", x.redacted, "error", err)
		return false
	}
	if code := sub.(*paho.SubscribeToken).Result()[subscribeFilter]; code > 1 {
		x.c.aclDenials.Add(1)
		x.c.setError(fmt.Sprintf("subscribe %s refused by broker (code 0x%02x)", subscribeFilter, code))
		x.log.Warn("mqtt external subscribe refused", "url", x.redacted, "filter", subscribeFilter, "code", code)
		return false
	}
	x.connected.Store(true)
	x.log.Info("mqtt external connected", "url", x.redacted, "client_id", x.clientID,
		"session_present", tok.(*paho.ConnectToken).SessionPresent())

	select {
	case err := <-lost:
		x.c.setError("connection lost: " + err.Error())
		x.log.Warn("mqtt external connection lost", "url", x.redacted, "error", err)
	case <-x.kick:
		x.log.Info("mqtt external reconnecting so the broker redelivers unacknowledged messages", "url", x.redacted)
	case <-x.stop:
	}
	return true
}

// wait waits for a token unless Close comes first.
func (x *External) wait(t paho.Token) bool {
	select {
	case <-t.Done():
		return true
	case <-x.stop:
		return false
	}
}

func (x *External) connectFailed(err error) {
	if errors.Is(err, pahopackets.ErrorRefusedBadUsernameOrPassword) || errors.Is(err, pahopackets.ErrorRefusedNotAuthorised) {
		x.c.authFailures.Add(1)
	}
	x.c.setError("connect: " + err.Error())
	x.log.Warn("mqtt external connect failed", "url", x.redacted, "error", err)
}

// onMessage is paho's handler: it only routes the message to its lane. It
// blocks when that lane is full, which stops paho reading and lets the
// broker's flow control do the rest.
func (x *External) onMessage(_ paho.Client, m paho.Message) {
	if m.Retained() {
		// Retained flag on delivery = replay of an old message because we
		// (re)subscribed, not a live publish. Its gateway timestamp would
		// be stale and the decoder would re-stamp it with "now": a panic
		// press from last week must not ring again.
		m.Ack()
		return
	}
	select {
	case x.lanes[laneOf(m.Topic())] <- m:
	case <-x.stop:
	}
}

// laneOf hashes the gateway part of gw/<MAC>/<kind>.
func laneOf(topic string) int {
	key := topic
	if rest, ok := strings.CutPrefix(topic, topicPrefix); ok {
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			key = rest[:i]
		}
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % laneCount)
}

func (x *External) work(lane chan paho.Message) {
	defer x.workers.Done()
	for {
		select {
		case m := <-lane:
			x.handle(m)
		case <-x.stop:
			return
		}
	}
}

func (x *External) handle(m paho.Message) {
	qos := min(m.Qos(), 1) // we subscribe at QoS 1, so the broker never sends 2
	err := deliver(x.opts.Sink, &x.c, x.log, "", m.Topic(), m.Payload(), qos)
	if err == nil {
		m.Ack()
		return
	}
	if qos == 1 {
		select {
		case x.kick <- struct{}{}:
		default:
		}
	}
}

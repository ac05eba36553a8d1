// Package broker owns BeaconHub's MQTT edge: the embedded broker (mochi-mqtt)
// that gateways connect to, its authentication / ACL and ingest hooks, and the
// client used instead of it when the gateways talk to an external broker.
//
// Both modes hand every gateway publish to a [Sink]. The package never
// touches disk itself: for QoS 1 the sink blocks until the message is
// durable, and only then is the message acknowledged (PUBACK to the gateway
// in embedded mode, PUBACK to the external broker in external mode). That is
// how "a PUBACK means durable" from the gateway contract is kept.
//
// It imports nothing from this module so that it can be tested on its own.
package broker

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Sink receives every gateway publish. It is called in the publishing client's read loop
// (embedded mode) or the client's message callback (external mode). For qos 1 it returns only
// once the message is durable (or failed). A non-nil error for a qos 1 message means: do not
// acknowledge it (the gateway must resend).
//
// clientID is the MQTT client id of the gateway in embedded mode and empty in
// external mode (MQTT does not forward the publisher's id; the MAC in the
// topic is the gateway identity anyway). payload is owned by the sink: the
// broker never reuses it. qos is 0 or 1. Delivery is at least once, so a
// QoS 1 message can be seen more than once (e.g. after a reconnect).
type Sink interface {
	HandlePublish(clientID, topic string, payload []byte, qos byte) error
}

// ConnObserver (optional) hears gateway connects/disconnects, to keep a "connected" flag per gateway.
//
// Calls are serialised and made in the order the broker decided them, so
// the last call for an id is the truth even across a session takeover (a
// gateway reconnecting before its old connection timed out). Implementations
// must return quickly: they run on connection goroutines.
type ConnObserver interface {
	ClientConnected(clientID, remoteAddr string)
	ClientDisconnected(clientID string)
}

// OversizeObserver (optional, on the ConnObserver) hears that an
// authenticated client sent a packet over the broker's limit, which the
// broker cannot read and answers by closing the connection: the contract
// counts a too-large payload per gateway and reason, and these were
// counted nowhere (a black-box check). The topic is unread, so the
// client id names the gateway.
type OversizeObserver interface {
	PacketTooLarge(clientID string)
}

// Credentials returns the username and password gateways must use (embedded
// mode) or BeaconHub presents (external mode). It is read live on every
// CONNECT so a changed password applies to new connections.
type Credentials func() (user, pass string)

// Stats is a snapshot of broker counters for the status page.
type Stats struct {
	Mode string // "embedded" | "external"

	Listening bool   // embedded: the listener is bound and serving
	Listen    string // embedded: the bound address

	Connected bool   // external: connected and subscribed right now
	URL       string // external: broker URL, never with credentials

	Clients int64 // embedded: currently connected (authenticated) clients

	ConnectsTotal    int64 // successful (authenticated) connects
	AuthFailures     int64 // CONNECTs refused for credentials
	ACLDenials       int64 // publishes outside gw/ and subscribe attempts (embedded); refused subscriptions (external)
	MessagesReceived int64 // publishes handed to the sink
	SinkErrors       int64 // sink errors and panics

	LastError   string
	LastErrorAt time.Time
}

// counters is shared by both modes so their Stats mean the same thing.
type counters struct {
	clients, connects, authFailures, aclDenials, messages, sinkErrors atomic.Int64

	// sinkFailing turns per-message sink errors into one warning per outage
	// (a full disk would otherwise log every message).
	sinkFailing atomic.Bool

	mu        sync.Mutex
	lastErr   string
	lastErrAt time.Time
}

func (c *counters) setError(msg string) {
	c.mu.Lock()
	c.lastErr = msg
	c.lastErrAt = time.Now()
	c.mu.Unlock()
}

func (c *counters) fill(s *Stats) {
	s.Clients = c.clients.Load()
	s.ConnectsTotal = c.connects.Load()
	s.AuthFailures = c.authFailures.Load()
	s.ACLDenials = c.aclDenials.Load()
	s.MessagesReceived = c.messages.Load()
	s.SinkErrors = c.sinkErrors.Load()
	c.mu.Lock()
	s.LastError = c.lastErr
	s.LastErrorAt = c.lastErrAt
	c.mu.Unlock()
}

// deliver hands one message to the sink and does the bookkeeping common to
// both modes. A panicking sink (say, a decoder bug hit by one malformed
// payload) becomes an error: in embedded mode the hook runs on the gateway's
// connection goroutine, and an unrecovered panic there would take the whole
// appliance down with it.
func deliver(sink Sink, c *counters, log *slog.Logger, clientID, topic string, payload []byte, qos byte) (err error) {
	c.messages.Add(1)
	defer func() {
		if r := recover(); r != nil {
			log.Error("mqtt sink panicked", "client", clientID, "topic", topic, "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("sink panic: %v", r)
		}
		c.sinkResult(log, clientID, topic, qos, err)
	}()
	return sink.HandlePublish(clientID, topic, payload, qos)
}

// sinkResult counts a sink error and logs the transitions between failing
// and working (not every failure: a stuck disk would flood the log).
func (c *counters) sinkResult(log *slog.Logger, clientID, topic string, qos byte, err error) {
	if err != nil {
		c.sinkErrors.Add(1)
		c.setError("sink: " + err.Error())
		if c.sinkFailing.CompareAndSwap(false, true) {
			log.Warn("mqtt sink failing; QoS 1 messages are not acknowledged until it recovers",
				"client", clientID, "topic", topic, "qos", qos, "error", err)
		} else {
			log.Debug("mqtt sink error", "client", clientID, "topic", topic, "qos", qos, "error", err)
		}
	} else if c.sinkFailing.Load() && c.sinkFailing.CompareAndSwap(true, false) {
		log.Info("mqtt sink recovered")
	}
}

// credentialsMatch compares what a client sent with what is configured.
// Both fields are hashed first so the comparison time depends neither on
// where the strings differ nor on their lengths, and both comparisons always
// run so a wrong username takes as long as a wrong password. An unconfigured
// (empty) username or password refuses everyone: failing closed beats an
// appliance that silently accepts anonymous gateways.
func credentialsMatch(gotUser, gotPass []byte, wantUser, wantPass string) bool {
	gu, gp := sha256.Sum256(gotUser), sha256.Sum256(gotPass)
	wu, wp := sha256.Sum256([]byte(wantUser)), sha256.Sum256([]byte(wantPass))
	ok := subtle.ConstantTimeCompare(gu[:], wu[:]) & subtle.ConstantTimeCompare(gp[:], wp[:])
	return ok == 1 && wantUser != "" && wantPass != ""
}

func loggerOrDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

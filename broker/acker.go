package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// AsyncSink is a Sink that can acknowledge a QoS 1 publish after it has
// returned: HandlePublishAsync processes the publish in the caller's read
// loop and later calls ack, exactly once and from any goroutine, with nil
// once the publish is durable or with the error that kept it from being
// stored. ack must not block.
//
// Waiting for durability inside the read loop (plain Sink) allows one
// publish in flight per gateway, so a gateway's rate is capped at one
// message per group commit whatever its MQTT client allows. With an
// AsyncSink the embedded broker keeps reading while earlier publishes
// commit, and writes each PUBACK itself, in publish order, once its
// publish is durable: a PUBACK still means "stored".
type AsyncSink interface {
	Sink
	HandlePublishAsync(clientID, topic string, payload []byte, ack func(error))
}

// AckTimeoutCounter (optional, on the Sink) counts publishes refused
// because a connection's pending ones did not commit within AckWait.
type AckTimeoutCounter interface {
	AckTimedOut(topic string)
}

// DefaultMaxPending is how many QoS 1 publishes of one connection may wait
// for their commit before the broker stops reading from it (TCP
// backpressure), bounding what a gateway can queue.
const DefaultMaxPending = 32

// errAckWait: a connection's pending publishes did not commit within
// AckWait; the new publish is not taken.
var errAckWait = errors.New("pending publishes not committed in time")

type ackResult struct {
	pid uint16
	err error
}

// acker writes one connection's PUBACKs in publish order. Results come
// from the writer goroutine; slots bound them, so the results channel
// (same capacity) never blocks the writer, even after the connection is
// gone and nobody drains it.
type acker struct {
	cl      *mqtt.Client
	slots   chan struct{}
	results chan ackResult
	stop    chan struct{}
}

func newAcker(cl *mqtt.Client, max int) *acker {
	a := &acker{cl: cl, slots: make(chan struct{}, max), results: make(chan ackResult, max), stop: make(chan struct{})}
	go a.run()
	return a
}

func (a *acker) run() {
	for {
		select {
		case r := <-a.results:
			a.reply(r)
			<-a.slots
		case <-a.stop:
			return
		}
	}
}

// reply mirrors the synchronous path: a success PUBACK, or on failure no
// PUBACK and the connection closed (refuse), so the gateway resends
// everything unacknowledged when it reconnects.
func (a *acker) reply(r ackResult) {
	if r.err != nil {
		refuse(a.cl, r.err)
		return
	}
	ack := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, PacketID: r.pid}
	_ = a.cl.WritePacket(ack) // a closed connection: the gateway resends
}

// acquire takes a slot for one more pending publish, waiting up to wait.
func (a *acker) acquire(wait time.Duration) bool {
	select {
	case a.slots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case a.slots <- struct{}{}:
		return true
	case <-t.C:
		return false
	case <-a.stop:
		return false
	}
}

// deliverAsync is deliver for an AsyncSink: same counters, same panic
// guard; the result is accounted for when the ack comes.
func deliverAsync(sink AsyncSink, c *counters, log *slog.Logger, a *acker, clientID, topic string, payload []byte, pid uint16) {
	c.messages.Add(1)
	var once sync.Once
	ack := func(err error) {
		once.Do(func() {
			c.sinkResult(log, clientID, topic, 1, err)
			a.results <- ackResult{pid, err}
		})
	}
	defer func() {
		if r := recover(); r != nil {
			log.Error("mqtt sink panicked", "client", clientID, "topic", topic, "panic", r, "stack", string(debug.Stack()))
			ack(fmt.Errorf("sink panic: %v", r))
		}
	}()
	sink.HandlePublishAsync(clientID, topic, payload, ack)
}

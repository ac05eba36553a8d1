package broker

import (
	"errors"
	"sync"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"
)

// asyncSink records publishes and holds their acks until the test
// releases them, as the group-commit writer does until a commit.
type asyncSink struct {
	mu   sync.Mutex
	got  []string
	acks []func(error)
}

func (s *asyncSink) HandlePublish(string, string, []byte, byte) error {
	return errors.New("the async path must be used for QoS 1")
}

func (s *asyncSink) HandlePublishAsync(_, _ string, payload []byte, ack func(error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, string(payload))
	s.acks = append(s.acks, ack)
}

func (s *asyncSink) n() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

func (s *asyncSink) ack(i int, err error) {
	s.mu.Lock()
	a := s.acks[i]
	s.mu.Unlock()
	a(err)
}

func startAsync(t *testing.T, maxPending int) (*testBroker, *asyncSink) {
	sink := &asyncSink{}
	b := startEmbedded(t, func(o *EmbeddedOptions) {
		o.Sink = sink
		o.MaxPending = maxPending
	})
	return b, sink
}

// TestAsyncAckPipelinesAndKeepsOrder: a gateway may have several QoS 1
// publishes in flight; each PUBACK comes only once its publish is durable,
// and in publish order.
func TestAsyncAckPipelinesAndKeepsOrder(t *testing.T) {
	b, sink := startAsync(t, 8)
	c := dialRaw(t, b.Addr())
	if rc := c.connect(4, gwMAC, testUser, testPass); rc != 0 {
		t.Fatalf("connack %d", rc)
	}
	for i := uint16(1); i <= 3; i++ {
		c.publish("gw/"+gwMAC+"/adv1", []byte{'a' + byte(i)}, 1, i)
	}
	eventually(t, "three publishes taken before any commit", func() bool { return sink.n() == 3 })

	sink.ack(0, nil)
	sink.ack(1, nil)
	for want := uint16(1); want <= 2; want++ {
		pk, err := c.read()
		if err != nil || pk.FixedHeader.Type != packets.Puback || pk.PacketID != want {
			t.Fatalf("want PUBACK %d, got %s %v", want, pkString(pk), err)
		}
	}
	// The third is not durable: no PUBACK for it, the connection is alive.
	if err := c.write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pingreq}}); err != nil {
		t.Fatal(err)
	}
	if pk, err := c.read(); err != nil || pk.FixedHeader.Type != packets.Pingresp {
		t.Fatalf("want PINGRESP before the third PUBACK, got %s %v", pkString(pk), err)
	}
	sink.ack(2, nil)
	if pk, err := c.read(); err != nil || pk.PacketID != 3 {
		t.Fatalf("want PUBACK 3, got %s %v", pkString(pk), err)
	}
}

// TestAsyncAckBackpressure: with MaxPending publishes waiting, the broker
// stops reading from that connection until one commits.
func TestAsyncAckBackpressure(t *testing.T) {
	b, sink := startAsync(t, 2)
	c := dialRaw(t, b.Addr())
	c.connect(4, gwMAC, testUser, testPass)
	for i := uint16(1); i <= 3; i++ {
		c.publish("gw/"+gwMAC+"/adv1", []byte("x"), 1, i)
	}
	eventually(t, "two publishes taken", func() bool { return sink.n() == 2 })
	// Another gateway is served meanwhile, and its publish arriving proves
	// the broker had time to take the third one if it were going to.
	o := dialRaw(t, b.Addr())
	o.connect(4, "AC233FA0B1C3", testUser, testPass)
	o.publish("gw/AC233FA0B1C3/adv1", []byte("other"), 1, 1)
	eventually(t, "other gateway's publish", func() bool { return sink.n() == 3 })
	sink.mu.Lock()
	third := sink.got[2]
	sink.mu.Unlock()
	if third != "other" {
		t.Fatalf("a third publish of the blocked gateway was taken: %q", third)
	}
	sink.ack(0, nil)
	eventually(t, "the blocked publish is taken after a commit", func() bool { return sink.n() == 4 })
}

// TestAsyncAckFailureClosesMQTT311: a publish that could not be stored is
// never acknowledged; a 3.1.1 gateway is disconnected so it resends.
func TestAsyncAckFailureClosesMQTT311(t *testing.T) {
	b, sink := startAsync(t, 8)
	c := dialRaw(t, b.Addr())
	c.connect(4, gwMAC, testUser, testPass)
	c.publish("gw/"+gwMAC+"/adv1", []byte("x"), 1, 7)
	eventually(t, "publish taken", func() bool { return sink.n() == 1 })
	sink.ack(0, errors.New("disk full"))
	pk, err := c.read()
	if err == nil {
		t.Fatalf("want the connection closed, got %s", pkString(pk))
	}
	eventually(t, "sink error counted", func() bool { return b.Stats().SinkErrors == 1 })
}

// TestAsyncAckFailureMQTT5: an MQTT 5 gateway gets no PUBACK either, but
// a DISCONNECT with a failure reason code, and the connection is closed.
func TestAsyncAckFailureMQTT5(t *testing.T) {
	b, sink := startAsync(t, 8)
	c := dialRaw(t, b.Addr())
	c.connect(5, gwMAC, testUser, testPass)
	c.publish("gw/"+gwMAC+"/adv1", []byte("x"), 1, 9)
	eventually(t, "publish taken", func() bool { return sink.n() == 1 })
	sink.ack(0, errors.New("disk full"))
	pk, err := c.read()
	if err != nil || pk.FixedHeader.Type != packets.Disconnect || pk.ReasonCode < 0x80 {
		t.Fatalf("want a DISCONNECT with a failure code, got %s %v", pkString(pk), err)
	}
	if pk, err := c.read(); err == nil {
		t.Fatalf("got %s after the DISCONNECT, want the connection closed", pkString(pk))
	}
}

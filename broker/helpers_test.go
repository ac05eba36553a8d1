package broker

import (
	"beaconhub/broker/brokertest"
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/mochi-mqtt/server/v2/packets"
)

const (
	testUser = "gwuser"
	testPass = "s3cret-Pa55"
	waitFor  = 10 * time.Second
)

// eventually polls cond until it holds or the deadline passes. Tests never
// sleep for a fixed time: they wait for the condition they need.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitToken waits for a paho token with a deadline (a safety net, not a delay).
func waitToken(t testing.TB, what string, tok paho.Token) {
	t.Helper()
	select {
	case <-tok.Done():
	case <-time.After(waitFor):
		t.Fatalf("timed out waiting for %s", what)
	}
	if err := tok.Error(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

type msg struct {
	clientID, topic string
	payload         []byte
	qos             byte
}

// recordingSink records messages. hook, if set, runs first and decides the
// error (it may block).
type recordingSink struct {
	mu    sync.Mutex
	msgs  []msg
	hook  func(m msg) error
	calls atomic.Int64
}

func (s *recordingSink) HandlePublish(clientID, topic string, payload []byte, qos byte) error {
	s.calls.Add(1)
	m := msg{clientID, topic, payload, qos}
	s.mu.Lock()
	hook := s.hook
	s.mu.Unlock()
	if hook != nil {
		if err := hook(m); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.msgs = append(s.msgs, m)
	s.mu.Unlock()
	return nil
}

func (s *recordingSink) setHook(h func(m msg) error) {
	s.mu.Lock()
	s.hook = h
	s.mu.Unlock()
}

func (s *recordingSink) all() []msg {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]msg(nil), s.msgs...)
}

func (s *recordingSink) has(topic, payload string) bool {
	for _, m := range s.all() {
		if m.topic == topic && string(m.payload) == payload {
			return true
		}
	}
	return false
}

func (s *recordingSink) count(topic string) int {
	n := 0
	for _, m := range s.all() {
		if m.topic == topic {
			n++
		}
	}
	return n
}

// syncBuffer collects log output from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func debugLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type staticCreds struct {
	mu         sync.Mutex
	user, pass string
}

func (c *staticCreds) get() (string, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.user, c.pass
}

func (c *staticCreds) set(user, pass string) {
	c.mu.Lock()
	c.user, c.pass = user, pass
	c.mu.Unlock()
}

type testBroker struct {
	*Embedded
	sink  *recordingSink
	creds *staticCreds
	logs  *syncBuffer
}

func startEmbedded(t testing.TB, mod func(*EmbeddedOptions)) *testBroker {
	t.Helper()
	tb := &testBroker{sink: &recordingSink{}, creds: &staticCreds{user: testUser, pass: testPass}, logs: &syncBuffer{}}
	opts := EmbeddedOptions{
		Listen:      "127.0.0.1:0",
		Credentials: tb.creds.get,
		Sink:        tb.sink,
		Logger:      debugLogger(tb.logs),
	}
	if mod != nil {
		mod(&opts)
	}
	e, err := NewEmbedded(opts)
	if err != nil {
		t.Fatal(err)
	}
	tb.Embedded = e
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.Close()
		_, pw := tb.creds.get()
		for _, secret := range []string{pw, testPass} {
			if leaks(tb.logs.String(), secret) {
				t.Errorf("password found in broker logs")
			}
		}
	})
	return tb
}

// leaks reports whether secret appears in log in any of the forms a logger
// might render it: as text, as a formatted byte slice, or base64 (JSON).
func leaks(log, secret string) bool {
	return strings.Contains(log, secret) ||
		strings.Contains(log, fmt.Sprint([]byte(secret))) ||
		strings.Contains(log, base64.StdEncoding.EncodeToString([]byte(secret)))
}

// pahoOpts returns options for an MQTT 3.1.1 paho client of the embedded broker.
func pahoOpts(addr, id, user, pass string) *paho.ClientOptions {
	o := paho.NewClientOptions().AddBroker("tcp://" + addr).SetClientID(id)
	if user != "" {
		o.SetUsername(user)
	}
	if pass != "" {
		o.SetPassword(pass)
	}
	o.SetProtocolVersion(4)
	o.SetAutoReconnect(false)
	o.SetConnectRetry(false)
	o.SetConnectTimeout(waitFor)
	o.SetCleanSession(true)
	return o
}

func connectPaho(t testing.TB, o *paho.ClientOptions) paho.Client {
	t.Helper()
	c := paho.NewClient(o)
	waitToken(t, "paho connect", c.Connect())
	t.Cleanup(func() { c.Disconnect(0) })
	return c
}

// rawClient speaks MQTT over a plain TCP connection using mochi's packet
// codec, for what paho cannot do: MQTT 5, and observing exactly which
// packets the broker sends.
type rawClient struct {
	t       testing.TB
	conn    net.Conn
	r       *bufio.Reader
	version byte
}

func dialRaw(t testing.TB, addr string) *rawClient {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	// A safety net so a broken test fails instead of hanging.
	_ = conn.SetDeadline(time.Now().Add(waitFor))
	return &rawClient{t: t, conn: conn, r: bufio.NewReader(conn)}
}

func (c *rawClient) write(pk packets.Packet) error {
	var buf bytes.Buffer
	pk.ProtocolVersion = c.version
	var err error
	switch pk.FixedHeader.Type {
	case packets.Connect:
		err = pk.ConnectEncode(&buf)
	case packets.Publish:
		err = pk.PublishEncode(&buf)
	case packets.Subscribe:
		err = pk.SubscribeEncode(&buf)
	case packets.Pingreq:
		err = pk.PingreqEncode(&buf)
	case packets.Disconnect:
		err = pk.DisconnectEncode(&buf)
	default:
		err = fmt.Errorf("rawClient cannot encode packet type %d", pk.FixedHeader.Type)
	}
	if err != nil {
		return err
	}
	_, err = c.conn.Write(buf.Bytes())
	return err
}

func (c *rawClient) read() (packets.Packet, error) {
	var pk packets.Packet
	b, err := c.r.ReadByte()
	if err != nil {
		return pk, err
	}
	if err := pk.FixedHeader.Decode(b); err != nil {
		return pk, err
	}
	n, _, err := packets.DecodeLength(c.r)
	if err != nil {
		return pk, err
	}
	pk.FixedHeader.Remaining = n
	body := make([]byte, n)
	if _, err := io.ReadFull(c.r, body); err != nil {
		return pk, err
	}
	pk.ProtocolVersion = c.version
	switch pk.FixedHeader.Type {
	case packets.Connack:
		err = pk.ConnackDecode(body)
	case packets.Puback:
		err = pk.PubackDecode(body)
	case packets.Suback:
		err = pk.SubackDecode(body)
	case packets.Disconnect:
		err = pk.DisconnectDecode(body)
	case packets.Pingresp:
	default:
		err = fmt.Errorf("unexpected packet type %d", pk.FixedHeader.Type)
	}
	return pk, err
}

func connectPacket(version byte, id, user, pass string) packets.Packet {
	name := "MQTT"
	if version == 3 {
		name = "MQIsdp"
	}
	pk := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Connect},
		ProtocolVersion: version,
		Connect: packets.ConnectParams{
			ProtocolName:     []byte(name),
			Clean:            true,
			Keepalive:        60,
			ClientIdentifier: id,
		},
	}
	if user != "" {
		pk.Connect.UsernameFlag, pk.Connect.Username = true, []byte(user)
	}
	if pass != "" {
		pk.Connect.PasswordFlag, pk.Connect.Password = true, []byte(pass)
	}
	return pk
}

func encode(t testing.TB, pk packets.Packet) []byte {
	t.Helper()
	var buf bytes.Buffer
	var err error
	switch pk.FixedHeader.Type {
	case packets.Connect:
		err = pk.ConnectEncode(&buf)
	case packets.Publish:
		err = pk.PublishEncode(&buf)
	default:
		err = fmt.Errorf("encode: packet type %d", pk.FixedHeader.Type)
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func pkString(pk packets.Packet) string {
	return fmt.Sprintf("%s(id=%d reason=%#x codes=%v)", packets.PacketNames[pk.FixedHeader.Type], pk.PacketID, pk.ReasonCode, pk.ReasonCodes)
}

func newReader(conn net.Conn) *bufio.Reader { return bufio.NewReader(conn) }

func slogAt(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		panic(err)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

// connect sends CONNECT and returns the CONNACK reason code.
func (c *rawClient) connect(version byte, id, user, pass string) byte {
	c.t.Helper()
	c.version = version
	if err := c.write(connectPacket(version, id, user, pass)); err != nil {
		c.t.Fatal(err)
	}
	ack, err := c.read()
	if err != nil {
		c.t.Fatalf("reading CONNACK: %v", err)
	}
	if ack.FixedHeader.Type != packets.Connack {
		c.t.Fatalf("got packet type %d, want CONNACK", ack.FixedHeader.Type)
	}
	return ack.ReasonCode
}

func (c *rawClient) publish(topic string, payload []byte, qos byte, id uint16) {
	c.t.Helper()
	pk := packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: qos},
		TopicName:   topic,
		Payload:     payload,
		PacketID:    id,
	}
	if err := c.write(pk); err != nil {
		c.t.Fatal(err)
	}
}

// requireBinary finds an external tool: skipped without it, unless CI is
// set (the Makefile installs it there, so absence is a failure).
func requireBinary(t testing.TB, name string) string { return brokertest.Need(t, name) }

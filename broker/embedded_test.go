package broker

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/mochi-mqtt/server/v2/packets"
)

const gwMAC = "AC233FA0B1C2"

func TestEmbeddedPublishQoS0AndQoS1(t *testing.T) {
	b := startEmbedded(t, nil)
	c := connectPaho(t, pahoOpts(b.Addr(), gwMAC, testUser, testPass))

	waitToken(t, "qos0 publish", c.Publish("gw/"+gwMAC+"/adv1", 0, false, `{"q":0}`))
	waitToken(t, "qos1 publish", c.Publish("gw/"+gwMAC+"/adv4", 1, false, `{"q":1}`))

	eventually(t, "both messages at the sink", func() bool { return len(b.sink.all()) == 2 })
	got := b.sink.all()
	want := []msg{
		{gwMAC, "gw/" + gwMAC + "/adv1", []byte(`{"q":0}`), 0},
		{gwMAC, "gw/" + gwMAC + "/adv4", []byte(`{"q":1}`), 1},
	}
	for i := range want {
		if got[i].clientID != want[i].clientID || got[i].topic != want[i].topic ||
			!bytes.Equal(got[i].payload, want[i].payload) || got[i].qos != want[i].qos {
			t.Errorf("message %d = %+v, want %+v", i, got[i], want[i])
		}
	}

	st := b.Stats()
	if st.Mode != "embedded" || !st.Listening || st.Listen != b.Addr() {
		t.Errorf("stats mode/listen = %q %v %q", st.Mode, st.Listening, st.Listen)
	}
	if st.Clients != 1 || st.ConnectsTotal != 1 || st.MessagesReceived != 2 || st.SinkErrors != 0 {
		t.Errorf("stats = %+v", st)
	}
}

func TestEmbeddedRefusesBadCredentialsAtConnect(t *testing.T) {
	b := startEmbedded(t, nil)

	for _, tc := range []struct{ name, user, pass string }{
		{"wrong password", testUser, "wrong"},
		{"wrong user", "other", testPass},
		{"anonymous", "", ""},
		{"no password", testUser, ""},
	} {
		t.Run("paho 3.1.1 "+tc.name, func(t *testing.T) {
			c := paho.NewClient(pahoOpts(b.Addr(), gwMAC, tc.user, tc.pass))
			tok := c.Connect()
			if !tok.WaitTimeout(waitFor) {
				t.Fatal("connect did not complete")
			}
			if tok.Error() == nil {
				c.Disconnect(0)
				t.Fatal("connect succeeded")
			}
			if rc := tok.(*paho.ConnectToken).ReturnCode(); rc != 5 {
				t.Errorf("CONNACK return code = %d, want 5 (not authorized)", rc)
			}
		})
		t.Run("raw 5 "+tc.name, func(t *testing.T) {
			rc := dialRaw(t, b.Addr()).connect(5, gwMAC, tc.user, tc.pass)
			if rc != packets.ErrBadUsernameOrPassword.Code {
				t.Errorf("CONNACK reason = %#x, want %#x", rc, packets.ErrBadUsernameOrPassword.Code)
			}
		})
	}

	st := b.Stats()
	if st.AuthFailures != 8 || st.ConnectsTotal != 0 || st.Clients != 0 {
		t.Errorf("stats = %+v", st)
	}
	if !strings.Contains(st.LastError, "refused") {
		t.Errorf("LastError = %q", st.LastError)
	}
}

func TestEmbeddedSubscribeDenied(t *testing.T) {
	b := startEmbedded(t, nil)
	c := connectPaho(t, pahoOpts(b.Addr(), gwMAC, testUser, testPass))

	tok := c.Subscribe("gw/#", 1, func(paho.Client, paho.Message) {})
	waitToken(t, "subscribe", tok)
	if code := tok.(*paho.SubscribeToken).Result()["gw/#"]; code != 0x80 {
		t.Errorf("SUBACK code = %#x, want 0x80 (failure)", code)
	}

	raw := dialRaw(t, b.Addr())
	if rc := raw.connect(5, "sub5", testUser, testPass); rc != 0 {
		t.Fatalf("connect rc %#x", rc)
	}
	if err := raw.write(packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Subscribe, Qos: 1},
		PacketID:    1,
		Filters:     packets.Subscriptions{{Filter: "$SYS/#", Qos: 0}},
	}); err != nil {
		t.Fatal(err)
	}
	ack, err := raw.read()
	if err != nil {
		t.Fatal(err)
	}
	if ack.FixedHeader.Type != packets.Suback || len(ack.ReasonCodes) != 1 || ack.ReasonCodes[0] != packets.ErrNotAuthorized.Code {
		t.Errorf("got %s, want SUBACK [0x87]", pkString(ack))
	}

	if d := b.Stats().ACLDenials; d != 2 {
		t.Errorf("ACLDenials = %d, want 2", d)
	}
}

func TestEmbeddedPublishOutsideGwNotDelivered(t *testing.T) {
	b := startEmbedded(t, nil)
	c := connectPaho(t, pahoOpts(b.Addr(), gwMAC, testUser, testPass))

	// Messages on one connection are processed in order, so once the marker
	// has arrived the earlier publishes have been dealt with.
	waitToken(t, "publish", c.Publish("other/topic", 0, false, "x"))
	waitToken(t, "publish", c.Publish("gwx/"+gwMAC+"/adv1", 0, false, "x"))
	waitToken(t, "publish", c.Publish("gw/"+gwMAC+"/adv1", 0, false, "marker"))
	eventually(t, "marker", func() bool { return b.sink.has("gw/"+gwMAC+"/adv1", "marker") })

	// MQTT 5 gets a negative PUBACK for a denied QoS 1 publish.
	raw := dialRaw(t, b.Addr())
	if rc := raw.connect(5, "pub5", testUser, testPass); rc != 0 {
		t.Fatalf("connect rc %#x", rc)
	}
	raw.publish("elsewhere/x", []byte("x"), 1, 9)
	ack, err := raw.read()
	if err != nil {
		t.Fatal(err)
	}
	if ack.FixedHeader.Type != packets.Puback || ack.PacketID != 9 || ack.ReasonCode != packets.ErrNotAuthorized.Code {
		t.Errorf("got %s, want PUBACK 0x87", pkString(ack))
	}

	if n := len(b.sink.all()); n != 1 {
		t.Errorf("sink got %d messages, want only the marker: %+v", n, b.sink.all())
	}
	if d := b.Stats().ACLDenials; d != 3 {
		t.Errorf("ACLDenials = %d, want 3", d)
	}
}

func TestEmbeddedChangedCredentialsApplyToNewConnections(t *testing.T) {
	b := startEmbedded(t, nil)
	old := connectPaho(t, pahoOpts(b.Addr(), "OLD000000001", testUser, testPass))

	b.creds.set("newuser", "n3w-pass")

	c := paho.NewClient(pahoOpts(b.Addr(), "OLD000000002", testUser, testPass))
	if tok := c.Connect(); !tok.WaitTimeout(waitFor) || tok.Error() == nil {
		t.Fatal("old credentials still accepted for a new connection")
	}
	fresh := connectPaho(t, pahoOpts(b.Addr(), "NEW000000001", "newuser", "n3w-pass"))
	waitToken(t, "publish with new creds", fresh.Publish("gw/NEW000000001/adv1", 1, false, "new"))

	// Existing sessions are not cut off by a password change.
	waitToken(t, "publish on old connection", old.Publish("gw/OLD000000001/adv1", 1, false, "old"))
	if !b.sink.has("gw/NEW000000001/adv1", "new") || !b.sink.has("gw/OLD000000001/adv1", "old") {
		t.Errorf("sink = %+v", b.sink.all())
	}
}

func TestEmbeddedSinkErrorWithholdsPubackMQTT311(t *testing.T) {
	b := startEmbedded(t, nil)
	b.sink.setHook(func(m msg) error {
		if string(m.payload) == "fail" {
			return errors.New("disk full")
		}
		return nil
	})

	t.Run("paho", func(t *testing.T) {
		lost := make(chan error, 1)
		o := pahoOpts(b.Addr(), gwMAC, testUser, testPass)
		o.SetConnectionLostHandler(func(_ paho.Client, err error) { lost <- err })
		c := connectPaho(t, o)
		tok := c.Publish("gw/"+gwMAC+"/adv4", 1, false, "fail")
		select {
		case <-lost:
		case <-time.After(waitFor):
			t.Fatal("client was not disconnected after the sink error")
		}
		// paho fails outstanding tokens when the connection drops; a
		// PUBACK would have completed it without error.
		select {
		case <-tok.Done():
			if tok.Error() == nil {
				t.Fatal("QoS 1 publish was acknowledged although the sink failed")
			}
		default:
		}
	})

	t.Run("raw", func(t *testing.T) {
		raw := dialRaw(t, b.Addr())
		if rc := raw.connect(4, "RAW311", testUser, testPass); rc != 0 {
			t.Fatalf("connect rc %#x", rc)
		}
		calls := b.sink.calls.Load()
		// The second message is pipelined behind the failing one: it
		// must not be processed or acked either (the gateway resends both).
		raw.publish("gw/RAW311/adv4", []byte("fail"), 1, 1)
		raw.publish("gw/RAW311/adv4", []byte("fine"), 1, 2)
		pk, err := raw.read()
		if err == nil {
			t.Fatalf("got packet %s (id %d), want the connection closed without PUBACK",
				packets.PacketNames[pk.FixedHeader.Type], pk.PacketID)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatal("connection not closed")
		}
		if n := b.sink.calls.Load() - calls; n != 1 {
			t.Errorf("sink called %d times, want 1", n)
		}
	})

	if st := b.Stats(); st.SinkErrors != 2 || !strings.Contains(st.LastError, "disk full") {
		t.Errorf("stats = %+v", st)
	}
	eventually(t, "clients gone", func() bool { return b.Stats().Clients == 0 })
}

// TestEmbeddedSinkErrorMQTT5ClosesWithoutPuback: an MQTT 5 gateway whose
// QoS 1 message was not stored gets no PUBACK (a failure reason code would
// complete the exchange, and it need not resend after one) but a
// DISCONNECT saying why; its resend after reconnecting is stored.
func TestEmbeddedSinkErrorMQTT5ClosesWithoutPuback(t *testing.T) {
	b := startEmbedded(t, nil)
	var fail atomic.Bool
	fail.Store(true)
	b.sink.setHook(func(msg) error {
		if fail.Load() {
			return errors.New("commit failed")
		}
		return nil
	})
	raw := dialRaw(t, b.Addr())
	if rc := raw.connect(5, gwMAC, testUser, testPass); rc != 0 {
		t.Fatalf("connect rc %#x", rc)
	}

	raw.publish("gw/"+gwMAC+"/adv4", []byte("p1"), 1, 1)
	pk, err := raw.read()
	if err != nil {
		t.Fatal(err)
	}
	if pk.FixedHeader.Type != packets.Disconnect || pk.ReasonCode < 0x80 {
		t.Fatalf("got %s, want DISCONNECT with a failure reason code", pkString(pk))
	}
	if pk, err := raw.read(); err == nil {
		t.Fatalf("got %s after the DISCONNECT, want the connection closed", pkString(pk))
	}

	// The gateway reconnects and resends; this time it is stored.
	fail.Store(false)
	raw = dialRaw(t, b.Addr())
	if rc := raw.connect(5, gwMAC, testUser, testPass); rc != 0 {
		t.Fatalf("reconnect rc %#x", rc)
	}
	raw.publish("gw/"+gwMAC+"/adv4", []byte("p1"), 1, 2)
	ack, err := raw.read()
	if err != nil {
		t.Fatal(err)
	}
	if ack.FixedHeader.Type != packets.Puback || ack.PacketID != 2 || ack.ReasonCode != 0 {
		t.Fatalf("got %s, want PUBACK success", pkString(ack))
	}
	if b.sink.count("gw/"+gwMAC+"/adv4") != 1 {
		t.Errorf("sink = %+v", b.sink.all())
	}
}

func TestEmbeddedPubackOnlyAfterSinkReturns(t *testing.T) {
	b := startEmbedded(t, nil)
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	var returned atomic.Bool
	b.sink.setHook(func(m msg) error {
		if string(m.payload) == "press" {
			entered <- struct{}{}
			<-release
			returned.Store(true)
		}
		return nil
	})

	c := connectPaho(t, pahoOpts(b.Addr(), gwMAC, testUser, testPass))
	tok := c.Publish("gw/"+gwMAC+"/adv4", 1, false, "press")
	select {
	case <-entered:
	case <-time.After(waitFor):
		t.Fatal("sink not called")
	}

	// A complete QoS 1 round trip of another gateway: the broker is alive
	// and answering, yet the blocked message has no PUBACK.
	other := connectPaho(t, pahoOpts(b.Addr(), "AC233FA0B1C3", testUser, testPass))
	waitToken(t, "other gateway publish", other.Publish("gw/AC233FA0B1C3/adv1", 1, false, "x"))
	select {
	case <-tok.Done():
		t.Fatal("PUBACK arrived while the sink was still blocked")
	default:
	}

	close(release)
	waitToken(t, "PUBACK after release", tok)
	if !returned.Load() {
		t.Fatal("PUBACK arrived before the sink returned")
	}
}

func TestEmbeddedAcceptsOneMiBPayload(t *testing.T) {
	b := startEmbedded(t, nil)
	c := connectPaho(t, pahoOpts(b.Addr(), gwMAC, testUser, testPass))
	big := make([]byte, MaxPayload)
	_, _ = rand.Read(big)
	waitToken(t, "1 MiB publish", c.Publish("gw/"+gwMAC+"/adv1", 1, false, big))
	got := b.sink.all()
	if len(got) != 1 || !bytes.Equal(got[0].payload, big) {
		t.Fatalf("sink did not get the 1 MiB payload intact")
	}
	if !c.IsConnectionOpen() {
		t.Error("client disconnected")
	}
}

func TestEmbeddedDoesNotRetain(t *testing.T) {
	b := startEmbedded(t, nil)
	c := connectPaho(t, pahoOpts(b.Addr(), gwMAC, testUser, testPass))
	waitToken(t, "retained publish", c.Publish("gw/"+gwMAC+"/status", 1, true, `{"fw":"1"}`))
	if !b.sink.has("gw/"+gwMAC+"/status", `{"fw":"1"}`) {
		t.Fatal("retained publish not delivered to the sink")
	}
	for topic := range b.server.Topics.Retained.GetAll() {
		if strings.HasPrefix(topic, "gw/") {
			t.Errorf("broker retained %q", topic)
		}
	}
}

type recordingObserver struct {
	mu     sync.Mutex
	state  map[string]bool
	remote map[string]string
	events []string
}

func newRecordingObserver() *recordingObserver {
	return &recordingObserver{state: map[string]bool{}, remote: map[string]string{}}
}

func (o *recordingObserver) ClientConnected(id, remote string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.state[id] = true
	o.remote[id] = remote
	o.events = append(o.events, "+"+id)
}

func (o *recordingObserver) ClientDisconnected(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.state[id] = false
	o.events = append(o.events, "-"+id)
}

func (o *recordingObserver) PacketTooLarge(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, "!"+id)
}

func (o *recordingObserver) has(event string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Contains(o.events, event)
}

func (o *recordingObserver) connected(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.state[id]
}

func (o *recordingObserver) connectedCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, v := range o.state {
		if v {
			n++
		}
	}
	return n
}

func TestEmbeddedObserverSurvivesSessionTakeover(t *testing.T) {
	obs := newRecordingObserver()
	b := startEmbedded(t, func(o *EmbeddedOptions) { o.Observer = obs })

	lost := make(chan struct{}, 1)
	o1 := pahoOpts(b.Addr(), gwMAC, testUser, testPass)
	o1.SetConnectionLostHandler(func(paho.Client, error) { lost <- struct{}{} })
	connectPaho(t, o1)
	eventually(t, "observer connected", func() bool { return obs.connected(gwMAC) })
	obs.mu.Lock()
	remote := obs.remote[gwMAC]
	obs.mu.Unlock()
	if _, _, err := net.SplitHostPort(remote); err != nil {
		t.Errorf("observer remote address %q: %v", remote, err)
	}

	// The gateway reconnects (same client id) before the broker noticed
	// the old connection was gone: mochi takes the session over and
	// closes the old connection, whose disconnect arrives late.
	c2 := connectPaho(t, pahoOpts(b.Addr(), gwMAC, testUser, testPass))
	select {
	case <-lost:
	case <-time.After(waitFor):
		t.Fatal("old connection not closed on takeover")
	}
	// Counters move after the observer is told: two connects and one
	// client left means the old connection's disconnect has been handled.
	eventually(t, "takeover handled", func() bool {
		st := b.Stats()
		return st.ConnectsTotal == 2 && st.Clients == 1
	})
	if !obs.connected(gwMAC) {
		t.Fatalf("gateway marked offline after takeover; events %v", obs.events)
	}

	c2.Disconnect(0)
	eventually(t, "observer disconnected", func() bool { return !obs.connected(gwMAC) })
	eventually(t, "no clients", func() bool { return b.Stats().Clients == 0 })
	if st := b.Stats(); st.ConnectsTotal != 2 {
		t.Errorf("ConnectsTotal = %d, want 2", st.ConnectsTotal)
	}
}

func raiseNoFile(t *testing.T, need uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur >= need {
		return
	}
	lim.Cur = min(need, lim.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < need {
		t.Fatalf("need %d open files, limit is %d (hard %d): %v", need, lim.Cur, lim.Max, err)
	}
}

func TestEmbeddedThousandConcurrentConnections(t *testing.T) {
	const n = 1000
	raiseNoFile(t, 2*n+200) // both ends of every connection live in this process
	obs := newRecordingObserver()
	b := startEmbedded(t, func(o *EmbeddedOptions) {
		o.Observer = obs
		o.Logger = nil // 1000 connects of debug logs only slow the test down
	})

	conns := make([]*rawClient, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 16 {
				conn, err := net.Dial("tcp", b.Addr())
				if err != nil {
					errs <- err
					return
				}
				_ = conn.SetDeadline(time.Now().Add(waitFor))
				rc := &rawClient{t: t, conn: conn, r: newReader(conn), version: 4}
				conns[i] = rc
				if err := rc.write(connectPacket(4, fmt.Sprintf("GW%010d", i), testUser, testPass)); err != nil {
					errs <- err
					return
				}
				ack, err := rc.read()
				if err != nil || ack.FixedHeader.Type != packets.Connack || ack.ReasonCode != 0 {
					errs <- fmt.Errorf("client %d: %s, %v", i, pkString(ack), err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, c := range conns {
			if c != nil {
				_ = c.conn.Close()
			}
		}
	})

	eventually(t, "1000 clients", func() bool { return b.Stats().Clients == n })
	if got := obs.connectedCount(); got != n {
		t.Errorf("observer sees %d connected, want %d", got, n)
	}
	// Still serving: a publish from the last one gets through.
	last := conns[n-1]
	last.publish("gw/GW0000000999/adv1", []byte("hi"), 1, 1)
	if ack, err := last.read(); err != nil || ack.FixedHeader.Type != packets.Puback {
		t.Fatalf("publish on connection 1000: %s %v", pkString(ack), err)
	}

	for _, c := range conns {
		_ = c.conn.Close()
	}
	eventually(t, "all disconnected", func() bool { return b.Stats().Clients == 0 })
	eventually(t, "observer all offline", func() bool { return obs.connectedCount() == 0 })
}

func TestEmbeddedMaxClients(t *testing.T) {
	b := startEmbedded(t, func(o *EmbeddedOptions) { o.MaxClients = 2 })
	for i := range 2 {
		if rc := dialRaw(t, b.Addr()).connect(4, fmt.Sprintf("C%d", i), testUser, testPass); rc != 0 {
			t.Fatalf("client %d refused: %#x", i, rc)
		}
	}
	eventually(t, "two clients", func() bool { return b.Stats().Clients == 2 })
	if rc := dialRaw(t, b.Addr()).connect(4, "C3", testUser, testPass); rc != packets.Err3ServerUnavailable.Code {
		t.Fatalf("third client: rc %#x, want server unavailable", rc)
	}
}

// A gateway gone mad (or a scanner) must not disturb the others.
func TestEmbeddedGarbageFloodDoesNotStopOthers(t *testing.T) {
	b := startEmbedded(t, func(o *EmbeddedOptions) { o.Logger = nil })
	good := connectPaho(t, pahoOpts(b.Addr(), gwMAC, testUser, testPass))

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var attacks atomic.Int64
	junk := make([]byte, 8<<10)
	_, _ = rand.Read(junk)
	connect := encode(t, connectPacket(4, "BADGW0000001", testUser, testPass))
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				select {
				case <-stop:
					return
				default:
				}
				conn, err := net.Dial("tcp", b.Addr())
				if err != nil {
					continue
				}
				_ = conn.SetDeadline(time.Now().Add(waitFor))
				switch w % 4 {
				case 0: // random bytes instead of CONNECT
					_, _ = conn.Write(junk)
				case 1: // CONNECT announcing a 256 MiB body
					_, _ = conn.Write([]byte{0x10, 0xff, 0xff, 0xff, 0x7f})
				case 2: // authenticated, then junk and an oversized PUBLISH
					_, _ = conn.Write(connect)
					_, _ = conn.Write([]byte{0x32, 0xff, 0xff, 0xff, 0x7f})
					_, _ = conn.Write(junk)
				case 3: // half a CONNECT, then hang up
					_, _ = conn.Write(connect[:len(connect)/2])
				}
				attacks.Add(1)
				_ = conn.Close()
			}
		}()
	}

	const n = 200
	for i := range n {
		waitToken(t, "good publish", good.Publish("gw/"+gwMAC+"/adv1", 1, false, strconv.Itoa(i)))
	}
	close(stop)
	wg.Wait()
	if got := b.sink.count("gw/" + gwMAC + "/adv1"); got != n {
		t.Fatalf("good gateway: %d of %d messages at the sink", got, n)
	}
	if !good.IsConnectionOpen() {
		t.Fatal("good gateway was disconnected")
	}
	t.Logf("%d garbage connections during the run", attacks.Load())
	// And the broker still takes new gateways.
	connectPaho(t, pahoOpts(b.Addr(), "AC233FA0B1C9", testUser, testPass))
}

// flakyListener fails Accept a few times the way a process out of file
// descriptors does.
type flakyListener struct {
	net.Listener
	failures atomic.Int32
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.failures.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

func TestEmbeddedKeepsAcceptingAfterAcceptErrors(t *testing.T) {
	fl := &flakyListener{}
	fl.failures.Store(4)
	tb := &testBroker{sink: &recordingSink{}, creds: &staticCreds{user: testUser, pass: testPass}, logs: &syncBuffer{}}
	e, err := NewEmbedded(EmbeddedOptions{Listen: "127.0.0.1:0", Credentials: tb.creds.get, Sink: tb.sink, Logger: debugLogger(tb.logs)})
	if err != nil {
		t.Fatal(err)
	}
	e.wrapListener = func(l net.Listener) net.Listener { fl.Listener = l; return fl }
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })

	c := connectPaho(t, pahoOpts(e.Addr(), gwMAC, testUser, testPass))
	waitToken(t, "publish", c.Publish("gw/"+gwMAC+"/adv1", 1, false, "x"))
	if st := e.Stats(); !strings.Contains(st.LastError, "too many open files") {
		t.Errorf("LastError = %q", st.LastError)
	}
}

func TestEmbeddedCloseWaitsForSink(t *testing.T) {
	b := startEmbedded(t, nil)
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	var returned atomic.Bool
	b.sink.setHook(func(msg) error {
		entered <- struct{}{}
		<-release
		returned.Store(true)
		return nil
	})
	c := connectPaho(t, pahoOpts(b.Addr(), gwMAC, testUser, testPass))
	c.Publish("gw/"+gwMAC+"/adv4", 1, false, "x")
	<-entered

	closed := make(chan struct{})
	go func() {
		_ = b.Close()
		close(closed)
	}()
	eventually(t, "listener closed", func() bool {
		conn, err := net.Dial("tcp", b.Addr())
		if err == nil {
			_ = conn.Close()
		}
		return err != nil
	})
	select {
	case <-closed:
		t.Fatal("Close returned while a sink call was in progress")
	default:
	}
	close(release)
	select {
	case <-closed:
	case <-time.After(waitFor):
		t.Fatal("Close did not return")
	}
	if !returned.Load() {
		t.Fatal("sink did not finish")
	}
	if st := b.Stats(); st.Listening {
		t.Error("still Listening after Close")
	}
}

func TestEmbeddedSecondConnectDoesNotLogPassword(t *testing.T) {
	b := startEmbedded(t, nil)
	raw := dialRaw(t, b.Addr())
	if rc := raw.connect(5, gwMAC, testUser, testPass); rc != 0 {
		t.Fatalf("rc %#x", rc)
	}
	// A second CONNECT is a protocol error that mochi logs with the whole
	// packet, password included, unless we scrub it.
	if err := raw.write(connectPacket(5, gwMAC, testUser, testPass)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "mochi's protocol error in the debug log", func() bool {
		return strings.Contains(b.logs.String(), "error processing packet")
	})
	// startEmbedded's cleanup fails the test if the password is in the log.
}

func TestEmbeddedWithMosquittoPub(t *testing.T) {
	pub := requireBinary(t, "mosquitto_pub")
	b := startEmbedded(t, nil)
	host, port, _ := net.SplitHostPort(b.Addr())

	run := func(version, user, pass, topic, payload string) error {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		out, err := exec.CommandContext(ctx, pub, "-h", host, "-p", port, "-V", version,
			"-i", gwMAC, "-u", user, "-P", pass, "-q", "1", "-t", topic, "-m", payload).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
	for _, v := range []string{"mqttv311", "mqttv5"} {
		topic := "gw/" + gwMAC + "/adv1"
		payload := `{"v":"` + v + `"}`
		if err := run(v, testUser, testPass, topic, payload); err != nil {
			t.Fatalf("mosquitto_pub %s: %v", v, err)
		}
		if !b.sink.has(topic, payload) {
			t.Errorf("%s: message not at the sink", v)
		}
		if err := run(v, testUser, "wrong", topic, "nope"); err == nil {
			t.Errorf("%s: wrong password accepted", v)
		}
	}
	if st := b.Stats(); st.AuthFailures != 2 || st.MessagesReceived != 2 {
		t.Errorf("stats = %+v", st)
	}
}

func TestCredentialsMatch(t *testing.T) {
	for _, tc := range []struct {
		gu, gp, wu, wp string
		ok             bool
	}{
		{"u", "p", "u", "p", true},
		{"u", "p", "u", "q", false},
		{"v", "p", "u", "p", false},
		{"u", "pp", "u", "p", false},
		{"", "", "", "", false},   // nothing configured: fail closed
		{"u", "", "u", "", false}, // empty password never accepted
	} {
		if got := credentialsMatch([]byte(tc.gu), []byte(tc.gp), tc.wu, tc.wp); got != tc.ok {
			t.Errorf("credentialsMatch(%q,%q,%q,%q) = %v", tc.gu, tc.gp, tc.wu, tc.wp, got)
		}
	}
}

func TestMochiLoggerScrubsAndDemotes(t *testing.T) {
	var buf syncBuffer
	l := newMochiLogger(debugLogger(&buf))
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Connect}}
	pk.Connect.Password = []byte("hunter2")
	pk.Payload = []byte("payload-bytes")
	l.Warn("error processing packet", "pk", pk, "client", "x")
	l.With("packet", &pk).Error("publish packet error")
	l.Error("failed to load clients")
	out := buf.String()
	for _, secret := range []string{"hunter2", "payload-bytes"} {
		if leaks(out, secret) {
			t.Errorf("log contains %q:\n%s", secret, out)
		}
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 ||
		!strings.Contains(lines[0], "level=DEBUG") || !strings.Contains(lines[0], "pk=Connect") ||
		!strings.Contains(lines[1], "level=DEBUG") ||
		!strings.Contains(lines[2], "level=WARN") {
		t.Errorf("unexpected log:\n%s", out)
	}

	// At Info (the appliance default) mochi's per-client noise is silent.
	buf = syncBuffer{}
	quiet := newMochiLogger(slogAt(&buf, "INFO"))
	quiet.Warn("", "error", "EOF")
	quiet.Info("added hook")
	if buf.String() != "" {
		t.Errorf("expected nothing at Info, got:\n%s", buf.String())
	}
}

// TestEmbeddedCloseSaysGoodbyeAndNeverHangs: an MQTT 5 gateway gets
// DISCONNECT "server shutting down" when the broker closes, and closing
// while gateways keep connecting and leaving returns (mochi's own
// shutdown walk can deadlock against a concurrent connect or disconnect).
func TestEmbeddedCloseSaysGoodbyeAndNeverHangs(t *testing.T) {
	for round := 0; round < 20; round++ {
		b := startEmbedded(t, nil)
		v5 := dialRaw(t, b.Addr())
		if rc := v5.connect(5, gwMAC, testUser, testPass); rc != 0 {
			t.Fatalf("connack %d", rc)
		}
		// Its session is established (the hook runs just after CONNACK).
		eventually(t, "session established", func() bool { return b.Stats().Clients == 1 })
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					conn, err := net.Dial("tcp", b.Addr())
					if err != nil {
						return
					}
					c := &rawClient{t: t, conn: conn, r: newReader(conn), version: 4}
					_ = c.write(connectPacket(4, fmt.Sprintf("AC233FA0%02X%02X", g, i%256), testUser, testPass))
					_, _ = c.read()
					_ = conn.Close()
				}
			}(g)
		}
		closed := make(chan struct{})
		go func() { _ = b.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(waitFor):
			t.Fatalf("round %d: Close hung while clients came and went", round)
		}
		close(stop)
		wg.Wait()
		pk, err := v5.read()
		if err != nil || pk.FixedHeader.Type != packets.Disconnect || pk.ReasonCode != packets.ErrServerShuttingDown.Code {
			t.Fatalf("round %d: MQTT 5 client got %s %v, want DISCONNECT server shutting down", round, pkString(pk), err)
		}
	}
}

// A packet over the broker's limit cannot be read, so the broker closes
// the connection; it is reported to the observer (a too_large drop of
// that gateway) and as the broker's last error, where it was counted
// nowhere (a black-box check).
func TestEmbeddedPacketTooLargeIsReported(t *testing.T) {
	obs := newRecordingObserver()
	b := startEmbedded(t, func(o *EmbeddedOptions) { o.Observer = obs })
	c := connectPaho(t, pahoOpts(b.Addr(), gwMAC, testUser, testPass))
	c.Publish("gw/"+gwMAC+"/adv1", 1, false, bytes.Repeat([]byte("x"), maxPacketSize+1))
	eventually(t, "the oversize reported", func() bool { return obs.has("!" + gwMAC) })
	eventually(t, "the connection closed", func() bool { return !obs.connected(gwMAC) })
	if st := b.Stats(); !strings.Contains(st.LastError, "over") {
		t.Errorf("last error %q", st.LastError)
	}
}

package broker

import (
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func fastRetry(int) time.Duration { return 10 * time.Millisecond }

type testExternal struct {
	*External
	sink *recordingSink
	logs *syncBuffer
}

func startExternal(t *testing.T, opts ExternalOptions) *testExternal {
	t.Helper()
	tx := &testExternal{sink: &recordingSink{}, logs: &syncBuffer{}}
	if opts.Sink == nil {
		opts.Sink = tx.sink
	}
	opts.Logger = debugLogger(tx.logs)
	if opts.retryDelay == nil {
		opts.retryDelay = fastRetry
	}
	x, err := NewExternal(opts)
	if err != nil {
		t.Fatal(err)
	}
	tx.External = x
	if err := x.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = x.Close()
		if leaks(tx.logs.String(), testPass) {
			t.Errorf("password found in external client logs")
		}
	})
	return tx
}

func creds(user, pass string) Credentials { return func() (string, string) { return user, pass } }

func TestExternalReceivesReconnectsAndResubscribes(t *testing.T) {
	mq := startMosquitto(t)
	// A retained message from before we connected: replaying it as live
	// data would resurrect an old event, so it must be skipped.
	mq.publish("gw/"+gwMAC+"/adv4", "old-retained", 1, true)

	x := startExternal(t, ExternalOptions{URL: mq.url(), Credentials: creds(testUser, testPass), ClientID: "beaconhub-test1"})
	eventually(t, "connected", func() bool { return x.Stats().Connected })

	mq.publish("gw/"+gwMAC+"/adv4", "one", 1, false)
	mq.publish("gw/"+gwMAC+"/adv1", "zero", 0, false)
	eventually(t, "first messages", func() bool {
		return x.sink.has("gw/"+gwMAC+"/adv4", "one") && x.sink.has("gw/"+gwMAC+"/adv1", "zero")
	})
	// Same gateway, same lane, so the retained replay (delivered before
	// "one") has been dealt with by now.
	if x.sink.has("gw/"+gwMAC+"/adv4", "old-retained") {
		t.Error("retained replay reached the sink")
	}
	for _, m := range x.sink.all() {
		if m.clientID != "" {
			t.Errorf("external mode clientID = %q, want empty", m.clientID)
		}
	}

	mq.kill()
	eventually(t, "disconnected", func() bool { return !x.Stats().Connected })

	mq.start() // same port, empty broker: no session, no subscription
	eventually(t, "reconnected", func() bool { return x.Stats().Connected })
	mq.publish("gw/"+gwMAC+"/adv4", "two", 1, false)
	eventually(t, "message after restart", func() bool { return x.sink.has("gw/"+gwMAC+"/adv4", "two") })

	st := x.Stats()
	if st.Mode != "external" || st.URL != mq.url() || st.ConnectsTotal < 2 || st.LastError == "" {
		t.Errorf("stats = %+v", st)
	}
}

func TestExternalSinkErrorLeadsToRedelivery(t *testing.T) {
	mq := startMosquitto(t)
	var failed atomic.Bool
	x := startExternal(t, ExternalOptions{URL: mq.url(), Credentials: creds(testUser, testPass), ClientID: "beaconhub-test2"})
	x.sink.setHook(func(m msg) error {
		if string(m.payload) == "press" && failed.CompareAndSwap(false, true) {
			return errors.New("commit failed")
		}
		return nil
	})
	eventually(t, "connected", func() bool { return x.Stats().Connected })

	mq.publish("gw/"+gwMAC+"/adv4", "press", 1, false)
	// Not acked the first time, so the broker still holds it in our
	// persistent session and resends it after the reconnect we force.
	eventually(t, "redelivered message", func() bool { return x.sink.has("gw/"+gwMAC+"/adv4", "press") })
	// The broker resends right after CONNACK, and paho may hand the
	// message to the sink before session() has counted the connect it
	// just made (CI saw ConnectsTotal 1 with "press" already in): the
	// count is waited for, not read at once.
	eventually(t, "the reconnect counted", func() bool { return x.Stats().ConnectsTotal >= 2 })
	if st := x.Stats(); !failed.Load() || st.SinkErrors != 1 {
		t.Errorf("stats = %+v", st)
	}
}

func TestExternalCredentialsFromURLAndBadPassword(t *testing.T) {
	mq := startMosquitto(t)

	good := startExternal(t, ExternalOptions{URL: "mqtt://" + testUser + ":" + testPass + "@" + mq.addr(), ClientID: "beaconhub-test3"})
	eventually(t, "connected with URL credentials", func() bool { return good.Stats().Connected })
	if u := good.Stats().URL; strings.Contains(u, testPass) || strings.Contains(u, testUser) || u != mq.url() {
		t.Errorf("Stats.URL = %q", u)
	}

	bad := startExternal(t, ExternalOptions{URL: mq.url(), Credentials: creds(testUser, "wrong"), ClientID: "beaconhub-test4"})
	eventually(t, "repeated auth failures", func() bool { return bad.Stats().AuthFailures >= 2 })
	if st := bad.Stats(); st.Connected || st.ConnectsTotal != 0 || !strings.Contains(st.LastError, "connect") {
		t.Errorf("stats = %+v", st)
	}
}

func TestExternalUnreachableBrokerAndClose(t *testing.T) {
	port := freePort(t) // nothing listens here
	x := startExternal(t, ExternalOptions{URL: "tcp://" + testUser + ":" + testPass + "@127.0.0.1:" + itoa(port)})
	eventually(t, "connect errors", func() bool { return strings.Contains(x.Stats().LastError, "connect") })
	if st := x.Stats(); st.Connected || strings.Contains(st.URL, testPass) || !strings.HasPrefix(st.URL, "tcp://127.0.0.1:") {
		t.Errorf("stats = %+v", st)
	}
	done := make(chan struct{})
	go func() { _ = x.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitFor):
		t.Fatal("Close blocked")
	}
	if err := x.Start(); err == nil {
		t.Error("Start after Close succeeded")
	}
}

func TestParseBrokerURL(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		user     string
		err      bool
	}{
		{in: "mqtt://broker.local", want: "mqtt://broker.local:1883"},
		{in: "tcp://10.0.0.5:1884", want: "tcp://10.0.0.5:1884"},
		{in: "mqtts://u:p@broker.local", want: "mqtts://broker.local:8883", user: "u"},
		{in: "MQTT://[::1]", want: "mqtt://[::1]:1883"},
		{in: "http://broker", err: true},
		{in: "mqtt://", err: true},
		{in: "mqtt://u:p%zz@host", err: true},
	} {
		u, ui, err := parseBrokerURL(tc.in)
		if tc.err {
			if err == nil {
				t.Errorf("%q: no error", tc.in)
			} else if strings.Contains(err.Error(), "p%zz") {
				t.Errorf("%q: error leaks the URL: %v", tc.in, err)
			}
			continue
		}
		if err != nil || u.String() != tc.want || (tc.user != "" && ui.Username() != tc.user) {
			t.Errorf("%q: got %v %v %v, want %s", tc.in, u, ui, err, tc.want)
		}
	}
}

func TestJitteredBackoff(t *testing.T) {
	for failures, want := range []time.Duration{1, 2, 4, 8, 16, 32, 60, 60, 60} {
		want *= time.Second
		for range 200 {
			d := jitteredBackoff(failures)
			if d < want/2 || d > want {
				t.Fatalf("failures=%d: %v outside [%v, %v]", failures, d, want/2, want)
			}
		}
	}
	if d := jitteredBackoff(1000); d > backoffMax {
		t.Fatalf("no cap: %v", d)
	}
}

func TestLaneOfKeepsGatewayTogether(t *testing.T) {
	a := laneOf("gw/" + gwMAC + "/adv1")
	for _, kind := range []string{"adv4", "sData", "adv8", "status"} {
		if laneOf("gw/"+gwMAC+"/"+kind) != a {
			t.Errorf("kind %s on a different lane", kind)
		}
	}
	seen := map[int]bool{}
	for i := range 200 {
		seen[laneOf("gw/"+itoa(i)+"/adv1")] = true
	}
	if len(seen) < laneCount/2 {
		t.Errorf("only %d lanes used", len(seen))
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

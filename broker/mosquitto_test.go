package broker

import (
	"strconv"
	"testing"
	"time"

	"beaconhub/broker/brokertest"
)

// mosquitto adapts brokertest's real Debian mosquitto (password auth, no
// anonymous access, no persistence, so a restart really loses every
// session: the worst case for the reconnect logic) to these tests.
type mosquitto struct {
	t testing.TB
	m *brokertest.Mosquitto
}

func startMosquitto(t testing.TB) *mosquitto {
	t.Helper()
	return &mosquitto{t: t, m: brokertest.StartMosquitto(t, testUser, testPass)}
}

func freePort(t testing.TB) int { return brokertest.FreePort(t) }

func (m *mosquitto) addr() string { return m.m.Addr() }

func (m *mosquitto) url() string { return m.m.URL() }

// start launches mosquitto again on the same port.
func (m *mosquitto) start() { m.m.Start() }

// kill stops mosquitto with SIGKILL (no goodbye to clients).
func (m *mosquitto) kill() { m.m.Stop() }

// publish sends one message with mosquitto_pub.
func (m *mosquitto) publish(topic, payload string, qos int, retain bool) {
	m.t.Helper()
	args := []string{"-i", "gw-" + strconv.FormatInt(time.Now().UnixNano(), 36), "-q", strconv.Itoa(qos), "-t", topic, "-m", payload}
	if retain {
		args = append(args, "-r")
	}
	brokertest.Pub(m.t, m.m.Addr(), testUser, testPass, args...)
}

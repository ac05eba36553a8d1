// Package brokertest starts real MQTT peers for tests: Debian's mosquitto
// broker on a free loopback port, and its mosquitto_pub client. A missing
// binary skips the test with a clear message when CI is unset and fails it
// when CI is set (`make test` installs both).
package brokertest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	osuser "os/user"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Need returns the path of a peer binary, skipping or failing t when it is
// missing.
func Need(t testing.TB, name string, candidates ...string) string {
	t.Helper()
	for _, c := range append(candidates, name) {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("%s is not installed (Debian: apt-get install mosquitto mosquitto-clients, or run make test-deps)", name)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// FreePort returns a port that was free on 127.0.0.1 a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Mosquitto is a running Debian mosquitto broker with password auth.
type Mosquitto struct {
	t    testing.TB
	bin  string
	conf string
	Port int
	cmd  *exec.Cmd
	exit chan struct{}
	log  syncBuffer
}

// syncBuffer collects the broker's log for failure messages.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// StartMosquitto writes a config (loopback listener on a free port,
// anonymous refused, one user, no persistence) and starts the broker.
func StartMosquitto(t testing.TB, user, pass string) *Mosquitto {
	t.Helper()
	return StartMosquittoWith(t, user, pass, "")
}

// StartMosquittoWith is StartMosquitto with extra configuration lines
// (docs/mqtt.md's settings for an external broker, say).
func StartMosquittoWith(t testing.TB, user, pass, extra string) *Mosquitto {
	t.Helper()
	bin := Need(t, "mosquitto", "/usr/sbin/mosquitto")
	passwd := Need(t, "mosquitto_passwd", "/usr/bin/mosquitto_passwd")
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "passwd")
	if out, err := exec.Command(passwd, "-b", "-c", pwFile, user, pass).CombinedOutput(); err != nil {
		t.Fatalf("mosquitto_passwd: %v: %s", err, out)
	}
	// Newer mosquitto refuses password files readable by others.
	_ = os.Chmod(pwFile, 0o600)
	m := &Mosquitto{t: t, bin: bin, Port: FreePort(t)}
	m.conf = filepath.Join(dir, "mosquitto.conf")
	// Started as root, mosquitto drops to the "mosquitto" user, which cannot
	// read files in a private temp dir; naming the current user keeps it.
	who := "root"
	if u, err := osuser.Current(); err == nil {
		who = u.Username
	}
	conf := fmt.Sprintf("listener %d 127.0.0.1\nallow_anonymous false\npassword_file %s\npersistence false\nlog_dest stderr\nuser %s\n%s\n", m.Port, pwFile, who, extra)
	if err := os.WriteFile(m.conf, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	m.Start()
	t.Cleanup(m.Stop)
	return m
}

// Addr is host:port.
func (m *Mosquitto) Addr() string { return "127.0.0.1:" + strconv.Itoa(m.Port) }

// URL is the mqtt:// URL of the broker.
func (m *Mosquitto) URL() string { return "mqtt://" + m.Addr() }

// Start (re)starts the broker on its port and waits until it accepts.
func (m *Mosquitto) Start() {
	m.t.Helper()
	m.cmd = exec.Command(m.bin, "-c", m.conf)
	m.cmd.Stderr = &m.log
	m.exit = make(chan struct{})
	if err := m.cmd.Start(); err != nil {
		m.t.Fatalf("start mosquitto: %v", err)
	}
	go func(c *exec.Cmd, done chan struct{}) { _ = c.Wait(); close(done) }(m.cmd, m.exit)
	if err := waitPort(m.Addr(), 10*time.Second, m.exit); err != nil {
		m.t.Fatalf("mosquitto: %v; its log:\n%s", err, m.log.String())
	}
}

// Stop kills the broker and waits for it to exit.
func (m *Mosquitto) Stop() {
	if m.cmd == nil || m.cmd.Process == nil {
		return
	}
	_ = m.cmd.Process.Kill()
	<-m.exit
	m.cmd = nil
}

// WaitPort polls until addr accepts TCP connections or the deadline passes.
func WaitPort(t testing.TB, addr string, within time.Duration) {
	t.Helper()
	if err := waitPort(addr, within, nil); err != nil {
		t.Fatal(err)
	}
}

func waitPort(addr string, within time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(within)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("process exited before %s accepted connections", addr)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not accept connections within %s", addr, within)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, bounded by the deadline
	}
}

// Pub runs mosquitto_pub against addr with the given extra arguments.
func Pub(t testing.TB, addr, user, pass string, args ...string) {
	t.Helper()
	bin := Need(t, "mosquitto_pub", "/usr/bin/mosquitto_pub")
	host, port, _ := net.SplitHostPort(addr)
	full := append([]string{"-h", host, "-p", port, "-u", user, "-P", pass}, args...)
	if out, err := exec.Command(bin, full...).CombinedOutput(); err != nil {
		t.Fatalf("mosquitto_pub %v: %v: %s", args, err, out)
	}
}

package broker

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// mosquitto runs a real Debian mosquitto on 127.0.0.1 for external-mode
// tests: password auth, no anonymous access, no persistence (so a restart
// really loses every session, the worst case for our reconnect logic).
type mosquitto struct {
	t      testing.TB
	bin    string
	pub    string
	conf   string
	port   int
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan struct{}
}

func findMosquitto(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("mosquitto"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/mosquitto"); err == nil {
		return "/usr/sbin/mosquitto" // sbin is not on every user's PATH
	}
	return requireBinary(t, "mosquitto")
}

// startMosquitto writes a config and password file to a temp dir and
// starts the broker on a free port with user testUser / testPass.
func startMosquitto(t testing.TB) *mosquitto {
	t.Helper()
	m := &mosquitto{
		t:   t,
		bin: findMosquitto(t),
		pub: requireBinary(t, "mosquitto_pub"),
	}
	passwd := requireBinary(t, "mosquitto_passwd")
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "passwd")
	if out, err := exec.Command(passwd, "-b", "-c", pwFile, testUser, testPass).CombinedOutput(); err != nil {
		t.Fatalf("mosquitto_passwd: %v: %s", err, out)
	}
	m.port = freePort(t)
	conf := fmt.Sprintf("listener %d 127.0.0.1\nallow_anonymous false\npassword_file %s\npersistence false\nlog_dest stderr\nlog_type all\n",
		m.port, pwFile)
	if os.Geteuid() == 0 {
		// Started as root, mosquitto drops to user "mosquitto", which
		// cannot read our temp dir; this keeps it as root.
		conf += "user root\n"
	}
	m.conf = filepath.Join(dir, "mosquitto.conf")
	if err := os.WriteFile(m.conf, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	m.start()
	t.Cleanup(m.kill)
	return m
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (m *mosquitto) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(m.port)) }

func (m *mosquitto) url() string { return "mqtt://" + m.addr() }

// start launches mosquitto (again, on the same port) and waits until it
// accepts connections.
func (m *mosquitto) start() {
	m.t.Helper()
	m.out = &syncBuffer{}
	m.cmd = exec.Command(m.bin, "-c", m.conf)
	m.cmd.Stdout, m.cmd.Stderr = m.out, m.out
	if err := m.cmd.Start(); err != nil {
		m.t.Fatalf("start mosquitto: %v", err)
	}
	m.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) {
		_ = cmd.Wait()
		close(exited)
	}(m.cmd, m.exited)

	deadline := time.Now().Add(waitFor)
	for {
		conn, err := net.Dial("tcp", m.addr())
		if err == nil {
			_ = conn.Close()
			return
		}
		select {
		case <-m.exited:
			m.t.Fatalf("mosquitto exited during startup:\n%s", m.out.String())
		default:
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("mosquitto did not listen on %s:\n%s", m.addr(), m.out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// kill stops mosquitto with SIGKILL (no goodbye to clients) and waits for it.
func (m *mosquitto) kill() {
	if m.cmd == nil || m.cmd.Process == nil {
		return
	}
	select {
	case <-m.exited:
		return
	default:
	}
	_ = m.cmd.Process.Kill()
	<-m.exited
}

// publish sends one message with mosquitto_pub.
func (m *mosquitto) publish(topic, payload string, qos int, retain bool) {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	args := []string{"-h", "127.0.0.1", "-p", strconv.Itoa(m.port), "-u", testUser, "-P", testPass,
		"-i", "gw-" + strconv.FormatInt(time.Now().UnixNano(), 36), "-q", strconv.Itoa(qos), "-t", topic, "-m", payload}
	if retain {
		args = append(args, "-r")
	}
	if out, err := exec.CommandContext(ctx, m.pub, args...).CombinedOutput(); err != nil {
		m.t.Fatalf("mosquitto_pub: %v: %s\nbroker log:\n%s", err, out, m.out.String())
	}
}

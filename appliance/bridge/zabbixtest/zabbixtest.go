// Package zabbixtest runs a real Zabbix 6.0 server for tests, from
// Debian's packages (zabbix-server-pgsql, zabbix-frontend-php, php-cli,
// php-pgsql, postgresql; .ci/install-test-peers.sh installs them): a
// throwaway PostgreSQL cluster in a temp dir on a free loopback port with
// the Zabbix schema, zabbix_server bound to 127.0.0.1, and the frontend's
// JSON-RPC API served by `php -S`. Everything is torn down by t.Cleanup.
//
// Without the packages the test is skipped, unless CI is set: there it
// fails, because the real peer is what the end-to-end test is for.
package zabbixtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Paths of the Debian packages.
const (
	ServerBin   = "/usr/sbin/zabbix_server"
	SchemaDir   = "/usr/share/zabbix-server-pgsql"
	FrontendDir = "/usr/share/zabbix"
	// configClass holds the frontend's fixed configuration path
	// (/etc/zabbix/zabbix.conf.php); see frontendRouter.
	configClass = FrontendDir + "/include/classes/core/CConfigFile.php"
)

// Server is a running Zabbix server with its database and frontend API.
type Server struct {
	TrapperAddr string // 127.0.0.1:port of the trapper (sender protocol)
	APIURL      string // http://127.0.0.1:port/api_jsonrpc.php
	ConfigFile  string // zabbix_server.conf, for runtime control (-R)

	t        testing.TB
	dir      string
	pgBin    string
	pgPort   int
	asRoot   bool
	apiToken string
}

// Start brings a server up or skips/fails t (see the package comment).
func Start(t testing.TB) *Server {
	t.Helper()
	pgBin := findPGBin()
	missing := []string{}
	for _, p := range []string{ServerBin, SchemaDir + "/schema.sql.gz", configClass, pgBin + "/initdb"} {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p)
		}
	}
	for _, bin := range []string{"php", "psql"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin)
		}
	}
	if len(missing) > 0 {
		msg := "real Zabbix peer not installed (run .ci/install-test-peers.sh or make test-deps); missing: " + strings.Join(missing, ", ")
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	// Not t.TempDir: PostgreSQL runs as another user and must traverse
	// the directory, and its parents under t.TempDir are private.
	dir, err := os.MkdirTemp("", "zabbixtest-")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, dir: dir, pgBin: pgBin, asRoot: os.Geteuid() == 0}
	t.Cleanup(func() {
		if !t.Failed() || os.Getenv("ZABBIXTEST_KEEP") == "" {
			_ = os.RemoveAll(dir)
		} else {
			t.Logf("zabbixtest: kept %s", dir)
		}
	})
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s.startPostgres()
	s.loadSchema()
	s.startServer()
	s.startFrontend()
	return s
}

// findPGBin returns the newest PostgreSQL server binaries directory.
func findPGBin() string {
	ms, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	if len(ms) == 0 {
		return "/usr/lib/postgresql/none/bin"
	}
	best, bestV := ms[0], -1
	for _, m := range ms {
		if v, err := strconv.Atoi(filepath.Base(filepath.Dir(m))); err == nil && v > bestV {
			best, bestV = m, v
		}
	}
	return best
}

// freePort returns a loopback port nothing listens on, within [lo, hi]
// (zabbix_server accepts ListenPort 1024-32767 only).
func freePort(t testing.TB, lo, hi int) int {
	t.Helper()
	for range 200 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
		if p >= lo && p <= hi {
			return p
		}
		// Ephemeral ports sit above 32767: probe a random one in range.
		p = lo + int(time.Now().UnixNano()%int64(hi-lo))
		if ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
			_ = ln.Close()
			return p
		}
	}
	t.Fatal("zabbixtest: no free loopback port")
	return 0
}

// command builds a command that runs as user (when we are root and user
// is not empty) in its own process group, so teardown can signal it and
// every child it forked.
func (s *Server) command(user string, name string, args ...string) *exec.Cmd {
	var cmd *exec.Cmd
	if s.asRoot && user != "" {
		cmd = exec.Command("runuser", append([]string{"-u", user, "--", name}, args...)...)
	} else {
		cmd = exec.Command(name, args...)
	}
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// run runs a short command and fails the test with its output on error.
func (s *Server) run(user, name string, args ...string) {
	s.t.Helper()
	out, err := s.command(user, name, args...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("zabbixtest: %s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// startBackground starts a long-running process and registers its
// teardown: SIGTERM to its process group, SIGKILL after grace.
func (s *Server) startBackground(user, logName string, grace time.Duration, name string, args ...string) {
	s.t.Helper()
	cmd := s.command(user, name, args...)
	logf, err := os.Create(filepath.Join(s.dir, logName))
	if err != nil {
		s.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		s.t.Fatalf("zabbixtest: start %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = logf.Close(); close(done) }()
	pgid := cmd.Process.Pid
	s.t.Cleanup(func() {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(grace):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-done
		}
	})
}

// waitTCP waits until addr accepts connections or the deadline passes.
func (s *Server) waitTCP(what, addr string, within time.Duration, logName string) {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("zabbixtest: %s did not listen on %s within %s: %v\n%s", what, addr, within, err, s.tail(logName))
		}
		time.Sleep(100 * time.Millisecond) // polling a listener, bounded by the deadline
	}
}

// tail returns the end of a log file in the temp dir, for failure output.
func (s *Server) tail(name string) string {
	b, err := os.ReadFile(filepath.Join(s.dir, name))
	if err != nil {
		return ""
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Log returns the end of the zabbix_server log (for test failures).
func (s *Server) Log() string { return s.tail("zabbix_server.log") }

// ReloadConfigCache makes the server pick up hosts and items created
// through the API (and by discovery) now rather than at its next
// CacheUpdateFrequency.
func (s *Server) ReloadConfigCache() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ServerBin, "-c", s.ConfigFile, "-R", "config_cache_reload")
	if out, err := cmd.CombinedOutput(); err != nil {
		s.t.Fatalf("zabbixtest: config_cache_reload: %v\n%s", err, out)
	}
}

func (s *Server) String() string {
	return fmt.Sprintf("zabbix trapper %s, API %s, dir %s", s.TrapperAddr, s.APIURL, s.dir)
}

package zabbixtest

import (
	"compress/gzip"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// dbUser owns the cluster and is what zabbix_server and the frontend log in
// as (trust authentication on loopback: the cluster lives for one test).
const dbUser = "postgres"

// startPostgres initialises a cluster in the temp dir and runs it in the
// foreground on a free loopback port. PostgreSQL refuses to run as root,
// so as root it runs as the postgres user.
func (s *Server) startPostgres() {
	s.t.Helper()
	data := filepath.Join(s.dir, "pg")
	if err := os.Mkdir(data, 0o700); err != nil {
		s.t.Fatal(err)
	}
	runAs := ""
	if s.asRoot {
		runAs = dbUser
		u, err := user.Lookup(dbUser)
		if err != nil {
			s.t.Fatalf("zabbixtest: PostgreSQL needs the %s user when run as root: %v", dbUser, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		// The cluster and the server log are written as that user.
		for _, p := range []string{data, s.dir} {
			if err := os.Chown(p, uid, gid); err != nil {
				s.t.Fatal(err)
			}
		}
	}
	s.run(runAs, filepath.Join(s.pgBin, "initdb"), "-D", data, "-A", "trust", "-U", dbUser, "-E", "UTF8", "--no-sync")
	s.pgPort = freePort(s.t, 1024, 65535)
	s.startBackground(runAs, "postgres.log", 15*time.Second, filepath.Join(s.pgBin, "postgres"),
		"-D", data, "-p", strconv.Itoa(s.pgPort), "-k", s.dir, "-c", "listen_addresses=127.0.0.1",
		// Throwaway data: durability only costs time.
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "shared_buffers=32MB", "-c", "max_connections=60")
	s.waitTCP("PostgreSQL", "127.0.0.1:"+strconv.Itoa(s.pgPort), 60*time.Second, "postgres.log")
}

// psqlArgs are the connection arguments for the zabbix database.
func (s *Server) psqlArgs(db string) []string {
	return []string{"-X", "-q", "-h", "127.0.0.1", "-p", strconv.Itoa(s.pgPort), "-U", dbUser, "-d", db, "-v", "ON_ERROR_STOP=1"}
}

// loadSchema creates the zabbix database from the package's SQL files,
// in the order the Zabbix documentation gives: schema, images, data.
func (s *Server) loadSchema() {
	s.t.Helper()
	s.run("", "psql", append(s.psqlArgs("postgres"), "-c", "CREATE DATABASE zabbix ENCODING 'UTF8' TEMPLATE template0")...)
	for _, name := range []string{"schema", "images", "data"} {
		f, err := os.Open(filepath.Join(SchemaDir, name+".sql.gz"))
		if err != nil {
			s.t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			_ = f.Close()
			s.t.Fatal(err)
		}
		cmd := s.command("", "psql", s.psqlArgs("zabbix")...)
		cmd.Stdin = zr
		out, err := cmd.CombinedOutput()
		_ = f.Close()
		if err != nil {
			s.t.Fatalf("zabbixtest: load %s.sql: %v\n%s", name, err, out)
		}
	}
}

// startServer writes a small zabbix_server.conf and runs the server in the
// foreground, bound to 127.0.0.1. Caches are small, the configuration
// cache refreshes often, and pollers the test has no use for are off.
func (s *Server) startServer() {
	s.t.Helper()
	port := freePort(s.t, 1024, 32767)
	s.TrapperAddr = "127.0.0.1:" + strconv.Itoa(port)
	s.ConfigFile = filepath.Join(s.dir, "zabbix_server.conf")
	conf := []string{
		"ListenIP=127.0.0.1",
		"ListenPort=" + strconv.Itoa(port),
		"LogType=file",
		"LogFile=" + filepath.Join(s.dir, "zabbix_server.log"),
		"DebugLevel=3",
		"PidFile=" + filepath.Join(s.dir, "zabbix_server.pid"),
		"SocketDir=" + s.dir,
		"DBHost=127.0.0.1",
		"DBPort=" + strconv.Itoa(s.pgPort),
		"DBName=zabbix",
		"DBUser=" + dbUser,
		"CacheSize=16M",
		"HistoryCacheSize=8M",
		"HistoryIndexCacheSize=4M",
		"TrendCacheSize=4M",
		"ValueCacheSize=8M",
		"CacheUpdateFrequency=5",
		"StartPollers=1",
		"StartPollersUnreachable=1",
		"StartTrappers=2",
		"StartPingers=0",
		"StartDiscoverers=0",
		"StartHTTPPollers=0",
		"StartTimers=1",
		"StartEscalators=1",
		"StartAlerters=1",
		"StartPreprocessors=1",
		"StartLLDProcessors=1",
		"StartDBSyncers=1",
		"StartReportWriters=0",
		"HousekeepingFrequency=0",
		"Timeout=4",
	}
	runAs := ""
	if s.asRoot {
		// CI runs as root; the server refuses that unless told. It writes
		// only into the temp dir.
		conf = append(conf, "AllowRoot=1", "User=root")
	}
	if err := os.WriteFile(s.ConfigFile, []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
		s.t.Fatal(err)
	}
	s.startBackground(runAs, "zabbix_server.out", 20*time.Second, ServerBin, "-f", "-c", s.ConfigFile)
	s.waitTCP("zabbix_server", s.TrapperAddr, 90*time.Second, "zabbix_server.log")
}

// startFrontend serves the frontend API with PHP's built-in web server.
// The frontend reads its configuration from a fixed path
// (/etc/zabbix/zabbix.conf.php on Debian); instead of writing there, a
// router script loads a copy of the class that holds that path, pointing
// at this test's file, before the frontend's autoloader would load the
// packaged one. Nothing outside the temp dir is touched.
func (s *Server) startFrontend() {
	s.t.Helper()
	conf := filepath.Join(s.dir, "zabbix.conf.php")
	class, err := os.ReadFile(configClass)
	if err != nil {
		s.t.Fatal(err)
	}
	const fixed = "const CONFIG_FILE_PATH = '/etc/zabbix/zabbix.conf.php';"
	if !strings.Contains(string(class), fixed) {
		s.t.Fatalf("zabbixtest: %s no longer declares %s", configClass, fixed)
	}
	patched := strings.Replace(string(class), fixed, "const CONFIG_FILE_PATH = "+phpString(conf)+";", 1)
	classCopy := filepath.Join(s.dir, "CConfigFile.php")
	router := filepath.Join(s.dir, "router.php")
	confPHP := "<?php\n" +
		"$DB['TYPE'] = 'POSTGRESQL';\n" +
		"$DB['SERVER'] = '127.0.0.1';\n" +
		"$DB['PORT'] = '" + strconv.Itoa(s.pgPort) + "';\n" +
		"$DB['DATABASE'] = 'zabbix';\n" +
		"$DB['USER'] = '" + dbUser + "';\n" +
		"$DB['PASSWORD'] = '';\n" +
		"$DB['SCHEMA'] = '';\n" +
		"$DB['ENCRYPTION'] = false;\n$DB['KEY_FILE'] = '';\n$DB['CERT_FILE'] = '';\n$DB['CA_FILE'] = '';\n" +
		"$DB['VERIFY_HOST'] = false;\n$DB['CIPHER_LIST'] = '';\n" +
		"$DB['VAULT_URL'] = '';\n$DB['VAULT_DB_PATH'] = '';\n$DB['VAULT_TOKEN'] = '';\n" +
		"$DB['DOUBLE_IEEE754'] = true;\n" +
		"$ZBX_SERVER = '127.0.0.1';\n" +
		"$ZBX_SERVER_PORT = '" + strings.TrimPrefix(s.TrapperAddr, "127.0.0.1:") + "';\n" +
		"$ZBX_SERVER_NAME = 'zabbixtest';\n" +
		"$IMAGE_FORMAT_DEFAULT = IMAGE_FORMAT_PNG;\n"
	routerPHP := "<?php\n" +
		"require " + phpString(classCopy) + ";\n" +
		"chdir(" + phpString(FrontendDir) + ");\n" +
		"require " + phpString(FrontendDir+"/api_jsonrpc.php") + ";\n"
	for name, body := range map[string]string{conf: confPHP, classCopy: patched, router: routerPHP} {
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			s.t.Fatal(err)
		}
	}
	port := freePort(s.t, 1024, 65535)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	s.APIURL = "http://" + addr + "/api_jsonrpc.php"
	s.startBackground("", "php.log", 5*time.Second, "php", "-S", addr, "-t", FrontendDir, router)
	s.waitTCP("php -S", addr, 30*time.Second, "php.log")
}

// phpString quotes s as a PHP single-quoted string.
func phpString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

package appliance_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"beaconhub/appliance/push"
	"beaconhub/appliance/push/ntfytest"
	"beaconhub/broker/brokertest"
	"beaconhub/store"

	paho "github.com/eclipse/paho.mqtt.golang"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// beaconhubBinary builds the real binary once per test run.
func beaconhubBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "beaconhub-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "beaconhub")
		out, err := exec.Command("go", "build", "-o", binPath, "beaconhub/cmd/beaconhub").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

type server struct {
	cmd  *exec.Cmd
	done chan error
}

func startServer(t *testing.T, bin, home string, httpPort, mqttPort int) *server {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--home", home, "--http-listen", fmt.Sprintf("127.0.0.1:%d", httpPort))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait() }()
	brokertest.WaitPort(t, fmt.Sprintf("127.0.0.1:%d", mqttPort), 20*time.Second)
	return s
}

// TestKill9KeepsEveryAcknowledgedReading publishes QoS 1 readings, kills
// the server with SIGKILL mid-stream, restarts it, and checks that every
// reading that got a PUBACK is in the history.
func TestKill9KeepsEveryAcknowledgedReading(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := beaconhubBinary(t)
	home := t.TempDir()
	httpPort, mqttPort := brokertest.FreePort(t), brokertest.FreePort(t)
	cfg, _ := json.Marshal(map[string]any{"server_features": []string{"service"}, "server_mqtt_listen": fmt.Sprintf("127.0.0.1:%d", mqttPort)})
	_ = os.MkdirAll(filepath.Join(home, "config"), 0o750)
	if err := os.WriteFile(filepath.Join(home, "config", "main.config.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	// Register the sensor before the server owns the file.
	db, err := store.Open(filepath.Join(home, "db", "service.db"), store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateBeacon(&store.Beacon{AssetUID: "SEN-K9-1", MAC: "C30000000A01", Type: "sensor", Active: true}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	srv := startServer(t, bin, home, httpPort, mqttPort)
	// Four gateways publish concurrently, so several QoS 1 publishes are in
	// flight when the kill lands.
	const gateways = 4
	var mu sync.Mutex
	acked := map[int64]float64{}
	killOnce := sync.Once{}
	base := time.Now().UnixMilli()
	var wg sync.WaitGroup
	for g := 0; g < gateways; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			id := fmt.Sprintf("AC233FA0B1C%d", g)
			opts := paho.NewClientOptions().AddBroker(fmt.Sprintf("tcp://127.0.0.1:%d", mqttPort)).
				SetClientID(id).SetUsername("service").SetPassword("service").
				SetAutoReconnect(false).SetConnectRetry(false).SetWriteTimeout(2 * time.Second)
			c := paho.NewClient(opts)
			if tok := c.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
				t.Errorf("connect: %v", tok.Error())
				return
			}
			defer c.Disconnect(0)
			// Eight publishes in flight per gateway: PUBACKs are written
			// asynchronously after each commit, which is what must not run
			// ahead of durability.
			const window = 8
			type sent struct {
				tok paho.Token
				ts  int64
				v   float64
			}
			for i := 0; i < 5000; i += window {
				var batch []sent
				for j := i; j < i+window; j++ {
					ts := base + int64(j*gateways+g)
					v := float64(j*gateways+g) / 100
					payload := fmt.Sprintf(`{"reports":[{"mac":"C30000000A01","rssi":-70,"ts":%d,"temperature":%.2f}]}`, ts, v)
					batch = append(batch, sent{c.Publish("gw/"+id+"/adv1", 1, false, payload), ts, v})
				}
				for _, p := range batch {
					if !p.tok.WaitTimeout(3*time.Second) || p.tok.Error() != nil {
						return
					}
					mu.Lock()
					acked[p.ts] = p.v
					n := len(acked)
					mu.Unlock()
					if n >= 400 {
						killOnce.Do(func() { _ = srv.cmd.Process.Signal(syscall.SIGKILL) })
					}
				}
			}
		}(g)
	}
	wg.Wait()
	<-srv.done
	if len(acked) < 400 {
		t.Fatalf("only %d publishes acknowledged before the kill", len(acked))
	}

	// Restart, let it recover, stop it cleanly, then read the file.
	srv = startServer(t, bin, home, httpPort, mqttPort)
	_ = srv.cmd.Process.Signal(syscall.SIGTERM)
	if err := <-srv.done; err != nil {
		t.Fatalf("clean stop after restart: %v", err)
	}
	db, err = store.Open(filepath.Join(home, "db", "service.db"), store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stored := map[int64]float64{}
	_ = db.QueryHistory("SEN-K9-1", store.MetricTemperature, 0, 1<<62, func(ts int64, v float64) bool {
		stored[ts] = v
		return true
	})
	missing := 0
	for ts, v := range acked {
		if got, ok := stored[ts]; !ok || got != v {
			missing++
		}
	}
	t.Logf("acknowledged %d, stored %d, acknowledged but missing %d", len(acked), len(stored), missing)
	if missing > 0 {
		t.Fatalf("%d acknowledged readings lost after kill -9", missing)
	}
}

// Twenty fridges go out of range in one QoS 1 message. The PUBACK means
// their range conditions are committed. The push server is slow (0.5 s
// an answer, so the alerts wait on the push worker), and the appliance
// is killed (SIGKILL: power cut, OOM) a moment after the first alert
// went out. After the restart every fridge is announced: push hears
// transitions live only, and those the dead process had not posted are
// found at the start in the store's active conditions (push.reconcile).
// Before, 18 of the 20 were never announced (a review): no transition
// happens again while the fridges stay warm.
func TestACrashAfterTheAckLosesNoSensorAlert(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const fridges = 20
	bin := beaconhubBinary(t)
	fake := ntfytest.New()
	t.Cleanup(fake.Close)
	fake.Set(func(s *ntfytest.Server) { s.Delay = 500 * time.Millisecond })
	home := t.TempDir()
	httpPort, mqttPort := brokertest.FreePort(t), brokertest.FreePort(t)
	cfg, _ := json.Marshal(map[string]any{"server_features": []string{"service"},
		"server_mqtt_listen":      fmt.Sprintf("127.0.0.1:%d", mqttPort),
		"server_push_server_url":  fake.URL,
		"server_push_ops_enabled": false})
	_ = os.MkdirAll(filepath.Join(home, "config"), 0o750)
	if err := os.WriteFile(filepath.Join(home, "config", "main.config.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(home, "db", "service.db"), store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var reports []string
	for i := 0; i < fridges; i++ {
		mac := fmt.Sprintf("C300000010%02X", i)
		if err := db.CreateBeacon(&store.Beacon{AssetUID: fmt.Sprintf("SEN-ZZ-%d", i), MAC: mac, Name: fmt.Sprintf("Fridge %d", i),
			Type: "sensor", Active: true, TemperatureRange: &store.Range{Min: 2, Max: 8}}); err != nil {
			t.Fatal(err)
		}
		reports = append(reports, fmt.Sprintf(`{"mac":"%s","rssi":-70,"temperature":12.5}`, mac))
	}
	if err := db.CreateGateway(&store.Gateway{AssetUID: "GW-ZZ-1", MAC: "AC233FA0B1C2", Name: "Kitchen"}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	srv := startServer(t, bin, home, httpPort, mqttPort)
	addr := fmt.Sprintf("127.0.0.1:%d", mqttPort)
	brokertest.Pub(t, addr, "service", "service", "-q", "1", "-i", "AC233FA0B1C2", "-t", "gw/AC233FA0B1C2/adv1",
		"-m", `{"reports":[`+strings.Join(reports, ",")+`]}`)
	// PUBACK received: the conditions are durable. Kill once the first
	// alert reached the push server (the rest wait behind it).
	sensorsTopic := "TST000-sensors"
	alerted := func() map[string]bool {
		got := map[string]bool{}
		for _, m := range fake.Messages() {
			if rec, err := push.ParseRecord(m.Message); err == nil && m.Topic == sensorsTopic && rec.Phase == push.PhaseActive {
				got[rec.Subject] = true
			}
		}
		return got
	}
	eventually(t, "the first sensor alert", func() bool { return len(alerted()) >= 1 })
	_ = srv.cmd.Process.Signal(syscall.SIGKILL)
	<-srv.done
	before := len(alerted())

	fake.Set(func(s *ntfytest.Server) { s.Delay = 0 })
	srv = startServer(t, bin, home, httpPort, mqttPort)
	// Give the restarted appliance a generous, bounded time: it has
	// nothing slow to do (the push server answers at once now).
	deadline := time.Now().Add(20 * time.Second)
	for len(alerted()) < fridges && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond) // polling, bounded by the deadline
	}
	got := alerted()
	_ = srv.cmd.Process.Signal(syscall.SIGTERM)
	<-srv.done
	db, err = store.Open(filepath.Join(home, "db", "service.db"), store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	active, _ := db.ActiveSensorConditions()
	nActive := 0
	for _, c := range active {
		if c.Kind == "range" {
			nActive++
		}
	}
	t.Logf("alerted before the kill: %d; after restart: %d of %d; range conditions active in the store: %d", before, len(got), fridges, nActive)
	if len(got) < fridges {
		var missing []string
		for i := 0; i < fridges; i++ {
			if k := fmt.Sprintf("range:SEN-ZZ-%d", i); !got[k] {
				missing = append(missing, k)
			}
		}
		t.Fatalf("%d fridges out of range (conditions active in the store: %d) were never announced after a crash: %v",
			len(missing), nActive, missing)
	}
}

package diag

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"beaconhub/appliance/clock"
	"beaconhub/appliance/config"
)

func setup(t *testing.T, mode string, forced bool) (*Snapshotter, *config.Live, *clock.Fake, string) {
	t.Helper()
	home := t.TempDir()
	c := config.Defaults(config.ActiveBrand())
	c.ServerMode = mode
	c.DebugSnapshotInterval = 60
	c.DebugMaxFiles = 3
	live := config.NewLive(c, nil, "")
	clk := clock.NewFake(time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC))
	s := New(live, config.Paths{Home: home}, clk, slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)), forced)
	t.Cleanup(s.Close)
	return s, live, clk, filepath.Join(home, c.DebugLogDir)
}

func snapshots(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "snapshot-") {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestProdModeWritesNothing(t *testing.T) {
	s, _, clk, dir := setup(t, "prod", false)
	s.Start()
	clk.Advance(10 * time.Minute)
	if s.Running() || len(snapshots(t, dir)) != 0 {
		t.Errorf("prod mode: running=%v files=%v", s.Running(), snapshots(t, dir))
	}
}

func TestDebugModeFollowsSettingsLive(t *testing.T) {
	s, live, clk, dir := setup(t, "prod", false)
	s.AddSource("mqtt", func() any { return map[string]int{"messages": 7} })
	s.Start()
	if _, err := live.Patch(map[string]json.RawMessage{"server_mode": json.RawMessage(`"debug"`)}); err != nil {
		t.Fatal(err)
	}
	if !s.Running() {
		t.Fatal("switching to debug did not start snapshots")
	}
	clk.Advance(60 * time.Second)
	files := snapshots(t, dir)
	if len(files) != 1 {
		t.Fatalf("after one interval: %v", files)
	}
	data, err := os.ReadFile(filepath.Join(dir, files[0]))
	if err != nil {
		t.Fatal(err)
	}
	var snap map[string]any
	if err := json.Unmarshal(data, &snap); err != nil {
		t.Fatalf("snapshot is not JSON: %v", err)
	}
	if _, ok := snap["memory"]; !ok {
		t.Errorf("snapshot lacks memory: %s", data)
	}
	if m, ok := snap["mqtt"].(map[string]any); !ok || m["messages"] != float64(7) {
		t.Errorf("snapshot lacks the registered source: %s", data)
	}
	// Retention: only server_debug_max_files newest files stay.
	clk.Advance(5 * 60 * time.Second)
	files = snapshots(t, dir)
	if len(files) != 3 {
		t.Errorf("kept %d files, want 3: %v", len(files), files)
	}
	if _, err := live.Patch(map[string]json.RawMessage{"server_mode": json.RawMessage(`"prod"`)}); err != nil {
		t.Fatal(err)
	}
	if s.Running() {
		t.Fatal("switching back to prod did not stop snapshots")
	}
	before := len(snapshots(t, dir))
	clk.Advance(10 * time.Minute)
	if after := len(snapshots(t, dir)); after != before {
		t.Errorf("snapshots written after stop: %d -> %d", before, after)
	}
}

func TestForcedAndClose(t *testing.T) {
	s, _, clk, dir := setup(t, "prod", true)
	s.Start()
	if !s.Running() {
		t.Fatal("--debug did not start snapshots")
	}
	clk.Advance(60 * time.Second)
	if len(snapshots(t, dir)) != 1 {
		t.Errorf("forced mode wrote %v", snapshots(t, dir))
	}
	s.Close()
	if s.Running() {
		t.Error("Close did not stop snapshots")
	}
	clk.Advance(10 * time.Minute)
	if len(snapshots(t, dir)) != 1 {
		t.Errorf("snapshots written after Close: %v", snapshots(t, dir))
	}
}

// TestThresholdComparesResidentMemory: server_perf_memory_threshold is
// resident memory (spec); the snapshot compared the Go runtime's Sys.
func TestThresholdComparesResidentMemory(t *testing.T) {
	s, live, _, dir := setup(t, "debug", false)
	// 16 MB, the least allowed, is below the resident size once this
	// ballast is touched; 1 TB above it.
	ballast := make([]byte, 32<<20)
	for i := range ballast {
		ballast[i] = 1
	}
	defer runtime.KeepAlive(ballast)
	for _, mb := range []int{16, 1 << 20} {
		if _, err := live.Patch(map[string]json.RawMessage{"server_perf_memory_threshold": json.RawMessage(strconv.Itoa(mb))}); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteNow(); err != nil {
			t.Fatal(err)
		}
		files := snapshots(t, dir)
		data, err := os.ReadFile(filepath.Join(dir, files[len(files)-1]))
		if err != nil {
			t.Fatal(err)
		}
		var snap struct {
			Memory struct {
				RSS      uint64 `json:"rss_bytes"`
				Compares string `json:"threshold_compares"`
				Over     bool   `json:"over_threshold"`
			} `json:"memory"`
		}
		if err := json.Unmarshal(data, &snap); err != nil {
			t.Fatal(err)
		}
		if snap.Memory.Compares != "rss" || snap.Memory.RSS == 0 || snap.Memory.Over != (mb == 16) {
			t.Errorf("threshold %d MB: %s", mb, data)
		}
	}
}

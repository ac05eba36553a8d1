package appliance_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestDebugSnapshotsCarryTrackingAndFeeds: the spec's debug snapshots hold
// "system metrics, MQTT throughput, tracking performance, WebSocket
// statistics and memory estimates"; they held the MQTT status and the Go
// runtime's memory only, and compared the threshold with what the
// runtime holds rather than the resident memory the spec names.
func TestDebugSnapshotsCarryTrackingAndFeeds(t *testing.T) {
	app, clk, c, publish := trackedInHall(t)
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+app.HTTPAddr()+"/ws", http.Header{"Authorization": {"Bearer " + c.token}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	c.must("PATCH", "/api/v1/settings", map[string]any{"server_mode": "debug"}, nil)
	dir := filepath.Join(app.Paths().Home, "logs", "diagnostics")
	snap := func(n int) map[string]any {
		t.Helper()
		var names []string
		eventually(t, "snapshot", func() bool {
			ents, _ := os.ReadDir(dir)
			names = names[:0]
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), "snapshot-") {
					names = append(names, e.Name())
				}
			}
			return len(names) >= n
		})
		sort.Strings(names)
		data, err := os.ReadFile(filepath.Join(dir, names[n-1]))
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatalf("snapshot %s: %v", data, err)
		}
		return out
	}
	interval := time.Duration(app.Live().Get().DebugSnapshotInterval) * time.Second
	clk.Advance(interval)
	first := snap(1)
	tr, _ := first["tracking"].(map[string]any)
	if tr == nil || tr["running"] != true || tr["beacons"] != float64(1) || tr["reports"].(float64) < 1 {
		t.Fatalf("tracking section: %v", first["tracking"])
	}
	if _, ok := tr["reports_per_s"]; ok {
		t.Errorf("a first snapshot has no interval for a rate: %v", tr)
	}
	feed, _ := first["websocket"].(map[string]any)
	if feed == nil || feed["clients"] != float64(1) {
		t.Fatalf("websocket section: %v", first["websocket"])
	}
	sys, _ := first["system"].(map[string]any)
	if sys == nil || sys["num_cpu"].(float64) < 1 || sys["cpu_seconds"] == nil || sys["disk_free_bytes"] == nil || len(sys["load_avg"].([]any)) != 3 {
		t.Fatalf("system section: %v", first["system"])
	}
	mem, _ := first["memory"].(map[string]any)
	if mem == nil || mem["threshold_compares"] != "rss" || mem["rss_bytes"].(float64) <= 0 {
		t.Fatalf("memory section: %v", first["memory"])
	}

	for i := 0; i < 3; i++ {
		publish()
	}
	reports := tr["reports"].(float64)
	eventually(t, "the engine took three more reports", func() bool { return float64(app.RTLS().Status().Reports) >= reports+3 })
	clk.Advance(interval)
	second := snap(2)
	tr, _ = second["tracking"].(map[string]any)
	if r, _ := tr["reports_per_s"].(float64); r <= 0 {
		t.Errorf("second snapshot's report rate: %v", second["tracking"])
	}
	if _, ok := second["system"].(map[string]any)["cpu_percent"]; !ok {
		t.Errorf("second snapshot has no cpu_percent: %v", second["system"])
	}
}

package appliance

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/clock"
)

// The push device list is told of a registry write before the sensor
// monitor: followers are told in order, and told after it, the list could
// name a new sensor's first alert, judged by the reloaded monitor, from
// before the write (a review).
func TestPushDevicesFollowBeforeTheSensorMonitor(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "config"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config", "main.config.json"), []byte(`{"server_features":["service"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := New(Options{Home: home, HTTPListen: "127.0.0.1:0", MQTTListen: "127.0.0.1:0", BcryptCost: 4,
		Clock: clock.NewFake(time.Now()), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Shutdown(context.Background()) })
	if a.pushIDs == nil || a.sensorMon == nil {
		t.Fatal("feature service built no push or sensor monitor")
	}
	at := func(f assets.Renamer) int { return slices.Index(a.hooks.Followers, f) }
	if p, m := at(a.pushIDs), at(a.sensorMon); p < 0 || p > m {
		t.Fatalf("followers: push devices at %d, sensor monitor at %d", p, m)
	}
}

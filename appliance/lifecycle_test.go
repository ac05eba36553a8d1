package appliance_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"beaconhub/appliance"
)

// TestShutdownWithoutStart: an appliance built but never started (Start
// failed, or a tool only needed its store and registry, as loadgen's
// --missing does) shuts down at once. Workers that never ran are not
// waited for: the bridge and the alertsys worker each waited for a
// goroutine that did not exist, and Shutdown hung.
func TestShutdownWithoutStart(t *testing.T) {
	app, err := appliance.New(appliance.Options{Home: t.TempDir(), HTTPListen: "127.0.0.1:0", MQTTListen: "127.0.0.1:0",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), BcryptCost: 4})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- app.Shutdown(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown of an appliance that never started did not return")
	}
}

package loadgen

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// The full appliance can run in a child process: the parent seeds nothing
// and publishes; the child builds, seeds and serves, then reports its own
// counters and peak memory. Protocol on the child's stdio: the child
// writes "ready <mqtt addr>", the parent writes "done" when publishing
// ended, the child answers one JSON Result and exits.

// ServeChild is the child side: cfg carries the sizes, qos the scenario.
func ServeChild(ctx context.Context, cfg Config, qos byte, in io.Reader, out io.Writer) error {
	app, cleanup, err := startFull(cfg, qos)
	if err != nil {
		return err
	}
	defer cleanup()
	cpu0 := cpuSeconds()
	if _, err := fmt.Fprintf(out, "ready %s\n", app.MQTTAddr()); err != nil {
		return err
	}
	line := make(chan error, 1)
	go func() {
		s := bufio.NewScanner(in)
		if s.Scan() && strings.TrimSpace(s.Text()) == "done" {
			line <- nil
			return
		}
		line <- errors.New("loadgen child: parent went away")
	}()
	select {
	case err := <-line:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	r, err := collect(app, qos)
	if err != nil {
		return err
	}
	r.CPUSeconds = cpuSeconds() - cpu0
	return json.NewEncoder(out).Encode(r)
}

func runFullChild(ctx context.Context, cfg Config, qos byte, wl [][]message) (Result, error) {
	args := append(append([]string(nil), cfg.Child[1:]...), "--qos", fmt.Sprint(qos))
	cmd := exec.CommandContext(ctx, cfg.Child[0], args...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return Result{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Result{}, err
	}
	if err := cmd.Start(); err != nil {
		return Result{}, err
	}
	defer func() { _ = cmd.Wait() }()
	defer stdin.Close()
	rd := bufio.NewReader(stdout)
	ready, err := rd.ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(ready), "ready ")
	if err != nil || !ok {
		return Result{}, fmt.Errorf("loadgen child did not start (%q): %v", ready, err)
	}
	t0 := time.Now()
	lat, derr := drive(ctx, addr, cfg, qos, wl)
	if _, err := io.WriteString(stdin, "done\n"); err != nil {
		return Result{}, err
	}
	var r Result
	if err := json.NewDecoder(rd).Decode(&r); err != nil {
		return Result{}, fmt.Errorf("loadgen child result: %w", err)
	}
	r.Name = "beaconhub-full-proc"
	r.Seconds = time.Since(t0).Seconds()
	r.ReportsPerSec = float64(r.Reports) / r.Seconds
	r.setAcks(lat)
	return r, derr
}

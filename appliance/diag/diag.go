// Package diag writes the periodic JSON diagnostic snapshots of debug mode
// (server_mode = debug or the --debug flag): process and memory figures plus
// whatever the running subsystems report, rotated to server_debug_max_files.
package diag

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"beaconhub/appliance/clock"
	"beaconhub/appliance/config"
)

// Source contributes a named section to each snapshot.
type Source func() any

// Snapshotter runs while debug mode is on; it follows settings changes live.
type Snapshotter struct {
	live    *config.Live
	paths   config.Paths
	clock   clock.Clock
	log     *slog.Logger
	forced  bool // --debug on the command line
	started time.Time

	mu      sync.Mutex
	sources map[string]Source
	timer   clock.Timer
	running bool
	closed  bool
	// lastCPU and lastAt are the previous snapshot's process CPU time
	// and clock reading, for cpu_percent over the interval between.
	lastCPU time.Duration
	lastAt  time.Time
}

// procSample is what procFigures could read; a field is zero when not.
type procSample struct {
	rss                 uint64 // resident size
	rssOK               bool
	cpu                 time.Duration
	cpuOK               bool
	load                []float64 // 1, 5 and 15 minute load averages
	diskFree, diskTotal uint64    // the home's filesystem
	diskOK              bool
}

// New returns a snapshotter; call Start to begin following the config.
func New(live *config.Live, paths config.Paths, c clock.Clock, log *slog.Logger, forced bool) *Snapshotter {
	return &Snapshotter{live: live, paths: paths, clock: c, log: log, forced: forced, started: c.Now(), sources: map[string]Source{}}
}

// AddSource registers a section.
func (s *Snapshotter) AddSource(name string, src Source) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sources[name] = src
}

// Start applies the current mode and re-applies it on every settings change.
func (s *Snapshotter) Start() {
	s.live.Subscribe(func(_, _ *config.Config) { s.apply() })
	s.apply()
}

// Running reports whether snapshots are being written.
func (s *Snapshotter) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

func (s *Snapshotter) apply() {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := !s.closed && (s.forced || s.live.Get().ServerMode == "debug")
	if want == s.running {
		return
	}
	s.running = want
	if want {
		s.log.Info("diagnostic snapshots started", "dir", s.dir())
		s.schedule()
	} else {
		s.log.Info("diagnostic snapshots stopped")
		if s.timer != nil {
			s.timer.Stop()
			s.timer = nil
		}
	}
}

// schedule arms the next snapshot; mu must be held.
func (s *Snapshotter) schedule() {
	d := time.Duration(s.live.Get().DebugSnapshotInterval) * time.Second
	s.timer = s.clock.AfterFunc(d, func() {
		if err := s.WriteNow(); err != nil {
			s.log.Warn("diagnostic snapshot failed", "err", err)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.running {
			s.schedule()
		}
	})
}

// Close stops snapshots for good.
func (s *Snapshotter) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.apply()
}

func (s *Snapshotter) dir() string { return s.paths.Resolve(s.live.Get().DebugLogDir) }

// WriteNow writes one snapshot and prunes old files.
func (s *Snapshotter) WriteNow() error {
	c := s.live.Get()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	now := s.clock.Now().UTC()
	proc := procFigures(s.paths.Home)
	// The threshold is the spec's resident memory; the Go runtime's Sys
	// (what it holds from the system, resident or not) stands in only
	// where the resident size cannot be read.
	used, compares := ms.Sys, "sys"
	memory := map[string]any{
		"heap_alloc_bytes": ms.HeapAlloc,
		"sys_bytes":        ms.Sys,
		"num_gc":           ms.NumGC,
		"threshold_mb":     c.PerfMemoryThreshold,
	}
	if proc.rssOK {
		used, compares = proc.rss, "rss"
		memory["rss_bytes"] = proc.rss
	}
	memory["threshold_compares"] = compares
	memory["over_threshold"] = used > uint64(c.PerfMemoryThreshold)<<20
	system := map[string]any{
		"num_cpu":    runtime.NumCPU(),
		"gomaxprocs": runtime.GOMAXPROCS(0),
	}
	if len(proc.load) == 3 {
		system["load_avg"] = proc.load
	}
	if proc.diskOK {
		system["disk_free_bytes"] = proc.diskFree
		system["disk_total_bytes"] = proc.diskTotal
	}
	snap := map[string]any{
		"time":       now.Format(time.RFC3339Nano),
		"uptime_s":   int64(now.Sub(s.started).Seconds()),
		"goroutines": runtime.NumGoroutine(),
		"memory":     memory,
		"system":     system,
	}
	s.mu.Lock()
	if proc.cpuOK {
		system["cpu_seconds"] = proc.cpu.Seconds()
		// cpu_percent: of one core, over the time since the last
		// snapshot (100 = one core busy throughout); absent on the
		// first, which has no interval to speak of.
		if wall := now.Sub(s.lastAt); !s.lastAt.IsZero() && wall > 0 {
			system["cpu_percent"] = math.Round(1000*float64(proc.cpu-s.lastCPU)/float64(wall)) / 10
		}
		s.lastCPU, s.lastAt = proc.cpu, now
	}
	for name, src := range s.sources {
		snap[name] = src()
	}
	s.mu.Unlock()
	data, err := json.MarshalIndent(snap, "", "  ")
	if err != nil {
		return err
	}
	dir := s.dir()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	name := filepath.Join(dir, fmt.Sprintf("snapshot-%s.json", now.Format("20060102T150405.000Z")))
	if err := os.WriteFile(name, data, 0o640); err != nil {
		return err
	}
	return prune(dir, c.DebugMaxFiles)
}

func prune(dir string, keep int) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var names []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "snapshot-") && strings.HasSuffix(e.Name(), ".json") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for len(names) > keep {
		if err := os.Remove(filepath.Join(dir, names[0])); err != nil {
			return err
		}
		names = names[1:]
	}
	return nil
}

package clock

import (
	"sync"
	"time"
)

// Job runs fn first after start, then every period after each run ends,
// on the clock's timers (so virtual time drives it in tests). Runs never
// overlap; Stop prevents further runs (one in progress finishes).
type Job struct {
	clk          Clock
	first, every time.Duration
	fn           func()

	mu      sync.Mutex
	timer   Timer
	stopped bool
}

// NewJob prepares a job; Start arms it.
func NewJob(c Clock, first, every time.Duration, fn func()) *Job {
	return &Job{clk: c, first: first, every: every, fn: fn}
}

// Start arms the first run.
func (j *Job) Start() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.stopped = false
	j.timer = j.clk.AfterFunc(j.first, j.run)
}

// Stop cancels the next run.
func (j *Job) Stop() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.stopped = true
	if j.timer != nil {
		j.timer.Stop()
	}
}

func (j *Job) run() {
	j.fn()
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.stopped {
		j.timer = j.clk.AfterFunc(j.every, j.run)
	}
}

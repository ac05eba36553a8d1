package ingest

import (
	"sort"
	"sync"
	"sync/atomic"
)

// latencyRing keeps a window of sampled receive-to-commit latencies.
type latencyRing struct {
	n    atomic.Uint64
	mu   sync.Mutex
	buf  []int64
	next int
	full bool
}

func newLatencyRing(size int) *latencyRing { return &latencyRing{buf: make([]int64, size)} }

// sample picks one publish in 16, so the callback costs nothing measurable.
func (l *latencyRing) sample() bool { return l.n.Add(1)%16 == 0 }

func (l *latencyRing) add(ms int64) {
	l.mu.Lock()
	l.buf[l.next] = ms
	l.next = (l.next + 1) % len(l.buf)
	if l.next == 0 {
		l.full = true
	}
	l.mu.Unlock()
}

func (l *latencyRing) percentiles() (p50, p99 int64, n int) {
	l.mu.Lock()
	n = l.next
	if l.full {
		n = len(l.buf)
	}
	cp := append([]int64(nil), l.buf[:n]...)
	l.mu.Unlock()
	if n == 0 {
		return 0, 0, 0
	}
	sort.Slice(cp, func(i, j int) bool { return cp[i] < cp[j] })
	return cp[n*50/100], cp[min(n-1, n*99/100)], n
}

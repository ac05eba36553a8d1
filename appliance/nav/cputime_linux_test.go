//go:build linux

package nav

import (
	"runtime"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// threadCPU is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID):
// unlike wall time it does not grow while the thread waits for a core, so
// it separates the search's own cost from a loaded machine's scheduling.
func threadCPU() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

// BenchmarkPathfindCPU50k is BenchmarkPathfind50k measured in thread CPU
// time per query (each worker locked to its thread), for the three
// searches on the same queries.
// Run: go test -run '^$' -bench PathfindCPU50k -cpu 2 -benchtime 20000x ./appliance/nav/
func BenchmarkPathfindCPU50k(b *testing.B) {
	g, qs := benchQueries()
	for _, mode := range benchModes {
		b.Run(mode.name, func(b *testing.B) {
			g.heur = mode.heur
			defer func() { g.heur = heurALT }()
			var next atomic.Int64
			lat := make(chan []time.Duration, 64)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				var mine []time.Duration
				for pb.Next() {
					q := qs[int(next.Add(1))%len(qs)]
					start := threadCPU()
					g.ShortestPath(q.src, q.dst, q.avoid)
					mine = append(mine, threadCPU()-start)
				}
				lat <- mine
			})
			close(lat)
			var all []time.Duration
			for l := range lat {
				all = append(all, l...)
			}
			slices.Sort(all)
			if len(all) > 0 {
				b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "cpu-p99-ms")
				b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "cpu-p50-ms")
			}
		})
	}
}

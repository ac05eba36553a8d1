package alerting_test

import (
	"sort"
	"sync"
	"testing"
	"time"

	"beaconhub/appliance/alerting"
	"beaconhub/appliance/alerting/alertsystest"
	"beaconhub/appliance/clock"
	"beaconhub/store"
)

// BenchmarkSlowAlertsysBurst: a burst of 40 presses handed to the worker
// at once, an alertsys taking 20 ms per convene (real HTTP on loopback).
// Reported per burst: the median and the last press's time to its
// convene, and both as a ratio to one press alone on the same server
// (x_one). parallel=1 is the worker as it was (one request at a time).
//
//	go test -run '^$' -bench SlowAlertsysBurst -benchtime 5x ./appliance/alerting/
func BenchmarkSlowAlertsysBurst(b *testing.B) {
	const presses, slow = 40, 20 * time.Millisecond
	for _, par := range []int{1, 4} {
		b.Run("parallel="+string(rune('0'+par)), func(b *testing.B) {
			fake := alertsystest.New()
			defer fake.Close()
			fake.Set(func(s *alertsystest.Server) { s.Slow = slow })
			client := alerting.NewClient(alerting.ClientOptions{Live: liveConfig(b, fake.URL), Clock: clock.Real{}, Timeout: 10 * time.Second})
			w := alerting.NewWorker(alerting.WorkerOptions{Client: client, Clock: clock.Real{}, Logger: quiet, Parallel: par, QueueSize: 64})
			var mu sync.Mutex
			var lat []time.Duration
			start := map[uint64]time.Time{}
			done := make(chan struct{}, presses)
			w.OnResult(func(e store.Event, r alerting.Result) {
				mu.Lock()
				lat = append(lat, time.Since(start[e.ID]))
				mu.Unlock()
				done <- struct{}{}
			})
			w.Start()
			defer w.Stop()
			id := uint64(0)
			burst := func(n int) []time.Duration {
				mu.Lock()
				lat = lat[:0]
				for range n {
					id++
					start[id] = time.Now()
				}
				mu.Unlock()
				for i := id - uint64(n) + 1; i <= id; i++ {
					w.Enqueue(store.Event{ID: i, CreatedAt: time.Now().UnixMilli()})
				}
				for range n {
					<-done
				}
				mu.Lock()
				defer mu.Unlock()
				out := append([]time.Duration(nil), lat...)
				sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
				return out
			}
			burst(1) // a token first
			var one, p50, last time.Duration
			b.ResetTimer()
			for range b.N {
				one += burst(1)[0]
				l := burst(presses)
				p50 += l[len(l)/2]
				last += l[len(l)-1]
			}
			n := time.Duration(b.N)
			b.ReportMetric(float64((p50 / n).Milliseconds()), "p50_ms")
			b.ReportMetric(float64((last / n).Milliseconds()), "last_ms")
			b.ReportMetric(float64(p50)/float64(one), "p50_x_one")
			b.ReportMetric(float64(last)/float64(one), "last_x_one")
		})
	}
}

package push

import "sync"

// worker runs handed-off jobs one at a time, in order, on its own
// goroutine. The service has two: one for the site's staff messages and
// one for the vendor's ops copies, so that a post to an ops server that
// drops packets (a site without internet; each attempt waits for the
// transport's timeout) never holds an SOS behind it.
type worker struct {
	mu   sync.Mutex
	cond *sync.Cond
	jobs []func() // a nil job ends the worker
	busy bool
	done chan struct{} // closed when the worker has exited
}

func newWorker() *worker {
	w := &worker{done: make(chan struct{})}
	w.cond = sync.NewCond(&w.mu)
	return w
}

// do hands fn to the worker.
func (w *worker) do(fn func()) {
	w.mu.Lock()
	w.jobs = append(w.jobs, fn)
	w.cond.Signal()
	w.mu.Unlock()
}

// end lets the jobs already handed run, then ends the worker.
func (w *worker) end() { w.do(nil) }

func (w *worker) run() {
	for {
		w.mu.Lock()
		for len(w.jobs) == 0 {
			w.busy = false
			w.cond.Broadcast()
			w.cond.Wait()
		}
		fn := w.jobs[0]
		w.jobs = w.jobs[1:]
		w.busy = true
		w.mu.Unlock()
		if fn == nil {
			close(w.done)
			w.mu.Lock()
			w.busy = false
			w.cond.Broadcast()
			w.mu.Unlock()
			return
		}
		fn()
	}
}

// idle waits until every handed-off job ran.
func (w *worker) idle() {
	w.mu.Lock()
	for len(w.jobs) > 0 || w.busy {
		w.cond.Wait()
	}
	w.mu.Unlock()
}

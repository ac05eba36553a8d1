package eink

import (
	"sync"
	"testing"
	"time"

	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// gateWriter holds every Do while closed (a group commit under way: a
// large batch of readings, a slow flash fsync).
type gateWriter struct {
	w      *store.Writer
	mu     sync.Mutex
	closed bool
	held   []func()
	in     chan struct{}
}

func (g *gateWriter) Do(fn func(tx *bolt.Tx) error, done func(error)) {
	g.mu.Lock()
	if g.closed {
		g.held = append(g.held, func() { g.w.Do(fn, done) })
		g.mu.Unlock()
		select {
		case g.in <- struct{}{}:
		default:
		}
		return
	}
	g.mu.Unlock()
	g.w.Do(fn, done)
}

func (g *gateWriter) open() {
	g.mu.Lock()
	g.closed = false
	h := g.held
	g.held = nil
	g.mu.Unlock()
	for _, f := range h {
		f()
	}
}

func storedVersion(t *testing.T, db *store.DB, id uint64) int {
	t.Helper()
	var v int
	if err := db.ViewAssets(func(tx *store.AssetTx) error {
		p, err := tx.EInkPollState(id)
		v = p.Version
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return v
}

// A poll that bumps waits for the commit of its version (9861b4b). A
// second poll of the same display in that wait (the device retrying a
// slow answer) finds the hash equal, no bump, and is answered at once
// with the new version, not yet committed (a review). A crash then, and
// the restart would hand that number out again for other content. It
// now waits for the commit as the first does.
func TestNoPollIsServedAVersionBeforeItsCommit(t *testing.T) {
	r := newRig(t)
	uid := r.sensor("112233445566", "SEN-K1-1")
	r.rd.set(uid, 2, 4.0)
	id := r.approve(mac1, `{"objects":[{"t":0,"x":1,"y":2,"s":"Fridge"},{"t":"sensor","sensor_uid":"SEN-K1-1","metric":2,"decimals":1}]}`)
	base := r.poll(mac1).Version
	g := &gateWriter{w: r.w, closed: true, in: make(chan struct{}, 1)}
	r.svc.w = g
	r.rd.set(uid, 2, 4.5) // new content: the next poll bumps
	first := make(chan reply, 1)
	go func() { first <- r.poll(mac1) }()
	within(t, g.in, "the bumping poll never handed its write")
	second := make(chan reply, 1)
	go func() { second <- r.poll(mac1) }()
	var got reply
	select {
	case got = <-second:
	case <-time.After(2 * time.Second):
		g.open()
		<-first
		<-second
		t.Log("the second poll waited for the commit too")
		return
	}
	stored := storedVersion(t, r.db, id)
	g.open()
	<-first
	t.Logf("version %d committed; the second poll was served %d (%q) while the store held %d", base, got.Version, texts(got), stored)
	if got.Version != stored {
		t.Errorf("a poll was served version %d before it was committed (store: %d): a crash now hands %d out again for other content", got.Version, stored, got.Version)
	}
}

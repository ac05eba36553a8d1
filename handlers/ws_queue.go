package handlers

import "sync"

// wsQueue is one connection's outgoing frames, in the order they are to
// be written. Its bound is what keeps a burst from cutting a client that
// reads as fast as it can: a gateway message carrying hundreds of beacons
// a dashboard follows, an engine restart, or a client sending its
// subscribes without waiting for each reply all queue hundreds of frames
// at once, and a queue that dropped its client when a frame count ran out
// dropped exactly those clients, in a loop (each reconnect resubscribes
// and queues a snapshot per beacon).
//
// Up to soft frames queue in order, every one kept. Past it, a track
// frame replaces the last queued frame of its own channel instead of
// adding one: a client that is behind receives each beacon's newest state
// rather than a backlog of stale ones (what it missed of a beacon's
// history is in its zone intervals). The queue so holds at most soft plus
// one frame per subscribed channel, whatever the event rate, and never
// has to drop a client for being behind: a client that stops reading is
// cut by its write deadline, one that stops answering pings by its read
// deadline.
//
// Replies to the client's own messages are never merged. The reader
// waits for room (waitRoom) before queueing one, so a client that sends
// faster than it reads is held back at its own socket, not queued for.
type wsQueue struct {
	mu    sync.Mutex
	items []queuedFrame
	// last maps a channel to the index in items of its last track frame,
	// the one a newer frame of that channel may replace. A reply naming
	// the channel (unsubscribed, subscribed) is a boundary: frames
	// queued after it never move before it.
	last map[string]int
	// snapWait holds the channels subscribed whose snapshot is not queued
	// yet (a channel dropped meanwhile is taken out, and its snapshot
	// then not queued).
	snapWait map[string]bool
	// seq is, per channel, the Location.Seq of the newest track frame
	// queued since the channel's last boundary reply: a frame not newer
	// is dropped. A snapshot read while the hub's dispatcher still held
	// an older event of the beacon would otherwise be followed by that
	// event, and the client would keep showing the older state.
	seq   map[string]uint64
	soft  int // frames kept in order before track frames merge
	room  int // replies wait while the queue holds this many
	limit int // a queue this long means a defect: the client is cut
	wake  chan struct{}
	space chan struct{}
}

type queuedFrame struct {
	ch string // the channel of a track frame, "" for a reply
	f  outFrame
}

func newWSQueue(soft, maxSubs int) *wsQueue {
	return &wsQueue{soft: soft, room: soft + maxSubs, limit: 2*(soft+maxSubs) + maxSubs,
		last: map[string]int{}, snapWait: map[string]bool{}, seq: map[string]uint64{},
		wake: make(chan struct{}, 1), space: make(chan struct{}, 1)}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// track queues a frame of channel ch, merging it into the channel's last
// queued frame once the queue holds soft frames. seq is the frame's
// Location.Seq (0 for a frame that has none, a debug frame): one not
// newer than the channel's last is dropped (stale). It reports whether
// the frame was merged or dropped as stale, and false for ok when the
// queue is past any bound its callers can reach (the client is then cut).
func (q *wsQueue) track(ch string, f outFrame, seq uint64) (merged, stale, ok bool) {
	q.mu.Lock()
	if seq != 0 {
		if seq <= q.seq[ch] {
			q.mu.Unlock()
			return false, true, true
		}
		q.seq[ch] = seq
	}
	if i, has := q.last[ch]; has && len(q.items) >= q.soft {
		q.items[i].f = f
		merged = true
	} else if len(q.items) >= q.limit {
		q.mu.Unlock()
		return false, false, false
	} else {
		q.last[ch] = len(q.items)
		q.items = append(q.items, queuedFrame{ch: ch, f: f})
	}
	q.mu.Unlock()
	signal(q.wake)
	return merged, false, true
}

// expectSnapshot marks ch as subscribed and waiting for its snapshot.
func (q *wsQueue) expectSnapshot(ch string) {
	q.mu.Lock()
	q.snapWait[ch] = true
	q.mu.Unlock()
}

// snapshot queues the subscription's first frame unless a live frame of
// the channel at least as new (by seq) was queued since expectSnapshot,
// or the channel was dropped meanwhile. It reports whether the snapshot
// was queued.
func (q *wsQueue) snapshot(ch string, f outFrame, seq uint64) bool {
	q.mu.Lock()
	want := q.snapWait[ch]
	delete(q.snapWait, ch)
	q.mu.Unlock()
	if !want {
		return false
	}
	_, stale, ok := q.track(ch, f, max(seq, 1))
	return ok && !stale
}

// forget drops ch's pending snapshot (the beacon has not been seen).
func (q *wsQueue) forget(ch string) {
	q.mu.Lock()
	delete(q.snapWait, ch)
	q.mu.Unlock()
}

// reply queues a reply; ch, when not "", is the channel it concerns,
// which no later frame may overtake. It does not wait (see waitRoom).
func (q *wsQueue) reply(ch string, f outFrame) {
	q.mu.Lock()
	if ch != "" {
		delete(q.last, ch)
		// A new subscription (or none) starts the order afresh.
		delete(q.seq, ch)
	}
	q.items = append(q.items, queuedFrame{f: f})
	q.mu.Unlock()
	signal(q.wake)
}

// waitRoom blocks until the queue holds fewer than room frames; false
// when done closed first.
func (q *wsQueue) waitRoom(done <-chan struct{}) bool {
	for {
		select {
		case <-done: // closing: nothing more is worth queuing
			return false
		default:
		}
		q.mu.Lock()
		n := len(q.items)
		q.mu.Unlock()
		if n < q.room {
			return true
		}
		select {
		case <-q.space:
		case <-done:
			return false
		}
	}
}

// take hands the writer every queued frame (appended to dst) and empties
// the queue.
func (q *wsQueue) take(dst []queuedFrame) []queuedFrame {
	q.mu.Lock()
	dst = append(dst, q.items...)
	clear(q.items)
	q.items = q.items[:0]
	clear(q.last)
	q.mu.Unlock()
	signal(q.space)
	return dst
}

// len is how many frames are queued.
func (q *wsQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

package handlers

import (
	"bufio"
	"net"
	"net/http"
	"sync"
)

// coalescingConn lets a client's writer goroutine put every frame it finds
// queued into one socket write. gorilla/websocket writes each frame to the
// connection as soon as it is framed, one syscall per frame; a client that
// follows a busy beacon, or many beacons, gets frames in bursts, and a
// burst of 50 frames cost 50 writes (and 50 TCP segments on loopback).
// Between hold and release, writes are appended to a buffer that release
// writes at once; outside, they pass straight through, so the handshake,
// pongs the reader goroutine sends and close frames are never delayed
// behind a batch that is not being built.
type coalescingConn struct {
	net.Conn
	mu   sync.Mutex
	held bool
	buf  []byte
}

// maxCoalesce bounds one batch: release writes at most about this much in
// one call (a burst larger than that is split), and a buffer grown past it
// is not kept for the next batch.
const maxCoalesce = 64 << 10

func (c *coalescingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.held {
		return c.Conn.Write(p)
	}
	c.buf = append(c.buf, p...)
	return len(p), nil
}

func (c *coalescingConn) hold() {
	c.mu.Lock()
	c.held = true
	c.mu.Unlock()
}

// full reports whether the batch being built should be released before
// another frame is added.
func (c *coalescingConn) full() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.buf) >= maxCoalesce
}

// release writes what the batch holds (under the write deadline the
// caller set) and returns to writing through.
func (c *coalescingConn) release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = false
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.buf)
	if cap(c.buf) > maxCoalesce {
		c.buf = nil
	} else {
		c.buf = c.buf[:0]
	}
	return err
}

// coalescingWriter hands the upgrader a coalescingConn in place of the
// hijacked connection. gorilla asks the ResponseWriter for http.Hijacker.
type coalescingWriter struct {
	http.ResponseWriter
	conn *coalescingConn
}

func (w *coalescingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, http.ErrNotSupported
	}
	nc, brw, err := h.Hijack()
	if err != nil {
		return nil, nil, err
	}
	w.conn = &coalescingConn{Conn: nc}
	return w.conn, brw, nil
}

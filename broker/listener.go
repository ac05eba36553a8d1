package broker

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/mochi-mqtt/server/v2/listeners"
)

// connectTimeout bounds how long an accepted connection may take to send its
// CONNECT. mochi sets no deadline until the CONNECT has been read, so without
// this a port scanner or a half-open socket would hold a goroutine and a file
// descriptor forever.
const connectTimeout = 10 * time.Second

// tcpListener replaces mochi's listeners.TCP, which is fine for demos but:
//   - returns from Serve on the first Accept error, so one burst of EMFILE
//     (too many open files) would silently stop the appliance accepting
//     gateways until restart; we back off and keep accepting;
//   - sets no deadline for the CONNECT packet (see connectTimeout);
//   - cannot close connections that are still in the CONNECT handshake when
//     the server shuts down, so Close could wait on them indefinitely.
//
// It is bound before it is handed to mochi so that Start can report a bind
// error synchronously and Addr is known immediately (tests use port 0).
type tcpListener struct {
	id    string
	ln    net.Listener
	log   *slog.Logger
	onErr func(error)
	// disconnect, when set, replaces mochi's closeClients at Close: it
	// must say goodbye to this listener's clients without touching
	// mochi's client registry (see Close).
	disconnect func()

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup // one per accepted connection, until mochi is done with it

	done      chan struct{} // closed by Close; wakes an accept backoff
	closeOnce sync.Once
	serving   chan struct{} // closed when Serve starts
	served    chan struct{} // closed when Serve returns
}

var _ listeners.Listener = (*tcpListener)(nil)

func newTCPListener(id string, ln net.Listener, log *slog.Logger, onErr func(error)) *tcpListener {
	return &tcpListener{
		id:      id,
		ln:      ln,
		log:     log,
		onErr:   onErr,
		conns:   make(map[net.Conn]struct{}),
		done:    make(chan struct{}),
		serving: make(chan struct{}),
		served:  make(chan struct{}),
	}
}

func (l *tcpListener) ID() string              { return l.id }
func (l *tcpListener) Address() string         { return l.ln.Addr().String() }
func (l *tcpListener) Protocol() string        { return "tcp" }
func (l *tcpListener) Init(*slog.Logger) error { return nil }

func (l *tcpListener) Serve(establish listeners.EstablishFn) {
	close(l.serving)
	defer close(l.served)
	var delay time.Duration
	for {
		conn, err := l.ln.Accept()
		if err != nil {
			if l.isClosed() || errors.Is(err, net.ErrClosed) {
				return
			}
			// Same policy as net/http: exponential pause so a persistent
			// error (fd exhaustion) does not spin, but never give up.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			l.onErr(err)
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-l.done:
				t.Stop()
				return
			}
			continue
		}
		delay = 0
		if !l.track(conn) {
			_ = conn.Close()
			return
		}
		_ = conn.SetDeadline(time.Now().Add(connectTimeout))
		go func() {
			defer l.wg.Done()
			defer l.untrack(conn)
			if err := establish(l.id, conn); err != nil {
				// Refused CONNECTs, resets and timeouts are routine for a
				// fleet of field devices; the counters tell the story.
				l.log.Debug("mqtt connection ended", "remote", conn.RemoteAddr().String(), "error", err)
			}
		}()
	}
}

// track registers conn and its goroutine, unless the listener is closing.
// Doing both under the lock means Close's Wait can never race an Add.
func (l *tcpListener) track(conn net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.conns[conn] = struct{}{}
	l.wg.Add(1)
	return true
}

func (l *tcpListener) untrack(conn net.Conn) {
	_ = conn.Close()
	l.mu.Lock()
	delete(l.conns, conn)
	l.mu.Unlock()
}

func (l *tcpListener) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// Close stops accepting, lets mochi disconnect its clients (DISCONNECT with
// "server shutting down" for MQTT 5), closes whatever is still half-way
// through CONNECT, and waits until every connection goroutine, and with it
// every hook call, has returned.
func (l *tcpListener) Close(closeClients listeners.CloseFn) {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		close(l.done)
		l.mu.Unlock()

		_ = l.ln.Close()
		// mochi's closeClients walks its client registry with
		// GetByListener, which takes the registry's read lock twice; a
		// client connecting or leaving in between queues a writer and
		// deadlocks the shutdown (mochi-mqtt/server#488, unfixed in
		// v2.7.9; it hung our suite). Our own list of live clients gives
		// the same DISCONNECT without that lock.
		if l.disconnect != nil {
			l.disconnect()
		} else {
			closeClients(l.id)
		}

		l.mu.Lock()
		for c := range l.conns {
			_ = c.Close()
		}
		l.mu.Unlock()

		l.wg.Wait()
		select {
		case <-l.serving:
			<-l.served
		default:
		}
	})
}

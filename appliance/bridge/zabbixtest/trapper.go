package zabbixtest

import (
	"bytes"
	"encoding/json"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"beaconhub/appliance/bridge"
)

// Trapper is a small stand-in for a Zabbix trapper on loopback, for the
// fault tests the real server cannot stage on demand (slow, garbage,
// refusing). It decodes requests with the bridge's frame reader and
// answers like Zabbix does.
type Trapper struct {
	Addr string

	ln   net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	mode Mode
	got  []Received
	reqs int
}

// Mode is how the trapper answers.
type Mode int

// Trapper modes.
const (
	Accept  Mode = iota // processed: all
	Refuse              // processed: 0; failed: all (unknown items)
	Hang                // read the request, never answer
	Garbage             // answer bytes that are no frame
	Close               // close without answering
	Discard             // processed: all, keeping nothing (benchmarks)
)

// Received is one value as the trapper decoded it.
type Received struct {
	Host, Key, Value string
	Clock, NS        int64
}

// NewTrapper listens on a free loopback port until the test ends.
func NewTrapper(t testing.TB) *Trapper {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := &Trapper{Addr: ln.Addr().String(), ln: ln}
	tr.wg.Add(1)
	go tr.serve()
	t.Cleanup(func() { _ = ln.Close(); tr.wg.Wait() })
	return tr
}

// SetMode changes how later requests are answered.
func (tr *Trapper) SetMode(m Mode) {
	tr.mu.Lock()
	tr.mode = m
	tr.mu.Unlock()
}

// Values returns every value received so far (in Accept and Refuse modes).
func (tr *Trapper) Values() []Received {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]Received(nil), tr.got...)
}

// Requests counts the requests read, in any mode.
func (tr *Trapper) Requests() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.reqs
}

// Last returns the newest value received for key, if any.
func (tr *Trapper) Last(key string) (Received, bool) {
	vs := tr.Values()
	for i := len(vs) - 1; i >= 0; i-- {
		if vs[i].Key == key {
			return vs[i], true
		}
	}
	return Received{}, false
}

func (tr *Trapper) serve() {
	defer tr.wg.Done()
	for {
		c, err := tr.ln.Accept()
		if err != nil {
			return
		}
		tr.wg.Add(1)
		go func() {
			defer tr.wg.Done()
			defer c.Close()
			tr.handle(c)
		}()
	}
}

func (tr *Trapper) handle(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	data, err := bridge.ReadFrame(c, 64<<20)
	if err != nil {
		return
	}
	var req struct {
		Request string     `json:"request"`
		Data    []Received `json:"data"`
	}
	tr.mu.Lock()
	tr.reqs++
	mode := tr.mode
	tr.mu.Unlock()
	if mode == Discard {
		// Benchmarks measure the sender, not this decoder: count values
		// instead of decoding them.
		n := strconv.Itoa(bytes.Count(data, []byte(`{"host":`)))
		_, _ = c.Write(bridge.AppendFrame(nil, []byte(`{"response":"success","info":"processed: `+n+`; failed: 0; total: `+n+`"}`), false))
		return
	}
	if json.Unmarshal(data, &req) != nil || req.Request != "sender data" {
		_, _ = c.Write(bridge.AppendFrame(nil, []byte(`{"response":"failed","info":"invalid request"}`), false))
		return
	}
	switch mode {
	case Hang:
		// Wait for the client to give up (or the test to end).
		_, _ = c.Read(make([]byte, 1))
		return
	case Garbage:
		_, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
		return
	case Close:
		return
	}
	tr.mu.Lock()
	tr.got = append(tr.got, req.Data...)
	tr.mu.Unlock()
	n := len(req.Data)
	processed, failed := n, 0
	if mode == Refuse {
		processed, failed = 0, n
	}
	info := "processed: " + strconv.Itoa(processed) + "; failed: " + strconv.Itoa(failed) +
		"; total: " + strconv.Itoa(n) + "; seconds spent: 0.000100"
	body, _ := json.Marshal(map[string]string{"response": "success", "info": info})
	_, _ = c.Write(bridge.AppendFrame(nil, body, false))
}

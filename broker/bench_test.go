package broker

import (
	"bufio"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
)

var noDeadline time.Time

type countingSink struct{ n atomic.Int64 }

func (s *countingSink) HandlePublish(string, string, []byte, byte) error {
	s.n.Add(1)
	return nil
}

// BenchmarkEmbeddedQoS0Counting measures broker overhead alone: raw
// publishers stream QoS 0 adv1-sized messages to a sink that only counts.
func BenchmarkEmbeddedQoS0Counting(b *testing.B) {
	const publishers = 8
	sink := &countingSink{}
	e, err := NewEmbedded(EmbeddedOptions{
		Listen:      "127.0.0.1:0",
		Credentials: func() (string, string) { return testUser, testPass },
		Sink:        sink,
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := e.Start(); err != nil {
		b.Fatal(err)
	}
	defer e.Close()

	payload := []byte(`{"ts":1732290000123,"reports":[{"mac":"C3:00:00:00:0A:01","rssi":-71,"temperature":4.6,"humidity":61.2,"vbatt":2950}]}`)
	conns := make([]net.Conn, publishers)
	frames := make([][]byte, publishers)
	for i := range conns {
		id := fmt.Sprintf("AC233FA0B1%02X", i)
		rc := dialRaw(b, e.Addr())
		if code := rc.connect(4, id, testUser, testPass); code != 0 {
			b.Fatalf("connect: %#x", code)
		}
		_ = rc.conn.SetDeadline(noDeadline)
		conns[i] = rc.conn
		frames[i] = encode(b, packets.Packet{
			FixedHeader:     packets.FixedHeader{Type: packets.Publish},
			ProtocolVersion: 4,
			TopicName:       "gw/" + id + "/adv1",
			Payload:         payload,
		})
	}

	b.SetBytes(int64(len(frames[0])))
	b.ResetTimer()
	var wg sync.WaitGroup
	for i, conn := range conns {
		n := b.N / publishers
		if i == 0 {
			n += b.N % publishers
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := bufio.NewWriterSize(conn, 64<<10)
			for range n {
				_, _ = w.Write(frames[i])
			}
			_ = w.Flush()
		}()
	}
	wg.Wait()
	eventually(b, "all messages counted", func() bool { return sink.n.Load() >= int64(b.N) })
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

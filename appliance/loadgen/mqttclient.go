package loadgen

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"
)

// A minimal MQTT 3.1.1 publisher. Load generation must cost the machine as
// little as possible so that the server, not the client, is measured; a
// full client library allocates per message, this one sends pre-encoded
// packets and only patches the packet id.

func appendRemaining(b []byte, n int) []byte {
	for {
		d := byte(n % 128)
		n /= 128
		if n > 0 {
			d |= 0x80
		}
		b = append(b, d)
		if n == 0 {
			return b
		}
	}
}

func appendStr(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// encodePublish returns a PUBLISH packet and the offset of its packet id
// (-1 for QoS 0).
func encodePublish(topic string, payload []byte, qos byte) ([]byte, int) {
	rem := 2 + len(topic) + len(payload)
	if qos > 0 {
		rem += 2
	}
	b := make([]byte, 0, rem+5)
	b = append(b, 0x30|qos<<1)
	b = appendRemaining(b, rem)
	b = appendStr(b, topic)
	off := -1
	if qos > 0 {
		off = len(b)
		b = append(b, 0, 0)
	}
	b = append(b, payload...)
	return b, off
}

type conn struct {
	c  net.Conn
	r  *bufio.Reader
	bw *bufio.Writer
}

func dial(addr, clientID, user, pass string) (*conn, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	var vh []byte
	vh = appendStr(vh, "MQTT")
	vh = append(vh, 4, 0xC2) // level 4; username, password, clean session
	vh = binary.BigEndian.AppendUint16(vh, 60)
	vh = appendStr(vh, clientID)
	vh = appendStr(vh, user)
	vh = appendStr(vh, pass)
	pk := appendRemaining([]byte{0x10}, len(vh))
	pk = append(pk, vh...)
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(pk); err != nil {
		c.Close()
		return nil, err
	}
	r := bufio.NewReaderSize(c, 4096)
	var ack [4]byte
	if _, err := io.ReadFull(r, ack[:]); err != nil {
		c.Close()
		return nil, fmt.Errorf("connack: %w", err)
	}
	if ack[0] != 0x20 || ack[3] != 0 {
		c.Close()
		return nil, fmt.Errorf("connect refused (code %d)", ack[3])
	}
	_ = c.SetDeadline(time.Time{})
	return &conn{c: c, r: r, bw: bufio.NewWriterSize(c, 64<<10)}, nil
}

// readPuback waits for the PUBACK of pid.
func (c *conn) readPuback(pid uint16) error {
	var hdr [4]byte
	for {
		if _, err := io.ReadFull(c.r, hdr[:2]); err != nil {
			return err
		}
		if hdr[0]>>4 != 4 || hdr[1] != 2 {
			return errors.New("unexpected packet while waiting for PUBACK")
		}
		if _, err := io.ReadFull(c.r, hdr[2:4]); err != nil {
			return err
		}
		if binary.BigEndian.Uint16(hdr[2:4]) == pid {
			return nil
		}
	}
}

func (c *conn) close() {
	_, _ = c.c.Write([]byte{0xE0, 0}) // DISCONNECT
	c.c.Close()
}

// pipelined publishes msgs at QoS 1 keeping up to window in flight until
// the deadline, then waits for the outstanding PUBACKs. It checks that
// PUBACKs come in publish order, as MQTT requires, and returns the
// publish-to-PUBACK latencies.
func pipelined(ctx context.Context, c *conn, msgs []message, window int, deadline time.Time, sch schedule) ([]time.Duration, error) {
	slots := make(chan struct{}, window)
	// PUBACKs come in publish order and at most window are in flight, so
	// send times fit a ring of window entries.
	sent := make([]time.Time, window)
	var lat []time.Duration
	readerDone := make(chan error, 1)
	var finished atomic.Bool
	go func() {
		var want uint16
		for n := 0; ; n++ {
			pid, err := c.readAnyPuback()
			if err != nil {
				if finished.Load() {
					err = nil // the read deadline that ends a drained run
				}
				readerDone <- err
				return
			}
			if want++; want == 0 {
				want = 1
			}
			if pid != want {
				readerDone <- fmt.Errorf("PUBACK %d arrived while %d was the oldest in flight", pid, want)
				return
			}
			if at := sent[n%window]; !at.Before(sch.record) {
				lat = append(lat, time.Since(at))
			}
			<-slots
		}
	}()
	var pid uint16
	var n int
	for i := 0; ctx.Err() == nil && !(i%64 == 0 && time.Now().After(deadline)); i++ {
		m := msgs[i%len(msgs)]
		var at time.Time
		if sch.every > 0 {
			at = sch.start.Add(time.Duration(i) * sch.every)
			if d := time.Until(at); d > 0 {
				time.Sleep(d)
			}
		}
		select {
		case slots <- struct{}{}:
		case err := <-readerDone:
			return lat, err
		}
		if pid++; pid == 0 {
			pid = 1
		}
		m.pk[m.pidAt], m.pk[m.pidAt+1] = byte(pid>>8), byte(pid)
		if at.IsZero() {
			at = time.Now()
		}
		sent[n%window] = at
		n++
		if _, err := c.c.Write(m.pk); err != nil {
			finished.Store(true)
			_ = c.c.SetReadDeadline(time.Now())
			<-readerDone
			return lat, err
		}
	}
	// Holding every slot means every publish was acknowledged.
	for k := 0; k < window; k++ {
		select {
		case slots <- struct{}{}:
		case err := <-readerDone:
			return lat, err
		}
	}
	finished.Store(true)
	_ = c.c.SetReadDeadline(time.Now())
	err := <-readerDone
	_ = c.c.SetReadDeadline(time.Time{})
	return lat, err
}

// readAnyPuback reads the next PUBACK and returns its packet id.
func (c *conn) readAnyPuback() (uint16, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
		return 0, err
	}
	if hdr[0]>>4 != 4 || hdr[1] != 2 {
		return 0, errors.New("unexpected packet while waiting for PUBACK")
	}
	return binary.BigEndian.Uint16(hdr[2:4]), nil
}

package bridge

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"time"
)

// BatchSize is the number of values per request. Zabbix processes a
// request in one go and answers with one count; smaller batches narrow
// down which keys a failure may belong to, larger ones save round trips.
const BatchSize = 1000

// MaxFailedKeys bounds the keys a failed batch puts into a log line.
const MaxFailedKeys = 20

// Sender delivers values to a Zabbix trapper. Each batch uses its own
// connection, as zabbix_sender does: the trapper closes it after replying.
type Sender struct {
	Addr    string        // host:port of the trapper
	Timeout time.Duration // per batch: dial, write and read together
	// Now stamps requests; defaults to time.Now.
	Now func() time.Time
}

// Result sums the replies to one Send.
type Result struct {
	Processed, Failed, Total int
	// FailedKeys holds keys of the batches that had failures, at most
	// MaxFailedKeys: Zabbix does not say which values it refused.
	FailedKeys []string
}

// Send delivers values in batches. It stops at the first batch that could
// not be delivered and returns what the earlier ones achieved.
func (s *Sender) Send(ctx context.Context, values []Value) (Result, error) {
	var res Result
	buf := make([]byte, 0, 4096)
	for start := 0; start < len(values); start += BatchSize {
		batch := values[start:min(start+BatchSize, len(values))]
		buf = buf[:headerLen]
		buf = AppendRequest(buf, batch, s.now())
		frameInPlace(buf)
		rep, err := s.exchange(ctx, buf)
		if err != nil {
			return res, err
		}
		res.Processed += rep.Processed
		res.Failed += rep.Failed
		res.Total += rep.Total
		if rep.Failed > 0 {
			for _, v := range batch {
				if len(res.FailedKeys) == MaxFailedKeys {
					break
				}
				res.FailedKeys = append(res.FailedKeys, v.Host+":"+v.Key)
			}
		}
	}
	return res, nil
}

// frameInPlace writes the standard header into the headerLen bytes
// reserved at the front of buf, saving a copy of the body.
func frameInPlace(buf []byte) {
	copy(buf, magic[:])
	buf[4] = FlagStandard
	binary.LittleEndian.PutUint32(buf[5:9], uint32(len(buf)-headerLen))
	binary.LittleEndian.PutUint32(buf[9:13], 0)
}

func (s *Sender) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// exchange writes one frame and reads the reply, all within Timeout and
// the context.
func (s *Sender) exchange(ctx context.Context, frame []byte) (Reply, error) {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", s.Addr)
	if err != nil {
		return Reply{}, fmt.Errorf("connect to zabbix: %w", err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	// A cancelled context must not wait for the deadline.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := conn.Write(frame); err != nil {
		return Reply{}, fmt.Errorf("send to zabbix: %w", err)
	}
	data, err := ReadFrame(conn, MaxReplyLen)
	if err != nil {
		return Reply{}, fmt.Errorf("read zabbix reply: %w", err)
	}
	return DecodeReply(data)
}

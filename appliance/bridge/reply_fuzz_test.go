package bridge

import (
	"bytes"
	"testing"
)

// FuzzReadReply feeds arbitrary bytes to the reply path (frame reader,
// then JSON decoder): it must never panic, never allocate beyond the
// limit, and a success must satisfy the reply's invariants.
func FuzzReadReply(f *testing.F) {
	f.Add(AppendFrame(nil, []byte(`{"response":"success","info":"processed: 1; failed: 0; total: 1; seconds spent: 0.1"}`), false))
	f.Add(AppendFrame(nil, []byte(`{"response":"failed","info":"x"}`), true))
	f.Add(compressed([]byte(`{"response":"success","info":"processed: 0; failed: 1; total: 1"}`), 63))
	f.Add([]byte("ZBXD\x01\xff\xff\xff\xff\x00\x00\x00\x00"))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, in []byte) {
		data, err := ReadFrame(bytes.NewReader(in), 4096)
		if err != nil {
			return
		}
		if len(data) > 4096 {
			t.Fatalf("frame of %d bytes passed a 4096 limit", len(data))
		}
		r, err := DecodeReply(data)
		if err != nil {
			return
		}
		if r.Response != "success" || r.Processed < 0 || r.Failed < 0 || r.Processed+r.Failed != r.Total {
			t.Fatalf("inconsistent reply accepted: %+v", r)
		}
	})
}

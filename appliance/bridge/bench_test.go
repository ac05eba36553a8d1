package bridge_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"beaconhub/appliance/bridge"
	"beaconhub/appliance/bridge/zabbixtest"
)

// tenThousand is a round of 10,000 values of realistic shape.
func tenThousand() []bridge.Value {
	at := time.Unix(1795331521, 786243344)
	out := make([]bridge.Value, 0, 10000)
	for i := range 10000 {
		uid := "SEN-H1-" + strconv.Itoa(i)
		out = append(out, bridge.Value{Host: "TST000", Key: bridge.AssetKey(bridge.KindBeacon, bridge.MetricMAC, uid), Value: "C3000000" + strconv.Itoa(1000+i%9000), Clock: at})
	}
	return out
}

// jsonItem and jsonRequest are the same request for encoding/json.
type jsonItem struct {
	Host  string `json:"host"`
	Key   string `json:"key"`
	Value string `json:"value"`
	Clock int64  `json:"clock"`
	NS    int    `json:"ns"`
}

type jsonRequest struct {
	Request string     `json:"request"`
	Data    []jsonItem `json:"data"`
	Clock   int64      `json:"clock"`
	NS      int        `json:"ns"`
}

// BenchmarkEncode10k compares the frame encoder (AppendRequest into a
// reused buffer, then the header) with the baseline: json.Marshal of the
// same request, built from the same values, then the header.
func BenchmarkEncode10k(b *testing.B) {
	values := tenThousand()
	now := time.Unix(1795331600, 0)
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		var body, frame []byte
		for b.Loop() {
			body = bridge.AppendRequest(body[:0], values, now)
			frame = bridge.AppendFrame(frame[:0], body, false)
		}
		b.SetBytes(int64(len(frame)))
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		var n int
		for b.Loop() {
			req := jsonRequest{Request: "sender data", Data: make([]jsonItem, len(values)), Clock: now.Unix(), NS: now.Nanosecond()}
			for i, v := range values {
				req.Data[i] = jsonItem{v.Host, v.Key, v.Value, v.Clock.Unix(), v.Clock.Nanosecond()}
			}
			body, err := json.Marshal(req)
			if err != nil {
				b.Fatal(err)
			}
			n = len(bridge.AppendFrame(nil, body, false))
		}
		b.SetBytes(int64(n))
	})
}

// BenchmarkSend10k is a whole send of 10,000 values (ten batches, ten
// loopback connections, replies parsed) to the stand-in trapper; compare
// it with BenchmarkEncode10k/json.Marshal in the same run.
func BenchmarkSend10k(b *testing.B) {
	values := tenThousand()
	tr := zabbixtest.NewTrapper(b)
	tr.SetMode(zabbixtest.Discard)
	s := &bridge.Sender{Addr: tr.Addr, Timeout: 10 * time.Second}
	b.ReportAllocs()
	for b.Loop() {
		res, err := s.Send(context.Background(), values)
		if err != nil || res.Processed != len(values) {
			b.Fatalf("%+v %v", res, err)
		}
	}
}

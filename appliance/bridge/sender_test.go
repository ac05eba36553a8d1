package bridge_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"beaconhub/appliance/bridge"
	"beaconhub/appliance/bridge/zabbixtest"
)

// Values go out in batches of BatchSize; the counts of all replies add up,
// and the keys logged for refused values stay bounded.
func TestSenderBatchesAndBoundsFailedKeys(t *testing.T) {
	tr := zabbixtest.NewTrapper(t)
	tr.SetMode(zabbixtest.Refuse)
	values := make([]bridge.Value, 2*bridge.BatchSize+500)
	for i := range values {
		values[i] = bridge.Value{Host: "H", Key: "k" + strconv.Itoa(i), Value: strconv.Itoa(i), Clock: time.Unix(int64(i), 0)}
	}
	s := &bridge.Sender{Addr: tr.Addr, Timeout: 5 * time.Second}
	res, err := s.Send(context.Background(), values)
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != len(values) || res.Failed != len(values) || res.Processed != 0 || tr.Requests() != 3 {
		t.Fatalf("result %+v after %d requests", res, tr.Requests())
	}
	if len(res.FailedKeys) != bridge.MaxFailedKeys || res.FailedKeys[0] != "H:k0" {
		t.Fatalf("failed keys %v", res.FailedKeys)
	}
	got := tr.Values()
	if len(got) != len(values) || got[2499].Key != "k2499" || got[2499].Clock != 2499 {
		t.Fatalf("trapper got %d values, last %+v", len(got), got[len(got)-1])
	}
}

// A hung trapper costs at most the timeout, and a cancelled context ends
// the exchange at once.
func TestSenderTimeoutAndCancel(t *testing.T) {
	tr := zabbixtest.NewTrapper(t)
	tr.SetMode(zabbixtest.Hang)
	v := []bridge.Value{{Host: "H", Key: "k", Value: "1", Clock: time.Unix(1, 0)}}
	s := &bridge.Sender{Addr: tr.Addr, Timeout: 300 * time.Millisecond}
	start := time.Now()
	if _, err := s.Send(context.Background(), v); err == nil {
		t.Fatal("no error from a hung trapper")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("timeout of 300ms took %s", d)
	}
	s.Timeout = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for tr.Requests() < 2 {
			time.Sleep(time.Millisecond) // polling the trapper; the test deadline bounds it
		}
		cancel()
	}()
	start = time.Now()
	if _, err := s.Send(ctx, v); err == nil {
		t.Fatal("no error after cancel")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("cancel took %s", d)
	}
}

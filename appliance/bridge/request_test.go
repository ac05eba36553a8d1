package bridge

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestAppendRequestMatchesJSON(t *testing.T) {
	at := time.Unix(1795331521, 786243344)
	values := []Value{
		{Host: "TST000", Key: "beaconhub.beacon.mac[SEN-H1-1]", Value: "C30000000A01", Clock: at},
		{Host: "TST000", Key: "k", Value: "quote \" backslash \\ nl \n tab \t cr \r ctl \x01 \x1f <>& é 漢", Clock: at.Add(time.Second)},
		{Host: "h", Key: "k2", Value: "bad utf8 \xff\xfe end", Clock: time.Unix(0, 5)},
		{Host: "h", Key: "k3", Value: "", Clock: at},
	}
	now := time.Unix(1795331600, 123)
	got := AppendRequest(nil, values, now)
	var dec request
	if err := json.Unmarshal(got, &dec); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, got)
	}
	want := toRequest(values, now)
	want.Data[2].Value = "bad utf8 \ufffd\ufffd end"
	wb, _ := json.Marshal(want)
	db, _ := json.Marshal(dec)
	if string(wb) != string(db) {
		t.Fatalf("decoded request differs:\n got %s\nwant %s", db, wb)
	}
	if !strings.HasPrefix(string(got), `{"request":"sender data","data":[{"host":"TST000","key":"beaconhub.beacon.mac[SEN-H1-1]","value":"C30000000A01","clock":1795331521,"ns":786243344}`) ||
		!strings.HasSuffix(string(got), `],"clock":1795331600,"ns":123}`) {
		t.Fatalf("layout: %s", got)
	}
	if empty := AppendRequest(nil, nil, now); string(empty) != `{"request":"sender data","data":[],"clock":1795331600,"ns":123}` {
		t.Fatalf("empty request = %s", empty)
	}
}

// zabbix_sender (package zabbix-agent) is the reference implementation of
// the client side: its frame must read with ReadFrame, its JSON must have
// the shape AppendRequest writes, and it must accept a reply framed by
// AppendFrame.
func TestCrossCheckWithZabbixSender(t *testing.T) {
	bin, err := exec.LookPath("zabbix_sender")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("zabbix_sender missing; run .ci/install-test-peers.sh")
		}
		t.Skip("zabbix_sender not installed (package zabbix-agent; .ci/install-test-peers.sh)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type got struct {
		data []byte
		err  error
	}
	ch := make(chan got, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			ch <- got{err: err}
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		data, err := ReadFrame(c, MaxReplyLen)
		if err == nil {
			_, err = c.Write(AppendFrame(nil, []byte(`{"response":"success","info":"processed: 0; failed: 1; total: 1; seconds spent: 0.000042"}`), false))
		}
		ch <- got{data, err}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	out, runErr := exec.Command(bin, "-z", "127.0.0.1", "-p", port, "-s", "TST000", "-k", "beaconhub.beacon.mac[SEN-H1-1]", "-o", `C3 "x"`).CombinedOutput()
	g := <-ch
	if g.err != nil {
		t.Fatalf("reading zabbix_sender's frame: %v", g.err)
	}
	var req request
	if err := json.Unmarshal(g.data, &req); err != nil {
		t.Fatalf("zabbix_sender JSON: %v: %s", err, g.data)
	}
	if req.Request != "sender data" || len(req.Data) != 1 || req.Data[0].Host != "TST000" ||
		req.Data[0].Key != "beaconhub.beacon.mac[SEN-H1-1]" || req.Data[0].Value != `C3 "x"` {
		t.Fatalf("zabbix_sender sent %s", g.data)
	}
	// zabbix_sender exits 2 when some values failed, and prints our info.
	if !strings.Contains(string(out), "processed: 0; failed: 1; total: 1") {
		t.Fatalf("zabbix_sender did not read our reply (%v): %s", runErr, out)
	}
}

// request mirrors the JSON for comparisons with encoding/json.
type request struct {
	Request string `json:"request"`
	Data    []struct {
		Host  string `json:"host"`
		Key   string `json:"key"`
		Value string `json:"value"`
		Clock int64  `json:"clock"`
		NS    int64  `json:"ns"`
	} `json:"data"`
	Clock int64 `json:"clock"`
	NS    int64 `json:"ns"`
}

func toRequest(values []Value, now time.Time) request {
	r := request{Request: "sender data", Clock: now.Unix(), NS: int64(now.Nanosecond())}
	for _, v := range values {
		r.Data = append(r.Data, struct {
			Host  string `json:"host"`
			Key   string `json:"key"`
			Value string `json:"value"`
			Clock int64  `json:"clock"`
			NS    int64  `json:"ns"`
		}{v.Host, v.Key, v.Value, v.Clock.Unix(), int64(v.Clock.Nanosecond())})
	}
	return r
}

package loadgen

import (
	"bytes"
	"sync/atomic"

	"beaconhub/broker"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
)

// countingHook is the baseline: a bare mochi broker whose hook accepts any
// login and only counts reports, so the ratio to it is the cost of
// everything BeaconHub does per report.
type countingHook struct {
	mqtt.HookBase
	reports atomic.Int64
}

func (h *countingHook) ID() string { return "counting" }

func (h *countingHook) Provides(b byte) bool {
	return bytes.Contains([]byte{mqtt.OnConnectAuthenticate, mqtt.OnACLCheck, mqtt.OnPublish}, []byte{b})
}

func (h *countingHook) OnConnectAuthenticate(*mqtt.Client, packets.Packet) bool { return true }
func (h *countingHook) OnACLCheck(*mqtt.Client, string, bool) bool              { return true }

func (h *countingHook) OnPublish(_ *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	// Every generated message carries the same number of reports; counting
	// "mac" keys keeps the hook honest without decoding.
	h.reports.Add(int64(bytes.Count(pk.Payload, []byte(`"mac"`))))
	return pk, nil
}

type bareBroker struct {
	srv  *mqtt.Server
	hook *countingHook
	addr string
}

// startBare starts mochi with the options the appliance's broker uses
// that change its own speed (the read buffer), so the ratio measures the
// pipeline, not a broker setting.
func startBare() (*bareBroker, error) {
	srv := mqtt.New(&mqtt.Options{InlineClient: false, Logger: discardLogger(), ClientNetReadBufferSize: broker.ClientReadBuffer})
	h := &countingHook{}
	if err := srv.AddHook(h, nil); err != nil {
		return nil, err
	}
	tcp := listeners.NewTCP(listeners.Config{ID: "bare", Address: "127.0.0.1:0"})
	if err := srv.AddListener(tcp); err != nil {
		return nil, err
	}
	if err := srv.Serve(); err != nil {
		return nil, err
	}
	return &bareBroker{srv: srv, hook: h, addr: tcp.Address()}, nil
}

func (b *bareBroker) Close() { _ = b.srv.Close() }

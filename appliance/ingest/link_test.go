package ingest

import (
	"testing"
	"time"

	"beaconhub/appliance/clock"
)

// Link says what the broker's connection observer saw of a gateway, in
// the pipeline's clock: unknown until it first connects, open since its
// connect, and once closed, since when and for how long it had been open.
// A client whose id is not a gateway MAC has none.
func TestGatewayLink(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))
	s := newStats(clk)
	gw, _ := ParseMAC("AC233FA0B1C2")
	if _, ok := s.Link(gw); ok {
		t.Fatal("a gateway never connected has a link")
	}
	s.status(gw, GatewayStatus{FW: "1.0"}) // known from a message, not connected
	if _, ok := s.Link(gw); ok {
		t.Fatal("a gateway known only from its messages has a link")
	}
	t0 := clk.Now().UnixMilli()
	s.ClientConnected("AC233FA0B1C2", "127.0.0.1:5000")
	if l, ok := s.Link(gw); !ok || l != (GatewayLink{Connected: true, Since: t0}) {
		t.Fatalf("connected: %+v %v", l, ok)
	}
	clk.Advance(90 * time.Second)
	s.ClientDisconnected("AC233FA0B1C2")
	if l, ok := s.Link(gw); !ok || l != (GatewayLink{Since: t0 + 90_000, Lasted: 90_000}) {
		t.Fatalf("closed: %+v %v", l, ok)
	}
	clk.Advance(time.Minute)
	s.ClientConnected("AC233FA0B1C2", "127.0.0.1:5001")
	if l, _ := s.Link(gw); l != (GatewayLink{Connected: true, Since: t0 + 150_000}) {
		t.Fatalf("connected again: %+v", l)
	}
	s.ClientConnected("monitoring-1", "127.0.0.1:6000")
	if _, ok := s.Link(MAC{}); ok {
		t.Fatal("a link for a client that is not a gateway")
	}
}

// Client ids that spell one MAC differently are different clients to
// the broker, open at once: the gateway is connected while either is,
// and its link closes with the last (a review: the first to close had a
// healthy gateway read as gone, and judged down for good).
func TestGatewayLinkAcrossSpellings(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))
	s := newStats(clk)
	gw, _ := ParseMAC("AC233FA0B1C2")
	t0 := clk.Now().UnixMilli()
	s.ClientConnected("AC233FA0B1C2", "127.0.0.1:5000")
	clk.Advance(time.Minute)
	s.ClientConnected("ac:23:3f:a0:b1:c2", "127.0.0.1:5001")
	clk.Advance(time.Minute)
	s.ClientDisconnected("ac:23:3f:a0:b1:c2")
	if l, _ := s.Link(gw); l != (GatewayLink{Connected: true, Since: t0}) {
		t.Fatalf("one of two connections closed: %+v", l)
	}
	if snap := s.Snapshot(); snap.Connected != 1 || !snap.Gateways[0].Connected {
		t.Fatalf("status snapshot: %+v", snap)
	}
	clk.Advance(time.Minute)
	s.ClientDisconnected("AC233FA0B1C2")
	s.ClientDisconnected("AC233FA0B1C2") // a stray second close
	if l, _ := s.Link(gw); l != (GatewayLink{Since: t0 + 180_000, Lasted: 180_000}) {
		t.Fatalf("both closed: %+v", l)
	}
	s.ClientConnected("AC-23-3F-A0-B1-C2", "127.0.0.1:5002")
	if l, _ := s.Link(gw); !l.Connected {
		t.Fatalf("connected again after a stray close: %+v", l)
	}
}

// A connection taken over by a newer one with the same client id is not
// reported closed (broker/embedded.go): the gateway was connected twice
// and closed once, and must read as closed when the newer one closes.
func TestGatewayLinkAfterTakeover(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))
	s := newStats(clk)
	gw, _ := ParseMAC("AC233FA0B1C2")
	s.ClientConnected("AC233FA0B1C2", "127.0.0.1:5000")
	clk.Advance(time.Minute)
	s.ClientConnected("AC233FA0B1C2", "127.0.0.1:5001") // the takeover
	clk.Advance(time.Minute)
	s.ClientDisconnected("AC233FA0B1C2")
	if l, _ := s.Link(gw); l.Connected || l.Lasted != 120_000 {
		t.Fatalf("after the newer connection closed: %+v", l)
	}
	if snap := s.Snapshot(); snap.Connected != 0 {
		t.Fatalf("status snapshot: %d connected", snap.Connected)
	}
}

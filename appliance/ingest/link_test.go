package ingest

import (
	"encoding/json"
	"fmt"
	"strings"
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
	if l, _ := s.Link(gw); l != (GatewayLink{Connected: true, Since: t0, For: 120_000}) {
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

// The gateways whose latest connection lasted a minute or more are what
// a restart remembers (lastingIfChanged, stored by the flush): open or
// closed, but not a publisher that connects for each batch; one
// restored reads as closed since the restart until it connects, and
// stays remembered until a connection of its own says otherwise.
func TestLastingLinksAcrossARestart(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))
	s := newStats(clk)
	lasting := func() []string {
		t.Helper()
		macs, _ := s.lastingIfChanged()
		s.lastingWritten = "" // read again next time
		return macs
	}
	s.ClientConnected("AC233FA0B1C1", "127.0.0.1:5000") // kept open
	s.ClientConnected("AC233FA0B1C2", "127.0.0.1:5001") // closes after 2 min
	for range 5 {                                       // per batch
		s.ClientConnected("AC233FA0B1C3", "127.0.0.1:5002")
		clk.Advance(2 * time.Second)
		s.ClientDisconnected("AC233FA0B1C3")
	}
	if got := lasting(); len(got) != 0 {
		t.Fatalf("lasting after 10 s: %v", got)
	}
	clk.Advance(2 * time.Minute)
	s.ClientDisconnected("AC233FA0B1C2")
	if got := strings.Join(lasting(), " "); got != "AC233FA0B1C1 AC233FA0B1C2" {
		t.Fatalf("lasting: %q", got)
	}
	if _, changed := s.lastingIfChanged(); !changed {
		t.Fatal("the first answer not a change")
	}
	if _, changed := s.lastingIfChanged(); changed {
		t.Fatal("the same answer twice read as a change (stored every flush)")
	}

	// The restart: B1C1 comes back for 5 s and closes, B1C2 never does.
	clk.Advance(time.Minute)
	at := clk.Now().UnixMilli()
	r := newStats(clk)
	r.RestoreLinks([]string{"AC233FA0B1C1", "AC233FA0B1C2", "not a mac"}, clk.Now())
	if _, changed := r.lastingIfChanged(); changed {
		t.Fatal("what was restored read as a change")
	}
	c1, _ := ParseMAC("AC233FA0B1C1")
	c2, _ := ParseMAC("AC233FA0B1C2")
	for _, m := range []MAC{c1, c2} {
		if l, ok := r.Link(m); !ok || l != (GatewayLink{Since: at, Restored: true}) {
			t.Fatalf("%v restored: %+v %v", m, l, ok)
		}
	}
	// How long it has been away, from the start; a wall clock stepped
	// back from the start moves the start to the step (never negative).
	clk.Advance(10 * time.Second)
	if l, _ := r.Link(c2); l != (GatewayLink{Since: at, Restored: true, For: 10_000}) {
		t.Fatalf("restored 10 s: %+v", l)
	}
	clk.Advance(-time.Hour)
	stepped := clk.Now().UnixMilli()
	if l, _ := r.Link(c2); l != (GatewayLink{Since: stepped, Restored: true}) {
		t.Fatalf("after a step back: %+v", l)
	}
	clk.Advance(time.Hour + 10*time.Second)
	if l, _ := r.Link(c2); l.For != time.Hour.Milliseconds()+10_000 {
		t.Fatalf("an hour after the step: %+v", l)
	}
	r.ClientConnected("AC233FA0B1C1", "127.0.0.1:5003")
	if l, _ := r.Link(c1); !l.Connected || l.Restored {
		t.Fatalf("connected after the restart: %+v", l)
	}
	clk.Advance(5 * time.Second)
	r.ClientDisconnected("AC233FA0B1C1")
	if macs, changed := r.lastingIfChanged(); !changed || strings.Join(macs, " ") != "AC233FA0B1C2" {
		t.Fatalf("lasting after B1C1's short connection: %v %v", macs, changed)
	}
}

// With no gateway heard the snapshot lists none as [], not null: a
// status client iterating over it broke on a fresh box (a black-box
// check).
func TestSnapshotListsNoGatewaysAsAnEmptyList(t *testing.T) {
	s := newStats(clock.NewFake(time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)))
	b, err := json.Marshal(s.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"gateways":[]`) {
		t.Errorf("snapshot %s, want \"gateways\":[]", b)
	}
}

// The per-gateway table is capped whatever fills it: status messages and
// connections under fresh MACs grew it past 100,000 (and /status/mqtt to
// 17 MB), where only reports were capped (a black-box check). Gateways
// already known go on being counted.
func TestGatewayTableIsCappedForEveryWayIn(t *testing.T) {
	s := newStats(clock.NewFake(time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)))
	known, _ := ParseMAC("AC233FA0B1C2")
	s.status(known, GatewayStatus{FW: "1.0"})
	mac := func(i int) MAC {
		m, _ := ParseMAC(fmt.Sprintf("FB%010X", i))
		return m
	}
	for i := 0; i < maxGateways+500; i++ {
		switch i % 2 {
		case 0:
			s.status(mac(i), GatewayStatus{IP: "192.0.2.1"})
		default:
			s.ClientConnected(mac(i).String(), "127.0.0.1:1")
			s.ClientDisconnected(mac(i).String())
		}
	}
	for _, g := range s.Snapshot().Gateways {
		// ip, fw and uptime are null until a status message, not left out.
		if statused := g.MAC == known.String() || g.IP != nil; (g.FW != nil) != statused || (g.Uptime != nil) != statused {
			t.Fatalf("gateway %+v", g)
		}
	}
	if got := s.Snapshot().GatewaysTotal; got != maxGateways {
		t.Fatalf("%d gateways kept, want the cap %d", got, maxGateways)
	}
	s.status(known, GatewayStatus{FW: "2.0"})
	for _, g := range s.Snapshot().Gateways {
		if g.MAC == known.String() && (g.FW == nil || *g.FW != "2.0") {
			t.Fatalf("a known gateway's status was not kept past the cap: %+v", g)
		}
	}
}

// A packet the broker could not read for its size is a too_large drop of
// the gateway its client id names, and in the total (a black-box check
// found it counted nowhere).
func TestPacketTooLargeIsATooLargeDrop(t *testing.T) {
	s := newStats(clock.NewFake(time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)))
	s.PacketTooLarge("AC233FA0B1C2")
	s.PacketTooLarge("not-a-mac")
	snap := s.Snapshot()
	if snap.Drops["too_large"] != 2 || len(snap.Gateways) != 1 || snap.Gateways[0].Drops["too_large"] != 1 {
		t.Fatalf("drops %v, gateways %+v", snap.Drops, snap.Gateways)
	}
}

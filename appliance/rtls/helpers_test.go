package rtls

import (
	"math"
	"testing"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/ingest"

	bolt "go.etcd.io/bbolt"
)

// longReplay marks a test that replays minutes of readings to check
// what comes out (accuracy, flips, an estimate, equal results). Under the
// race detector such a test takes 10-15 times as long and checks no
// concurrency the short tests do not: the engine and the pipeline run the
// same goroutines in every replay. So it is skipped there, and `make
// test` runs these packages a second time without -race (Makefile,
// REPLAY_PKGS), where it runs in full.
func longReplay(t *testing.T) {
	t.Helper()
	if raceDetector {
		t.Skip("a long replay: make test runs it without -race")
	}
	t.Parallel()
}

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// gridSite is a w x h grid of 10 m x 10 m zones (100 px each at 10 px/m)
// on map 1, adjacent horizontally and vertically, with one gateway placed
// at every zone centre. Zone ids are 1 + row*w + col.
func gridSite(w, h int, placed bool) Site {
	s := Site{Maps: []Map{{ID: 1, Name: "floor", Width: float64(100 * w), Height: float64(100 * h), PixelsPerMeter: 10}}}
	id := func(c, r int) uint64 { return uint64(1 + r*w + c) }
	for r := 0; r < h; r++ {
		for c := 0; c < w; c++ {
			z := Zone{ID: id(c, r), MapID: 1, Name: zoneName(id(c, r)), X1: float64(100 * c), Y1: float64(100 * r), X2: float64(100*c + 100), Y2: float64(100*r + 100)}
			if c > 0 {
				z.Adjacent = append(z.Adjacent, id(c-1, r))
			}
			if c < w-1 {
				z.Adjacent = append(z.Adjacent, id(c+1, r))
			}
			if r > 0 {
				z.Adjacent = append(z.Adjacent, id(c, r-1))
			}
			if r < h-1 {
				z.Adjacent = append(z.Adjacent, id(c, r+1))
			}
			s.Zones = append(s.Zones, z)
			s.Gateways = append(s.Gateways, Gateway{MAC: gwMAC(int(z.ID)), MapID: 1, X: float64(100*c + 50), Y: float64(100*r + 50), Placed: placed})
		}
	}
	return s
}

func zoneName(id uint64) string { return "Z" + string(rune('A'+id-1)) }

func gwMAC(i int) [6]byte { return [6]byte{0xAC, 0x23, 0x3F, 0, byte(i >> 8), byte(i)} }

// modelRSSI is the default log-distance RSSI between a gateway and a
// point, in pixels at 10 px/m.
func modelRSSI(gx, gy, x, y float64) float64 {
	p := DefaultParams()
	return p.rssiAt(math.Hypot(gx-x, gy-y) / 10)
}

type harness struct {
	t     testing.TB
	clk   *clock.Fake
	e     *Engine
	ops   []func(*bolt.Tx) error
	asset map[string]*assets.Asset
}

func newHarness(t testing.TB, opts Options) *harness {
	h := &harness{t: t, clk: clock.NewFake(t0), asset: map[string]*assets.Asset{}}
	opts.Clock = h.clk
	h.e = New(opts)
	t.Cleanup(h.e.Close)
	return h
}

func (h *harness) beacon(uid, typ string) *assets.Asset {
	a := h.asset[uid]
	if a == nil {
		a = &assets.Asset{UID: uid, Type: typ, Kind: "beacon"}
		h.asset[uid] = a
	}
	return a
}

// sight delivers one sighting of uid (type watch) by gateway g at the
// current fake time, as the pipeline would.
func (h *harness) sight(uid string, g [6]byte, rssi float64) {
	h.sightAs(uid, "watch", g, rssi)
}

func (h *harness) sightAs(uid, typ string, g [6]byte, rssi float64) {
	h.sightTag(uid, typ, ingest.MAC{}, g, rssi)
}

// sightTag is sightAs with the tag's own MAC in the report.
func (h *harness) sightTag(uid, typ string, tag ingest.MAC, g [6]byte, rssi float64) {
	r := int8(math.Max(-127, math.Min(0, math.Round(rssi))))
	b := &ingest.Batch{Gateway: g, Kind: ingest.KindAdv4, Received: h.clk.Now().UnixMilli(),
		Obs: []ingest.Observation{{Report: ingest.Report{MAC: tag, RSSI: r, TS: h.clk.Now().UnixMilli()}, Asset: h.beacon(uid, typ)}}}
	w := &ingest.Writes{}
	h.e.Observe(b, w)
	h.ops = append(h.ops, w.Ops...)
}

func (h *harness) zone(uid string) uint64 {
	l, _ := h.e.Location(uid)
	return l.Zone
}

// adjacent reports whether zones a and b are neighbours in s.
func adjacent(s Site, a, b uint64) bool {
	for _, z := range s.Zones {
		if z.ID == a {
			for _, n := range z.Adjacent {
				if n == b {
					return true
				}
			}
		}
	}
	return false
}

// gatewaysInARow is gridSite(4, 3) with only its middle row's gateways,
// placed: the rooms above and below have none of their own, and every
// place is heard by at most four gateways, all on one line.
func gatewaysInARow() Site {
	s := gridSite(4, 3, true)
	s.Gateways = s.Gateways[4:8]
	return s
}

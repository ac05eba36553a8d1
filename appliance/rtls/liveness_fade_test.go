package rtls

import (
	"bytes"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/ingest"
)

// Three tags leave, one after another, a corridor whose rooms' gateways
// read 2 dB off the corridor's, at ±6 dB: over an hour the healthy idle
// corridor gateway gathers a charge now and then (a tag misplaced by
// noise for a window; a window that fits the corridor), and, its
// evidence never fading, was judged down 31 minutes after the tags had
// left under hmm (a review; 35 and 53 minutes with other seeds).
// Evidence fades (evidenceFade), also after the wall clock steps back
// (NTP, an operator) once the gateway has gathered its first charge:
// the time of the last charge then lay in the future, and nothing faded
// until the clock caught up (a review).
func TestIdleGatewayEvidenceFades(t *testing.T) {
	longReplay(t)
	at := nearRooms(2)
	s, samples := corridorRoomsAt(at)
	for _, step := range []time.Duration{0, -time.Hour, -3 * time.Hour} {
		for seed := uint64(5); seed <= 7; seed++ {
			t.Run(fmt.Sprint(step, " seed ", seed), func(t *testing.T) {
				var logs bytes.Buffer
				fake := clock.NewFake(t0)
				sc := &steppedClock{Fake: fake}
				h := &harness{t: t, clk: fake, asset: map[string]*assets.Asset{}}
				h.e = New(Options{Clock: sc, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
				t.Cleanup(h.e.Close)
				h.e.Configure(s, samples)
				if err := h.e.Start(AlgFilter); err != nil {
					t.Fatal(err)
				}
				sight := func(uid string, g [6]byte, rssi float64) {
					r := int8(math.Max(-127, math.Min(0, math.Round(rssi))))
					now := sc.Now().UnixMilli()
					b := &ingest.Batch{Gateway: g, Kind: ingest.KindAdv4, Received: now,
						Obs: []ingest.Observation{{Report: ingest.Report{RSSI: r, TS: now}, Asset: h.beacon(uid, "watch")}}}
					h.e.Observe(b, &ingest.Writes{})
				}
				m := h.e.model.Load()
				g := m.gwIdx[gwMAC(2)]
				stepped := false
				rng := rand.New(rand.NewPCG(seed, 6))
				firstDown := -1
				for i := range 60 + 37*3 + 3600 {
					if !stepped && step != 0 && m.live.evAt[g].Load() > 0 {
						sc.step(step)
						stepped = true
						t.Logf("stepped at %d s, evidence %.2f nats", i, float64(m.live.ev[g].Load())/1e6)
					}
					for k := range 3 {
						r := at[3]
						if i < 60+37*k {
							r = at[2]
						}
						for gi, v := range r {
							if v != 0 {
								sight(fmt.Sprintf("WAT-%d", k+1), gwMAC(gi+1), v+(rng.Float64()*2-1)*6)
							}
						}
					}
					fake.Advance(time.Second)
					if firstDown < 0 && strings.Contains(logs.String(), "judged down") {
						firstDown = i
					}
				}
				n := strings.Count(logs.String(), "judged down")
				t.Logf("judged down %d times in an hour, first at %d s", n, firstDown)
				if n != 0 {
					t.Errorf("%d 'judged down' lines", n)
				}
			})
		}
	}
}

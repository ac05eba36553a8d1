package rtls

import (
	"bytes"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
)

// The corridor's gateway dies before any tag comes by (at night, say):
// no tag was ever heard by it, so the rule that charges a gateway's
// silence against the zone a tag held when it last heard it has nothing
// to go on, and the zone filters and knn, reading its silence as the
// tag being next door, place a tag that walks in from Room 1 in a room
// from the start: it was never judged down under knn, hmm or bayes, and
// 1-9 minutes after the tag came, if at all, under grid and fusion (a
// review: the tag out of the corridor 88-100% of its time there).
// chargeAbsent judges it from the tag's other readings, which fit the
// corridor better than the room it is placed in: in 8 seeds of each run
// within 24-83 s but for bayes at ±6 dB or -8 dB (76-216 s), and the
// tag is then in the corridor (hmm and bayes at ±6 dB misplace it now
// and then anyway). Judged at a scan's first report, before the rest of the
// scan had refined the zone it was read against, bayes at ±6 dB missed
// it in 15 minutes in 6 seeds of 8 (engine.go).
func TestAGatewayDeadBeforeItsTagsCameIsJudgedDown(t *testing.T) {
	t.Parallel() // 240 runs: ten seconds under the race detector
	s, samples := corridorRooms()
	dead := corridorAt[2]
	dead[1] = 0
	for _, c := range corridorRuns {
		for _, alg := range []string{AlgKNN, AlgFilter, AlgBayes, AlgGrid, AlgFusion} {
			for seed := uint64(1); seed <= 8; seed++ {
				t.Run(fmt.Sprintf("%v/%s/%d", c, alg, seed), func(t *testing.T) {
					var logs bytes.Buffer
					h := tracking(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, s, samples, alg)
					rng := rand.New(rand.NewPCG(seed, 4))
					c.hear(h, 60, rng, func(int) [3]float64 { return corridorAt[1] })
					m := h.e.model.Load()
					g := m.gwIdx[gwMAC(2)]
					within, wrongs := 120, 12
					if alg == AlgBayes && (c.noise > 4 || c.off < 0) {
						within, wrongs = 300, 20
					}
					if c.noise > 4 { // ±6 dB: the zone filters misplace the tag now and then anyway
						wrongs = 40
					}
					for i := 0; !m.live.isDown(g); i++ {
						if i == within {
							t.Fatalf("the corridor's gateway, dead before the tag came, not judged down %d s after it came (evidence %.1f nats)", within, float64(m.live.ev[g].Load())/1e6)
						}
						c.hear(h, 1, rng, func(int) [3]float64 { return dead })
					}
					c.hear(h, 30, rng, func(int) [3]float64 { return dead })
					wrong := 0
					for range 120 {
						c.hear(h, 1, rng, func(int) [3]float64 { return dead })
						if h.zone("WAT-1") != 2 {
							wrong++
						}
					}
					if wrong > wrongs {
						t.Fatalf("%d s of 120 out of the corridor with its gateway judged down", wrong)
					}
					if n := strings.Count(logs.String(), "judged down"); n != 1 {
						t.Fatalf("%d 'judged down' lines, want 1", n)
					}
				})
			}
		}
	}
}

// The other side: the corridor's gateway up, idle, and a tag standing
// two hours in Room 3 next to it, on sites whose rooms read 0.5-2 dB off
// the corridor at the rooms' gateways, so that nothing but the idle
// gateway's silence tells the room from the corridor. The tag's other
// readings fit the corridor about as well as the room, and summed
// without a toll, grid's estimate of a tag 8 dB louder than the
// survey's (0.00 ± 0.31 nats a window) took the gateway down within
// 100 minutes at 0.5 and 1 dB, and the tag was then shown in the
// corridor. grid is left out for the rest: on such a site it holds
// those tags in the corridor itself (its decision charges the gateway:
// the first rule).
func TestATagStandingNextToAnIdleGatewayTakesItNotDown(t *testing.T) {
	longReplay(t)
	for _, d := range []float64{0.5, 1, 2} {
		at := nearRooms(d)
		s, samples := corridorRoomsAt(at)
		for _, c := range []corridorRun{{1, 0, 4}, {1, 0, 6}, {3, 0, 4}, {1, 8, 4}, {1, -8, 4}} {
			for _, alg := range []string{AlgKNN, AlgFilter, AlgBayes, AlgGrid, AlgFusion} {
				if alg == AlgGrid && c.off <= 0 && d < 2 {
					continue
				}
				t.Run(fmt.Sprintf("%v dB/%v/%s", d, c, alg), func(t *testing.T) {
					t.Parallel()
					var logs bytes.Buffer
					h := tracking(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, s, samples, alg)
					rng := rand.New(rand.NewPCG(7, 8))
					c.hear(h, 7200, rng, func(int) [3]float64 { return at[3] })
					if z := h.zone("WAT-1"); z != 3 {
						t.Fatalf("zone %d after two hours in Room 3", z)
					}
					if n := strings.Count(logs.String(), "judged down"); n != 0 {
						t.Fatalf("%d 'judged down' lines", n)
					}
				})
			}
		}
	}
}

package rtls

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"beaconhub/appliance/ingest"
)

// TestAGatewayDyingUnderATagIsJudgedDown with the corridor gateway's
// last batch before it dies carrying no report of the tag (it heard
// other things after the tag's last advertisement it caught): a rule
// that dropped the held hypothesis once the gateway had reported after
// its last sighting of the tag dropped it at the death itself, and 23
// of 30 runs were never judged (a review).
func TestAGatewayDyingAfterABatchWithoutTheTagIsJudgedDown(t *testing.T) {
	s, samples := corridorRooms()
	for _, c := range corridorRuns {
		for _, alg := range []string{AlgKNN, AlgFilter, AlgBayes, AlgGrid, AlgFusion} {
			t.Run(fmt.Sprintf("%v/%s", c, alg), func(t *testing.T) {
				h := tracking(t, Options{}, s, samples, alg)
				rng := rand.New(rand.NewPCG(3, 4))
				c.hear(h, 60, rng, func(int) [3]float64 { return corridorAt[2] })
				b := &ingest.Batch{Gateway: gwMAC(2), Kind: ingest.KindAdv4, Received: h.clk.Now().UnixMilli()}
				h.e.Observe(b, &ingest.Writes{})
				dead := corridorAt[2]
				dead[1] = 0
				m := h.e.model.Load()
				g := m.gwIdx[gwMAC(2)]
				for i := 0; i < 240 && !m.live.isDown(g); i++ {
					c.hear(h, 1, rng, func(int) [3]float64 { return dead })
				}
				if !m.live.isDown(g) {
					t.Fatalf("not judged down 240 s after it died (evidence %.1f nats), zone now %d", float64(m.live.ev[g].Load())/1e6, h.zone("WAT-1"))
				}
			})
		}
	}
}

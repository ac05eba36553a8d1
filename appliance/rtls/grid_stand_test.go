package rtls

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"beaconhub/appliance/assets"
)

// standing is the defaults with grid's standing belief at the spells
// these tests were written for: half a minute standing, ten seconds
// moving.
func standing() Params {
	p := DefaultParams()
	p.StandFor, p.MoveFor = 30*time.Second, 10*time.Second
	return p
}

// noStanding is the defaults with the standing belief off: every tag may
// move at any time.
func noStanding() Params {
	p := DefaultParams()
	p.StandFor = -1
	return p
}

// TestSwitchModesIsTheMarkovChain: switchModes takes the two-state
// chain (standing left at 1/StandFor a second, moving at 1/MoveFor)
// exactly over any dt: the same as a thousand small steps of it, no
// belief created or lost, and after long enough the standing share
// whatever the start.
func TestSwitchModesIsTheMarkovChain(t *testing.T) {
	p := standing()
	p.MoveFor = 10 * time.Second
	for _, dt := range []int64{0, 1, 1000, 7000, 600_000} {
		moving, still := []float32{0.7, 0.1}, []float32{0.05, 0.15}
		switchModes(moving, still, dt, &p)
		// The same chain in 1,000 Euler steps.
		m, s := []float64{0.7, 0.1}, []float64{0.05, 0.15}
		h := float64(dt) / 1000 / 1000
		for range 1000 {
			for c := range m {
				leave, stop := s[c]*h/p.StandFor.Seconds(), m[c]*h/p.MoveFor.Seconds()
				m[c], s[c] = m[c]+leave-stop, s[c]-leave+stop
			}
		}
		for c := range m {
			if math.Abs(float64(moving[c])-m[c]) > 2e-3 || math.Abs(float64(still[c])-s[c]) > 2e-3 {
				t.Errorf("dt %d ms, cell %d: moving %.4f standing %.4f, the chain %.4f %.4f", dt, c, moving[c], still[c], m[c], s[c])
			}
			if sum := moving[c] + still[c]; math.Abs(float64(sum)-[]float64{0.75, 0.25}[c]) > 1e-6 {
				t.Errorf("dt %d ms, cell %d: %.7f of the belief, want %.2f", dt, c, sum, []float64{0.75, 0.25}[c])
			}
		}
		if dt == 600_000 {
			if got := float64(still[0]) / 0.75; math.Abs(got-standShare(&p)) > 1e-4 {
				t.Errorf("after ten minutes %.4f of the belief stands, want %.4f", got, standShare(&p))
			}
		}
	}
}

// changesWhileStanding stands a tag at (x, y) of s for secs seconds,
// its readings off by up to noise dB either way, and counts the zone
// changes after the first minute and the seconds it was in zone want.
func changesWhileStanding(t *testing.T, p Params, s Site, x, y, noise float64, secs int, want uint64, seed uint64) (changes, right int) {
	h := tracking(t, Options{Params: p}, s, nil, AlgGrid)
	rng := rand.New(rand.NewPCG(seed, 7))
	last := uint64(0)
	for sec := 0; sec < secs; sec++ {
		standAt(h, s, "WAT-1", x, y, noise, 1, rng)
		z := h.zone("WAT-1")
		if sec >= 60 {
			if z != last {
				changes++
			}
			if z == want {
				right++
			}
		}
		last = z
	}
	return changes, right
}

// TestGridStandingTagFlipsLess: a tag standing 0.3 m inside the middle
// zone of nine, readings off by up to 9 dB. Always moving, grid's belief
// spreads by a step a second and the noise carries it over the edge now
// and then; standing, it gathers every reading since the tag stopped.
func TestGridStandingTagFlipsLess(t *testing.T) {
	longReplay(t)
	s := gridSite(3, 3, true)
	moving := 0
	for seed := uint64(1); seed <= 6; seed++ {
		c, _ := changesWhileStanding(t, noStanding(), s, 197, 150, 9, 360, 5, seed)
		moving += c
	}
	if moving < 8 {
		t.Fatalf("always moving, %d zone changes: the stand does not test standing", moving)
	}
	for _, p := range []Params{standing(), DefaultParams()} {
		var still, right int
		for seed := uint64(1); seed <= 6; seed++ {
			c, r := changesWhileStanding(t, p, s, 197, 150, 9, 360, 5, seed)
			still, right = still+c, right+r
		}
		t.Logf("six tags for five minutes each: %d zone changes always moving, %d standing %v / moving %v (right %d of 1800 s)", moving, still, p.StandFor, p.MoveFor, right)
		if still > moving/4 || right < 1710 {
			t.Errorf("standing %v / moving %v: %d zone changes (%d always moving), in the right zone %d of 1800 s", p.StandFor, p.MoveFor, still, moving, right)
		}
	}
}

// lagAfterAWalk stands a tag in zone 4 of a 3 x 3 site for stand
// seconds, walks it at 1 m/s to zone 6 and stands it there: the seconds
// from crossing into zone 6 to being reported there (-1: never).
func lagAfterAWalk(t *testing.T, p Params, noise float64, stand int, seed uint64) int {
	s := gridSite(3, 3, true)
	h := tracking(t, Options{Params: p}, s, nil, AlgGrid)
	rng := rand.New(rand.NewPCG(seed, 9))
	standAt(h, s, "WAT-1", 50, 150, noise, stand, rng)
	x, crossed := 50.0, -1
	for sec := 0; sec < 80; sec++ {
		if x < 250 {
			x += 10
		}
		standAt(h, s, "WAT-1", x, 150, noise, 1, rng)
		if x > 200 && crossed < 0 {
			crossed = sec
		}
		if crossed >= 0 && h.zone("WAT-1") == 6 {
			return sec - crossed
		}
	}
	return -1
}

// TestGridStandingTagStillFollowsAWalk: a tag that stood two minutes
// (its belief sure it stands) and walks off is followed as soon as one
// always moving is: the evidence moves the belief to the moving cells.
func TestGridStandingTagStillFollowsAWalk(t *testing.T) {
	longReplay(t)
	for seed := uint64(1); seed <= 4; seed++ {
		for _, noise := range []float64{6, 9} {
			moving := lagAfterAWalk(t, noStanding(), noise, 120, seed)
			for _, p := range []Params{standing(), DefaultParams()} {
				still := lagAfterAWalk(t, p, noise, 120, seed)
				if moving < 0 || still < 0 || still > moving+1 || still > 5 {
					t.Errorf("seed %d, noise %g, standing %v / moving %v: in the new zone %d s after crossing, %d s always moving", seed, noise, p.StandFor, p.MoveFor, still, moving)
				}
			}
		}
	}
}

// TestStandForDefaultsAndOff: standing is on by default, half a minute
// standing and half a minute moving (docs/rtls.md, "Standing tags"); a
// negative stand_for turns it off, and a beacon tracked so holds no
// standing cells; spells under a second are refused.
func TestStandForDefaultsAndOff(t *testing.T) {
	if p := DefaultParams(); p.StandFor != 30*time.Second || p.MoveFor != 30*time.Second {
		t.Fatalf("defaults: stand_for %v, move_for %v", p.StandFor, p.MoveFor)
	}
	off, err := ParamsFrom([]string{"stand_for=-1s"})
	if err != nil || off.StandFor >= 0 {
		t.Fatalf("stand_for=-1s: %v, %v", off.StandFor, err)
	}
	for _, bad := range [][]string{{"move_for=-5s"}, {"stand_for=30s", "move_for=0"}, {"stand_for=500ms"}, {"move_for=1ns"}} {
		if _, err := ParamsFrom(bad); err == nil {
			t.Fatalf("%v accepted", bad)
		}
	}
	// 0 was off before standing became the default: refused, saying
	// how to turn it off now; under a second, saying the least.
	for set, want := range map[string]string{"stand_for=0": "stand_for=-1s", "stand_for=500ms": "at least 1s"} {
		if _, err := ParamsFrom([]string{set}); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: %v, want it to say %q", set, err, want)
		}
	}
	// Given directly (not through Set), such spells run as the defaults.
	if p := (Params{StandFor: time.Nanosecond, MoveFor: time.Millisecond}).withDefaults(); p.StandFor != 30*time.Second || p.MoveFor != 30*time.Second {
		t.Fatalf("stand_for 1ns, move_for 1ms run as %v, %v", p.StandFor, p.MoveFor)
	}
	if p := (Params{StandFor: time.Minute}).withDefaults(); p.MoveFor != 30*time.Second {
		t.Fatalf("move_for unset runs as %v", p.MoveFor)
	}
	p, err := ParamsFrom([]string{"stand_for=2m", "move_for=15s"})
	if err != nil || p.StandFor != 2*time.Minute || p.MoveFor != 15*time.Second {
		t.Fatalf("stand_for=2m move_for=15s: %+v, %v", p, err)
	}
	s := gridSite(2, 1, true)
	for _, c := range []struct {
		p      Params
		cells  bool
		shownS int64 // stand_for_ms in /tracking/algorithms
	}{{Params{}, true, 30_000}, {off, false, 0}} {
		h := tracking(t, Options{Params: c.p}, s, nil, AlgGrid)
		standAt(h, s, "WAT-1", 50, 50, 0, 3, nil)
		if st, _ := viewBeacon(h.e, "WAT-1", func(b *beacon) []float32 { return b.still }); (st != nil) != c.cells {
			t.Fatalf("stand_for %v: %d standing cells", c.p.StandFor, len(st))
		}
		for _, a := range h.e.Algorithms() {
			if (a.Name == AlgGrid || a.Name == AlgFusion) && (a.Params["stand_for_ms"] != c.shownS || a.Params["move_for_ms"] != int64(30_000)) {
				t.Fatalf("stand_for %v: %s shows stand_for_ms %v, move_for_ms %v", c.p.StandFor, a.Name, a.Params["stand_for_ms"], a.Params["move_for_ms"])
			}
		}
	}
}

// TestGridUpdateSwitchesModes: each update moves belief between the
// moving and the standing cells (switchModes, from stepGrid): a belief
// all moving is 9.4% standing a second later (the chain), and somewhat
// more once the evidence is in: that share stayed where the readings put
// the tag, the rest spread by a step.
func TestGridUpdateSwitchesModes(t *testing.T) {
	s := gridSite(2, 1, true)
	h := tracking(t, Options{Params: standing()}, s, nil, AlgGrid)
	standAt(h, s, "WAT-1", 50, 50, 0, 5, nil)
	sh := h.e.shards.OfUID("WAT-1")
	sh.Lock()
	b := *sh.V.Get(assets.UIDHash("WAT-1"), "WAT-1")
	for c := range b.cells {
		b.cells[c] += b.still[c]
		b.still[c] = 0
	}
	sh.Unlock()
	standAt(h, s, "WAT-1", 50, 50, 0, 1, nil)
	share, _ := viewBeacon(h.e, "WAT-1", (*beacon).standing)
	// The chain's own share: 3/4 of 1 - e^-(1/30 + 1/10).
	if want := 0.75 * -math.Expm1(-(1.0/30 + 1.0/10)); share < want || share > 0.3 {
		t.Fatalf("a second after all of it moved, %.3f of the belief stands, want %.3f to 0.3", share, want)
	}
}

// TestSwitchModesKeepsSmallLeaks: a long stand's leak to moving over
// one millisecond is far under float32's step near 1; taken as 1 - (the
// chance of staying) it rounded 7% off for an hour's stand and to
// nothing for a day's (a review). Sixty thousand 1 ms steps must leak
// what one step of a minute does.
func TestSwitchModesKeepsSmallLeaks(t *testing.T) {
	for _, stand := range []time.Duration{time.Hour, 24 * time.Hour} {
		p := DefaultParams()
		p.StandFor = stand
		moving, still := []float32{0}, []float32{1}
		for range 60_000 {
			switchModes(moving, still, 1, &p)
		}
		one, oneStill := []float32{0}, []float32{1}
		switchModes(one, oneStill, 60_000, &p)
		if moving[0] <= 0 || math.Abs(float64(moving[0]/one[0])-1) > 0.01 {
			t.Errorf("stand_for %v: %.3g moving after 60,000 steps of 1 ms, %.3g after one of a minute", stand, moving[0], one[0])
		}
	}
}

// TestGridStandingZoneMasses: the zone masses the decision and the tag
// offset estimate read are both beliefs summed per zone, and sum to 1.
func TestGridStandingZoneMasses(t *testing.T) {
	s := gridSite(3, 3, true)
	h := tracking(t, Options{Params: standing()}, s, nil, AlgGrid)
	standAt(h, s, "WAT-1", 197, 150, 6, 20, rand.New(rand.NewPCG(1, 2)))
	type out struct{ mass, want []float64 }
	o, _ := viewBeacon(h.e, "WAT-1", func(b *beacon) out {
		g := h.e.model.Load().grid
		want := make([]float64, len(b.gmass))
		for c := range b.cells {
			want[g.czone[c]] += float64(b.cells[c]) + float64(b.still[c])
		}
		return out{slices.Clone(b.gmass), want}
	})
	var sum float64
	for z := range o.mass {
		sum += o.mass[z]
		if math.Abs(o.mass[z]-o.want[z]) > 1e-5 {
			t.Errorf("zone %d: mass %.5f, its cells %.5f", z, o.mass[z], o.want[z])
		}
	}
	if math.Abs(sum-1) > 1e-4 {
		t.Errorf("zone masses sum to %.5f", sum)
	}
}

// TestGridStandingStartsAtItsShare: a new belief is uniform over the
// cells in each mode, each mode at its share of the time; the evidence
// multiplies both alike, so the share survives the first update.
func TestGridStandingStartsAtItsShare(t *testing.T) {
	s := gridSite(3, 3, true)
	p := standing()
	h := tracking(t, Options{Params: p}, s, nil, AlgGrid)
	h.sight("WAT-1", s.Gateways[4].MAC, -60)
	st, _ := viewBeacon(h.e, "WAT-1", (*beacon).standing)
	if math.Abs(st-standShare(&p)) > 1e-4 {
		t.Fatalf("after the first report %.4f of the belief stands, want %.4f", st, standShare(&p))
	}
}

// TestGridStandingExtremeTimes: the shortest and longest spells Set
// takes keep a belief that sums to 1 and finds the tag.
func TestGridStandingExtremeTimes(t *testing.T) {
	for _, set := range [][]string{{"stand_for=30s", "move_for=1s"}, {"stand_for=1s"}, {"stand_for=2562047h", "move_for=2562047h"}} {
		p, err := ParamsFrom(set)
		if err != nil {
			t.Fatal(err)
		}
		s := gridSite(3, 3, true)
		h := tracking(t, Options{Params: p}, s, nil, AlgGrid)
		for i := range 3 {
			standAt(h, s, "WAT-1", 250, 150, 0, 1, nil)
			var sum float64
			for _, v := range gridMass(h, "WAT-1") {
				sum += v
			}
			if math.IsNaN(sum) || math.Abs(sum-1) > 1e-3 {
				t.Fatalf("%v, second %d: zone masses sum to %v", set, i, sum)
			}
		}
		if z := h.zone("WAT-1"); z != 6 {
			t.Fatalf("%v: zone %d, want 6", set, z)
		}
	}
}

// TestGridStandingFloorPerMode: the 1e-9 floor holds in each mode: far
// from the tag the standing belief is floored like the moving one, so a
// tag that walks there is not held back by a standing belief far under
// the floor.
func TestGridStandingFloorPerMode(t *testing.T) {
	s := gridSite(5, 1, true)
	h := tracking(t, Options{Params: standing()}, s, nil, AlgGrid)
	standAt(h, s, "WAT-1", 20, 50, 0, 120, nil)
	r, _ := viewBeacon(h.e, "WAT-1", func(b *beacon) float64 {
		worst := math.Inf(1)
		m := h.e.model.Load()
		for c := range b.cells {
			if int(m.grid.czone[c]) == len(m.zones)-1 && b.cells[c] > 0 {
				worst = min(worst, float64(b.still[c]/b.cells[c]))
			}
		}
		return worst
	})
	if r < 0.5 {
		t.Fatalf("far from the tag, standing / moving is %.3f, want about 1 (both floored)", r)
	}
}

// TestDebugEventsShowStanding: a debug event carries the share of grid's
// belief that stands when it keeps one, and no share when it does not.
func TestDebugEventsShowStanding(t *testing.T) {
	s := gridSite(2, 1, true)
	for _, p := range []Params{noStanding(), standing()} {
		h := tracking(t, Options{Params: p}, s, nil, AlgGrid)
		var last *Event
		h.e.Listen(func(ev Event) {
			if ev.Debug {
				last = &ev
			}
		}, func(string) bool { return true })
		standAt(h, s, "WAT-1", 50, 50, 0, 30, nil)
		if last == nil {
			t.Fatal("no debug event")
		}
		switch {
		case p.StandFor < 0 && last.Standing != nil:
			t.Fatalf("standing %v without stand_for", *last.Standing)
		case p.StandFor > 0 && (last.Standing == nil || *last.Standing < 0.75 || *last.Standing > 1):
			t.Fatalf("a tag standing 30 s: standing %v, want above its share of 0.75", last.Standing)
		}
	}
}

package rtls

import (
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// storeWith applies ops to a fresh store, in order.
func storeWith(t *testing.T, ops []func(*bolt.Tx) error) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "t.db"), store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	for _, op := range ops {
		if err := db.Update(op); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// storedOf is uid's zone intervals, newest first, once ops are applied.
func storedOf(t *testing.T, ops []func(*bolt.Tx) error, uid string) []store.ZoneInterval {
	t.Helper()
	ivs, _, err := storeWith(t, ops).ZoneIntervals(uid, store.ZoneCursor{}, 200)
	if err != nil {
		t.Fatal(err)
	}
	return ivs
}

// quietThenFarFirst has W's zone gateways miss it for 9 s (past Stale,
// short of the timeout and the hold), heard meanwhile only by unzoned
// when heard is set, then scanned for 7 s with the far zone gateway
// reporting 150 ms before the near one.
func quietThenFarFirst(h *harness, heard bool, unzoned, near, far [6]byte) {
	for range 9 {
		if heard {
			h.sight("W", unzoned, -60)
		}
		h.clk.Advance(time.Second)
	}
	for range 7 {
		h.sight("W", far, -75)
		h.clk.Advance(150 * time.Millisecond)
		h.sight("W", near, -55)
		h.clk.Advance(850 * time.Millisecond)
	}
}

// TestRefixAfterHeardOnlyOutsideTheZones: strongest refixes a beacon
// whose zone gateways fell silent for longer than its readings count,
// whether it was silent too or heard only by a gateway in no zone (a
// hold). Keyed on the beacon's own silence, the refix missed the hold,
// and the far gateway reporting first recorded its 4 s stay there (a
// review of the refix).
func TestRefixAfterHeardOnlyOutsideTheZones(t *testing.T) {
	for _, unzoned := range []bool{false, true} {
		s := gridSite(3, 1, true)
		u := gwMAC(99)
		s.Gateways = append(s.Gateways, Gateway{MAC: u, MapID: 1, X: 10, Y: 10})
		h := newHarness(t, Options{})
		h.e.SetSite(s)
		if err := h.e.Start(AlgStrongest); err != nil {
			t.Fatal(err)
		}
		near, far := gwMAC(1), gwMAC(3)
		for range 7 {
			h.sight("W", near, -55)
			h.sight("W", far, -75)
			h.clk.Advance(time.Second)
		}
		quietThenFarFirst(h, unzoned, u, near, far)
		ivs := storedOf(t, h.ops, "W")
		if len(ivs) != 1 || ivs[0].ZoneID != 1 || ivs[0].Enter != t0.UnixMilli() || ivs[0].Leave != 0 {
			t.Fatalf("heard by a gateway in no zone meanwhile: %v; intervals %+v, want one open stay in zone 1 from the start", unzoned, ivs)
		}
	}
}

// TestRefixAfterGatewayPlacedByEdit: a gateway placed in a zone by a
// site edit while its reading of the beacon is live gives strongest the
// beacon's zone with no zone gateway's sighting ever made; the gap since
// that none is a gap too, or the refix was skipped for good and the
// phantom stay stored again (a review).
func TestRefixAfterGatewayPlacedByEdit(t *testing.T) {
	for _, unzoned := range []bool{false, true} {
		s := gridSite(3, 1, true)
		u, v := gwMAC(99), gwMAC(98)
		s.Gateways = append(s.Gateways, Gateway{MAC: u, MapID: 1, X: 10, Y: 10}, Gateway{MAC: v, MapID: 1, X: 20, Y: 20})
		h := newHarness(t, Options{})
		h.e.SetSite(s)
		if err := h.e.Start(AlgStrongest); err != nil {
			t.Fatal(err)
		}
		for range 3 { // heard only by gateways in no zone: unknown
			h.sight("W", u, -55)
			h.sight("W", v, -60)
			h.clk.Advance(time.Second)
		}
		if z := h.zone("W"); z != 0 {
			t.Fatalf("zone %d before the edit", z)
		}
		s.Gateways[len(s.Gateways)-2].Placed = true // u now in zone 1
		h.e.SetSite(s)
		h.sight("W", v, -60) // u's live reading places it
		if z := h.zone("W"); z != 1 {
			t.Fatalf("zone %d after the edit, want 1", z)
		}
		enter := h.clk.Now().UnixMilli()
		h.clk.Advance(time.Second)
		quietThenFarFirst(h, unzoned, v, u, gwMAC(3))
		ivs := storedOf(t, h.ops, "W")
		if len(ivs) != 1 || ivs[0].ZoneID != 1 || ivs[0].Enter != enter || ivs[0].Leave != 0 {
			t.Fatalf("heard by a gateway in no zone meanwhile: %v; intervals %+v, want one open stay in zone 1 from %d", unzoned, ivs, enter)
		}
	}
}

// TestScanMovesOneStayWhateverDecideEvery: under hmm a scan's reports
// refine the decision taken at its first, so one scan stores at most
// one new stay, with decisions at every report (DecideEvery 0) too: there
// each report was a decision of its own, and a 4-report scan stored a
// stay of 5-35 ms for every hop (a review). Scans are 500-1500 ms apart,
// so a stay shorter than refineSpan was entered and left within one.
func TestScanMovesOneStayWhateverDecideEvery(t *testing.T) {
	for _, every := range []time.Duration{-1, 50 * time.Millisecond, time.Second} {
		for seed := uint64(0); seed < 6; seed++ {
			s := gridSite(4, 4, true)
			rng := rand.New(rand.NewPCG(seed, 5))
			h := newHarness(t, Options{Params: Params{DecideEvery: every}})
			h.e.SetSite(s)
			h.e.SetSamples(surveySamples(s, 3, 3, rng))
			if err := h.e.Start(AlgFilter); err != nil {
				t.Fatal(err)
			}
			for range 300 {
				for range 1 + rng.IntN(4) {
					g := s.Gateways[rng.IntN(len(s.Gateways))]
					h.sight("WAT-1", g.MAC, -40-rng.Float64()*55)
					h.clk.Advance(time.Duration(rng.IntN(25)) * time.Millisecond)
				}
				h.clk.Advance(time.Duration(500+rng.IntN(1000)) * time.Millisecond)
			}
			ivs := storedOf(t, h.ops, "WAT-1")
			if len(ivs) < 3 {
				t.Fatalf("every %v seed %d: %d stays, the filter hardly moved", every, seed, len(ivs))
			}
			for _, iv := range ivs {
				if iv.Leave != 0 && iv.Leave-iv.Enter < refineSpan {
					t.Fatalf("every %v seed %d: a stay of %d ms in zone %d: a hop within one scan", every, seed, iv.Leave-iv.Enter, iv.ZoneID)
				}
			}
		}
	}
}

// harnessWriter hands ops queued outside a batch (timeouts) to the
// harness, in order with its batches'.
type harnessWriter struct{ h *harness }

func (w harnessWriter) Do(fn func(*bolt.Tx) error, done func(error)) {
	w.h.ops = append(w.h.ops, fn)
	done(nil)
}

// TestHeardOnlyByGatewaysThatPlaceItNowhere: under every algorithm a
// beacon heard, after its stay began, only by gateways that place it
// nowhere (a MAC the site does not know; one registered but neither
// placed nor surveyed) is unknown once the timeout has passed since a
// gateway that does heard it, and its stay ends at that sighting. knn
// and the filters held the zone for ever, its time advancing (a review:
// 80 s and counting), as strongest and centroid did before their hold.
func TestHeardOnlyByGatewaysThatPlaceItNowhere(t *testing.T) {
	for _, alg := range allAlgs {
		t.Run(alg, func(t *testing.T) {
			h, last := zonedThenUnplaced(t, alg, 75)
			if l, _ := h.e.Location("W"); l.Zone != 0 {
				t.Fatalf("heard only by gateways that place it nowhere for 75 s: %+v, want unknown", l)
			}
			ivs := storedOf(t, h.ops, "W")
			if len(ivs) == 0 || ivs[0].Leave != last {
				t.Fatalf("intervals %+v, want the stay closed at the last placing sighting %d", ivs, last)
			}
		})
	}
}

// zonedThenUnplaced locates W under alg through gateways that place it,
// then has it heard for secs seconds only by gateways that place it
// nowhere: a MAC the site does not know, and one registered but neither
// placed nor surveyed. It returns the last placing sighting.
func zonedThenUnplaced(t *testing.T, alg string, secs int) (*harness, int64) {
	s := gridSite(3, 1, true)
	samples := surveySamples(s, 3, 3, rand.New(rand.NewPCG(1, 2)))
	s.Gateways = append(s.Gateways, Gateway{MAC: gwMAC(9)})
	h := newHarness(t, Options{Timeout: time.Minute})
	h.e.opts.Writer = harnessWriter{h}
	h.e.SetSite(s)
	h.e.SetSamples(samples)
	if err := h.e.Start(alg); err != nil {
		t.Fatal(err)
	}
	var last int64
	for range 10 {
		h.sight("W", gwMAC(1), -50)
		last = h.clk.Now().UnixMilli()
		h.sight("W", gwMAC(2), -85)
		h.clk.Advance(time.Second)
	}
	if z := h.zone("W"); z != 1 {
		t.Fatalf("zone %d, want 1", z)
	}
	for range secs {
		h.sight("W", gwMAC(77), -60) // in no site
		h.sight("W", gwMAC(9), -60)
		h.clk.Advance(time.Second)
	}
	return h, last
}

var allAlgs = []string{AlgStrongest, AlgCentroid, AlgKNN, AlgFilter, AlgBayes, AlgGrid, AlgFusion}

// A Stop ends every stay as the timeout does: at the last placing
// sighting (zonedAt), not at the last sighting by a gateway that places
// the beacon nowhere, under knn and the filters too (a review: only the
// timeout closed there).
func TestStopEndsStayAtPlacingEvidence(t *testing.T) {
	for _, alg := range allAlgs {
		t.Run(alg, func(t *testing.T) {
			h, last := zonedThenUnplaced(t, alg, 30)
			h.e.Stop()
			ivs := storedOf(t, h.ops, "W")
			if len(ivs) == 0 || ivs[0].Leave != last {
				t.Fatalf("intervals %+v, want the stay closed at the last placing sighting %d (the timeout's end), heard %d", ivs, last, h.clk.Now().UnixMilli()-1000)
			}
		})
	}
}

// A crash: saveHeard's zone_heard is where CloseOpenIntervals closes the
// stay; it should be the stay's end the timeout would give (zonedAt).
func TestCrashRepairEndsStayAtPlacingEvidence(t *testing.T) {
	for _, alg := range allAlgs {
		t.Run(alg, func(t *testing.T) {
			h, last := zonedThenUnplaced(t, alg, 30)
			h.e.saveHeard()
			db := storeWith(t, h.ops)
			now := h.clk.Now().Add(time.Hour).UnixMilli()
			if err := db.Update(func(tx *bolt.Tx) error { _, err := CloseOpenIntervals(tx, now, 0); return err }); err != nil {
				t.Fatal(err)
			}
			ivs, _, err := db.ZoneIntervals("W", store.ZoneCursor{}, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(ivs) == 0 || ivs[0].Leave != last {
				t.Fatalf("after crash repair: %+v, want closed at the last placing sighting %d", ivs, last)
			}
		})
	}
}

// A device replace (afresh) ends the stay at its last sighting: the same.
func TestDeviceReplaceEndsStayAtPlacingEvidence(t *testing.T) {
	for _, alg := range allAlgs {
		t.Run(alg, func(t *testing.T) {
			h, last := zonedThenUnplaced(t, alg, 30)
			h.sightTag("W", "watch", [6]byte{1, 2, 3, 4, 5, 6}, gwMAC(77), -60) // the tag's MAC first seen: no replace
			h.clk.Advance(3 * time.Second)
			h.sightTag("W", "watch", [6]byte{6, 5, 4, 3, 2, 1}, gwMAC(77), -60) // replaced
			ivs := storedOf(t, h.ops, "W")
			var closed *store.ZoneInterval
			for i := range ivs {
				if ivs[i].ZoneID == 1 {
					closed = &ivs[i]
				}
			}
			if closed == nil || closed.Leave != last {
				t.Fatalf("intervals %+v, want the zone 1 stay closed at %d", ivs, last)
			}
		})
	}
}

// refusesUnplaced refuses a move while no placing gateway has heard the
// beacon within its stale, but not a refinement back to the zone held
// before its scan: the scan's first report moved the beacon (a placing
// sighting was still within stale then), its stale ran out within the
// scan, and a refinement that goes back was refused, so the move stood
// on the report that undid it (a review, by reading the code).
func TestRefusalLetsARefinementGoBack(t *testing.T) {
	p := DefaultParams()
	stale := p.Stale.Milliseconds()
	const a, b2, c = 0, 1, 2
	const scan = 1_000_000
	bc := newBeacon("W")
	// At scan, the first report moved the beacon from a to b2, the
	// last placing sighting stale-30 ms before; the refinement comes
	// 40 ms later, past that stale.
	bc.zone, bc.since, bc.decided, bc.refineUntil, bc.tentative = b2, scan, scan, scan+refineSpan, true
	bc.prev = stay{zone: a, since: scan - 60_000}
	bc.zonedAt = scan - stale + 30
	now := int64(scan + 40)
	if !bc.placingQuiet(&p, now) {
		t.Fatal("no placing sighting for stale+10 ms: want quiet")
	}
	if bc.heldBefore(now) != a {
		t.Fatalf("held before the scan: %d, want %d", bc.heldBefore(now), a)
	}
	if bc.refusesUnplaced(&p, a, now) {
		t.Fatal("a refinement back to the zone held before its scan refused")
	}
	if !bc.refusesUnplaced(&p, c, now) {
		t.Fatal("a move to a third zone with no placing sighting within stale allowed")
	}
	if bc.refusesUnplaced(&p, b2, now) {
		t.Fatal("keeping the zone refused")
	}
	// After the scan, going back is a move like any other.
	later := int64(scan + refineSpan + 500)
	if !bc.refusesUnplaced(&p, a, later) {
		t.Fatal("after the scan's refinements, a move with no placing sighting within stale allowed")
	}
	// A placing sighting within stale: nothing is refused.
	bc.zonedAt = later - 1000
	if bc.refusesUnplaced(&p, c, later) {
		t.Fatal("a move refused with a placing sighting 1 s ago")
	}
}

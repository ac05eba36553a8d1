package rtls

import (
	"path/filepath"
	"testing"

	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// TestRefinedDecisionRewritesItsStay: decide, on the three ways a
// refinement can go (TestRefinedFirstFixLeavesNoPhantomStay drives the
// first through ingest): to a third zone, the stay is renamed in place;
// back to the zone the scan's first report left, the stay opened is
// dropped and the one it ended reopened, since unchanged; from unknown
// back to unknown, nothing is left. A decision outside the refinement
// (the next scan) ends stays as before.
func TestRefinedDecisionRewritesItsStay(t *testing.T) {
	h := newHarness(t, Options{})
	h.e.SetSite(gridSite(3, 1, true))
	if err := h.e.Start(AlgStrongest); err != nil {
		t.Fatal(err)
	}
	m := h.e.model.Load()
	run := func(steps [][3]int64) ([]store.ZoneInterval, *beacon) {
		t.Helper()
		b := h.e.newBeacon("WCH-9")
		b.reset(m)
		var ops []func(*bolt.Tx) error
		for _, s := range steps { // {zone, now, scan start (refine until +100)}
			now := s[1]
			if now != b.decided && now >= b.refineUntil {
				b.decided, b.refineUntil = now, 0
				if s[2] == 1 {
					b.refineUntil = now + refineSpan
				}
			}
			h.e.decide(m, b, int(s[0]), position{}, now, &ops)
		}
		db, err := store.Open(filepath.Join(t.TempDir(), "z.db"), store.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Update(func(tx *bolt.Tx) error {
			for _, op := range ops {
				if err := op(tx); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		ivs, _, err := db.ZoneIntervals("WCH-9", store.ZoneCursor{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		return ivs, b
	}
	id := func(z int) uint64 { return m.zones[z].ID }

	ivs, b := run([][3]int64{{0, 1000, 1}, {1, 2000, 1}, {2, 2050, 0}})
	if len(ivs) != 2 || ivs[0].ZoneID != id(2) || ivs[0].Enter != 2000 || ivs[0].Leave != 0 || ivs[1].Leave != 2000 || b.zone != 2 {
		t.Errorf("refined to a third zone: %+v, zone %d", ivs, b.zone)
	}
	ivs, b = run([][3]int64{{0, 1000, 1}, {1, 2000, 1}, {0, 2050, 0}})
	if len(ivs) != 1 || ivs[0].ZoneID != id(0) || ivs[0].Enter != 1000 || ivs[0].Leave != 0 || b.zone != 0 || b.since != 1000 {
		t.Errorf("refined back: %+v, zone %d since %d", ivs, b.zone, b.since)
	}
	ivs, b = run([][3]int64{{1, 2000, 1}, {-1, 2000, 0}})
	if len(ivs) != 0 || b.zone != -1 {
		t.Errorf("a first fix refined to unknown in its millisecond: %+v, zone %d", ivs, b.zone)
	}
	// A later report of the scan moves it, and the next brings it back
	// (a review: only the first report's change was rewritten).
	ivs, b = run([][3]int64{{0, 1000, 1}, {0, 2000, 1}, {1, 2030, 0}, {0, 2050, 0}})
	if len(ivs) != 1 || ivs[0].ZoneID != id(0) || ivs[0].Leave != 0 || b.since != 1000 {
		t.Errorf("moved and back by a scan's later reports: %+v, since %d", ivs, b.since)
	}
	// Through unknown and another zone, and back, within the window (a
	// review: the change made from the stay restored was final).
	ivs, b = run([][3]int64{{0, 1000, 1}, {-1, 2000, 1}, {1, 2030, 0}, {0, 2050, 0}})
	if len(ivs) != 1 || ivs[0].ZoneID != id(0) || ivs[0].Leave != 0 || b.since != 1000 {
		t.Errorf("unknown, then another zone, then back: %+v, since %d", ivs, b.since)
	}
	ivs, _ = run([][3]int64{{0, 1000, 1}, {1, 2000, 1}, {0, 2100, 1}}) // the next scan, not a refinement
	if len(ivs) != 3 || ivs[1].ZoneID != id(1) || ivs[1].Leave != 2100 {
		t.Errorf("a new scan's decision: %+v", ivs)
	}
}

// TestRefinementEndsAtAModelSwap: a site edit between a scan's first
// decision and a report in the same millisecond makes that report a new
// decision: prev's zone index is the old model's. Taken for a
// refinement, it reopened the stay in zone 1 while the beacon's zone
// index named the new zone 4 that took zone 1's index (a review).
func TestRefinementEndsAtAModelSwap(t *testing.T) {
	h := newHarness(t, Options{})
	s1 := gridSite(3, 1, true)
	h.e.SetSite(s1)
	if err := h.e.Start(AlgStrongest); err != nil {
		t.Fatal(err)
	}
	b := h.e.newBeacon("WCH-9")
	m1 := h.e.model.Load()
	b.reset(m1)
	var ops []func(*bolt.Tx) error
	step := func(m *model, z int, now int64, scan bool) {
		if now != b.decided && now >= b.refineUntil {
			b.decided, b.refineUntil = now, 0
			if scan {
				b.refineUntil = now + refineSpan
			}
		}
		h.e.decide(m, b, z, position{}, now, &ops)
	}
	step(m1, 0, 1000, true) // zone 1
	step(m1, 1, 2000, true) // zone 2, tentative
	s2 := s1
	s2.Zones = append([]Zone{{ID: 4, MapID: 1, Name: "ZD", X1: 0, Y1: 100, X2: 100, Y2: 200}}, s1.Zones...)
	h.e.SetSite(s2)
	m2 := h.e.model.Load()
	b.reset(m2)
	step(m2, 0, 2000, false) // zone 4, index 0 in the new model
	if b.zone != 0 || b.zoneID != 4 || b.since != 2000 || m2.zones[b.zone].ID != b.zoneID {
		t.Fatalf("zone index %d, id %d, since %d; want zone 4 entered at 2000", b.zone, b.zoneID, b.since)
	}
}

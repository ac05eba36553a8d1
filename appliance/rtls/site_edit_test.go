package rtls

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/ingest"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// opsWriter keeps the ops the engine queues outside a batch.
type opsWriter struct{ ops []func(*bolt.Tx) error }

func (w *opsWriter) Do(fn func(tx *bolt.Tx) error, done func(error)) {
	w.ops = append(w.ops, fn)
	done(nil)
}

// An admin deletes the zone a beacon stands in. At that moment the beacon
// is unknown everywhere: the location endpoints, the status count (which
// read the stale zone index and said "located"), its zone interval (closed
// at the edit, not at its next sighting or the timeout) and the live feed
// (a zone-0 event, so a map stops drawing it in a room that is gone).
func TestDeletedZoneMakesItsBeaconsUnknownAtOnce(t *testing.T) {
	h, w, s := inZoneOne(t)
	h.sight("WCH-2", gwMAC(3), -50)
	if h.zone("WCH-1") != 1 || h.zone("WCH-2") != 3 || h.e.Status().Located != 2 {
		t.Fatalf("setup: zones %d %d, status %+v", h.zone("WCH-1"), h.zone("WCH-2"), h.e.Status())
	}
	var events []Event
	cancel := h.e.Listen(func(ev Event) { events = append(events, ev) }, nil)
	defer cancel()
	heard := h.clk.Now().UnixMilli()
	h.clk.Advance(10 * time.Second)
	s2 := s
	s2.Zones = append([]Zone(nil), s.Zones[1:]...) // zone 1 deleted
	h.e.SetSite(s2)

	if l, _ := h.e.Location("WCH-1"); l.Zone != 0 {
		t.Fatalf("location still in the deleted zone: %+v", l)
	}
	if st := h.e.Status(); st.Located != 1 {
		t.Fatalf("status says %d located; only WCH-2 is", st.Located)
	}
	if len(events) != 1 || events[0].AssetUID != "WCH-1" || events[0].Location.Zone != 0 {
		t.Fatalf("events at the edit: %+v", events)
	}
	if h.zone("WCH-2") != 3 {
		t.Fatalf("a beacon in a zone that stayed moved: %d", h.zone("WCH-2"))
	}
	if len(w.ops) != 1 {
		t.Fatalf("%d writer ops at the edit, want the one interval close", len(w.ops))
	}
	// closed at its last sighting, as a timeout would
	if b := h.state("WCH-1"); b.open || b.zone != -1 || b.since != heard {
		t.Fatalf("beacon state after the edit: open %v zone %d since %d (last heard %d)", b.open, b.zone, b.since, heard)
	}
	// Heard again, it is placed in a zone that exists.
	h.sight("WCH-1", gwMAC(2), -50)
	if h.zone("WCH-1") != 2 {
		t.Fatalf("heard again near zone 2: %d", h.zone("WCH-1"))
	}
}

// Configure (the appliance's reload) builds the model once, so with grid
// (or fusion, which runs it) running a reload fits the radio model once,
// not once for the site and again for the samples; Start fits it first.
func TestConfigureBuildsOnce(t *testing.T) {
	fits := 0
	gridFitHook = func() { fits++ }
	defer func() { gridFitHook = nil }()
	for _, alg := range []string{AlgGrid, AlgFusion} {
		h := newHarness(t, Options{})
		s := gridSite(3, 1, true)
		h.e.SetSite(s)
		fits = 0
		if err := h.e.Start(alg); err != nil {
			t.Fatal(err)
		}
		if fits != 1 || !h.e.model.Load().grid.fitted {
			t.Fatalf("%s: Start made %d fits", alg, fits)
		}
		fits = 0
		gen := h.e.model.Load().gen
		h.e.Configure(s, []Sample{{Zone: 1, RSSI: map[[6]byte]float64{gwMAC(1): -50}}})
		if m := h.e.model.Load(); fits != 1 || m.gen != gen+1 || len(m.samples) != 1 || !m.grid.fitted {
			t.Fatalf("%s: Configure: %d fits, generation %d -> %d, %d samples", alg, fits, gen, m.gen, len(m.samples))
		}
	}
}

// state is uid's live beacon state (nil when the engine has none).
func (h *harness) state(uid string) *beacon {
	sh := h.e.shards.OfUID(uid)
	sh.Lock()
	defer sh.Unlock()
	if bp := sh.V.Get(assets.UIDHash(uid), uid); bp != nil {
		return *bp
	}
	return nil
}

// A batch received just before an admin deletes a zone is observed just
// after the edit (its Observe waited on the shard lock that
// leaveVanishedZones held, or the read loop was still decoding). The
// interval closed at the edit must not be overlapped by the next one: a
// beacon's intervals stay one chain, each entered no earlier than the
// previous one left.
func TestDeletedZoneIntervalIsNotOverlapped(t *testing.T) {
	h, w, s := inZoneOne(t)
	before := len(h.ops)
	h.clk.Advance(10 * time.Second)
	received := h.clk.Now().Add(-2 * time.Second).UnixMilli() // stamped before the edit
	s2 := s
	s2.Zones = append([]Zone(nil), s.Zones[1:]...) // zone 1 deleted
	h.e.Configure(s2, nil)

	// the batch received before the edit is observed now
	b := &ingest.Batch{Gateway: gwMAC(2), Kind: ingest.KindAdv4, Received: received,
		Obs: []ingest.Observation{{Report: ingest.Report{RSSI: -40, TS: received}, Asset: h.beacon("WCH-1", "watch")}}}
	wr := &ingest.Writes{}
	h.e.Observe(b, wr)
	if h.zone("WCH-1") != 2 {
		t.Fatalf("not placed in zone 2: %d", h.zone("WCH-1"))
	}

	// Apply the ops in the order the writer got them.
	db, err := store.Open(filepath.Join(t.TempDir(), "t.db"), store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ops []func(*bolt.Tx) error
	ops = append(ops, h.ops[:before]...)
	ops = append(ops, w.ops...)
	ops = append(ops, wr.Ops...)
	for _, op := range ops {
		if err := db.Update(op); err != nil {
			t.Fatal(err)
		}
	}
	ivs, _, err := db.ZoneIntervals("WCH-1", store.ZoneCursor{}, 10) // newest first
	if err != nil {
		t.Fatal(err)
	}
	if len(ivs) != 2 {
		t.Fatalf("intervals %+v", ivs)
	}
	older, newer := ivs[1], ivs[0]
	if older.Leave == 0 || newer.Enter < older.Leave {
		t.Fatalf("zone %d entered at %d, %d ms before zone %d was left at %d:\n older %+v\n newer %+v",
			newer.ZoneID, newer.Enter, older.Leave-newer.Enter, older.ZoneID, older.Leave, older, newer)
	}
}

// inZoneOne tracks (strongest) on a row of three zones, with WCH-1 heard
// in zone 1, and keeps the writer's ops.
func inZoneOne(t *testing.T) (*harness, *opsWriter, Site) {
	t.Helper()
	w := &opsWriter{}
	h := newHarness(t, Options{Writer: w})
	s := gridSite(3, 1, true)
	h.e.SetSite(s)
	if err := h.e.Start(AlgStrongest); err != nil {
		t.Fatal(err)
	}
	h.sight("WCH-1", gwMAC(1), -50)
	if h.zone("WCH-1") != 1 {
		t.Fatalf("setup: zone %d", h.zone("WCH-1"))
	}
	return h, w, s
}

// TestIsolatedZonesGetTheirDrawnNeighbours: zones drawn but never linked
// get the zones their rectangles border (within half a metre, along at
// least a metre: zones meeting at a corner are not neighbours), or else
// the nearest one; a zone with a declared neighbour keeps what was
// declared. Without this, hmm's belief could neither leave nor enter
// such a zone.
func TestIsolatedZonesGetTheirDrawnNeighbours(t *testing.T) {
	s := gridSite(2, 2, true) // zones 1 2 / 3 4, 100 px = 10 m each
	for i := range s.Zones {
		s.Zones[i].Adjacent = nil
	}
	s.Zones[3].X1 += 3 // zone 4 drawn 0.3 m short of zone 3: still touching
	s.Zones = append(s.Zones,
		Zone{ID: 5, MapID: 1, Name: "shed", X1: 300, Y1: 0, X2: 350, Y2: 50},                           // 10 m from zone 2, nothing touches
		Zone{ID: 6, MapID: 1, Name: "lift", X1: 400, Y1: 150, X2: 420, Y2: 165, Adjacent: []uint64{1}}, // declared: only zone 1
		Zone{ID: 7, MapID: 2, Name: "upstairs", X1: 0, Y1: 0, X2: 100, Y2: 100, Adjacent: []uint64{6}}) // another map, declared
	h := newHarness(t, Options{})
	h.e.SetSite(s)
	m := h.e.model.Load()
	got := map[uint64][]uint64{}
	for i, nb := range m.adj {
		for _, j := range nb {
			got[m.zones[i].ID] = append(got[m.zones[i].ID], m.zones[j].ID)
		}
	}
	want := map[uint64][]uint64{1: {2, 3, 6}, 2: {1, 4, 5}, 3: {1, 4}, 4: {2, 3}, 5: {2}, 6: {1, 7}, 7: {6}}
	for id, w := range want {
		g := got[id]
		slices.Sort(g)
		if !slices.Equal(g, w) {
			t.Errorf("zone %d: neighbours %v, want %v", id, g, w)
		}
	}
}

// TestUnlinkedPartsAreJoined: two rows of three unlinked rooms either side
// of a 2 m corridor nobody drew border only their own row; the rows are
// joined through their nearest pair, so the belief can cross, and so is
// a declared pair on the same map. On another map whose zones were all
// linked by hand, two declared parts stay apart.
func TestUnlinkedPartsAreJoined(t *testing.T) {
	s := Site{Maps: []Map{{ID: 1, Name: "floor", Width: 400, Height: 400, PixelsPerMeter: 10}}}
	for i := 0; i < 3; i++ {
		s.Zones = append(s.Zones,
			Zone{ID: uint64(1 + i), MapID: 1, X1: float64(100 * i), Y1: 0, X2: float64(100*i + 100), Y2: 100},
			Zone{ID: uint64(4 + i), MapID: 1, X1: float64(100 * i), Y1: 120, X2: float64(100*i + 100), Y2: 220})
	}
	s.Maps = append(s.Maps, Map{ID: 2, Name: "annex", Width: 400, Height: 400, PixelsPerMeter: 10})
	s.Zones = append(s.Zones,
		Zone{ID: 7, MapID: 1, X1: 0, Y1: 300, X2: 50, Y2: 350, Adjacent: []uint64{8}},
		Zone{ID: 8, MapID: 1, X1: 50, Y1: 300, X2: 100, Y2: 350},
		Zone{ID: 9, MapID: 2, X1: 0, Y1: 0, X2: 100, Y2: 100, Adjacent: []uint64{10}},
		Zone{ID: 10, MapID: 2, X1: 100, Y1: 0, X2: 200, Y2: 100},
		Zone{ID: 11, MapID: 2, X1: 0, Y1: 200, X2: 100, Y2: 300, Adjacent: []uint64{12}},
		Zone{ID: 12, MapID: 2, X1: 100, Y1: 200, X2: 200, Y2: 300})
	h := newHarness(t, Options{})
	h.e.SetSite(s)
	m := h.e.model.Load()
	reach := func(from uint64) map[uint64]bool {
		seen := map[int]bool{m.zoneIdx[from]: true}
		for stack := []int{m.zoneIdx[from]}; len(stack) > 0; {
			z := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, u := range m.adj[z] {
				if !seen[u] {
					seen[u] = true
					stack = append(stack, u)
				}
			}
		}
		out := map[uint64]bool{}
		for i := range seen {
			out[m.zones[i].ID] = true
		}
		return out
	}
	r1 := reach(1)
	for id := uint64(1); id <= 8; id++ {
		if !r1[id] {
			t.Errorf("zone %d cut off from zone 1", id)
		}
	}
	if r9 := reach(9); len(r9) != 2 || !r9[10] {
		t.Errorf("declared parts of map 2 joined: zone 9 reaches %v", r9)
	}
}

// TestZoneAtPrefersTheSmallestContainingZone: a room drawn inside the
// hall around it owns the points inside it, whichever was drawn first;
// outside every zone the nearest one does; of two equal zones that
// overlap, the one whose centre is nearer.
func TestZoneAtPrefersTheSmallestContainingZone(t *testing.T) {
	for _, order := range [][]int{{0, 1}, {1, 0}} {
		zs := []Zone{
			{ID: 1, MapID: 1, Name: "hall", X1: 0, Y1: 0, X2: 100, Y2: 100},
			{ID: 2, MapID: 1, Name: "room", X1: 60, Y1: 60, X2: 90, Y2: 90},
		}
		site := Site{Maps: []Map{{ID: 1}}, Zones: []Zone{zs[order[0]], zs[order[1]]}}
		m := buildModel(1, DefaultParams(), site, nil)
		for _, c := range []struct {
			x, y float64
			want string
		}{{70, 70, "room"}, {61, 61, "room"}, {20, 20, "hall"}, {150, 70, "hall"}} { // (61,61) is nearer the hall's centre
			if z := m.zoneAt(1, c.x, c.y); z < 0 || m.zones[z].Name != c.want {
				t.Fatalf("order %v: zone at (%v,%v) is %d, want %s", order, c.x, c.y, z, c.want)
			}
		}
	}
	site := Site{Maps: []Map{{ID: 1}}, Zones: []Zone{
		{ID: 1, MapID: 1, Name: "west", X1: 0, Y1: 0, X2: 60, Y2: 50},
		{ID: 2, MapID: 1, Name: "east", X1: 40, Y1: 0, X2: 100, Y2: 50},
	}}
	m := buildModel(1, DefaultParams(), site, nil)
	if z := m.zoneAt(1, 58, 25); m.zones[z].Name != "east" {
		t.Fatalf("overlap of equal zones at x=58: %s", m.zones[z].Name)
	}
	if z := m.zoneAt(1, 42, 25); m.zones[z].Name != "west" {
		t.Fatalf("overlap of equal zones at x=42: %s", m.zones[z].Name)
	}
}

func TestParamsSet(t *testing.T) {
	p := DefaultParams()
	for _, c := range [][2]string{{"switch_odds", "30"}, {"mean_stay", "1m"}, {"k", " 7 "}} {
		if err := p.Set(c[0], c[1]); err != nil {
			t.Fatal(err)
		}
	}
	if p.SwitchOdds != 30 || p.MeanStay != time.Minute || p.K != 7 {
		t.Fatalf("%+v", p)
	}
	// Refused: unknown names, bad syntax, values the engine would not
	// run as given (0 stands for the default, K is bounded) or that make
	// no sense; a refusal leaves the value set before.
	for _, c := range [][2]string{{"switchodds", "30"}, {"mean_stay", "60"}, {"k", "1.5"}, {"sigma", "NaN"},
		{"lost", "0"}, {"k", "40"}, {"lost", "1.5"}, {"sigma", "-6"}, {"switch_odds", "0.5"}, {"smooth_tau", "0s"},
		{"diffusion", "0.6"}, {"diffusion", "-0.1"},
		// Past the bounds a review found running the algorithms into
		// nothing: an RSSI floor above any reading, a window of 0 ms,
		// sigma of 1e300, a decision every 1000 hours.
		{"floor", "5"}, {"floor", "-1e300"}, {"tx_power", "30"}, {"sample_window", "999us"}, {"sample_window", "1ns"},
		{"sigma", "1e300"}, {"sigma_floor", "1e300"}, {"path_loss", "1e300"}, {"evidence", "1e300"},
		{"switch_odds", "1e308"}, {"decide_every", "1000h"}, {"mean_stay", "1000h"}, {"evidence", "1e-300"}, {"path_loss", "0.1"}} {
		if err := p.Set(c[0], c[1]); err == nil {
			t.Fatalf("%s=%s accepted", c[0], c[1])
		}
	}
	if p.SwitchOdds != 30 || p.K != 7 || p.Lost != DefaultParams().Lost || p.Sigma != DefaultParams().Sigma {
		t.Fatalf("after refusals: %+v", p)
	}
	// Out of range and also run as the default, it is refused for its
	// range, which is what the user needs to hear (docs/config.md).
	if err := p.Set("diffusion", "2"); err == nil || !strings.Contains(err.Error(), "at most 0.5417 m²") {
		t.Fatalf("diffusion=2: %v", err)
	}
	if err := p.Set("diffusion", "0.1"); err != nil || p.Diffusion != 0.1 {
		t.Fatalf("diffusion=0.1: %v", err)
	}
	// Set and the configuration refuse it; given directly, a diffusion
	// that is not a number or too large runs as the default.
	for _, d := range []float64{math.NaN(), 2} {
		q := p
		q.Diffusion = d
		if err := q.check(); err == nil || q.withDefaults().Diffusion != MaxDiffusion {
			t.Fatalf("diffusion %v: check %v, runs as %v", d, err, q.withDefaults().Diffusion)
		}
	}
	for _, c := range [][2]string{{"floor", "-127"}, {"floor", "-90"}, {"sample_window", "100ms"}, {"sigma", "40"},
		{"decide_every", "1m"}, {"mean_stay", "24h"}, {"tx_power", "-70"}} {
		if err := p.Set(c[0], c[1]); err != nil {
			t.Errorf("%s=%s at its bound: %v", c[0], c[1], err)
		}
	}
	if err := p.Set("decide_every", "0s"); err != nil || p.DecideEvery != 0 {
		t.Fatalf("decide_every=0s (decide on every sighting): %v", err)
	}
	if n := ParamNames(); len(n) != reflect.TypeFor[Params]().NumField() || n[0] != "smooth_tau" {
		t.Fatalf("%v", n)
	}
}

// TestEditedZoneIsAnnounced: renaming or resizing the zone a beacon is
// in sends its track event again, with the new name and centre; an edit
// of another zone, or of the adjacency alone, sends nothing. The live
// feed kept the old name and centre until the beacon next changed zone,
// while the REST views had the new ones (a review).
func TestEditedZoneIsAnnounced(t *testing.T) {
	h, w, s := inZoneOne(t)
	var events []Event
	cancel := h.e.Listen(func(ev Event) { events = append(events, ev) }, nil)
	defer cancel()
	edit := func(f func(zs []Zone)) {
		s2 := s
		s2.Zones = slices.Clone(s.Zones)
		for i := range s2.Zones {
			s2.Zones[i].Adjacent = slices.Clone(s.Zones[i].Adjacent)
		}
		f(s2.Zones)
		h.e.SetSite(s2)
		s = s2
	}
	edit(func(zs []Zone) { zs[1].Name = "Elsewhere" })
	edit(func(zs []Zone) {
		zs[0].Adjacent = nil
		zs[1].Adjacent = slices.DeleteFunc(zs[1].Adjacent, func(id uint64) bool { return id == 1 })
	})
	if len(events) != 0 {
		t.Fatalf("edits of another zone and of the graph sent %+v", events)
	}
	edit(func(zs []Zone) { zs[0].Name, zs[0].X2 = "Lobby", 80 })
	if len(events) != 1 || events[0].AssetUID != "WCH-1" || events[0].Location.Zone != 1 || events[0].Location.ZoneName != "Lobby" {
		t.Fatalf("events at the rename: %+v", events)
	}
	if l, _ := h.e.Location("WCH-1"); l.ZoneName != "Lobby" {
		t.Fatalf("location %+v", l)
	}
	if len(w.ops) != 0 {
		t.Fatalf("a rename wrote %d interval ops", len(w.ops))
	}
}

// TestUntrackedBeaconStaysUnknown: RegistryReloaded ends the stay of a
// beacon the registry no longer tracks, and a report resolved before
// that write (still in flight through the pipeline, with the old type)
// does not bring it back until the timeout (a review); once the
// registry tracks it again, its next report locates it.
func TestUntrackedBeaconStaysUnknown(t *testing.T) {
	types := map[string]string{"WAT-1": "watch"}
	h := newHarness(t, Options{Beacon: func(uid string) (*assets.Asset, bool) {
		typ, ok := types[uid]
		return &assets.Asset{UID: uid, Type: typ}, ok
	}})
	s := gridSite(2, 1, true)
	h.e.SetSite(s)
	if err := h.e.Start(AlgStrongest); err != nil {
		t.Fatal(err)
	}
	h.sight("WAT-1", gwMAC(1), -50)
	if h.zone("WAT-1") != 1 {
		t.Fatalf("setup: zone %d", h.zone("WAT-1"))
	}
	types["WAT-1"] = "sensor"
	h.e.RegistryReloaded()
	if h.zone("WAT-1") != 0 {
		t.Fatalf("a sensor-type beacon still in zone %d", h.zone("WAT-1"))
	}
	h.clk.Advance(time.Second)
	h.sight("WAT-1", gwMAC(1), -50) // resolved as a watch before the write
	if h.zone("WAT-1") != 0 {
		t.Fatalf("an in-flight report put it back in zone %d", h.zone("WAT-1"))
	}
	types["WAT-1"] = "watch"
	h.e.RegistryReloaded()
	h.clk.Advance(time.Second)
	h.sight("WAT-1", gwMAC(1), -50)
	if h.zone("WAT-1") != 1 {
		t.Fatalf("tracked again, but in zone %d", h.zone("WAT-1"))
	}
	delete(types, "WAT-1") // deleted
	h.e.RegistryReloaded()
	if h.zone("WAT-1") != 0 {
		t.Fatalf("a deleted beacon still in zone %d", h.zone("WAT-1"))
	}
}

// TestReportInFlightSeesTheSiteEdit: a batch that read the model before
// a site edit, and reached its beacon's shard after the edit's
// announcement, decides on the edited site: a renamed zone goes out
// under its new name and a deleted zone is not entered. It decided on
// the model it began with, so the live feed carried the old name after
// the rename was announced, and the beacon entered a zone that no longer
// existed. (With zone 2 deleted its gateway counts for the nearest zone
// left.)
func TestReportInFlightSeesTheSiteEdit(t *testing.T) {
	for _, edit := range []string{"rename", "delete"} {
		h, _, s := inZoneOne(t)
		var mu sync.Mutex
		var events []Event
		cancel := h.e.Listen(func(ev Event) {
			mu.Lock()
			events = append(events, ev)
			mu.Unlock()
		}, nil)
		held, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
		observeHook = func() { close(held); <-release }
		go func() {
			defer close(done)
			h.sight("WCH-2", gwMAC(2), -50) // gateway 2 hangs in zone 2
		}()
		<-held
		observeHook = nil
		s2 := s
		s2.Zones = nil
		for _, z := range s.Zones {
			z.Adjacent = slices.DeleteFunc(slices.Clone(z.Adjacent), func(id uint64) bool { return edit == "delete" && id == 2 })
			switch {
			case z.ID != 2:
			case edit == "rename":
				z.Name = "Ward"
			default:
				continue
			}
			s2.Zones = append(s2.Zones, z)
		}
		h.e.SetSite(s2)
		close(release)
		<-done
		cancel()
		mu.Lock()
		sent := 0
		for _, ev := range events {
			if ev.AssetUID != "WCH-2" {
				continue
			}
			sent++
			if (edit == "delete") == (ev.Location.Zone == 2) || (edit == "rename" && ev.Location.ZoneName != "Ward") {
				t.Errorf("%s: the report held over the edit sent %+v", edit, ev.Location)
			}
		}
		mu.Unlock()
		if sent != 1 {
			t.Errorf("%s: %d events for WCH-2 entering a zone, want 1", edit, sent)
		}
		if z := h.zone("WCH-2"); (edit == "delete") == (z == 2) {
			t.Errorf("%s: WCH-2 in zone %d", edit, z)
		}
	}
}

// An edit that takes away what the running algorithm needs (knn's
// samples deleted to re-survey, as the 409 at the sample bound advises;
// every gateway unplaced under strongest) makes every beacon unknown at
// the edit, and reports then locate nothing, as docs/api.md says of an
// algorithm not ready. Each beacon stayed in its last zone with a fresh
// `updated`, its stay recorded on for as long as it was heard (a
// review). With the input back, reports locate it again.
func TestUnreadyModelLocatesNothing(t *testing.T) {
	for _, alg := range []string{AlgKNN, AlgStrongest, AlgCentroid, AlgFilter, AlgBayes, AlgGrid, AlgFusion} {
		t.Run(alg, func(t *testing.T) {
			w := &opsWriter{}
			h := newHarness(t, Options{Writer: w})
			s := gridSite(3, 1, true)
			samples := surveySamples(s, 5, 1, rand.New(rand.NewPCG(3, 4)))
			h.e.Configure(s, samples)
			if err := h.e.Start(alg); err != nil {
				t.Fatal(err)
			}
			stand := func() {
				for i := 0; i < 5; i++ {
					h.sight("WCH-1", gwMAC(1), -45)
					h.sight("WCH-1", gwMAC(2), -75)
					h.sight("WCH-1", gwMAC(3), -85)
					h.clk.Advance(time.Second)
				}
			}
			stand()
			if h.zone("WCH-1") != 1 {
				t.Fatalf("setup: zone %d", h.zone("WCH-1"))
			}
			// Neither samples nor placed gateways: no algorithm is ready.
			bare := gridSite(3, 1, false)
			h.e.Configure(bare, nil)
			if info := h.e.model.Load(); !info.unready[alg] {
				t.Fatalf("%s ready without samples or placements", alg)
			}
			if b := h.state("WCH-1"); b.zone != -1 || b.open {
				t.Fatalf("at the edit: zone %d, open %v", b.zone, b.open)
			}
			stand()
			if l, _ := h.e.Location("WCH-1"); l.Zone != 0 {
				t.Fatalf("located by an algorithm that is not ready: %+v", l)
			}
			h.e.Configure(s, samples)
			stand()
			if h.zone("WCH-1") != 1 {
				t.Fatalf("input back: zone %d", h.zone("WCH-1"))
			}
		})
	}
}

// A merge of a source the engine never tracked (a legacy row, a spare
// tag never heard) leaves the survivor's stay alone: there is nothing to
// choose between. It went unknown at every merge, its history split in
// two (a review). With both tracked, both stays end.
func TestMergeRenameOfAnUntrackedSource(t *testing.T) {
	h, w, _ := inZoneOne(t)
	var events []Event
	cancel := h.e.Listen(func(ev Event) { events = append(events, ev) }, nil)
	defer cancel()
	h.e.MergeRename("LEGACY-C30000000007", "WCH-1", false)
	if h.zone("WCH-1") != 1 || len(events) != 0 || len(w.ops) != 0 {
		t.Fatalf("after merging an untracked source: zone %d, events %+v, %d writer ops", h.zone("WCH-1"), events, len(w.ops))
	}
	h.sight("WCH-2", gwMAC(3), -50)
	events = nil
	h.e.MergeRename("WCH-2", "WCH-1", false)
	if l, _ := h.e.Location("WCH-1"); l.Zone != 0 {
		t.Fatalf("after merging a tracked source: %+v", l)
	}
	if len(events) != 2 || len(w.ops) != 2 {
		t.Fatalf("both stays end, each channel told: events %+v, %d writer ops", events, len(w.ops))
	}
}

// A merge that gives the survivor an untracked source's device (a spare
// tag never heard) detaches the tag the survivor was tracked by: its stay
// ends too, where it went on until the timeout on a tag no longer the
// asset's. Each state's last sighting is handed on under the survivor's
// uid, so last_seen does not go back to the persisted whole second.
func TestMergeRenameFollowsTheDevice(t *testing.T) {
	w := &opsWriter{}
	heard := map[string]int64{}
	h := newHarness(t, Options{Writer: w, Heard: func(uid string, at int64) { heard[uid] = max(heard[uid], at) }})
	h.e.SetSite(gridSite(3, 1, true))
	if err := h.e.Start(AlgStrongest); err != nil {
		t.Fatal(err)
	}
	h.clk.Advance(1234 * time.Millisecond)
	h.sight("WCH-1", gwMAC(1), -50)
	at := h.clk.Now().UnixMilli()
	h.e.MergeRename("WCH-9", "WCH-1", true)
	if l, _ := h.e.Location("WCH-1"); l.Zone != 0 {
		t.Fatalf("tracked by a detached tag after the merge: %+v", l)
	}
	if len(w.ops) != 1 || heard["WCH-1"] != at {
		t.Fatalf("the survivor's stay: %d writer ops, last sighting handed on %v, want 1 and %d", len(w.ops), heard, at)
	}
	h.sight("WCH-1", gwMAC(2), -50)
	h.clk.Advance(time.Second)
	h.sight("WCH-2", gwMAC(3), -50)
	at = h.clk.Now().UnixMilli()
	h.e.MergeRename("WCH-2", "WCH-1", false)
	if heard["WCH-1"] != at || heard["WCH-2"] != 0 {
		t.Fatalf("last sightings handed on %v, want the source's %d as WCH-1's", heard, at)
	}
}

// TestDeviceReplaceStartsAfresh: reports under another MAC for the same
// asset mean its device was replaced. The detached tag's readings
// outvoted the new tag's, and the asset stayed in the old tag's zone for
// seconds, recorded there (a review: about 5 s). The old stay ends at
// the old tag's last sighting and the asset is found from the new tag's
// first report; the old tag's reports still in flight are skipped.
func TestDeviceReplaceStartsAfresh(t *testing.T) {
	w := &opsWriter{}
	h := newHarness(t, Options{Writer: w})
	h.e.SetSite(gridSite(3, 1, true))
	if err := h.e.Start(AlgStrongest); err != nil {
		t.Fatal(err)
	}
	oldTag, newTag := ingest.MAC{0xC3, 0, 0, 0, 0, 1}, ingest.MAC{0xC3, 0, 0, 0, 0, 2}
	for range 3 {
		h.sightTag("WCH-1", "watch", oldTag, gwMAC(1), -50)
		h.sightTag("WCH-1", "watch", oldTag, gwMAC(3), -80)
		h.clk.Advance(time.Second)
	}
	if h.zone("WCH-1") != 1 {
		t.Fatalf("setup: zone %d", h.zone("WCH-1"))
	}
	h.sightTag("WCH-1", "watch", newTag, gwMAC(3), -50)
	if h.zone("WCH-1") != 3 {
		t.Fatalf("the new tag's first report, loudest in zone 3: zone %d", h.zone("WCH-1"))
	}
	h.clk.Advance(100 * time.Millisecond)
	h.sightTag("WCH-1", "watch", oldTag, gwMAC(1), -40) // resolved before the reload
	if b := h.state("WCH-1"); b.zone != 2 || b.tag != newTag {
		t.Fatalf("after the old tag's late report: zone index %d, tag %v", b.zone, b.tag)
	}
	if len(w.ops) != 0 {
		t.Fatalf("%d ops went to the writer, want them in the batch", len(w.ops))
	}
}

// A beacon heard only by a gateway in no zone (registered, never placed,
// not in the survey) keeps its zone under strongest and centroid while a
// zone's gateway heard it within the not-heard timeout, then is unknown:
// it kept its last zone, with a fresh time, for as long as it was heard
// so. Going unknown at Stale instead made it flap where the room's
// gateway hears it only every 7 s (a review: 171 zone changes in ten
// minutes); that stays one.
func TestHeardOnlyOutsideTheZones(t *testing.T) {
	for _, alg := range []string{AlgStrongest, AlgCentroid} {
		t.Run(alg, func(t *testing.T) {
			h := newHarness(t, Options{Timeout: time.Minute})
			s := gridSite(3, 1, true)
			s.Gateways = append(s.Gateways, Gateway{MAC: gwMAC(9)}) // registered, not placed
			h.e.SetSite(s)
			if err := h.e.Start(alg); err != nil {
				t.Fatal(err)
			}
			var changes int
			var last uint64
			cancel := h.e.Listen(func(ev Event) { // zone changes (centroid also sends position changes)
				if ev.Location.Zone != last {
					changes, last = changes+1, ev.Location.Zone
				}
			}, nil)
			defer cancel()
			for sec := range 600 { // the room's gateway now and then, the unplaced one every second
				if sec%7 == 0 {
					h.sight("WCH-1", gwMAC(1), -70)
				}
				h.sight("WCH-1", gwMAC(9), -60)
				h.clk.Advance(time.Second)
			}
			if h.zone("WCH-1") != 1 || changes != 1 {
				t.Fatalf("heard by its room's gateway every 7 s: zone %d after %d changes, want zone 1 after 1", h.zone("WCH-1"), changes)
			}
			for range 55 { // within the timeout of the room gateway's last reading
				h.sight("WCH-1", gwMAC(9), -60)
				h.clk.Advance(time.Second)
			}
			if h.zone("WCH-1") != 1 {
				t.Fatalf("unknown within the timeout: zone %d", h.zone("WCH-1"))
			}
			for range 10 {
				h.sight("WCH-1", gwMAC(9), -60)
				h.clk.Advance(time.Second)
			}
			if l, _ := h.e.Location("WCH-1"); l.Zone != 0 {
				t.Fatalf("heard only by an unplaced gateway past the timeout: %+v", l)
			}
			h.sight("WCH-1", gwMAC(3), -45)
			if h.zone("WCH-1") != 3 {
				t.Fatalf("heard by a placed gateway again: zone %d", h.zone("WCH-1"))
			}
		})
	}
}

package rtls

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"beaconhub/appliance/ingest"
)

// countFits counts grid's radio model fits until the test ends.
func countFits(t *testing.T) *atomic.Int64 {
	var n atomic.Int64
	gridFitHook = func() { n.Add(1) }
	t.Cleanup(func() { gridFitHook = nil })
	return &n
}

// lazySite is a 5 x 5 site of unplaced gateways with a survey: grid's
// fit searches a position for every gateway.
func lazySite() (Site, []Sample) {
	s := gridSite(5, 5, false)
	return s, surveySamples(s, 8, 3, rand.New(rand.NewPCG(11, 12)))
}

// gridInfo is Algorithms' entry for grid.
func gridInfo(e *Engine) AlgorithmInfo {
	for _, a := range e.Algorithms() {
		if a.Name == AlgGrid {
			return a
		}
	}
	panic("no grid in Algorithms")
}

// walk stands a beacon in three zones of lazySite, noting the zone
// reported after each stand.
func walk(h *harness, s Site) []uint64 {
	rng := rand.New(rand.NewPCG(21, 22))
	var zones []uint64
	for _, p := range [][2]float64{{250, 250}, {350, 250}, {50, 450}} {
		standAt(h, s, "WAT-1", p[0], p[1], 3, 6, rng)
		zones = append(zones, h.zone("WAT-1"))
	}
	return zones
}

// TestEditWithoutGridSkipsTheFit: a survey edit while hmm runs does not
// fit grid's radio model (seconds on a large unplaced site, and the
// admin's request waits for it); Start(grid) fits it then, and tracks
// exactly as an engine that ran grid across the edit.
func TestEditWithoutGridSkipsTheFit(t *testing.T) {
	s, samples := lazySite()
	h := newHarness(t, Options{})
	h.e.SetSite(s)
	if err := h.e.Start(AlgFilter); err != nil {
		t.Fatal(err)
	}
	before := gridInfo(h.e)
	fits := countFits(t)
	h.e.SetSamples(samples)
	if n := fits.Load(); n != 0 {
		t.Fatalf("SetSamples with hmm running fitted grid %d times", n)
	}
	if g := h.e.model.Load().grid; g.gw != nil || g.mu != nil {
		t.Fatalf("SetSamples with hmm running published a fitted grid (%d gateways)", len(g.gw))
	}
	after := gridInfo(h.e)
	if !after.Ready || after.Params["gateways_modelled"] != len(s.Gateways) || reflect.DeepEqual(before, after) {
		t.Fatalf("grid's info after the survey %+v (before %+v): want ready, %d gateways modelled", after, before, len(s.Gateways))
	}

	if err := h.e.Start(AlgGrid); err != nil {
		t.Fatal(err)
	}
	if n := fits.Load(); n != 1 {
		t.Fatalf("Start(grid) fitted %d times, want 1", n)
	}
	if got := gridInfo(h.e); !reflect.DeepEqual(got, after) {
		t.Fatalf("grid's info changed with the fit: %+v, before it %+v", got, after)
	}

	// The engine as it was: grid running across the edits, each fitted
	// before it is published.
	ref := newHarness(t, Options{})
	if err := ref.e.Start(AlgGrid); err != nil {
		t.Fatal(err)
	}
	ref.e.SetSite(s)
	ref.e.SetSamples(samples)
	lazy, eager := h.e.model.Load().grid, ref.e.model.Load().grid
	if !slices.Equal(lazy.gw, eager.gw) || !slices.Equal(lazy.mu, eager.mu) {
		t.Fatal("the radio model fitted at Start differs from the one fitted with the edit")
	}
	if ll, lb := lazy.missAt(0); !slices.Equal(ll, eager.offs[nOffsets/2].lmiss) || !slices.Equal(lb, eager.offs[nOffsets/2].base) {
		t.Fatal("the radio model fitted at Start differs from the one fitted with the edit")
	}
	zl, ze := walk(h, s), walk(ref, s)
	if !slices.Equal(zl, ze) || !slices.Equal(gridMass(h, "WAT-1"), gridMass(ref, "WAT-1")) {
		t.Fatalf("zones %v fitted at Start, %v fitted with the edit", zl, ze)
	}
	if want := []uint64{13, 14, 21}; !slices.Equal(zl, want) {
		t.Fatalf("zones %v, want %v", zl, want)
	}
}

// TestGridRunKeepsAFittedGrid: while grid runs, every site or survey edit
// publishes a model whose radio model is fitted, and a beacon is
// located right after the edit; a restart of grid on a model fitted
// already does not fit it again.
func TestGridRunKeepsAFittedGrid(t *testing.T) {
	s, samples := lazySite()
	h := newHarness(t, Options{})
	if err := h.e.Start(AlgGrid); err != nil {
		t.Fatal(err)
	}
	fits := countFits(t)
	h.e.SetSite(s)
	h.e.SetSamples(samples)
	if n := fits.Load(); n != 2 {
		t.Fatalf("%d fits for two edits with grid running", n)
	}
	g := h.e.model.Load().grid
	if len(g.gw) != len(s.Gateways) || len(g.mu) != len(g.gw)*len(g.czone) || g.offs == nil || len(g.offs[nOffsets/2].base) != len(g.czone) {
		t.Fatalf("grid running, the edit published an unfitted grid: %d gateways, %d cells", len(g.gw), len(g.czone))
	}
	if z := walk(h, s); z[len(z)-1] != 21 {
		t.Fatalf("zones %v after the edit, want to end in 21", z)
	}
	if err := h.e.Start(AlgFilter); err != nil {
		t.Fatal(err)
	}
	if err := h.e.Start(AlgGrid); err != nil {
		t.Fatal(err)
	}
	if n := fits.Load(); n != 2 {
		t.Fatalf("restarting grid with no edit refitted: %d fits", n-2)
	}
}

// TestGridInfoBeforeTheFit: what Algorithms reports for grid before the
// fit (readiness, gateways_modelled, floor, cells) is what the fit then
// makes, on sites where some gateways cannot be modelled.
func TestGridInfoBeforeTheFit(t *testing.T) {
	placed := gridSite(2, 1, true)
	unplaced, samples := lazySite()
	// A gateway heard by 3 survey samples (fewer than minHeardToFit):
	// learned a zone, not modelled.
	rare := append([]Sample(nil), samples...)
	for i := 0; i < 3; i++ {
		r := map[[6]byte]float64{gwMAC(900): -80}
		for k, v := range rare[i].RSSI {
			r[k] = v
		}
		rare[i].RSSI = r
	}
	// A placed gateway on a map without zones, and one on floor 2 that
	// the survey of floor 1 never heard (the default law).
	twoFloors := unplaced
	twoFloors.Maps = append(slices.Clone(unplaced.Maps), Map{ID: 2, PixelsPerMeter: 10}, Map{ID: 3, PixelsPerMeter: 10})
	twoFloors.Zones = append(slices.Clone(unplaced.Zones), Zone{ID: 100, MapID: 2, X2: 100, Y2: 100})
	twoFloors.Gateways = append(slices.Clone(unplaced.Gateways),
		Gateway{MAC: gwMAC(901), MapID: 2, X: 50, Y: 50, Placed: true},
		Gateway{MAC: gwMAC(902), MapID: 3, X: 50, Y: 50, Placed: true})
	for _, c := range []struct {
		name     string
		site     Site
		samples  []Sample
		modelled int
	}{
		{"placed, no survey", placed, nil, 2},
		{"unplaced, no survey", unplaced, nil, 0},
		{"unplaced, surveyed", unplaced, samples, 25},
		{"one heard 3 times", unplaced, rare, 25},
		{"two floors and a map without zones", twoFloors, samples, 26},
		{"no site", Site{}, nil, 0},
	} {
		h := newHarness(t, Options{})
		if err := h.e.Start(AlgFilter); err != nil {
			t.Fatal(err)
		}
		h.e.SetSite(c.site)
		h.e.SetSamples(c.samples)
		before := gridInfo(h.e)
		if err := h.e.Start(AlgGrid); err != nil {
			t.Fatal(err)
		}
		after := gridInfo(h.e)
		if !reflect.DeepEqual(before, after) {
			t.Errorf("%s: grid's info %+v before the fit, %+v after", c.name, before, after)
		}
		ok := 0
		for _, gw := range h.e.model.Load().grid.gw {
			if gw.ok {
				ok++
			}
		}
		if ok != c.modelled || after.Params["gateways_modelled"] != c.modelled || after.Ready != (c.modelled > 0) {
			t.Errorf("%s: %d gateways fitted, info %+v; want %d", c.name, ok, after, c.modelled)
		}
	}
}

// TestStartGridRacesEdits: Start(grid) and Start(hmm) against site and
// survey edits, readings and Algorithms from other goroutines. Once
// Start(grid) has returned, the model is fitted, whichever edit came
// first or comes after (run with -race).
func TestStartGridRacesEdits(t *testing.T) {
	s := gridSite(3, 3, false)
	samples := surveySamples(s, 4, 3, rand.New(rand.NewPCG(5, 5)))
	h := newHarness(t, Options{})
	h.e.SetSite(s)
	a := h.beacon("WAT-1", "watch")
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(2)
	go func() { // the admin's edits
		defer wg.Done()
		for i := 0; i < 30; i++ {
			if i%2 == 0 {
				h.e.SetSamples(samples[:len(samples)-i])
			} else {
				h.e.SetSite(s)
			}
		}
	}()
	go func() { // a gateway's read loop, and the API
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			g := s.Gateways[i%len(s.Gateways)]
			b := &ingest.Batch{Gateway: g.MAC, Kind: ingest.KindAdv4, Received: t0.UnixMilli() + int64(i),
				Obs: []ingest.Observation{{Report: ingest.Report{RSSI: -70}, Asset: a}}}
			h.e.Observe(b, &ingest.Writes{})
			h.e.Algorithms()
		}
	}()
	for i := 0; i < 10; i++ {
		if err := h.e.Start(AlgGrid); err != nil {
			t.Fatal(err)
		}
		if g := h.e.model.Load().grid; g.gw == nil {
			t.Fatalf("round %d: grid started on an unfitted model", i)
		}
		if err := h.e.Start(AlgFilter); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.e.Start(AlgGrid); err != nil {
		t.Fatal(err)
	}
	close(done)
	wg.Wait()
	if g := h.e.model.Load().grid; g.gw == nil {
		t.Fatal("grid runs on an unfitted model after the edits")
	}
}

// TestEditDuringStartGrid: a survey edit that arrives while Start(grid)
// fits the current model is neither lost (Start publishing the model it
// fitted over the newer one) nor published unfitted under the grid run:
// it waits, sees grid running and fits its own model.
func TestEditDuringStartGrid(t *testing.T) {
	s, samples := lazySite()
	h := newHarness(t, Options{})
	h.e.SetSite(s)
	if err := h.e.Start(AlgFilter); err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	var first sync.Once
	gridFitHook = func() { first.Do(func() { close(entered); <-release }) }
	t.Cleanup(func() { gridFitHook = nil })
	started := make(chan error, 1)
	go func() { started <- h.e.Start(AlgGrid) }()
	select {
	case <-entered: // Start(grid) is fitting the model without samples
	case err := <-started:
		t.Fatalf("Start(grid) returned (%v) without fitting the model built while hmm ran", err)
	}
	edited := make(chan struct{})
	go func() { h.e.SetSamples(samples); close(edited) }()
	// Give the edit time to finish if it does not wait for the fit (the
	// test passes either way when it does wait; this only lets a wrong
	// order show).
	select {
	case <-edited:
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	<-edited
	m := h.e.model.Load()
	if len(m.samples) != len(samples) {
		t.Fatalf("the model has %d samples, the edit %d: Start(grid) published over the edit", len(m.samples), len(samples))
	}
	if m.grid.gw == nil || h.e.Current() != AlgGrid {
		t.Fatalf("grid runs (%q) on an unfitted model", h.e.Current())
	}
}

package rtls

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"beaconhub/appliance/assets"
)

// TestGridKnownAnswer: with placed gateways and no survey (the
// log-distance defaults), and with unplaced gateways located by a
// survey, a beacon standing still is placed in its zone, and walking to
// the far corner it follows through the cells and arrives.
func TestGridKnownAnswer(t *testing.T) {
	for _, placed := range []bool{true, false} {
		s := gridSite(3, 3, placed)
		rng := rand.New(rand.NewPCG(7, 8))
		h := newHarness(t, Options{})
		h.e.SetSite(s)
		if !placed {
			h.e.SetSamples(surveySamples(s, 8, 3, rng))
		}
		if err := h.e.Start(AlgGrid); err != nil {
			t.Fatal(err)
		}
		standAt(h, s, "WAT-1", 250, 150, 3, 5, rng) // zone (col 2, row 1) = id 6
		if z := h.zone("WAT-1"); z != 6 {
			t.Fatalf("placed=%v: zone %d, want 6", placed, z)
		}
		// Walk to zone 7 (col 0, row 2) at 1.4 m/s, then stand.
		x, y := 250.0, 150.0
		for math.Hypot(x-50, y-250) > 14 {
			d := math.Hypot(x-50, y-250)
			x, y = x+(50-x)/d*14, y+(250-y)/d*14
			standAt(h, s, "WAT-1", x, y, 3, 1, rng)
		}
		standAt(h, s, "WAT-1", 50, 250, 3, 15, rng)
		if z := h.zone("WAT-1"); z != 7 {
			t.Fatalf("placed=%v: zone %d after the walk, want 7", placed, z)
		}
	}
}

// TestGridLocatesUnplacedGateways: the survey alone (zone labels, no
// positions) places the gateways of a 4 x 4 site of 10 m zones within
// 2.5 m of the truth (median; the worst, in a corner, within 6 m) and
// recovers the law that made the readings.
func TestGridLocatesUnplacedGateways(t *testing.T) {
	s := gridSite(4, 4, false)
	h := newHarness(t, Options{})
	h.e.SetSite(s)
	h.e.SetSamples(surveySamples(s, 10, 3, rand.New(rand.NewPCG(3, 4))))
	if err := h.e.Start(AlgGrid); err != nil { // the fit is made for grid to run
		t.Fatal(err)
	}
	m := h.e.model.Load()
	var ns, off []float64
	for _, gs := range s.Gateways {
		gw := m.grid.gw[m.gwIdx[gs.MAC]]
		if !gw.ok || !gw.fittedOnSurvey {
			t.Fatalf("gateway at (%.0f,%.0f) not fitted: %+v", gs.X, gs.Y, gw)
		}
		d := math.Hypot(gw.x-gs.X, gw.y-gs.Y)
		if d > 60 {
			t.Errorf("gateway at (%.0f,%.0f) located at (%.0f,%.0f), %.0f px off", gs.X, gs.Y, gw.x, gw.y, d)
		}
		ns, off = append(ns, gw.n), append(off, d)
	}
	slices.Sort(off)
	if med := off[len(off)/2]; med > 25 {
		t.Errorf("median location error %.0f px (all %.0f)", med, off)
	}
	// One gateway's exponent is poorly determined (the samples of its own
	// zone are taken at the zone's centre, where it stands); the site's
	// median is not.
	slices.Sort(ns)
	if med, p := ns[len(ns)/2], DefaultParams(); math.Abs(med-p.PathLoss) > 0.5 {
		t.Errorf("median exponent %.2f (all %.2f), the survey was made with %.1f", med, ns, p.PathLoss)
	}
}

// TestTobitSeesThroughTheFloor: readings below the sensitivity floor are
// never reported, so the heard ones are the lucky ones far away; a plain
// regression on them flattens the law. The censored fit recovers the
// exponent, spread and miss rate the data was drawn with.
func TestTobitSeesThroughTheFloor(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const p0, n, sig, miss, floor = -59.0, 2.5, 6.0, 0.25, -90.0
	var x, y []float64
	var hx, hy []float64
	for i := 0; i < 2000; i++ {
		d := 0.5 + rng.Float64()*40
		lx := -10 * math.Log10(d)
		r := p0 + n*lx + rng.NormFloat64()*sig
		x = append(x, lx)
		if r < floor || rng.Float64() < miss {
			y = append(y, math.NaN())
			continue
		}
		y = append(y, r)
		hx, hy = append(hx, lx), append(hy, r)
	}
	f, _ := fitTobit(x, y, floor, 1, 2, 12)
	if math.Abs(f.n-n) > 0.15 || math.Abs(f.sig-sig) > 0.6 || math.Abs(f.miss-miss) > 0.04 || math.Abs(f.p0-p0) > 2 {
		t.Fatalf("censored fit %+v, drawn with p0 %v n %v sig %v miss %v", f, p0, n, sig, miss)
	}
	// The naive fit, for contrast: the test is only worth its name if
	// it would be wrong.
	var sx, sy, sxx, sxy float64
	for i := range hx {
		sx, sy, sxx, sxy = sx+hx[i], sy+hy[i], sxx+hx[i]*hx[i], sxy+hx[i]*hy[i]
	}
	k := float64(len(hx))
	if naive := (k*sxy - sx*sy) / (k*sxx - sx*sx); math.Abs(naive-n) < 0.3 {
		t.Fatalf("the naive fit is already right (%.2f): the data is not censored enough to test anything", naive)
	}
}

// TestGridPlacesTheSurveyByItsReadings: a survey taken within 1.5 m of
// each zone's centre, where its gateway hangs. placeSurvey's E step puts
// each sample where its readings say, near the gateway, and the anchors'
// refitted laws are the one the readings were drawn with; spread over
// the whole zone instead (its cells alike, the readings ignored), the
// loud readings passed for ones heard farther off, and the laws came
// out 3 to 6 dB too loud at 5 m.
func TestGridPlacesTheSurveyByItsReadings(t *testing.T) {
	s := gridSite(4, 3, true)
	h := tracking(t, Options{}, s, surveyWithin(s, 20, 15, 3, rand.New(rand.NewPCG(1, 2))), AlgGrid)
	m := h.e.model.Load()
	if m.grid.anchors != len(s.Gateways) {
		t.Fatalf("%d anchors of %d placed gateways", m.grid.anchors, len(s.Gateways))
	}
	p := DefaultParams()
	worst, at, off := 0.0, 0.0, 0
	for gi := range m.grid.gw {
		gw := &m.grid.gw[gi]
		for _, d := range []float64{3, 5, 10} {
			e := gw.p0 - 10*gw.n*math.Log10(d) - p.rssiAt(d)
			if math.Abs(e) > math.Abs(worst) {
				worst, at = e, d
			}
			if math.Abs(e) > 1.5 {
				off++
			}
		}
	}
	t.Logf("the anchors' laws at 3, 5 and 10 m: at worst %+.2f dB off the truth (at %v m)", worst, at)
	if off > 0 {
		t.Errorf("%d of %d laws and distances more than 1.5 dB off the truth, at worst %+.2f dB at %v m", off, 3*len(m.grid.gw), worst, at)
	}
}

// TestGridDiffusionIsAVariance: Params.Diffusion means what it says, on
// metre cells and on the larger cells of a large site alike: ten
// seconds of prediction from one cell spread the belief by ten times
// the diffusion along each axis, in square metres.
func TestGridDiffusionIsAVariance(t *testing.T) {
	for _, c := range []struct {
		site      Site
		diffusion float64
	}{
		{gridSite(3, 3, true), MaxDiffusion}, // 30 m square: metre cells
		{gridSite(3, 3, true), MaxDiffusion / 4},
		{gridSite(8, 8, true), MaxDiffusion / 4}, // 80 m: cells of 10/3 m
	} {
		h := tracking(t, Options{}, c.site, nil, AlgGrid)
		g := h.e.model.Load().grid
		ppm := c.site.Maps[0].PixelsPerMeter
		mid := float32(c.site.Maps[0].Width / 2)
		start := 0 // the cell nearest the middle of the map
		for i := range g.cx {
			if math.Hypot(float64(g.cx[i]-mid), float64(g.cy[i]-mid)) < math.Hypot(float64(g.cx[start]-mid), float64(g.cy[start]-mid)) {
				start = i
			}
		}
		bel, tmp := make([]float32, len(g.czone)), make([]float32, len(g.czone))
		bel[start] = 1
		g.predict(bel, tmp, 10_000, c.diffusion)
		var vx, vy, sum float64
		for i, w := range bel {
			dx, dy := float64(g.cx[i]-g.cx[start])/ppm, float64(g.cy[i]-g.cy[start])/ppm
			vx, vy, sum = vx+float64(w)*dx*dx, vy+float64(w)*dy*dy, sum+float64(w)
		}
		vx, vy = vx/sum, vy/sum
		want := 10 * c.diffusion
		t.Logf("cell %.3g m, diffusion %.3g: variance %.3f, %.3f m² along x, y after 10 s (want %.3f)",
			g.cellPx[0]/ppm, c.diffusion, vx, vy, want)
		if math.Abs(vx-want) > 0.05*want || math.Abs(vy-want) > 0.05*want {
			t.Errorf("cell %.3g m, diffusion %.3g: variance %.3f, %.3f m², want %.3f", g.cellPx[0]/ppm, c.diffusion, vx, vy, want)
		}
	}
}

// TestGridCellsCoverEveryZone: a zone smaller than a cell still gets one,
// and a large site is held to maxGridCells.
func TestGridCellsCoverEveryZone(t *testing.T) {
	s := gridSite(40, 40, true) // 400 m x 400 m: 160,000 one-metre cells
	s.Zones = append(s.Zones, Zone{ID: 5000, MapID: 1, Name: "closet", X1: 1, Y1: 1, X2: 3, Y2: 3})
	h := newHarness(t, Options{})
	h.e.SetSite(s)
	g := h.e.model.Load().grid
	if n := len(g.czone); n > gridBudget(len(s.Zones)) || n < len(s.Zones) {
		t.Fatalf("%d cells for %d zones", n, len(s.Zones))
	}
	seen := map[int32]bool{}
	for _, z := range g.czone {
		seen[z] = true
	}
	if len(seen) != len(s.Zones) {
		t.Fatalf("%d of %d zones have a cell", len(seen), len(s.Zones))
	}
}

// TestGridCountsEachReadingOnce: the reports of one scan arrive one by
// one in the same millisecond, in any order, and a gateway may deliver
// the same advertisement twice. The belief must not depend on either:
// two gateways hearing a beacon halfway between them equally leave the
// two zones equally likely, whatever the order and however many copies.
func TestGridCountsEachReadingOnce(t *testing.T) {
	s := gridSite(2, 1, true)
	a, b := s.Gateways[0].MAC, s.Gateways[1].MAC
	rssi := modelRSSI(50, 50, 100, 50)
	for _, order := range [][][6]byte{{a, b}, {b, a}, {a, a, a, b}, {b, b, a, a, a}} {
		h := newHarness(t, Options{})
		h.e.SetSite(s)
		if err := h.e.Start(AlgGrid); err != nil {
			t.Fatal(err)
		}
		for _, g := range order {
			h.sight("WAT-1", g, rssi)
		}
		sh := h.e.shards.OfUID("WAT-1")
		sh.Lock()
		bp := sh.V.Get(assets.UIDHash("WAT-1"), "WAT-1")
		m1, m2 := (*bp).gmass[0], (*bp).gmass[1]
		sh.Unlock()
		if math.Abs(m1-m2) > 1e-3 {
			t.Errorf("reports %v: zone masses %.4f / %.4f, want equal", order, m1, m2)
		}
	}
}

// gridMass is the share of the belief in each zone index after the last
// update.
func gridMass(h *harness, uid string) []float64 {
	sh := h.e.shards.OfUID(uid)
	sh.Lock()
	defer sh.Unlock()
	bp := sh.V.Get(assets.UIDHash(uid), uid)
	return append([]float64(nil), (*bp).gmass...)
}

// TestGridAbsenceCounts: with a sensitivity floor of -85 dBm, a beacon
// heard only by gateway A, as loud as A would be 8 m away, fits a spot
// 8 m from A in zone 2 best by its one reading; but zone 2's own gateway
// B would have heard it there, so silence puts it in zone 1's far
// corners, where B is too far to hear.
func TestGridAbsenceCounts(t *testing.T) {
	s := gridSite(2, 1, true)
	// The survey tag's own law: one gateway's readings cannot tell an
	// offset from a distance, and this is about silence.
	h := newHarness(t, Options{Params: Params{Floor: -85, OffsetTau: -1}})
	h.e.SetSite(s)
	if err := h.e.Start(AlgGrid); err != nil {
		t.Fatal(err)
	}
	p := DefaultParams()
	for i := 0; i < 15; i++ {
		h.sight("WAT-1", s.Gateways[0].MAC, p.rssiAt(8))
		h.clk.Advance(time.Second)
	}
	// The belief, not the reported zone: the first fix (zone 2, before
	// any silence had counted) still holds by SwitchOdds.
	if m := gridMass(h, "WAT-1"); m[0] < 0.7 {
		t.Fatalf("zone masses %v: B's silence should rule zone 2 out", m)
	}
}

// TestGridHysteresis: the reported zone changes only when another holds
// SwitchOdds times its mass; with odds no walk can reach, a beacon that
// walked into the next zone is still reported where it started.
func TestGridHysteresis(t *testing.T) {
	s := gridSite(2, 1, true)
	for _, odds := range []float64{10, 1e30} {
		h := newHarness(t, Options{Params: Params{SwitchOdds: odds}})
		h.e.SetSite(s)
		if err := h.e.Start(AlgGrid); err != nil {
			t.Fatal(err)
		}
		standAt(h, s, "WAT-1", 50, 50, 0, 5, nil)
		standAt(h, s, "WAT-1", 150, 50, 0, 20, nil)
		want := uint64(2)
		if odds > 1e20 {
			want = 1
		}
		if z := h.zone("WAT-1"); z != want {
			t.Errorf("odds %g: zone %d, want %d (mass %v)", odds, z, want, gridMass(h, "WAT-1"))
		}
	}
}

// TestGridNestedZone: an office inside the room that contains it keeps
// its own cells whatever the order the zones are listed in.
func TestGridNestedZone(t *testing.T) {
	s := gridSite(1, 1, true) // zone 1: 10 m x 10 m, gateway at its centre
	office := Zone{ID: 9, MapID: 1, Name: "office", X1: 60, Y1: 60, X2: 100, Y2: 100}
	s.Gateways = append(s.Gateways, Gateway{MAC: gwMAC(9), MapID: 1, X: 80, Y: 80, Placed: true})
	for _, first := range []bool{true, false} {
		site := s
		site.Zones = append([]Zone(nil), s.Zones...)
		if first {
			site.Zones = append([]Zone{office}, site.Zones...)
		} else {
			site.Zones = append(site.Zones, office)
		}
		h := newHarness(t, Options{})
		h.e.SetSite(site)
		g := h.e.model.Load().grid
		n := 0
		for _, z := range g.czone {
			if h.e.model.Load().zones[z].ID == 9 {
				n++
			}
		}
		if n != 16 {
			t.Fatalf("office listed first=%v: %d cells, want 16 (4 m x 4 m)", first, n)
		}
		if err := h.e.Start(AlgGrid); err != nil {
			t.Fatal(err)
		}
		standAt(h, site, "WAT-1", 80, 80, 0, 5, nil)
		if z := h.zone("WAT-1"); z != 9 {
			t.Fatalf("office listed first=%v: zone %d, want the office", first, z)
		}
	}
}

// TestGridCellLayout: a 3 x 3 site of 10 m zones at 10 px/m is exactly
// 900 one-metre cells, each zone 100 of them, an inner cell with its 8
// neighbours; a site too large for the budget keeps to it with larger
// cells that still have neighbours.
func TestGridCellLayout(t *testing.T) {
	h := newHarness(t, Options{})
	h.e.SetSite(gridSite(3, 3, true))
	g := h.e.model.Load().grid
	if len(g.czone) != 900 || g.cellPx[0] != 10 {
		t.Fatalf("%d cells of %v px, want 900 of 10", len(g.czone), g.cellPx)
	}
	per := map[int32]int{}
	inner := 0
	for c, z := range g.czone {
		per[z]++
		if g.nbrOff[c+1]-g.nbrOff[c] == 9 {
			inner++
		}
	}
	for z, n := range per {
		if n != 100 {
			t.Fatalf("zone index %d has %d cells", z, n)
		}
	}
	if inner != 28*28 {
		t.Fatalf("%d cells with 8 neighbours, want %d", inner, 28*28)
	}
	h.e.SetSite(gridSite(20, 20, true)) // 200 m x 200 m, 400 zones
	g = h.e.model.Load().grid
	if b := gridBudget(400); b != 1600 || len(g.czone) > b || len(g.czone) < b/2 {
		t.Fatalf("%d cells, budget %d (want 1,600: four a zone)", len(g.czone), b)
	}
	if g.nbrOff[len(g.czone)/2+1]-g.nbrOff[len(g.czone)/2] < 4 {
		t.Fatalf("large cells (%v px) lost their neighbours", g.cellPx)
	}
}

// TestGridGatewaysOutsideTheSurvey: a placed gateway the survey never
// heard (installed since, or on an unsurveyed floor) keeps the default
// law instead of a fit made of silence, and a beacon on the unsurveyed
// floor is still located.
func TestGridGatewaysOutsideTheSurvey(t *testing.T) {
	floor1 := gridSite(2, 1, true)
	s := floor1
	s.Maps = append(s.Maps, Map{ID: 2, Name: "floor 2", Width: 200, Height: 100, PixelsPerMeter: 10})
	for i, z := range floor1.Zones {
		z2 := z
		z2.ID, z2.MapID, z2.Name, z2.Adjacent = 100+z.ID, 2, "up"+z.Name, nil
		s.Zones = append(s.Zones, z2)
		g := floor1.Gateways[i]
		s.Gateways = append(s.Gateways, Gateway{MAC: gwMAC(100 + i), MapID: 2, X: g.X, Y: g.Y, Placed: true})
	}
	h := newHarness(t, Options{})
	h.e.SetSite(s)
	h.e.SetSamples(surveySamples(floor1, 10, 2, rand.New(rand.NewPCG(1, 1))))
	if err := h.e.Start(AlgGrid); err != nil {
		t.Fatal(err)
	}
	m := h.e.model.Load()
	up := m.grid.gw[m.gwIdx[gwMAC(100)]]
	if !up.ok || up.fittedOnSurvey || up.n != DefaultParams().PathLoss {
		t.Fatalf("unsurveyed gateway: %+v, want the default law", up)
	}
	if down := m.grid.gw[m.gwIdx[floor1.Gateways[0].MAC]]; !down.fittedOnSurvey {
		t.Fatalf("surveyed gateway not fitted: %+v", down)
	}
	for i := 0; i < 5; i++ {
		h.sight("WAT-1", gwMAC(101), modelRSSI(150, 50, 150, 50))
		h.sight("WAT-1", gwMAC(100), modelRSSI(50, 50, 150, 50))
		h.clk.Advance(time.Second)
	}
	if z := h.zone("WAT-1"); z != 102 {
		t.Fatalf("on floor 2: zone %d, want 102", z)
	}
}

// TestTobitOneDistance: a survey of one zone puts every sample at one
// distance, which cannot tell the exponent; the fit keeps the one it was
// given and still fits the level to the data.
func TestTobitOneDistance(t *testing.T) {
	x := []float64{-10, -10, -10, -10, -10, -10}
	y := []float64{-80, -82, -78, math.NaN(), -81, -79}
	f, _ := fitTobit(x, y, -95, 1, 2.5, 12)
	if f.n != 2.5 || math.Abs(f.p0+2.5*-10-(-80)) > 1.5 {
		t.Fatalf("fit %+v: want exponent 2.5 and about -80 dBm at the samples", f)
	}
}

// TestGridOrderAfterTimePassed: once time has passed, the first report of
// a millisecond charges the silence of the gateways not yet heard; a
// report of the same millisecond from one of them takes its charge back,
// so the order of the millisecond's reports still does not matter.
func TestGridOrderAfterTimePassed(t *testing.T) {
	s := gridSite(2, 1, true)
	a, b := s.Gateways[0].MAC, s.Gateways[1].MAC
	rssi := modelRSSI(50, 50, 100, 50)
	var masses [][]float64
	for _, order := range [][][6]byte{{a, b}, {b, a}} {
		h := newHarness(t, Options{Params: Params{Floor: -85}})
		h.e.SetSite(s)
		if err := h.e.Start(AlgGrid); err != nil {
			t.Fatal(err)
		}
		h.sight("WAT-1", a, rssi)
		h.clk.Advance(2500 * time.Millisecond)
		for _, g := range order {
			h.sight("WAT-1", g, rssi)
		}
		masses = append(masses, gridMass(h, "WAT-1"))
	}
	if math.Abs(masses[0][0]-masses[1][0]) > 1e-3 {
		t.Fatalf("the order of one millisecond's reports changed the belief: %v vs %v", masses[0], masses[1])
	}
}

// TestGridModelSwapKeepsTheWindow: a new model (any site or survey edit)
// starts a new belief from the readings still in the window, as if
// nothing had happened.
func TestGridModelSwapKeepsTheWindow(t *testing.T) {
	s := gridSite(2, 1, true)
	a, b := s.Gateways[0].MAC, s.Gateways[1].MAC
	ra, rb := modelRSSI(50, 50, 95, 50), modelRSSI(150, 50, 95, 50)
	var masses [][]float64
	for _, swap := range []bool{false, true} {
		h := newHarness(t, Options{})
		h.e.SetSite(s)
		if err := h.e.Start(AlgGrid); err != nil {
			t.Fatal(err)
		}
		h.sight("WAT-1", a, ra)
		h.sight("WAT-1", b, rb)
		h.clk.Advance(500 * time.Millisecond)
		if swap {
			h.e.SetSite(s) // the same site: a new model all the same
		}
		h.sight("WAT-1", b, rb)
		masses = append(masses, gridMass(h, "WAT-1"))
	}
	if masses[1][0] < 0.5 || math.Abs(masses[0][0]-masses[1][0]) > 0.1 {
		t.Fatalf("after a model swap %v, without %v: the window's readings were forgotten", masses[1], masses[0])
	}
}

// TestGridEvidenceIsPerSecond: a gateway reporting ten times as often
// adds no more evidence: the law was fitted on one sample per window.
func TestGridEvidenceIsPerSecond(t *testing.T) {
	s := gridSite(2, 1, true)
	a, b := s.Gateways[0].MAC, s.Gateways[1].MAC
	ra, rb := modelRSSI(50, 50, 95, 50)+2, modelRSSI(150, 50, 95, 50)-2
	var odds []float64
	for _, every := range []time.Duration{time.Second, 100 * time.Millisecond} {
		h := newHarness(t, Options{Params: Params{DecideEvery: -1, SwitchOdds: 1e30}})
		h.e.SetSite(s)
		if err := h.e.Start(AlgGrid); err != nil {
			t.Fatal(err)
		}
		for tm := time.Duration(0); tm < 4*time.Second; tm += every {
			h.sight("WAT-1", a, ra)
			h.sight("WAT-1", b, rb)
			h.clk.Advance(every)
		}
		m := gridMass(h, "WAT-1")
		odds = append(odds, math.Log(m[0]/m[1]))
	}
	if odds[1] > 1.5*odds[0] || odds[1] < odds[0]/1.5 {
		t.Fatalf("log odds %.2f at 1 Hz, %.2f at 10 Hz: evidence grows with the report rate", odds[0], odds[1])
	}
}

// TestGridEvidenceOfAnIntermittentGateway: a gateway heard 10 times a
// second, one second in every three, counts about one second of
// evidence per burst, as many as one heard once a second all along
// would in that time; a bank that the silences filled let it count 2.85
// per burst (a review; the silences then read as heard evidence). And a
// gateway heard 10 times a second without pause counts one per second,
// decided once a second or on every report.
func TestGridEvidenceOfAnIntermittentGateway(t *testing.T) {
	s := gridSite(2, 1, true)
	a, b := s.Gateways[0].MAC, s.Gateways[1].MAC
	ra, rb := modelRSSI(50, 50, 95, 50), modelRSSI(150, 50, 95, 50)
	for _, decide := range []time.Duration{0, -1} { // default 1 s; every report
		spent := map[[6]byte]float64{}
		gridSpent = func(gw [6]byte, w float32) { spent[gw] += float64(w) }
		h := newHarness(t, Options{Params: Params{DecideEvery: decide}})
		h.e.SetSite(s)
		if err := h.e.Start(AlgGrid); err != nil {
			t.Fatal(err)
		}
		for tm := time.Duration(0); tm < 60*time.Second; tm += 100 * time.Millisecond {
			h.sight("WAT-1", a, ra)
			if tm%(3*time.Second) < time.Second {
				h.sight("WAT-1", b, rb)
			}
			h.clk.Advance(100 * time.Millisecond)
		}
		gridSpent = nil
		if spent[a] < 55 || spent[a] > 62 {
			t.Errorf("DecideEvery %v: the steady gateway counted %.1f seconds of evidence in 60", decide, spent[a])
		}
		if spent[b] < 15 || spent[b] > 30 {
			t.Errorf("DecideEvery %v: the intermittent gateway counted %.1f seconds of evidence in 20 of readings", decide, spent[b])
		}
	}
}

// TestGridEvidenceOfDoubledReadings: a gateway that delivers every
// reading twice, 3 ms apart, once a second, counts a second of evidence
// per second; an interval average the close pairs pulled down to 27 ms
// made it count 2.3 seconds in 60 (a review).
func TestGridEvidenceOfDoubledReadings(t *testing.T) {
	s := gridSite(2, 1, true)
	a, b := s.Gateways[0].MAC, s.Gateways[1].MAC
	ra, rb := modelRSSI(50, 50, 95, 50), modelRSSI(150, 50, 95, 50)
	spent := map[[6]byte]float64{}
	gridSpent = func(gw [6]byte, w float32) { spent[gw] += float64(w) }
	defer func() { gridSpent = nil }()
	h := newHarness(t, Options{})
	h.e.SetSite(s)
	if err := h.e.Start(AlgGrid); err != nil {
		t.Fatal(err)
	}
	for tm := 0; tm < 60; tm++ {
		h.sight("WAT-1", a, ra)
		h.sight("WAT-1", b, rb)
		h.clk.Advance(3 * time.Millisecond)
		h.sight("WAT-1", b, rb)
		h.clk.Advance(997 * time.Millisecond)
	}
	if spent[b] < 50 || spent[b] > 62 {
		t.Fatalf("doubled gateway counted %.1f seconds of evidence in 60 (the single one %.1f)", spent[b], spent[a])
	}
}

// TestGridBeliefIgnoresScanOrder: one walk's scans delivered report by
// report, in order and reversed within each millisecond, leave the same
// cell belief. The belief's 1e-9 floor, applied after every report,
// made the order count (cells differed by up to 0.94 for a quiet tag):
// a cell floored after the first report of a scan then took the rest of
// the scan's evidence from 1e-9, not from where the evidence had put it.
// The same holds with the standing belief (stand_for), both halves of
// it, which together sum to 1.
func TestGridBeliefIgnoresScanOrder(t *testing.T) {
	s := gridSite(4, 4, false)
	samples := surveySamples(s, 10, 3, rand.New(rand.NewPCG(1, 2)))
	for _, stand := range []time.Duration{-1, 30 * time.Second} {
		p := DefaultParams()
		p.OffsetTau, p.StandFor = -1, stand
		var cells [2][]float32
		for k := range cells {
			h := tracking(t, Options{Params: p}, s, samples, AlgGrid)
			walkInScans(h, s, -7, 120, k == 1)
			cells[k], _ = viewBeacon(h.e, "WAT-1", func(b *beacon) []float32 { return append(slices.Clone(b.cells), b.still...) })
		}
		worst, sum := 0.0, 0.0
		for c := range cells[0] {
			worst = math.Max(worst, math.Abs(float64(cells[0][c]-cells[1][c])))
			sum += float64(cells[0][c])
		}
		if worst > 1e-4 || math.Abs(sum-1) > 1e-3 {
			t.Fatalf("stand_for %v: cell beliefs differ by up to %.4f between two orders of the same scans (sum %.5f)", stand, worst, sum)
		}
	}
}

// TestGridBeliefSurvivesAContradictoryScan: two reports of one scan that
// point 60 m apart (each alone rules the other's cells out by far more
// than e^-42) leave a belief, not nothing: with the floor waiting for the
// next millisecond, every cell the first report zeroed is still 0 when
// the second comes. With a narrow law (sigma 2 dB) the second report
// favours the zeroed cells by more than e^88, a float32 +Inf: the belief
// must still not turn NaN (0 x Inf), and the next second, with the
// floor, it moves on. The same with the standing belief (the default),
// whose cells are zeroed and skipped with the moving ones, and without.
func TestGridBeliefSurvivesAContradictoryScan(t *testing.T) {
	s := gridSite(7, 1, true)
	for _, stand := range []time.Duration{-1, 30 * time.Second} {
		for _, sigma := range []float64{0, 2} {
			p := Params{Sigma: sigma, SigmaFloor: min(sigma, DefaultParams().SigmaFloor), StandFor: stand}
			h := tracking(t, Options{Params: p}, s, nil, AlgGrid)
			h.clk.Advance(time.Second)
			h.sight("WAT-1", s.Gateways[0].MAC, -30)
			h.sight("WAT-1", s.Gateways[6].MAC, -30)
			check := func(when string) []float64 {
				m := gridMass(h, "WAT-1")
				var sum float64
				for _, v := range m {
					if math.IsNaN(v) {
						t.Fatalf("stand_for %v, sigma %v, %s: zone masses %v", stand, sigma, when, m)
					}
					sum += v
				}
				if math.Abs(sum-1) > 1e-3 {
					t.Fatalf("stand_for %v, sigma %v, %s: zone masses %v sum to %v", stand, sigma, when, m, sum)
				}
				return m
			}
			check("the contradictory scan")
			for i := range 5 {
				h.clk.Advance(time.Second)
				h.sight("WAT-1", s.Gateways[6].MAC, -30)
				check(fmt.Sprintf("scan %d of the last gateway alone", i+1))
			}
			if m := check("five scans of the last gateway alone"); m[6] < 0.9 {
				t.Fatalf("stand_for %v, sigma %v: zone masses %v, want the last zone's", stand, sigma, m)
			}
		}
	}
}

// TestGridRefinementRefundsSilenceOnce: a gateway heard 1985 ms before a
// scan's first report, and then within that scan, was charged no silence
// at the scan's update (heard within the window then): its report
// refining the update must not be refunded one. Judged at the refining
// report's time, 25 ms later, it looked silent and was refunded (a
// review: zone masses 0.072 and 0.060).
func TestGridRefinementRefundsSilenceOnce(t *testing.T) {
	s := gridSite(3, 1, true)
	a, b := s.Gateways[0].MAC, s.Gateways[1].MAC
	p := DefaultParams()
	p.Floor, p.OffsetTau = -85, -1
	var mass [][]float64
	for _, late := range []time.Duration{0, 25 * time.Millisecond} {
		h := newHarness(t, Options{Params: p})
		h.e.SetSite(s)
		if err := h.e.Start(AlgGrid); err != nil {
			t.Fatal(err)
		}
		ra, rb := modelRSSI(50, 50, 120, 50), modelRSSI(150, 50, 120, 50)
		h.sight("WAT-1", a, ra)
		h.clk.Advance(10 * time.Millisecond)
		h.sight("WAT-1", b, rb)
		h.clk.Advance(990 * time.Millisecond)
		h.sight("WAT-1", a, ra)
		h.clk.Advance(995 * time.Millisecond)
		h.sight("WAT-1", a, ra)
		h.clk.Advance(late)
		h.sight("WAT-1", b, rb)
		mass = append(mass, gridMass(h, "WAT-1"))
	}
	for z := range mass[0] {
		if d := math.Abs(mass[0][z] - mass[1][z]); d > 1e-3 {
			t.Fatalf("zone masses %v with the scan in one millisecond, %v spread over 25 ms", mass[0], mass[1])
		}
	}
}

// TestGridBeliefSurvivesAnotherFloorsReading: on two floors whose
// gateways hear each other's floor 12 dB quieter, a tag going upstairs
// is reported upstairs, though every scan begins with a downstairs
// gateway's report, and back downstairs when it returns; with the
// default law (no survey) and with a survey recorded on both floors.
// Read by the law as "practically never heard" on the other floor, the
// first downstairs report ruled the upstairs cells out at every scan,
// and the tag stayed downstairs for as long as it stood upstairs.
func TestGridBeliefSurvivesAnotherFloorsReading(t *testing.T) {
	s := twoFloors()
	rng := rand.New(rand.NewPCG(3, 4))
	survey := surveyFloors(t, s, 5, 2, 20, rng)
	for _, samples := range [][]Sample{nil, survey} {
		h := tracking(t, Options{}, s, samples, AlgGrid)
		for _, stop := range []struct {
			zone  uint64
			x, y  float64
			floor uint64
		}{{2, 150, 50, 1}, {106, 150, 150, 2}, {107, 250, 150, 2}, {7, 250, 150, 1}} {
			standOnFloor(h, s, "WAT-1", stop.floor, stop.x, stop.y, 12, 15, rng)
			if z := h.zone("WAT-1"); z != stop.zone {
				t.Fatalf("survey of %d samples: standing in zone %d (floor %d), reported in %d; zone masses %.3g",
					len(samples), stop.zone, stop.floor, z, gridMass(h, "WAT-1"))
			}
		}
	}
}

// roomsOf is a w x h site of rooms side metres wide (10 px a metre).
func roomsOf(w, h int, side float64) Site { return roomsAt(1, w, h, side, 10, 0, 0) }

// roomsAt is roomsOf on map id at ppm px a metre, its plan's corner at
// (ox, oy) px; zone ids start at id*1000.
func roomsAt(id uint64, w, h int, side, ppm, ox, oy float64) Site {
	u := side * ppm
	s := Site{Maps: []Map{{ID: id, Name: "floor", Width: ox + u*float64(w), Height: oy + u*float64(h), PixelsPerMeter: ppm}}}
	for r := range h {
		for c := range w {
			zid := id*1000 + uint64(1+r*w+c)
			s.Zones = append(s.Zones, Zone{ID: zid, MapID: id, Name: fmt.Sprint(zid),
				X1: ox + u*float64(c), Y1: oy + u*float64(r), X2: ox + u*float64(c+1), Y2: oy + u*float64(r+1)})
		}
	}
	return s
}

// twoScales is a first floor of 3.4 m rooms at 10 px a metre and a
// second of one 3.5 m room at 100: the choice weighs square metres, not
// pixels, so the twelve rooms win (in pixels the one room outweighed
// them, a review).
func twoScales() Site {
	a, b := roomsAt(1, 4, 3, 3.4, 10, 0, 0), roomsAt(2, 1, 1, 3.5, 100, 0, 0)
	a.Maps = append(a.Maps, b.Maps...)
	a.Zones = append(a.Zones, b.Zones...)
	return a
}

// grid's cells are the lattice squares whose centres a zone holds, so an
// edge between two lattice lines moved to the nearest one, and a tag in
// the strip between was reported next door. The cells are sized so that
// the rooms' edges fall on the lattice: 3.4 m rooms get cells of 3.4/3
// m, not metres; 3 m rooms on a site whose cell budget needs cells of
// 1.54 m get 1.5 m; metre-aligned rooms keep metre cells.
func TestGridCellsFitTheRooms(t *testing.T) {
	for _, c := range []struct {
		name       string
		s          Site
		cellMetres float64
	}{
		{"3.4 m rooms", roomsOf(4, 3, 3.4), 3.4 / 3},
		{"16 x 16 rooms of 3 m", roomsOf(16, 16, 3), 1.5},
		{"4 m rooms", roomsOf(4, 3, 4), 1},
		{"10 m rooms, 1,200 m²", roomsOf(4, 3, 10), 10.0 / 9},
		// A plan drawn at 12.7 px a metre misses the lattice by 1e-11:
		// rounding, not a misfit (3 m rooms got 1.5 m cells, a review).
		{"3 m rooms at 12.7 px a metre", roomsAt(1, 4, 3, 3, 12.7, 0, 0), 1},
		{"3.4 m rooms away from the map's corner", roomsAt(1, 4, 3, 3.4, 10, 37, 113), 3.4 / 3},
		{"two floors at 10 and 100 px a metre", twoScales(), 3.4 / 3},
		// Over 256 zones the budget is four cells a zone (to 4,096): 24 x
		// 24 rooms of 3 m get 1.5 m cells, not one cell a room.
		{"24 x 24 rooms of 3 m", roomsOf(24, 24, 3), 1.5},
	} {
		m := buildModel(1, DefaultParams(), c.s, nil)
		g := m.grid
		ppm := m.pixelsPerMeter(g.mapIDs[0])
		if got := g.cellPx[0] / ppm; math.Abs(got-c.cellMetres) > 0.01*c.cellMetres {
			t.Errorf("%s: cells of %.3f m, want %.3f", c.name, got, c.cellMetres)
		}
		// Every room on the first floor is covered by its own cells
		// exactly.
		area := make([]float64, len(m.zones))
		for i, z := range g.czone {
			if g.cmap[i] == 0 {
				area[z] += g.cellPx[0] * g.cellPx[0]
			}
		}
		for z := range m.zones {
			if m.zones[z].MapID != g.mapIDs[0] {
				continue
			}
			if want := zoneArea(&m.zones[z]); math.Abs(area[z]-want) > 1e-6*want {
				t.Fatalf("%s: zone %d has %.1f px² of cells, its area is %.1f", c.name, z, area[z], want)
			}
		}
		if len(g.czone) > gridBudget(len(m.zones)) {
			t.Errorf("%s: %d cells, over the budget", c.name, len(g.czone))
		}
	}
}

// TestGridFloorOfTheLouderGateway: a tag heard by one gateway on its own
// floor and, through the ceiling, 10 dB quieter by the one above or
// below it, and by no other, is on the louder one's floor, with every
// algorithm that weighs floors. grid counted the quieter reading as
// flat on the other floor and chose the floor by its own gateway alone:
// a quieter reading fits a wider ring of cells, so the tag was reported
// on the floor whose gateway was quieter, for as long as it stood (a
// review on a two-floor site).
func TestGridFloorOfTheLouderGateway(t *testing.T) {
	s := twoFloors()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, alg := range []string{AlgGrid, AlgFusion} {
		for _, floor := range []uint64{1, 2} {
			h := tracking(t, Options{}, s, nil, alg)
			own, other := s.Gateways[5], s.Gateways[5+12]
			if floor == 2 {
				own, other = other, own
			}
			for range 20 {
				h.sight("WAT-1", own.MAC, -62+(rng.Float64()*2-1)*3)
				h.sight("WAT-1", other.MAC, -72+(rng.Float64()*2-1)*3)
				h.clk.Advance(time.Second)
			}
			want := uint64(6)
			if floor == 2 {
				want += 100
			}
			if z := h.zone("WAT-1"); z != want {
				t.Errorf("%s: heard loudest on floor %d, reported in zone %d, want %d; zone masses %.3g", alg, floor, z, want, gridMass(h, "WAT-1"))
			}
		}
	}
	// Only 5 dB between the floors, with noise: fusion, pooling grid,
	// went between floors 3 times in a minute while grid leaned the
	// wrong way; grid itself is held to a sixth of the minute.
	for _, c := range []struct {
		alg   string
		flips int
		wrong int
	}{{AlgFusion, 0, 0}, {AlgGrid, 2, 10}} {
		rng := rand.New(rand.NewPCG(7, 8))
		h := tracking(t, Options{}, s, nil, c.alg)
		flips, wrong, last := 0, 0, uint64(0)
		for i := range 60 {
			for _, g := range []struct {
				i     int
				level float64
			}{{5, -65}, {4, -80}, {6, -80}, {5 + 12, -70}, {4 + 12, -85}, {6 + 12, -85}} {
				h.sight("WAT-1", s.Gateways[g.i].MAC, g.level+rng.NormFloat64()*5)
			}
			h.clk.Advance(time.Second)
			z := h.zone("WAT-1")
			if i > 0 && (z > 100) != (last > 100) {
				flips++
			}
			if z > 100 {
				wrong++
			}
			last = z
		}
		if flips > c.flips || wrong > c.wrong {
			t.Errorf("%s, 5 dB between the floors: %d floor changes and %d s on the wrong floor in a minute, want at most %d and %d",
				c.alg, flips, wrong, c.flips, c.wrong)
		}
	}
}

// TestGridStairwellLeak: a tag upstairs by the stairs, heard through the
// open stairwell by a downstairs gateway placed there, outside every
// zone, as loudly as from 3 m away, and by the other downstairs gateways
// 20 dB (a slab) quieter, stays upstairs, surveyed or not. Taking the loudest
// the gateway hears downstairs from the cells alone, far from it, grid
// put the tag downstairs for 42 s of the minute and fusion for 21 (a
// review).
func TestGridStairwellLeak(t *testing.T) {
	for _, surveyed := range []bool{false, true} {
		s := twoFloors()
		s.Maps[0].Width, s.Maps[1].Width = 500, 500
		stair := Gateway{MAC: gwMAC(999), MapID: 1, X: 450, Y: 150, Placed: true}
		s.Gateways = append(s.Gateways, stair)
		var samples []Sample
		if surveyed {
			samples = surveyFloors(t, s, 5, 2, 20, rand.New(rand.NewPCG(3, 4)))
		}
		p := DefaultParams()
		for _, alg := range []string{AlgGrid, AlgFusion} {
			rng := rand.New(rand.NewPCG(11, 12))
			h := tracking(t, Options{}, s, samples, alg)
			wrong := 0
			for range 60 {
				for _, g := range s.Gateways {
					r := modelRSSI(g.X, g.Y, 395, 150)
					switch {
					case g.MAC == stair.MAC:
						r = p.rssiAt(3)
					case g.MapID == 1:
						r -= 20
					}
					if r += (rng.Float64()*2 - 1) * 3; r >= -95 {
						h.sight("WAT-1", g.MAC, r)
					}
				}
				h.clk.Advance(time.Second)
				if h.zone("WAT-1") < 100 {
					wrong++
				}
			}
			if wrong > 3 {
				t.Errorf("surveyed %v, %s: %d of 60 s downstairs, standing upstairs by the stairs", surveyed, alg, wrong)
			}
		}
	}
}

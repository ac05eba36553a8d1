package rtls

import (
	"cmp"
	"math"
	"slices"

	"beaconhub/appliance/assets"
)

// grid is a Bayes filter over positions, not zones: the zones are cut
// into cells of about a metre, a beacon's belief is spread over the
// cells, and the reported zone is the one holding most of it.
//
// Reading model: every gateway follows the log-distance law with its own
// transmit power P0, exponent n and spread sigma, is not heard below the
// site's sensitivity floor, and misses a reading it could have heard with
// probability miss. Placed gateways keep their placement; the others get
// the position that best explains the survey. The parameters are fitted
// to the survey samples (each at its zone's centre) by maximum likelihood
// with the unheard samples as censored observations (a Tobit model): a
// plain regression on heard readings alone sees only the lucky far
// readings and flattens the law (exponent 1.5 where the truth was 2.5).
// Placed gateways without a survey, or that the survey heard fewer than
// minHeardToFit times, use TxPower, PathLoss, Sigma and Lost. Where at
// least minAnchors placed gateways were fitted, their laws are then
// refitted with each sample where in its zone its readings put it
// (placeSurvey), and a beacon's tag offset is read against them. The fit is
// made only for grid to run (gridModel): an edit while another algorithm
// runs does not wait for it.
//
// Prediction: each second the belief diffuses to the neighbouring cells
// (walking pace), so it moves continuously: a beacon standing near a
// boundary accumulates evidence about where it stands instead of
// re-deciding the zone from each window.
//
// Update: each reading's log-likelihood in every cell, once, when it is
// first seen; and, per unit of time, the "not heard" term of every
// gateway silent for SampleWindow (docs/rtls.md).
//
// Report: the first fix is the zone with most mass; after that the zone
// changes when another holds SwitchOdds times the mass of the reported
// one (any zone: the belief itself only moves through neighbouring
// cells).
type grid struct{}

func (grid) info(m *model) AlgorithmInfo {
	g := m.grid
	// The radio law's priors and the miss rate it reads too (a review:
	// they were in force and not shown).
	params := map[string]any{"switch_odds": m.p.SwitchOdds, "floor_dbm": 0.0, "cells": 0, "cell_px": []float64{},
		"tx_power_dbm": m.p.TxPower, "path_loss_exponent": m.p.PathLoss, "sigma_db": m.p.Sigma, "lost": m.p.Lost,
		"sample_window_ms": m.p.SampleWindow.Milliseconds(), "decide_every_ms": m.p.DecideEvery.Milliseconds(), "gateways_modelled": 0}
	gridMotionParams(m, params)
	reason := m.lacks(false, false, false, false)
	if g != nil {
		// The layout's figures, the same whether the radio model is
		// fitted yet or not (gateways_modelled is the gateways the fit
		// models: TestGridInfoBeforeTheFit).
		params["floor_dbm"], params["cells"], params["gateways_modelled"] = g.floor, len(g.czone), g.modelled
		if g.cellPx != nil {
			params["cell_px"] = g.cellPx
		}
		if reason == "" && g.modelled == 0 {
			reason = "needs survey samples or placed gateways"
		}
	}
	return infoOf(AlgGrid, "Bayes filter over metre cells of the zones with a fitted log-distance model per gateway (censored maximum likelihood on the survey; unplaced gateways located by it)",
		commonParams(&m.p, params), reason)
}

// gridMotionParams adds to params what grid, and fusion's grid half,
// read of a tag's motion and of a single reading's spread.
func gridMotionParams(m *model, params map[string]any) {
	params["diffusion_m2"], params["fading_sd_db"] = m.p.Diffusion, math.Sqrt(m.siteFading())
	// Off is any negative stand_for; the feed says 0, not the value
	// that turned it off.
	params["stand_for_ms"], params["move_for_ms"] = max(m.p.StandFor.Milliseconds(), 0), m.p.MoveFor.Milliseconds()
}

// gridModel is the grid of a model (model.grid): its layout, which
// buildModel always makes, and the radio model (the fit of every gateway
// and the per-cell tables), made only for grid to run: by SetSite and
// SetSamples while grid runs, before the model is published, and by
// Start(grid) on a model built while another algorithm ran (withGrid).
// The fit of 196 unplaced gateways takes seconds; the layout does not.
type gridModel struct {
	*gridLayout // shared by a model and its fitted copy
	// fitted: gw, mu and offs hold the radio model. A published model
	// is never fitted in place (withGrid fits a copy).
	fitted bool
	gw     []gridGW  // per model gateway
	mu     []float32 // [g*nc+c] expected dBm
	// offs holds the "not heard" tables per offsetStep dB of tag offset
	// (offset.go; 0 dB, the survey tag's, at nOffsets/2), made with the
	// fit.
	offs *gridOffsets
	// void is per cell whether its zone is void (model.void: no survey
	// sample, no gateway on its map): such cells start and stay empty
	// (stepGrid). Every gateway read as on another floor there,
	// "practically never heard" with its readings flat, and a tag 8 dB
	// quieter than the law stood on such a floor 80-100% of the time
	// (TestAFloorWithNothingToModelItCatchesNoTag). The zone filter's
	// rule, so that fusion's halves agree: a floor surveyed but without
	// a gateway grid can model, voided by grid alone, was out of
	// fusion's reach whatever the zone filter said (a review). nil when
	// no zone is void.
	void []bool
	// anchors counts the gateways the tag offset estimate may read
	// against the law (model.anchor), and ocells are the cells it reads
	// a window in (cellsLL).
	anchors int
	ocells  []int32
	omu     []float32 // mu of the ocells: [g*len(ocells)+j]
	omap    []int     // map mi's ocells are [omap[mi], omap[mi+1])
	// scratch per shard of the engine's beacon state: stepGrid runs under
	// its beacon's shard lock, so one buffer a shard is never shared, and
	// a decision allocates nothing (a sync.Pool allocated whenever a
	// collection emptied it, and under the race detector, which drops a
	// share of what is put back, at one decision in five).
	scratch [assets.NShards]*gridScratch
}

// scratchOf is the buffer of b's shard, made at its first use.
func (g *gridModel) scratchOf(b *beacon) *gridScratch {
	if g.scratch[b.shard] == nil {
		nc := len(g.czone)
		g.scratch[b.shard] = &gridScratch{ll: make([]float32, nc), tmp: make([]float32, nc)}
	}
	return g.scratch[b.shard]
}

// gridLayout is the part of the grid that needs no fit: the cells, the
// sensitivity floor and which gateways the fit will model.
type gridLayout struct {
	cellPx []float64 // per map index: cell edge in pixels (cell centres are the map grid)
	cx, cy []float32
	cmap   []int32 // map index (into mapIDs)
	// mapCells: the cells of map index mi are [mapCells[mi], mapCells[mi+1])
	mapCells []int32
	czone    []int32
	nbrOff   []int32 // neighbours of cell c: nbr[nbrOff[c]:nbrOff[c+1]], self included
	nbr      []int32
	nbrW     []float32 // normalised weights
	mix      []float32 // per cell: share of the belief that diffuses per second
	mapIDs   []uint64
	floor    float64
	// gwMap is per model gateway its map index (placed, or its learned
	// zone's), -1 when it is on no map with zones; modelled counts the
	// gateways the fit will model (planGridGateways).
	gwMap    []int32
	modelled int
	// shaped: every zone has an area. A zone without one is a single
	// cell at its corner, where the law puts it at the wrong distance
	// from every gateway; fusion then leaves grid out (one flat zone of
	// twelve cost it 6 points).
	shaped bool
}

type gridGW struct {
	ok             bool
	x, y           float64
	mapIdx         int
	p0, n, sig     float64
	miss           float64
	lhitK, inv2s2  float64 // log(1-miss) - log(sig), 1/(2 sig^2)
	fittedOnSurvey bool
	// sig is the spread of survey windows' means, and each averages
	// perWin readings: fade (dB², 0 unknown) is the variance of one
	// reading about its window's mean that they averaged away, which a
	// decision on fewer readings keeps (readingTerms). Tracked with the
	// means' spread, one reading a second passed for 1.7 of them on the
	// generated recordings, and grid flipped 2-3 times as often as a
	// tracker knowing the law (docs/performance.md, "A reading is not a
	// survey window").
	fade, perWin float64
}

// minFadeDof is the least number of readings beyond each window's first
// from which a gateway's own fading variance is taken; below it, the
// site's pooled one.
const minFadeDof = 30

// fading is gateway gi's fading variance and the readings its survey
// windows average (harmonic mean), from the samples' N and SD; fade is
// 0 when they do not tell.
func (m *model) fading(gi int) (fade, perWin float64) {
	if m.winN[gi] == 0 {
		return 0, 0
	}
	perWin = m.winN[gi] / m.winInv[gi]
	if m.fadeDof[gi] >= minFadeDof {
		return m.fadeSS[gi] / m.fadeDof[gi], perWin
	}
	return m.siteFading(), perWin
}

// siteFading is the fading variance pooled over every gateway, 0 when
// the survey's windows do not tell (fewer than minFadeDof).
func (m *model) siteFading() float64 {
	var ss, dof float64
	for g := range m.fadeDof {
		ss, dof = ss+m.fadeSS[g], dof+m.fadeDof[g]
	}
	if dof < minFadeDof {
		return 0
	}
	return ss / dof
}

// readingTerms is the hit constant (log(1-miss) - log sd) and 1/(2 var)
// of a period's evidence (stepGrid) that is the mean of k readings: var
// is the law's, of means of perWin readings, plus the fading a mean of
// fewer keeps. It is never below the law's: readings closer together
// than the survey's may share their fading, so more of them are not
// taken to be worth more.
func (gw *gridGW) readingTerms(k float64) (lhit, inv float64) {
	if gw.fade == 0 || k >= gw.perWin {
		return gw.lhitK, gw.inv2s2
	}
	v := gw.sig*gw.sig + gw.fade*(1/k-1/gw.perWin)
	return math.Log(1-gw.miss) - 0.5*math.Log(v), 1 / (2 * v)
}

type gridScratch struct{ ll, tmp []float32 }

// maxGridCells bounds the cells of a site (all maps): the belief is one
// float32 per cell per tracked beacon (4 KiB at the bound), and each
// decision costs one term per cell and heard gateway. A larger site gets
// larger cells.
const maxGridCells = 1024

// A site of many zones may have more (gridBudget): cellsPerZone each, up
// to gridCellCap (16 KiB a beacon). With the budget at 1,024, 24 x 24
// rooms of 3 m got one cell each, and grid scored 80.8% / 1.78 flips a
// minute there, against 85.9% / 0.90 at four (docs/performance.md).
const (
	cellsPerZone = 4
	gridCellCap  = 4096
)

// gridBudget is the most cells a site of nz zones gets: maxGridCells, or
// cellsPerZone a zone up to gridCellCap, and never fewer than one a
// zone.
func gridBudget(nz int) int { return max(maxGridCells, min(cellsPerZone*nz, gridCellCap), nz) }

// gridStep is the prediction step (one diffusion per second of time).
const gridStep = 1000

// gridKernelVar (m²) is the variance along each axis of one full
// neighbour step (diffuse with f = 1 on metre cells): the neighbour
// weights 1, 0.6 and 0.35 put 2 x 0.6 + 4 x 0.35 = 2.6 of 4.8 one cell
// off along x. Params.Diffusion is a share of it.
const gridKernelVar = 2.6 / 4.8

// MaxDiffusion (m² a second) is the largest Params.Diffusion, and its
// default: one neighbour step a second, a tag that may walk at about
// 1 m/s at any time.
const MaxDiffusion = gridKernelVar

// evidencePeriod (ms) is the least time between two readings of one
// gateway that count in full: BLE beacons advertise about once a second,
// and readings closer together share their fading, so a gateway that
// reports faster (or a decision on every report, DecideEvery 0) must not
// multiply the evidence.
const evidencePeriod = 1000.0

// maxCredit bounds the evidence a gateway banks (credit, in readings of
// one evidencePeriod). Readings arrive a period apart only on average:
// a gateway that publishes on its own timer, or a decision once a
// second that sees two of its readings one time and none the next,
// would otherwise lose what the short gaps did not earn (grid on a
// walk heard at 1 Hz with its reports spread over each second: 14% of
// the evidence, 5 points). Two periods absorb that jitter; a long
// silence banks no more than that.
const maxCredit = 2

// gridSpent, when set (tests), is told the weight each counted reading
// got.
var gridSpent func(gw [6]byte, w float32)

// buildGrid lays out the grid's cells and plans its gateways; the radio
// model is left to withGrid.
func (m *model) buildGrid() {
	g := &gridLayout{}
	m.grid = &gridModel{gridLayout: g}
	byMap := map[uint64][]int{}
	for z := range m.zones {
		byMap[m.zones[z].MapID] = append(byMap[m.zones[z].MapID], z)
	}
	for id := range byMap {
		g.mapIDs = append(g.mapIDs, id)
	}
	g.shaped = len(m.zones) > 0
	for z := range m.zones {
		g.shaped = g.shaped && zoneArea(&m.zones[z]) > 0
	}
	slices.Sort(g.mapIDs)
	// Every zone gets at least one cell, so a site of more zones than
	// the budget gets one cell per zone.
	budget := gridBudget(len(m.zones))
	scale := 1.0
	for {
		n := siteCells(m, byMap, g.mapIDs, scale)
		if n <= budget || scale > 1e6 {
			break
		}
		scale *= math.Sqrt(float64(n) / float64(budget) * 1.05)
	}
	scale = alignScale(m, byMap, g.mapIDs, scale, budget)
	type key struct{ mi, ix, iy int32 }
	at := map[key]int32{}
	type cellRef struct{ key key }
	var refs []cellRef
	for mi, id := range g.mapIDs {
		px := scale * m.pixelsPerMeter(id)
		g.cellPx = append(g.cellPx, px)
		zs := byMap[id]
		x0, y0, _, _ := bbox(m, zs)
		covered := map[int]bool{}
		// Smaller zones claim their cells first: an office inside the
		// room that contains it keeps its own cells.
		byArea := append([]int(nil), zs...)
		slices.SortStableFunc(byArea, func(a, b int) int { return cmp.Compare(zoneArea(&m.zones[a]), zoneArea(&m.zones[b])) })
		for _, z := range byArea {
			ix0, ix1, iy0, iy1 := cellSpan(&m.zones[z], x0, y0, px)
			for iy := iy0; iy < iy1; iy++ {
				for ix := ix0; ix < ix1; ix++ {
					k := key{int32(mi), ix, iy}
					if _, taken := at[k]; taken {
						continue // inside a smaller zone
					}
					covered[z] = true
					at[k] = int32(len(g.czone))
					refs = append(refs, cellRef{key: k})
					g.cx = append(g.cx, float32(x0+(float64(ix)+0.5)*px))
					g.cy = append(g.cy, float32(y0+(float64(iy)+0.5)*px))
					g.cmap, g.czone = append(g.cmap, int32(mi)), append(g.czone, int32(z))
				}
			}
		}
		// A zone smaller than a cell still gets one, at its centre, so
		// every zone can be reported.
		for _, z := range zs {
			if covered[z] {
				continue
			}
			x, y := m.zones[z].centre()
			k := key{int32(mi), int32((x - x0) / px), int32((y - y0) / px)}
			if _, taken := at[k]; !taken {
				at[k] = int32(len(g.czone))
			}
			refs = append(refs, cellRef{key: k})
			g.cx, g.cy = append(g.cx, float32(x)), append(g.cy, float32(y))
			g.cmap, g.czone = append(g.cmap, int32(mi)), append(g.czone, int32(z))
		}
	}
	nc := len(g.czone)
	// The cells are laid out map by map (above).
	g.mapCells = make([]int32, len(g.mapIDs)+1)
	for _, mi := range g.cmap {
		g.mapCells[mi+1]++
	}
	for mi := range g.mapIDs {
		g.mapCells[mi+1] += g.mapCells[mi]
	}
	g.nbrOff = make([]int32, 0, nc+1)
	for c := 0; c < nc; c++ {
		g.nbrOff = append(g.nbrOff, int32(len(g.nbr)))
		k := refs[c].key
		var wsum float32
		start := len(g.nbr)
		for dy := int32(-1); dy <= 1; dy++ {
			for dx := int32(-1); dx <= 1; dx++ {
				j, ok := at[key{k.mi, k.ix + dx, k.iy + dy}]
				if dx == 0 && dy == 0 {
					j, ok = int32(c), true
				}
				if !ok {
					continue
				}
				w := float32(1)
				switch {
				case dx != 0 && dy != 0:
					w = 0.35
				case dx != 0 || dy != 0:
					w = 0.6
				}
				g.nbr, g.nbrW = append(g.nbr, j), append(g.nbrW, w)
				wsum += w
			}
		}
		for i := start; i < len(g.nbrW); i++ {
			g.nbrW[i] /= wsum
		}
		// Cells larger than a metre diffuse less per second.
		r := m.pixelsPerMeter(g.mapIDs[k.mi]) / g.cellPx[k.mi]
		g.mix = append(g.mix, float32(math.Min(1, r*r)))
	}
	g.nbrOff = append(g.nbrOff, int32(len(g.nbr)))
	m.planGridGateways()
}

// siteCells is countCells over every map (byMap: each map's zones) at
// scale times each map's metre: the cells a lattice of that scale takes.
func siteCells(m *model, byMap map[uint64][]int, mapIDs []uint64, scale float64) int {
	n := 0
	for _, id := range mapIDs {
		n += countCells(m, byMap[id], scale*m.pixelsPerMeter(id))
	}
	return n
}

// countCells bounds the cells of zones zs at edge px (overlaps counted
// twice; a zone smaller than a cell counts its one cell).
func countCells(m *model, zs []int, px float64) int {
	x0, y0, _, _ := bbox(m, zs)
	n := 0
	for _, z := range zs {
		ix0, ix1, iy0, iy1 := cellSpan(&m.zones[z], x0, y0, px)
		n += max(int(max(ix1-ix0, 0))*int(max(iy1-iy0, 0)), 1)
	}
	return n
}

// alignScale is the cell scale, from least up to half as large again,
// whose lattice leaves the least area on the wrong side of the zones'
// edges (the smallest such; not more cells than budget). A zone is the
// cells whose centres it holds, so an edge between lattice lines moves
// to the nearest one, and a tag standing in the strip between is
// reported in the neighbouring zone: with 3.4 m rooms on metre cells
// grid lost 0.7-3.4 points to cells of 3.4/3 m, and the 16 x 16 set of
// 3 m rooms, whose cell budget made cells 1.54 m, lost 14 to 1.5 m
// (docs/performance.md, "Cells that fit the rooms").
func alignScale(m *model, byMap map[uint64][]int, mapIDs []uint64, least float64, budget int) float64 {
	origin := make([][2]float64, len(mapIDs))
	for i, id := range mapIDs {
		origin[i][0], origin[i][1], _, _ = bbox(m, byMap[id])
	}
	// misplaced is in square metres, so that maps drawn at different
	// scales weigh alike (in pixels a map at 100 px a metre outweighed
	// one at 10 a hundredfold: a review).
	misplaced := func(scale float64) float64 {
		var area float64
		for i, id := range mapIDs {
			ppm := m.pixelsPerMeter(id)
			px := scale * ppm
			off := func(e, o float64) float64 { // metres to the nearest lattice line
				r := (e - o) / px
				if d := math.Abs(r - math.Round(r)); d > 1e-6 {
					return d * scale
				}
				// On it, but for rounding: at 12.7 px a metre, metre rooms
				// missed by 1e-11 and any candidate that happened to hit 0
				// won, 3 m rooms getting 1.5 m cells (a review).
				return 0
			}
			for _, z := range byMap[id] {
				r := &m.zones[z]
				if zoneArea(r) == 0 {
					continue // one cell at its centre, whatever the lattice
				}
				w, h := math.Abs(r.X2-r.X1)/ppm, math.Abs(r.Y2-r.Y1)/ppm
				area += (off(r.X1, origin[i][0])+off(r.X2, origin[i][0]))*h + (off(r.Y1, origin[i][1])+off(r.Y2, origin[i][1]))*w
			}
		}
		return area
	}
	// From about a tenth below the least (least/1.1: its search
	// overshoots by 5%; never below a metre, whose diffusion mix would
	// exceed one) if the budget allows.
	lo, hi := max(1, least/1.1), 1.5*least
	// The candidates: the sides of the rooms cut in whole cells (a
	// regular plan then fits exactly), and a scan of the range between
	// for plans with no common measure.
	var cands []float64
	sides := map[float64]bool{}
	for _, id := range mapIDs {
		ppm := m.pixelsPerMeter(id)
		for _, z := range byMap[id] {
			r := &m.zones[z]
			if zoneArea(r) == 0 {
				continue // a line: its length (a kilometre) made thousands of candidates
			}
			for _, l := range []float64{math.Abs(r.X2-r.X1) / ppm, math.Abs(r.Y2-r.Y1) / ppm} {
				l = math.Round(l*1e6) / 1e6
				if l <= 0 || sides[l] || len(sides) >= 64 {
					continue
				}
				sides[l] = true
				for k := math.Ceil(l / hi); k <= math.Floor(l/lo) && k <= 1e4; k++ {
					cands = append(cands, l/k)
				}
			}
		}
	}
	const steps = 300
	for i := 0; i <= steps; i++ {
		cands = append(cands, lo+(hi-lo)*float64(i)/steps)
	}
	// Larger cells than the least first, smallest first; smaller ones
	// (within the budget) only if they fit better still: on walk A, whose
	// 10 m rooms fit cells of 10/8 m (below its least, 1.28 m) and 10/7,
	// grid flipped 0.23 times a minute on the first and 0.16 on the
	// second.
	slices.SortFunc(cands, func(a, b float64) int {
		if (a >= least) != (b >= least) {
			if a >= least {
				return -1
			}
			return 1
		}
		if a >= least {
			return cmp.Compare(a, b)
		}
		return cmp.Compare(b, a)
	})
	best, bestArea := least, misplaced(least)
	tol := 1e-3 * bestArea
	for _, sc := range cands {
		if bestArea == 0 {
			break
		}
		// Within a thousandth of the least's misplaced area: as good
		// (rounding in the zones' coordinates), and the earlier wins.
		if a := misplaced(sc); a < bestArea-tol && siteCells(m, byMap, mapIDs, sc) <= budget {
			best, bestArea = sc, a
		}
	}
	return best
}

func zoneArea(z *Zone) float64 { return math.Abs((z.X2 - z.X1) * (z.Y2 - z.Y1)) }

// cellSpan is the range of grid indices (origin x0, y0, edge px) whose
// cell centres lie inside zone z.
func cellSpan(z *Zone, x0, y0, px float64) (ix0, ix1, iy0, iy1 int32) {
	lo := func(a, o float64) int32 { return int32(math.Ceil((a-o)/px - 0.5)) }
	hi := func(b, o float64) int32 { return int32(math.Ceil((b-o)/px - 0.5)) }
	ix0, ix1 = lo(math.Min(z.X1, z.X2), x0), hi(math.Max(z.X1, z.X2), x0)
	iy0, iy1 = lo(math.Min(z.Y1, z.Y2), y0), hi(math.Max(z.Y1, z.Y2), y0)
	return
}

func bbox(m *model, zs []int) (x0, y0, x1, y1 float64) {
	x0, y0, x1, y1 = math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, z := range zs {
		r := &m.zones[z]
		x0, x1 = math.Min(x0, math.Min(r.X1, r.X2)), math.Max(x1, math.Max(r.X1, r.X2))
		y0, y1 = math.Min(y0, math.Min(r.Y1, r.Y2)), math.Max(y1, math.Max(r.Y1, r.Y2))
	}
	return
}

// planGridGateways finds the sensitivity floor, each gateway's map and
// the gateways the fit will model, without fitting: a gateway on a map
// with zones that is placed (its fit, or the default law) or that its
// map's survey heard at least minHeardToFit times (fitGridGateway fits
// exactly those). One pass over the samples.
func (m *model) planGridGateways() {
	g := m.grid.gridLayout
	ng := len(m.gwMAC)
	g.floor = m.p.Floor
	heardMin := math.Inf(1)
	for i := range m.samples {
		for _, v := range m.samples[i].v {
			if x := float64(v); x > m.p.Floor {
				heardMin = math.Min(heardMin, x)
			}
		}
	}
	if !math.IsInf(heardMin, 1) {
		g.floor = heardMin
	}
	mapIdx := func(id uint64) int32 {
		if i, ok := slices.BinarySearch(g.mapIDs, id); ok {
			return int32(i)
		}
		return -1
	}
	g.gwMap = make([]int32, ng)
	for gi := range g.gwMap {
		g.gwMap[gi] = -1
		switch {
		case m.gwPlaced[gi]:
			g.gwMap[gi] = mapIdx(m.gwPos[gi].mapID)
		case m.gwZone[gi] >= 0:
			g.gwMap[gi] = mapIdx(m.zones[m.gwZone[gi]].MapID)
		}
	}
	heard := make([]int, ng)
	for i := range m.samples {
		s := &m.samples[i]
		mi := mapIdx(m.zones[s.zone].MapID)
		for gi, v := range s.v {
			if float64(v) > m.p.Floor && g.gwMap[gi] == mi {
				heard[gi]++
			}
		}
	}
	for gi, mi := range g.gwMap {
		if mi >= 0 && (m.gwPlaced[gi] || heard[gi] >= minHeardToFit) {
			g.modelled++
		}
	}
}

// gridFitHook, when set (by tests only, before the engine is used), is
// called as each radio model fit begins: tests count the fits, or hold
// one to order an edit against it.
var gridFitHook func()

// withGrid returns m when its grid's radio model is fitted, else a copy
// of m numbered gen whose grid (the same layout) is. m is left as it
// was: it may be published, and the ingest path reads it unlocked. The
// fit takes seconds on a large unplaced site, so it is never called from
// Observe; the engine calls it under cfgMu (Engine.rebuild, Start).
func (m *model) withGrid(gen uint64) *model {
	if m.grid.fitted {
		return m
	}
	cp := *m
	cp.gen = gen
	cp.grid = &gridModel{gridLayout: m.grid.gridLayout}
	cp.fitGridGateways()
	return &cp
}

// fitGridGateways fits every gateway's reading model and fills the
// per-cell tables of m's grid, which must not be published yet.
func (m *model) fitGridGateways() {
	if gridFitHook != nil {
		gridFitHook()
	}
	g := m.grid
	nc, ng := len(g.czone), len(m.gwMAC)
	g.gw = make([]gridGW, ng)
	for gi := 0; gi < ng; gi++ {
		gw := &g.gw[gi]
		mi := int(g.gwMap[gi])
		if mi < 0 {
			continue
		}
		gw.mapIdx = mi
		if len(m.samples) > 0 {
			m.fitGridGateway(gi, gw)
		}
		if !gw.ok && m.gwPlaced[gi] {
			// No survey, or too little of it for this gateway (its floor
			// not surveyed, or installed since): the default law.
			*gw = gridGW{ok: true, x: m.gwPos[gi].x, y: m.gwPos[gi].y, mapIdx: mi,
				p0: m.p.TxPower, n: m.p.PathLoss, sig: m.p.Sigma, miss: m.p.Lost}
		}
	}
	// The anchors (model.anchor) are known once every gateway is fitted:
	// placing the survey refits their laws, not which they are.
	var anchors []int
	for gi := range g.gw {
		if m.anchor(gi) {
			anchors = append(anchors, gi)
		}
	}
	g.anchors = len(anchors)
	m.placeSurvey(anchors)
	for gi := range g.gw {
		if gw := &g.gw[gi]; gw.ok {
			gw.lhitK = math.Log(1-gw.miss) - math.Log(gw.sig)
			gw.inv2s2 = 1 / (2 * gw.sig * gw.sig)
			// Only a law fitted on the survey's means is a law of means;
			// the default one says nothing of how many readings it holds.
			if gw.fittedOnSurvey {
				gw.fade, gw.perWin = m.fading(gi)
			}
		}
	}
	g.void = nil
	if m.void != nil {
		g.void = make([]bool, nc)
		for c, z := range g.czone {
			g.void[c] = m.void[z]
		}
	}
	g.mu = make([]float32, ng*nc)
	for gi := range g.gw {
		gw := &g.gw[gi]
		if !gw.ok {
			continue
		}
		ppm := m.pixelsPerMeter(g.mapIDs[gw.mapIdx])
		for c := 0; c < nc; c++ {
			mu := g.floor - 4*gw.sig // another floor: practically never heard
			if d, ok := g.cellDist(gw, c, ppm); ok {
				mu = gw.p0 - 10*gw.n*math.Log10(d)
			}
			g.mu[gi*nc+c] = float32(mu)
		}
	}
	// The tag offset estimate's cells and their laws (cellsLL), before
	// the "not heard" tables, which copy theirs.
	g.ocells = g.ocells[:0]
	if g.anchors >= minAnchors {
		for c := 0; c < nc; c++ {
			if m.zoneSurveyed == nil || m.zoneSurveyed[g.czone[c]] {
				g.ocells = append(g.ocells, int32(c))
			}
		}
		g.ocells = thinTo(g.ocells, offsetCells)
	}
	// Cells are laid out map by map: each map's scored cells are one run.
	g.omap = make([]int, len(g.mapIDs)+1)
	for _, c := range g.ocells {
		g.omap[g.cmap[c]+1]++
	}
	for i := range g.mapIDs {
		g.omap[i+1] += g.omap[i]
	}
	n := len(g.ocells)
	g.omu = make([]float32, ng*n)
	for gi := range g.gw {
		for j, c := range g.ocells {
			g.omu[gi*n+j] = g.mu[gi*nc+int(c)]
		}
	}
	g.offs = new(gridOffsets)
	for k := range g.offs {
		g.offs[k] = m.buildMiss(offsetAt(k))
	}
	g.fitted = true
}

// cellDist is the distance in metres (at least half a metre, where the
// law stops) from gateway gw to cell c, ppm its map's pixels per metre;
// false when c is on another map.
func (g *gridModel) cellDist(gw *gridGW, c int, ppm float64) (float64, bool) {
	if int(g.cmap[c]) != gw.mapIdx {
		return 0, false
	}
	return math.Max(math.Hypot(gw.x-float64(g.cx[c]), gw.y-float64(g.cy[c]))/ppm, 0.5), true
}

// buildMiss is the "not heard" model of a tag heard v dB louder than the
// survey tag: each modelled gateway misses a reading when it falls under
// the floor (its expectation moved by v) or, otherwise, with its lost
// rate.
func (m *model) buildMiss(v float64) *gridMiss {
	g := m.grid
	nc := len(g.czone)
	n := len(g.ocells)
	t := &gridMiss{lmiss: make([]float32, len(g.mu)), base: make([]float32, nc), olm: make([]float32, len(g.gw)*n), oanchors: make([]float32, n)}
	for gi := range g.gw {
		gw := &g.gw[gi]
		if !gw.ok {
			continue
		}
		for c := 0; c < nc; c++ {
			pc := stdNormCDF((g.floor - v - float64(g.mu[gi*nc+c])) / gw.sig)
			lm := float32(math.Log(pc + (1-pc)*gw.miss))
			t.lmiss[gi*nc+c] = lm
			t.base[c] += lm
		}
		anchor := m.anchor(gi)
		for j, c := range g.ocells {
			lm := t.lmiss[gi*nc+int(c)]
			t.olm[gi*n+j] = lm
			if anchor {
				t.oanchors[j] += lm
			}
		}
	}
	return t
}

func stdNormCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

// minHeardToFit is how many survey samples must have heard a gateway
// before its law is fitted rather than assumed: with fewer, the fit is
// made of censoring alone (a gateway installed after the survey would
// get a law the data never supported).
const minHeardToFit = 5

// maxFitSamples bounds the samples the position search of an unplaced
// gateway reads (evenly spread, every len/maxFitSamples-th: 200 to 399):
// the fit runs for every gateway on every site or survey change while grid
// runs, and at Start(grid). tobitIters is the EM iterations of a fit
// (fewer made the search's ranking, and the UCI score, unstable).
const (
	maxFitSamples = 200
	tobitIters    = 12
)

// fitGridGateway fits one gateway on the survey: at its placement, or at
// the position whose censored fit is most likely (about 64 of its map's
// cells, then a pattern search halving the step down to half a metre). It leaves gw not ok when the survey of its map
// heard it fewer than minHeardToFit times.
func (m *model) fitGridGateway(gi int, gw *gridGW) {
	g := m.grid
	mapID := g.mapIDs[gw.mapIdx]
	ppm := m.pixelsPerMeter(mapID)
	// The samples of this map, each at its zone's centre, with the
	// gateway's reading or NaN.
	var sx, sy, ys []float64
	heard := 0
	for i := range m.samples {
		s := &m.samples[i]
		z := &m.zones[s.zone]
		if z.MapID != mapID {
			continue
		}
		x, y := z.centre()
		sx, sy = append(sx, x), append(sy, y)
		if v := float64(s.v[gi]); v > m.p.Floor {
			ys = append(ys, v)
			heard++
		} else {
			ys = append(ys, math.NaN())
		}
	}
	if heard < minHeardToFit {
		return
	}
	lx := make([]float64, len(ys))
	// fit fits at (x, y) on every stride-th sample (searching), or on all
	// of them fully converged (stride 0).
	fit := func(x, y float64, stride int) (tobit, float64) {
		step := max(stride, 1)
		n := 0
		for i := 0; i < len(ys); i += step {
			d := math.Max(math.Hypot(x-sx[i], y-sy[i])/ppm, 0.5)
			lx[n], n = -10*math.Log10(d), n+1
		}
		sub := ys
		if step > 1 {
			sub = make([]float64, 0, n)
			for i := 0; i < len(ys); i += step {
				sub = append(sub, ys[i])
			}
		}
		return fitTobit(lx[:n], sub, g.floor, m.p.SigmaFloor, m.p.PathLoss, tobitIters)
	}
	bx, by := m.gwPos[gi].x, m.gwPos[gi].y
	if !m.gwPlaced[gi] {
		// A placed gateway's position is known; an unplaced one starts at
		// the centre of the zone where the survey heard it loudest.
		stride := max(1, len(ys)/maxFitSamples)
		_, bestLL := fit(bx, by, stride)
		// Candidates: every len/64-th of the map's cells, 64 to 127 of
		// them (where the survey can see a gateway; outside the
		// surveyed zones a fit is an extrapolation).
		var cells []int
		for c := range g.czone {
			if int(g.cmap[c]) == gw.mapIdx {
				cells = append(cells, c)
			}
		}
		every := max(1, len(cells)/64)
		for i := 0; i < len(cells); i += every {
			x, y := float64(g.cx[cells[i]]), float64(g.cy[cells[i]])
			if _, ll := fit(x, y, stride); ll > bestLL {
				bestLL, bx, by = ll, x, y
			}
		}
		step := g.cellPx[gw.mapIdx] * math.Sqrt(float64(every))
		for h := step / 2; h >= ppm/2; h /= 2 {
			cx, cy := bx, by
			for _, d := range [][2]float64{{-h, 0}, {h, 0}, {0, -h}, {0, h}, {-h, -h}, {h, h}, {-h, h}, {h, -h}} {
				if _, ll := fit(cx+d[0], cy+d[1], stride); ll > bestLL {
					bestLL, bx, by = ll, cx+d[0], cy+d[1]
				}
			}
		}
	}
	best, _ := fit(bx, by, 0) // the law at the chosen position, on every sample
	*gw = gridGW{ok: true, x: bx, y: by, mapIdx: gw.mapIdx, p0: best.p0, n: best.n, sig: best.sig, miss: best.miss, fittedOnSurvey: true}
}

// thinTo keeps every k-th of cs, k the smallest that leaves at most most
// (in place).
func thinTo(cs []int32, most int) []int32 {
	k := (len(cs) + most - 1) / most
	if k <= 1 {
		return cs
	}
	thin := cs[:0]
	for i := 0; i < len(cs); i += k {
		thin = append(thin, cs[i])
	}
	return thin
}

// placeRounds is how many rounds of placing the survey placeSurvey
// makes; maxPlaces bounds where in its zone a sample may have been taken
// (the zone's cells, every len/maxPlaces-th), and maxPlacePairs the
// samples it reads (evenly spread) times those places.
const (
	placeRounds   = 3
	placeIters    = 4 // Tobit iterations per round, from the last round's law
	maxPlaces     = 64
	maxPlacePairs = 60000
)

// placeSurvey refits the laws of the anchors (placed gateways fitted on
// the survey, model.anchor) with each survey sample where in its zone
// its readings put it, not at the zone's centre: an EM whose E step
// weighs each of the zone's cells by the likelihood of the sample's
// readings there under the anchors' laws, and whose M step refits each
// anchor's law by the censored fit on every (sample, cell) pair so
// weighed. A survey is recorded by someone walking or standing about
// the zone, and a gateway mounted in the middle of its zone, fitted with
// its zone's samples half a metre away, gets a law too quiet near it
// and too loud far off (the unit tests' site: a tag 3 dB louder than
// the survey's read +3.8 dB against it, +3.2 against the placed survey's,
// TestGridOffsetLeavesThePositionOpen). With fewer than minAnchors
// anchors the places cannot be told and the laws stay as fitted; the
// other gateways' laws (and unplaced ones' positions) are not refitted.
func (m *model) placeSurvey(anchors []int) {
	g := m.grid
	if len(anchors) < minAnchors || len(m.samples) == 0 {
		return
	}
	places := make([][]int32, len(m.zones))
	for c, z := range g.czone {
		places[z] = append(places[z], int32(c))
	}
	for z, cs := range places {
		places[z] = thinTo(cs, maxPlaces)
	}
	pairs := 0
	for i := range m.samples {
		pairs += len(places[m.samples[i].zone])
	}
	stride := max(1, (pairs+maxPlacePairs-1)/maxPlacePairs)
	type pair struct {
		s, c int32
		w    float64
	}
	var ps []pair
	for i := 0; i < len(m.samples); i += stride {
		for _, c := range places[m.samples[i].zone] {
			ps = append(ps, pair{s: int32(i), c: c})
		}
	}
	// Per anchor and cell: -10 log10 of the distance (NaN: another
	// map), and per round the law's mean there and its "not heard" term.
	nc, na := len(g.czone), len(anchors)
	lx := make([]float64, na*nc)
	for a, gi := range anchors {
		gw := &g.gw[gi]
		ppm := m.pixelsPerMeter(g.mapIDs[gw.mapIdx])
		for c := range nc {
			lx[a*nc+c] = math.NaN()
			if d, ok := g.cellDist(gw, c, ppm); ok {
				lx[a*nc+c] = -10 * math.Log10(d)
			}
		}
	}
	mu, lm, base := make([]float64, na*nc), make([]float64, na*nc), make([]float64, nc)
	// The anchors each sample heard, and what.
	heardBy := make([][]int32, len(m.samples))
	for i := 0; i < len(m.samples); i += stride {
		for a, gi := range anchors {
			if float64(m.samples[i].v[gi]) > m.p.Floor {
				heardBy[i] = append(heardBy[i], int32(a))
			}
		}
	}
	unheard := make([]float64, nc) // M step: per cell, weight of the unheard
	var x, y, wt []float64
	for range placeRounds {
		clear(base)
		for a, gi := range anchors {
			gw := &g.gw[gi]
			for c := range nc {
				k := a*nc + c
				if v := lx[k]; v == v {
					mu[k] = gw.p0 + gw.n*v
					pc := stdNormCDF((g.floor - mu[k]) / gw.sig)
					lm[k] = math.Log(math.Max(pc+(1-pc)*gw.miss, 1e-300))
					base[c] += lm[k]
				}
			}
		}
		// E: each sample's places weighed by its readings' likelihood.
		for lo := 0; lo < len(ps); {
			hi := lo
			best := math.Inf(-1)
			for ; hi < len(ps) && ps[hi].s == ps[lo].s; hi++ {
				s, c := &m.samples[ps[hi].s], int(ps[hi].c)
				ll := base[c]
				for _, a := range heardBy[ps[hi].s] {
					k := int(a)*nc + c
					if lx[k] != lx[k] {
						continue
					}
					gw := &g.gw[anchors[a]]
					z := (float64(s.v[anchors[a]]) - mu[k]) / gw.sig
					ll += gw.lhitFit() - 0.5*z*z - lm[k]
				}
				ps[hi].w = ll
				best = math.Max(best, ll)
			}
			var sum float64
			for i := lo; i < hi; i++ {
				ps[i].w = math.Exp(ps[i].w - best)
				sum += ps[i].w
			}
			for i := lo; i < hi; i++ {
				ps[i].w /= sum
			}
			lo = hi
		}
		// M: each anchor's law on every weighed place; the unheard
		// places of one cell are one censored observation there, their
		// weights summed (its term does not depend on the sample).
		for a, gi := range anchors {
			gw := &g.gw[gi]
			x, y, wt = x[:0], y[:0], wt[:0]
			clear(unheard)
			for _, p := range ps {
				k := a*nc + int(p.c)
				if lx[k] != lx[k] || p.w < 1e-6 {
					continue
				}
				if r := float64(m.samples[p.s].v[gi]); r > m.p.Floor {
					x, y, wt = append(x, lx[k]), append(y, r), append(wt, p.w)
				} else {
					unheard[p.c] += p.w
				}
			}
			for c, w := range unheard {
				if w > 0 {
					x, y, wt = append(x, lx[a*nc+c]), append(y, math.NaN()), append(wt, w)
				}
			}
			f, _ := fitTobitW(x, y, wt, g.floor, m.p.SigmaFloor, gw.n, placeIters, tobit{gw.p0, gw.n, gw.sig, gw.miss})
			// The mean law from the places; the spread stays the one
			// fitted at the zones' centres, which also holds where in
			// its zone the survey stood. Narrowed to one place's, it
			// made grid 1.5 to 2.5 times as sure of every window and
			// flip as often on the outside generator's sets of 3 m
			// zones (docs/performance.md, "The tag offset against
			// grid's law").
			gw.p0, gw.n, gw.miss = f.p0, f.n, f.miss
		}
	}
}

// lhitFit is the heard term's constant, log(1-miss) - log(sig), from
// the law as it stands (lhitK is set once the fit is done).
func (gw *gridGW) lhitFit() float64 { return math.Log(1-gw.miss) - math.Log(gw.sig) }

type tobit struct{ p0, n, sig, miss float64 }

// fitTobit fits y = p0 + n*x + N(0, sig^2), observed when y >= floor and
// not missed (probability miss); NaN marks an unheard sample. EM over the
// censored/missed mixture of each unheard sample, starting from exponent
// n0 (kept when all samples share one x); returns the fit and its
// log-likelihood.
func fitTobit(x, y []float64, floor, sigFloor, n0 float64, iters int) (tobit, float64) {
	return fitTobitW(x, y, nil, floor, sigFloor, n0, iters, tobit{p0: -60, n: n0, sig: 6, miss: 0.2})
}

// fitTobitW is fitTobit with a weight per observation (nil: 1 each),
// starting from f.
func fitTobitW(x, y, wt []float64, floor, sigFloor, n0 float64, iters int, f tobit) (tobit, float64) {
	var ll float64
	ey := make([]float64, len(x))
	ey2 := make([]float64, len(x))
	w := make([]float64, len(x))
	for it := 0; it < iters; it++ {
		ll = 0
		var heard, missed float64
		for i := range x {
			mu := f.p0 + f.n*x[i]
			wi := 1.0
			if wt != nil {
				wi = wt[i]
			}
			if !math.IsNaN(y[i]) {
				z := (y[i] - mu) / f.sig
				ll += wi * (math.Log(1-f.miss) - math.Log(f.sig) - 0.5*z*z)
				w[i], ey[i], ey2[i] = wi, y[i], y[i]*y[i]
				heard += wi
				continue
			}
			a := (floor - mu) / f.sig
			pc := stdNormCDF(a)
			tot := math.Max(pc+(1-pc)*f.miss, 1e-300)
			ll += wi * math.Log(tot)
			rc := pc / tot // responsibility of "below the floor"
			missed += wi * (1 - rc)
			w[i] = wi * rc
			if pc < 1e-12 {
				ey[i], ey2[i] = floor, floor*floor
				continue
			}
			// moments of y given y < floor
			lam := math.Exp(-0.5*a*a) / math.Sqrt(2*math.Pi) / pc
			m1 := mu - f.sig*lam
			v := f.sig * f.sig * math.Max(1-a*lam-lam*lam, 0)
			ey[i], ey2[i] = m1, v+m1*m1
		}
		var sw, sx, sy, sxx, sxy float64
		for i := range x {
			sw += w[i]
			sx += w[i] * x[i]
			sy += w[i] * ey[i]
			sxx += w[i] * x[i] * x[i]
			sxy += w[i] * x[i] * ey[i]
		}
		if sw <= 0 {
			break
		}
		if den := sw*sxx - sx*sx; den > 1e-6*sw*sw {
			f.n = math.Min(math.Max((sw*sxy-sx*sy)/den, 1), 5)
		} // else every sample at one distance (one surveyed zone): the
		// exponent cannot be told from the data and stays n0
		f.p0 = (sy - f.n*sx) / sw
		var ss float64
		for i := range x {
			mu := f.p0 + f.n*x[i]
			ss += w[i] * (ey2[i] - 2*mu*ey[i] + mu*mu)
		}
		f.sig = math.Max(math.Sqrt(math.Max(ss, 0)/sw), sigFloor)
		f.miss = math.Min(math.Max(missed/(heard+missed), 0.01), 0.95)
	}
	return f, ll
}

func (grid) update(m *model, p *Params, b *beacon, _ *reading, now int64) (int, position) {
	// Not fitted: the engine never publishes such a model while grid
	// runs (Engine.rebuild, Start); and Observe must not fit one.
	if !m.gridReady() {
		return -1, position{}
	}
	if !beginStep(m, p, b, now) || !stepGrid(m, p, b, now, b.off.a) {
		return b.zone, b.pos
	}
	b.post = b.gmass
	return switchZone(p, b, b.gmass, now), position{}
}

// gridReady reports whether m's grid can run: laid out, fitted, and
// modelling at least one gateway.
func (m *model) gridReady() bool {
	g := m.grid
	return g != nil && g.fitted && len(g.czone) > 0 && g.modelled > 0
}

// stepGrid moves b's belief over the cells to now and folds in the
// readings (m.gridReady must hold); b.gmass becomes its zone masses. It
// returns false, changing nothing, when no modelled gateway heard the
// beacon in the window.
func stepGrid(m *model, p *Params, b *beacon, now int64, off float64) bool {
	g := m.grid
	// Nothing a modelled gateway heard in the window: no update, and the
	// time is left for the next one (its silence then counts in full).
	heard, fw := false, b.window(p, now)
	for i := range b.rds {
		if r := &b.rds[i]; r.fresh(fw, now) && g.gw[r.g].ok {
			heard = true
			break
		}
	}
	if !heard {
		return false
	}
	nc := len(g.czone)
	if len(b.cells) != nc {
		// Uniform over the cells, each mode by its share of the time
		// (the engine's Params, and so whether standing is on, are
		// fixed at New; a new model resets b, beacon.reset).
		standing := float32(0)
		b.still = nil
		if p.StandFor > 0 {
			standing = float32(standShare(p))
			b.still = make([]float32, nc)
		}
		b.cells = make([]float32, nc)
		live := nc
		if g.void != nil {
			live = 0
			for _, v := range g.void {
				if !v {
					live++
				}
			}
		}
		for c := range b.cells {
			if g.void != nil && g.void[c] {
				continue
			}
			b.cells[c] = (1 - standing) / float32(live)
			if b.still != nil {
				b.still[c] = standing / float32(live)
			}
		}
		b.gmass = make([]float64, len(m.zones))
		b.gstepped, b.absentW = now, 0
	}
	sc := g.scratchOf(b)
	dt := now - b.gstepped
	// The rest of the scan the last update began with, if that update
	// did begin (it returns early when nothing modelled was heard).
	if b.refining(now) && b.gstepped >= b.decided {
		dt = 0
	}
	if dt > 0 {
		// The floor that keeps every cell recoverable after long
		// certainty, applied once per millisecond, here: applied after
		// every report, it made a scan's belief depend on the order its
		// reports came in (a cell floored after the first took the rest
		// of the scan's evidence from 1e-9; cells differed by up to 0.94,
		// TestGridBeliefIgnoresScanOrder).
		g.floorCells(b.cells)
		if b.still != nil {
			g.floorCells(b.still)
			switchModes(b.cells, b.still, dt, p)
		}
		g.predict(b.cells, sc.tmp, dt, p.Diffusion)
		if g.void != nil {
			// What the walk spread into a void zone from its neighbours
			// on the map goes (the update renormalises).
			for c, v := range g.void {
				if v {
					b.cells[c] = 0
					if b.still != nil {
						b.still[c] = 0
					}
				}
			}
		}
		b.gstepped = now
	}
	// Evidence is per unit of time. A gateway banks a period's worth of
	// evidence per period (at most maxCredit; a first reading counts
	// whole), and its new readings spend what they are worth (each its
	// gateway's usual interval, at most a period), so a gateway
	// reporting faster than once a second adds no more evidence, and a
	// jittered one loses none. What counts is the mean of the readings
	// new since its last counted one (the law is fitted on survey
	// means: a single reading of a 5 Hz tag is far noisier than they
	// are); and every modelled gateway silent for a window counts its "not
	// heard" term for the time since the last update (and in proportion
	// to cover). A report in the millisecond of the last update (the
	// rest of a scan) adds its reading and takes back the silence its
	// gateway was charged at that update, so the order of a
	// millisecond's reports does not matter.
	win := float64(p.SampleWindow.Milliseconds())
	absent := float32(0)
	if dt > 0 {
		absent = float32(b.cover(p, now) * math.Min(1, float64(dt)/win))
		b.absentW = absent
		b.downOut = b.downOut[:0]
	}
	lmiss, base := g.missAt(off)
	ll := sc.ll
	for c := range ll {
		ll[c] = absent * base[c]
	}
	if absent > 0 {
		// A gateway judged down says nothing by its silence (liveness.go).
		for gi := range m.silentDown(b, fw, now) {
			if g.gw[gi].ok {
				g.addTerm(ll, lmiss, gi, -absent)
				b.downOut = append(b.downOut, int32(gi))
			}
		}
	}
	for i := range b.rds {
		r := &b.rds[i]
		if !r.fresh(fw, now) || !g.gw[r.g].ok {
			continue
		}
		if r.last <= r.counted {
			if absent > 0 {
				g.addTerm(ll, lmiss, r.g, -absent) // heard in the window: not absent
			}
			continue
		}
		since := fw
		if r.counted > 0 {
			since = min(fw, now-r.counted)
		}
		x, n := r.windowMeanN(since, now)
		if r.counted > 0 {
			r.credit = min(maxCredit, r.credit+float32(r.last-r.counted)/evidencePeriod)
		} else {
			r.credit = 1
		}
		worth := float32(1) // of a period, per reading
		if r.gap > 0 && r.gap < evidencePeriod {
			worth = r.gap / evidencePeriod
		}
		w := min(float32(n)*worth, r.credit)
		r.credit -= w
		if gridSpent != nil {
			gridSpent(r.mac, w)
		}
		refund := absent
		// Silent at this update's first moment (b.gstepped), when the
		// silence was charged: judged at now, a refining report came
		// late enough for its gateway to look silent then as well and
		// was refunded twice (a review).
		if dt == 0 && (r.prev == 0 || b.gstepped-r.prev >= fw) {
			refund = b.absentW // silent at this millisecond's first update
			if slices.Contains(b.downOut, int32(r.g)) {
				// Down then, its silence was taken out, not charged
				// (a review: grid's belief was off by e^0.39).
				refund = 0
			}
		}
		g.addHeard(ll, lmiss, r.g, float32(x-off), n, w, refund)
		r.counted = r.last
	}
	// The best evidence among the cells still alive: a cell zeroed
	// earlier in this millisecond (below) must not set the scale, or
	// every live cell could fall 42 below it and the belief vanish.
	still := b.still
	top := float32(math.Inf(-1))
	for c, v := range ll {
		if b.cells[c] > 0 || still != nil && still[c] > 0 {
			top = max(top, v)
		}
	}
	var sum float32
	for c := range b.cells {
		// A cell more than e^-42 below the best one ends under the 1e-9
		// floor whatever the priors (at most 1 against at least 1e-9:
		// e^-42 / 1e-9 < 1e-9), so its exp is not needed; within one
		// millisecond the floor waits for the next (above), and a cell
		// zeroed here stays 0 until then: it is skipped, its evidence
		// being above top at times (a cross-floor reading zeroed the
		// cells of the floor the next report of the scan came from, by
		// up to e^94, whose float32 is +Inf, and 0 x Inf made the whole
		// belief NaN: the beacon stayed in one zone for good,
		// TestGridBeliefSurvivesAContradictoryScan). A standing belief
		// (Params.StandFor) takes the same evidence per cell (where the
		// tag is does not depend on whether it moves); the pair is
		// skipped and zeroed together and normalised together, so their
		// sums are the odds of moving against standing.
		if b.cells[c] == 0 && (still == nil || still[c] == 0) {
			continue
		}
		e := float32(0)
		if d := ll[c] - top; d > -42 {
			e = float32(math.Exp(float64(d)))
		}
		b.cells[c] *= e
		if still == nil {
			sum += b.cells[c]
			continue
		}
		still[c] *= e
		sum += b.cells[c] + still[c]
	}
	mass := b.gmass
	for z := range mass {
		mass[z] = 0
	}
	for c := range b.cells {
		v := b.cells[c] / sum
		b.cells[c] = v
		if still != nil {
			w := still[c] / sum
			still[c] = w
			v += w
		}
		mass[g.czone[c]] += float64(v)
	}
	return true
}

// floorCells raises every cell but the void ones to 1e-9 (stepGrid says
// why); void cells stay empty.
func (g *gridModel) floorCells(cells []float32) {
	if g.void == nil {
		for c, v := range cells {
			cells[c] = max(v, 1e-9)
		}
		return
	}
	for c, v := range cells {
		if !g.void[c] {
			cells[c] = max(v, 1e-9)
		}
	}
}

// standing is the share of b's grid belief that takes the tag to be
// standing (0 without a standing belief).
func (b *beacon) standing() float64 {
	var st float64
	for _, v := range b.still {
		st += float64(v)
	}
	return st
}

// standShare is the share of the time a tag stands (Params.StandFor,
// MoveFor): where switchModes settles.
func standShare(p *Params) float64 {
	st, mv := p.StandFor.Seconds(), p.MoveFor.Seconds()
	return st / (st + mv)
}

// switchModes moves belief between the moving and the standing cells
// over dt ms: a two-state Markov chain leaving standing at rate
// 1/StandFor and moving at 1/MoveFor, taken exactly over dt (a minute's
// silence is one step, not sixty). The shares that change mode are
// computed with expm1 in float64: as 1 - (float32 chance of staying)
// a 1 ms step of an hour's stand rounded its leak 7% off, and a day's
// to 0 (a review). Moving mass then spreads (predict); mass that began
// to move within dt spreads for all of it, a bound rather than a mean,
// as one step a second already is.
func switchModes(moving, still []float32, dt int64, p *Params) {
	st, mv := p.StandFor.Seconds(), p.MoveFor.Seconds()
	change := -math.Expm1(-(1/st + 1/mv) * float64(dt) / 1000)
	share := standShare(p)
	toMove := float32((1 - share) * change)
	toStand := float32(share * change)
	for c := range moving {
		m, s := moving[c], still[c]
		moving[c] = m - m*toStand + s*toMove
		still[c] = s - s*toMove + m*toStand
	}
}

// addHeard adds the log-likelihood of x, the mean of n readings worth w
// periods of evidence, to every cell (its hit rate and Gaussian; on
// another floor, crossSpan's) and takes back refund times its gateway's
// "not heard" term, which the update's base charged it.
func (g *gridModel) addHeard(ll, lmiss []float32, gi int, x float32, n int, w, refund float32) {
	nc := len(ll)
	gw := &g.gw[gi]
	// w periods of evidence from n readings: each period's is the mean
	// of n/w of them (a tag heard once a second: one; five times: five,
	// worth one period).
	lhit, inv2 := gw.readingTerms(float64(n) / float64(w))
	k, inv := w*float32(lhit), w*float32(inv2)
	mu, lm := g.mu[gi*nc:(gi+1)*nc], lmiss[gi*nc:(gi+1)*nc]
	lo, hi := int(g.mapCells[gw.mapIdx]), int(g.mapCells[gw.mapIdx+1])
	for c := lo; c < hi; c++ {
		d := x - mu[c]
		ll[c] += k - d*d*inv - refund*lm[c]
	}
	if lo == 0 && hi == nc {
		return
	}
	// The loudest its law says on its own floor: at the nearest cell, or
	// 1.5 m from it where no cell is that near. The cells alone made a
	// gateway in an unzoned stairwell quiet on its own floor, and a tag
	// upstairs it heard through the open stairs was put downstairs for
	// most of a minute (a review of this change).
	top := float32(gw.p0 - 10*gw.n*math.Log10(1.5))
	if hi > lo {
		top = max(top, slices.Max(mu[lo:hi]))
	}
	// On another floor the law does not say how loud the gateway is
	// (through a ceiling, down a stairwell): its reading counts as one
	// anywhere in crossSpan under the loudest it hears on its own floor
	// less crossLoss. Taken for the law's "practically never heard"
	// there, one reading heard across the floor ruled that floor out,
	// and a tag upstairs whose scans began with a downstairs gateway was
	// reported downstairs for as long as it stood there
	// (TestGridBeliefSurvivesAnotherFloorsReading). Flat at any level,
	// it said nothing against the other floor however loud the reading:
	// a tag heard by one gateway on its floor and 10 dB quieter by the
	// one above was put on the quieter one's floor, whose wider ring of
	// cells fits a quiet reading (a review; TestGridFloorOfTheLouderGateway).
	// Louder than that top, it falls off as the law's Gaussian does.
	cross := w * float32(math.Log(1-gw.miss)-math.Log(crossSpan)+0.5*math.Log(2*math.Pi))
	if d := x - (top - crossLoss); d > 0 {
		// Bounded, as one reading must not rule a floor out (above).
		cross -= min(d*d*inv, w*crossMaxNats)
	}
	for c := 0; c < lo; c++ {
		ll[c] += cross - refund*lm[c]
	}
	for c := hi; c < nc; c++ {
		ll[c] += cross - refund*lm[c]
	}
}

// crossSpan (dB) is the span of levels at which a gateway may hear a
// tag on another floor (addHeard): some 10-40 dB under what it would
// hear on its own.
const crossSpan = 30

// crossLoss (dB) is what a floor or ceiling takes off a reading, the
// middle of a concrete slab's 10-20 dB. With 10, a tag heard by its own
// floor's gateways only 5 dB louder than by the other floor's spent a
// third of a minute on the wrong floor in grid; with 15, a sixth.
const crossLoss = 15

// crossMaxNats bounds what one period's reading across a floor takes
// off that floor: a tag upstairs heard by a downstairs gateway through
// an open stairwell louder than any slab lets must not be ruled out of
// upstairs by it (TestGridStairwellLeak).
const crossMaxNats = 8

// addTerm adds w times gateway gi's "not heard" log-likelihood.
func (g *gridModel) addTerm(ll, lmiss []float32, gi int, w float32) {
	nc := len(ll)
	lm := lmiss[gi*nc : (gi+1)*nc]
	for c := range ll {
		ll[c] += w * lm[c]
	}
}

// predict spreads the belief over dt ms (at most a minute: after that
// it is spread out anyway) by a random walk adding diffusion m² a second
// along each axis.
func (g *gridModel) predict(bel, tmp []float32, dt int64, diffusion float64) {
	walk := float32(diffusion / gridKernelVar)
	for left, steps := dt, 0; left > 0 && steps < 60; steps++ {
		s := min(left, gridStep)
		g.diffuse(bel, tmp, walk*float32(s)/gridStep)
		left -= s
	}
}

// diffuse moves share f (of a second's walk) of the belief to the
// neighbouring cells.
func (g *gridModel) diffuse(bel, tmp []float32, f float32) {
	for c := range bel {
		var s float32
		for i := g.nbrOff[c]; i < g.nbrOff[c+1]; i++ {
			s += g.nbrW[i] * bel[g.nbr[i]]
		}
		tmp[c] = s
	}
	for c := range bel {
		a := f * g.mix[c]
		bel[c] = (1-a)*bel[c] + a*tmp[c]
	}
}

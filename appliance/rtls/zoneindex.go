package rtls

import (
	"math"
	"slices"
)

// zoneIndex is a uniform grid over one map's zone rectangles, so that
// linkIsolatedZones reads a zone's neighbours and its nearest zone among
// the few drawn around it. Comparing every pair took 1.6 s a model build
// at 4,096 zones drawn without links, and every zone edit builds one (a
// review: 280 ms an edit at 1,500 zones).
type zoneIndex struct {
	zones  []Zone
	x0, y0 float64
	cell   float64
	nx, ny int
	cells  [][]int // zone indices (into zones) whose rectangle touches the cell
}

// newZoneIndex indexes members (indices into zones, all on one map). The
// cell is the members' mean longest side, widened until there are at most
// four cells a member.
func newZoneIndex(zones []Zone, members []int) *zoneIndex {
	ix := &zoneIndex{zones: zones, x0: math.Inf(1), y0: math.Inf(1)}
	x1, y1 := math.Inf(-1), math.Inf(-1)
	side := 0.0
	for _, i := range members {
		z := &zones[i]
		ix.x0, ix.y0 = min(ix.x0, z.X1, z.X2), min(ix.y0, z.Y1, z.Y2)
		x1, y1 = max(x1, z.X1, z.X2), max(y1, z.Y1, z.Y2)
		side += max(math.Abs(z.X2-z.X1), math.Abs(z.Y2-z.Y1))
	}
	ix.cell = max(side/float64(max(len(members), 1)), 1)
	for {
		ix.nx, ix.ny = int((x1-ix.x0)/ix.cell)+1, int((y1-ix.y0)/ix.cell)+1
		if ix.nx*ix.ny <= 4*len(members)+16 {
			break
		}
		ix.cell *= 1.5
	}
	ix.cells = make([][]int, ix.nx*ix.ny)
	for _, i := range members {
		cx1, cy1, cx2, cy2 := ix.span(&zones[i], 0)
		for cy := cy1; cy <= cy2; cy++ {
			for cx := cx1; cx <= cx2; cx++ {
				ix.cells[cy*ix.nx+cx] = append(ix.cells[cy*ix.nx+cx], i)
			}
		}
	}
	return ix
}

// span is the range of cells z's rectangle, grown by grow on every side,
// touches.
func (ix *zoneIndex) span(z *Zone, grow float64) (cx1, cy1, cx2, cy2 int) {
	at := func(v, o float64, n int) int {
		return min(max(int(math.Floor((v-o)/ix.cell)), 0), n-1)
	}
	return at(min(z.X1, z.X2)-grow, ix.x0, ix.nx), at(min(z.Y1, z.Y2)-grow, ix.y0, ix.ny),
		at(max(z.X1, z.X2)+grow, ix.x0, ix.nx), at(max(z.Y1, z.Y2)+grow, ix.y0, ix.ny)
}

// within lists, ascending, the zones other than i whose rectangles come
// within grow of zone i's on both axes (a superset of those within grow).
// mark is scratch of len(zones), all zero between calls.
func (ix *zoneIndex) within(i int, grow float64, mark []bool) []int {
	var out []int
	cx1, cy1, cx2, cy2 := ix.span(&ix.zones[i], grow)
	for cy := cy1; cy <= cy2; cy++ {
		for cx := cx1; cx <= cx2; cx++ {
			for _, j := range ix.cells[cy*ix.nx+cx] {
				if j != i && !mark[j] {
					mark[j] = true
					out = append(out, j)
				}
			}
		}
	}
	for _, j := range out {
		mark[j] = false
	}
	slices.Sort(out)
	return out
}

// nearest is the zone other than i whose rectangle is nearest zone i's
// (the lowest index among equals, as a scan in index order finds), or -1.
// It reads rings of cells outward from i's until no zone beyond them can
// be nearer: a zone first met past ring r is more than r cells away.
func (ix *zoneIndex) nearest(i int, mark []bool) int {
	return ix.nearestWhere(i, mark, nil, math.Inf(1))
}

// nearestWhere is nearest among the zones ok accepts (nil: all), read no
// farther out than limit: a zone beyond it may be missed (-1 when none
// within).
func (ix *zoneIndex) nearestWhere(i int, mark []bool, ok func(j int) bool, limit float64) int {
	zi := &ix.zones[i]
	cx1, cy1, cx2, cy2 := ix.span(zi, 0)
	best, bestD := -1, math.Inf(1)
	var seen []int
	for r := 0; ; r++ {
		x1, y1, x2, y2 := cx1-r, cy1-r, cx2+r, cy2+r
		for cy := max(y1, 0); cy <= min(y2, ix.ny-1); cy++ {
			for cx := max(x1, 0); cx <= min(x2, ix.nx-1); cx++ {
				if r > 0 && cx > x1 && cx < x2 && cy > y1 && cy < y2 {
					continue // read in an earlier ring
				}
				for _, j := range ix.cells[cy*ix.nx+cx] {
					if j == i || mark[j] {
						continue
					}
					mark[j] = true
					seen = append(seen, j)
					if ok != nil && !ok(j) {
						continue
					}
					if d := rectGap(zi, &ix.zones[j]); d < bestD || (d == bestD && j < best) {
						best, bestD = j, d
					}
				}
			}
		}
		if reach := float64(r) * ix.cell; bestD <= reach || reach >= limit || (x1 <= 0 && y1 <= 0 && x2 >= ix.nx-1 && y2 >= ix.ny-1) {
			break
		}
	}
	for _, j := range seen {
		mark[j] = false
	}
	return best
}

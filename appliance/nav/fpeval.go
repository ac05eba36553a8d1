package nav

import (
	"math"
	"sort"
)

// ErrorStats summarises position errors in map units (pixels for a
// surveyed floor). N is the number of estimates; a model that cannot
// estimate anything has N 0 and zero figures.
type ErrorStats struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	Max  float64 `json:"max"`
}

func stats(errs []float64) ErrorStats {
	if len(errs) == 0 {
		return ErrorStats{}
	}
	sort.Float64s(errs)
	sum := 0.0
	for _, e := range errs {
		sum += e
	}
	return ErrorStats{N: len(errs), Mean: sum / float64(len(errs)), P50: rank(errs, 0.5), P90: rank(errs, 0.9), Max: errs[len(errs)-1]}
}

// rank is the nearest-rank percentile of sorted values.
func rank(sorted []float64, p float64) float64 {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

// EvaluateLOO is the leave-one-out error of m: each model sample (one
// surveyed point, its repeated scans already aggregated) is located by
// the rest of the model and compared with its true position. It measures
// the error at a point nobody surveyed, which is what a phone between
// survey points sees. A model with fewer than two samples gives N 0.
func EvaluateLOO(m Model) ErrorStats {
	if len(m.Samples) < 2 {
		return ErrorStats{}
	}
	l := m.Compile()
	errs := make([]float64, 0, len(m.Samples))
	for i, s := range m.Samples {
		copy(l.query, l.rows[i])
		x, y, ok := l.locateQuery(i)
		if ok {
			errs = append(errs, math.Hypot(x-s.X, y-s.Y))
		}
	}
	return stats(errs)
}

// Evaluate is the error of m on scans it was not built from (a test set).
func Evaluate(m Model, scans []Scan) ErrorStats {
	l := m.Compile()
	errs := make([]float64, 0, len(scans))
	for _, s := range scans {
		if x, y, ok := l.Locate(s.RSSI, -1); ok {
			errs = append(errs, math.Hypot(x-s.X, y-s.Y))
		}
	}
	return stats(errs)
}

// CentroidBaseline is the error of always answering the mean surveyed
// position: the figure a model must beat to be worth shipping.
func CentroidBaseline(m Model, scans []Scan) ErrorStats {
	if len(m.Samples) == 0 {
		return ErrorStats{}
	}
	var cx, cy float64
	for _, s := range m.Samples {
		cx += s.X
		cy += s.Y
	}
	cx /= float64(len(m.Samples))
	cy /= float64(len(m.Samples))
	errs := make([]float64, 0, len(scans))
	for _, s := range scans {
		errs = append(errs, math.Hypot(cx-s.X, cy-s.Y))
	}
	return stats(errs)
}

package nav

import (
	"math"
	"sort"
	"time"
)

// The fingerprint model is the spec's per-floor k-NN file: the phone
// compares what it hears with the surveyed points and averages the
// positions of the k most similar ones. The server builds it from the
// survey and measures it with the same Locate the app is documented to
// implement (docs/navigation.md), so the reported error is the app's.

// Model defaults. missing_rssi sits below what phones report for a
// barely audible transmitter, so "not heard" reads as "very far".
const (
	ModelVersion       = 1
	DefaultK           = 3
	DefaultMissingRSSI = -100
)

// Model is the spec's "Fingerprint positioning model" JSON, field for field.
type Model struct {
	Version     int           `json:"version"`
	GeneratedAt int64         `json:"generated_at"`
	FloorID     uint64        `json:"floor_id"`
	K           int           `json:"k"`
	MissingRSSI int           `json:"missing_rssi"`
	Features    []string      `json:"features"`
	Samples     []ModelSample `json:"samples"`
}

// ModelSample is one surveyed point; absent features are not listed (the
// app substitutes missing_rssi).
type ModelSample struct {
	X        float64        `json:"x"`
	Y        float64        `json:"y"`
	Features map[string]int `json:"features"`
}

// Scan is one fingerprint observation at a known position: feature key
// (`wifi:<MAC>`, `ble:<MAC>` or, for replay datasets, `ble:<gateway id>`)
// to RSSI in dBm.
type Scan struct {
	X, Y float64
	RSSI map[string]float64
}

// BuildModel aggregates scans taken at the same point into one model
// sample: a feature is kept when it was heard in at least half of that
// point's scans (a single stray advert does not make a transmitter look
// present) and its value is the median of the readings, rounded (robust
// to the unfiltered BLE outliers). Samples are ordered by position and
// features sorted, so equal surveys give byte-equal models.
func BuildModel(floor uint64, scans []Scan, k, missing int, generatedAt time.Time) Model {
	type point struct{ x, y float64 }
	groups := map[point][]Scan{}
	var order []point
	for _, s := range scans {
		p := point{s.X, s.Y}
		if _, ok := groups[p]; !ok {
			order = append(order, p)
		}
		groups[p] = append(groups[p], s)
	}
	sort.Slice(order, func(i, j int) bool {
		if order[i].x != order[j].x {
			return order[i].x < order[j].x
		}
		return order[i].y < order[j].y
	})
	m := Model{Version: ModelVersion, GeneratedAt: generatedAt.UnixMilli(), FloorID: floor, K: k, MissingRSSI: missing,
		Features: []string{}, Samples: make([]ModelSample, 0, len(order))}
	all := map[string]bool{}
	for _, p := range order {
		g := groups[p]
		values := map[string][]float64{}
		for _, s := range g {
			for f, v := range s.RSSI {
				values[f] = append(values[f], v)
			}
		}
		ms := ModelSample{X: p.x, Y: p.y, Features: map[string]int{}}
		for f, vs := range values {
			if 2*len(vs) < len(g) {
				continue
			}
			ms.Features[f] = int(math.Round(median(vs)))
			all[f] = true
		}
		m.Samples = append(m.Samples, ms)
	}
	for f := range all {
		m.Features = append(m.Features, f)
	}
	sort.Strings(m.Features)
	return m
}

func median(vs []float64) float64 {
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Locator is a model compiled to dense vectors for repeated queries. It
// keeps per-query scratch, so one Locator serves one goroutine.
type Locator struct {
	m     Model
	col   map[string]int
	rows  [][]float64 // rows[i][c]: sample i's RSSI of feature c (missing filled)
	query []float64
	best  []neighbour
}

type neighbour struct {
	i int
	d float64
}

// Compile prepares m for Locate.
func (m Model) Compile() *Locator {
	l := &Locator{m: m, col: make(map[string]int, len(m.Features)), query: make([]float64, len(m.Features))}
	for i, f := range m.Features {
		l.col[f] = i
	}
	l.rows = make([][]float64, len(m.Samples))
	for i, s := range m.Samples {
		row := make([]float64, len(m.Features))
		for c := range row {
			row[c] = float64(m.MissingRSSI)
		}
		for f, v := range s.Features {
			if c, ok := l.col[f]; ok {
				row[c] = float64(v)
			}
		}
		l.rows[i] = row
	}
	return l
}

// Locate estimates the position of a scan: Euclidean distance in dBm over
// the model's features (absent ones at missing_rssi; features the model
// does not know are ignored), the k nearest samples, their positions
// averaged with weights 1/(1+distance). skip excludes one sample (-1 for
// none), which is how leave-one-out uses the same code. ok is false when
// no sample is left to compare with.
func (l *Locator) Locate(scan map[string]float64, skip int) (x, y float64, ok bool) {
	for c := range l.query {
		l.query[c] = float64(l.m.MissingRSSI)
	}
	for f, v := range scan {
		if c, known := l.col[f]; known {
			l.query[c] = v
		}
	}
	return l.locateQuery(skip)
}

func (l *Locator) locateQuery(skip int) (x, y float64, ok bool) {
	k := max(l.m.K, 1)
	l.best = l.best[:0]
	for i, row := range l.rows {
		if i == skip {
			continue
		}
		d := 0.0
		for c, v := range row {
			diff := v - l.query[c]
			d += diff * diff
		}
		// Keep the k smallest by insertion; k is small.
		if len(l.best) == k && d >= l.best[k-1].d {
			continue
		}
		if len(l.best) < k {
			l.best = append(l.best, neighbour{})
		}
		j := len(l.best) - 1
		for ; j > 0 && l.best[j-1].d > d; j-- {
			l.best[j] = l.best[j-1]
		}
		l.best[j] = neighbour{i, d}
	}
	if len(l.best) == 0 {
		return 0, 0, false
	}
	var sw float64
	for _, nb := range l.best {
		w := 1 / (1 + math.Sqrt(nb.d))
		s := l.m.Samples[nb.i]
		x += w * s.X
		y += w * s.Y
		sw += w
	}
	return x / sw, y / sw, true
}

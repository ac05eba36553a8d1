// Package replay implements the RSSI replay format
// (/work/shared/contracts/rssi-replay.md): it loads a labelled recording,
// builds the site it describes, trains the engine on train.csv through
// survey recording, replays test.csv through the real ingest pipeline and
// engine in virtual time, and scores every algorithm. `beaconhub
// rtls-eval` is a thin command over it.
package replay

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"beaconhub/appliance/rtls"
)

// Row is one sighting of the recording.
type Row struct {
	T       int64 // Unix ms
	Gateway string
	Beacon  string
	RSSI    int
	Zone    string // "" when the recording leaves the row unlabelled
	Pos     string // true position as recorded ("x,y"), scan grouping only
}

// Dataset is a loaded recording.
type Dataset struct {
	Site     rtls.Site
	ZoneID   map[string]uint64
	ZoneName map[uint64]string
	Gateway  map[string][6]byte // gateway id -> synthetic MAC
	Beacons  map[string][6]byte // beacon id -> synthetic MAC
	Train    []Row
	Test     []Row
	// Skipped counts rows whose RSSI lies outside the gateway contract's
	// -127..0 dBm: the real pipeline would drop them, so they are not
	// replayed or scored.
	Skipped int
	// Markers counts rows that carry a recorder's "not heard" value
	// instead of a reading: empty, 0 dBm (iOS when it could not
	// measure) or -127 (Android's and many scanners' "unavailable").
	// Replayed as readings they looked like a gateway in contact with
	// the tag: 1% of rows at 0 dBm cost hmm a third of its accuracy.
	Markers int
	// Unlabelled counts rows with an empty zone: replayed (the engine
	// hears them) but neither trained on nor scored.
	Unlabelled int
	// Notes say how the loader read what the contract leaves open (the
	// time unit, the map scale, gateways missing from site.json);
	// rtls-eval prints them.
	Notes []string
	// NoGeometry: every zone in site.json has zero area (a recording
	// that names its zones but does not draw them). Placements then mean
	// nothing; algorithms that need the zones' shapes are not applicable.
	NoGeometry bool
}

type siteFile struct {
	Map struct {
		Width  float64 `json:"width"`
		Height float64 `json:"height"`
		// PixelsPerMeter is not in the contract: a site may give its
		// scale; without it the loader infers one (inferScale).
		PixelsPerMeter float64 `json:"pixels_per_meter"`
	} `json:"map"`
	Zones []struct {
		Name           name `json:"name"`
		X1, Y1, X2, Y2 float64
	} `json:"zones"`
	Adjacency [][]name `json:"adjacency"`
	Gateways  []struct {
		ID name     `json:"id"`
		X  *float64 `json:"x"`
		Y  *float64 `json:"y"`
	} `json:"gateways"`
}

// name is a zone or gateway name in site.json: a string, or a number
// as a converter that numbered its zones writes it; trimmed like the
// CSV fields that must match it.
type name string

func (n *name) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*n = name(strings.TrimSpace(s))
		return nil
	}
	var num json.Number
	if err := json.Unmarshal(b, &num); err != nil {
		return fmt.Errorf("a name must be a string or a number, not %s", b)
	}
	*n = name(num.String())
	return nil
}

// utf8BOM starts files saved by some editors and spreadsheets.
var utf8BOM = []byte("\xef\xbb\xbf")

// mapID is the one map a replay site has.
const mapID = 1

// Load reads DIR/site.json, DIR/train.csv and DIR/test.csv.
func Load(dir string) (*Dataset, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "site.json"))
	if err != nil {
		return nil, err
	}
	var sf siteFile
	if err := json.Unmarshal(bytes.TrimPrefix(raw, utf8BOM), &sf); err != nil {
		return nil, fmt.Errorf("site.json: %w", err)
	}
	ds := &Dataset{ZoneID: map[string]uint64{}, ZoneName: map[uint64]string{}, Gateway: map[string][6]byte{}, Beacons: map[string][6]byte{}}
	ds.Site.Maps = []rtls.Map{{ID: mapID, Name: "replay", Width: sf.Map.Width, Height: sf.Map.Height}}
	flat := 0
	for i, z := range sf.Zones {
		n := string(z.Name)
		if n == "" {
			return nil, fmt.Errorf("site.json: zone %d has no name", i)
		}
		if _, dup := ds.ZoneID[n]; dup {
			return nil, fmt.Errorf("site.json: zone %q twice", n)
		}
		if z.X1 == z.X2 || z.Y1 == z.Y2 {
			flat++
		}
		id := uint64(i + 1)
		ds.ZoneID[n], ds.ZoneName[id] = id, n
		ds.Site.Zones = append(ds.Site.Zones, rtls.Zone{ID: id, MapID: mapID, Name: n, X1: z.X1, Y1: z.Y1, X2: z.X2, Y2: z.Y2})
	}
	switch {
	case len(sf.Zones) == 0:
		return nil, errors.New("site.json: no zones")
	case flat == len(sf.Zones):
		ds.NoGeometry = true
		ds.Notes = append(ds.Notes, "no zone has an area: gateway positions ignored, centroid and grid not applicable")
	case flat > 0:
		return nil, fmt.Errorf("site.json: %d of %d zones have no area (x1 = x2 or y1 = y2); give every zone a rectangle, or none", flat, len(sf.Zones))
	}
	for _, pair := range sf.Adjacency {
		if len(pair) != 2 {
			return nil, errors.New("site.json: adjacency entries are pairs")
		}
		a, okA := ds.ZoneID[string(pair[0])]
		b, okB := ds.ZoneID[string(pair[1])]
		if !okA || !okB {
			return nil, fmt.Errorf("site.json: adjacency names an unknown zone in %v", pair)
		}
		ds.Site.Zones[a-1].Adjacent = append(ds.Site.Zones[a-1].Adjacent, b)
		ds.Site.Zones[b-1].Adjacent = append(ds.Site.Zones[b-1].Adjacent, a)
	}
	for _, g := range sf.Gateways {
		id := string(g.ID)
		if id == "" {
			return nil, errors.New("site.json: a gateway has no id")
		}
		if _, dup := ds.Gateway[id]; dup {
			return nil, fmt.Errorf("site.json: gateway %q twice", id)
		}
		gw := ds.addGateway(id)
		if g.X != nil && g.Y != nil && !ds.NoGeometry {
			gw.X, gw.Y, gw.Placed = *g.X, *g.Y, true
		}
	}
	if !ds.NoGeometry {
		ds.Site.Maps[0].PixelsPerMeter = sf.Map.PixelsPerMeter
		if sf.Map.PixelsPerMeter <= 0 {
			ppm, why := inferScale(ds.Site.Zones)
			ds.Site.Maps[0].PixelsPerMeter = ppm
			ds.Notes = append(ds.Notes, why)
		}
	}
	inSite := len(ds.Gateway)
	var train, test []float64
	var dotted, dots int
	if ds.Train, train, dotted, err = ds.readCSV(filepath.Join(dir, "train.csv")); err != nil {
		return nil, err
	}
	if ds.Test, test, dots, err = ds.readCSV(filepath.Join(dir, "test.csv")); err != nil {
		return nil, err
	}
	if n := len(ds.Gateway) - inSite; n > 0 {
		ds.Notes = append(ds.Notes, fmt.Sprintf("%d gateways heard but not in site.json: added unplaced", n))
	}
	scale, unit := timeUnit(append(append([]float64(nil), train...), test...), dotted+dots)
	if unit != "" {
		ds.Notes = append(ds.Notes, unit)
	}
	for _, f := range []struct {
		name string
		rows []Row
		t    []float64
	}{{"train.csv", ds.Train, train}, {"test.csv", ds.Test, test}} {
		for i, v := range f.t {
			ms := v * scale
			if math.Abs(ms) > 1<<53 {
				return nil, fmt.Errorf("%s: t_ms %v out of range", f.name, v)
			}
			f.rows[i].T = int64(math.Round(ms))
		}
		// The format says time order; a merge of several receivers' logs
		// may not quite keep it, and the replay cannot run time backwards.
		sort.SliceStable(f.rows, func(i, j int) bool { return f.rows[i].T < f.rows[j].T })
	}
	// An unlabelled survey row says nothing about any zone.
	ds.Train = slices.DeleteFunc(ds.Train, func(r Row) bool { return r.Zone == "" })
	return ds, nil
}

// addGateway gives id a synthetic MAC and an unplaced gateway.
func (ds *Dataset) addGateway(id string) *rtls.Gateway {
	i := len(ds.Site.Gateways)
	mac := [6]byte{0xAC, 0x23, 0, byte(i >> 16), byte(i >> 8), byte(i)}
	ds.Gateway[id] = mac
	ds.Site.Gateways = append(ds.Site.Gateways, rtls.Gateway{MAC: mac, MapID: mapID})
	return &ds.Site.Gateways[i]
}

// timeUnit reads the unit of t_ms from its magnitude: the contract says
// Unix ms, but exports write Unix seconds (often with decimals),
// microseconds or nanoseconds, and taken as ms a test file of whole
// seconds fell inside the 5 s warm-up and scored nothing. Unix times of
// this century are 1e9..4e9 s, 1e12..4e12 ms, and so on. Times counted
// from the start of a recording are kept as ms unless most are written
// with a decimal point (dotted of them), as seconds usually are and ms
// rarely. It returns the factor to ms and a note ("" for Unix ms).
func timeUnit(ts []float64, dotted int) (float64, string) {
	if len(ts) == 0 {
		return 1, ""
	}
	a := make([]float64, len(ts))
	for i, v := range ts {
		a[i] = math.Abs(v)
	}
	sort.Float64s(a)
	switch med := a[len(a)/2]; {
	case med >= 1e8 && med < 1e11:
		return 1000, "t_ms read as Unix seconds (its magnitude)"
	case med >= 1e14 && med < 1e17:
		return 1e-3, "t_ms read as Unix microseconds (its magnitude)"
	case med >= 1e17:
		return 1e-6, "t_ms read as Unix nanoseconds (its magnitude)"
	case med < 1e8 && dotted > len(ts)/2:
		return 1000, "t_ms read as seconds (relative, with decimals)"
	case med < 1e8:
		return 1, "t_ms read as ms from the recording's start"
	}
	return 1, ""
}

// inferScale picks map units per metre for a site that does not give
// one. The engine's default is 10 (decimetres, as UCI's 10-unit cells),
// and a site drawn in metres with 4 m rooms then has 0.4 m rooms, under
// one of grid's 1 m cells: grid fell from 93% to 19% on the same walk
// drawn in smaller units. A zone is a room or an area of one: its
// shorter side is taken to be 1.5 to 60 m. The first of decimetres,
// metres, centimetres and millimetres that makes the zones' median
// shorter side so is used; with none, the one that makes it 5 m.
func inferScale(zones []rtls.Zone) (float64, string) {
	var sides []float64
	for _, z := range zones {
		sides = append(sides, math.Min(math.Abs(z.X2-z.X1), math.Abs(z.Y2-z.Y1)))
	}
	sort.Float64s(sides)
	s := sides[len(sides)/2]
	ppm := s / 5
	for _, u := range []float64{10, 1, 100, 1000} {
		if m := s / u; m >= 1.5 && m <= 60 {
			ppm = u
			break
		}
	}
	return ppm, fmt.Sprintf("scale %.3g map units a metre, from the zones' median shorter side of %.3g units (set map.pixels_per_meter in site.json to give it)", ppm, s)
}

// readCSV reads one CSV file; each row's time is returned as read, in
// the file's own unit (Load converts both files alike), with how many
// were written with a decimal point.
func (ds *Dataset) readCSV(path string) (rows []Row, ts []float64, dotted int, err error) {
	base := filepath.Base(path)
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, 0, err
	}
	defer f.Close()
	// A byte-order mark goes before the reader sees the header: left
	// in, it made a quoted first name a bare quote in an unquoted field.
	br := bufio.NewReader(f)
	if head, err := br.Peek(len(utf8BOM)); err == nil && bytes.Equal(head, utf8BOM) {
		br.Discard(len(utf8BOM))
	}
	r := csv.NewReader(br)
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	r.ReuseRecord = true
	head, err := r.Read()
	if err == io.EOF {
		return nil, nil, 0, fmt.Errorf("%s: empty file (want the header t_ms,gateway,beacon,rssi,zone,x,y)", base)
	}
	if err != nil {
		return nil, nil, 0, fmt.Errorf("%s: %w", base, err)
	}
	// Spreadsheet exports start with a byte-order mark and may pad or
	// capitalise the header; the columns are still the contract's.
	col := map[string]int{}
	for i, h := range head {
		h = strings.ToLower(strings.TrimSpace(h))
		if _, dup := col[h]; dup && h != "" {
			return nil, nil, 0, fmt.Errorf("%s: column %q twice", base, h)
		}
		col[h] = i
	}
	for _, need := range []string{"t_ms", "gateway", "beacon", "rssi", "zone"} {
		if _, ok := col[need]; !ok {
			return nil, nil, 0, fmt.Errorf("%s: no %q column in the header %q (want comma-separated t_ms,gateway,beacon,rssi,zone,x,y)", base, need, strings.Join(head, ","))
		}
	}
	get := func(rec []string, name string) string {
		if i, ok := col[name]; ok && i < len(rec) {
			return strings.TrimSpace(rec[i])
		}
		return ""
	}
	// Interned: a million rows name a few dozen gateways, beacons and
	// zones, and each string of its own cost its bytes per row.
	intern := map[string]string{}
	in := func(s string) string {
		if v, ok := intern[s]; ok {
			return v
		}
		s = strings.Clone(s)
		intern[s] = s
		return s
	}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		line, _ := r.FieldPos(0)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("%s: %w", base, err)
		}
		tt := get(rec, "t_ms")
		if strings.Contains(tt, ".") {
			dotted++
		}
		t, err := parseNumber(tt)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("%s:%d: t_ms %q: %v", base, line, get(rec, "t_ms"), err)
		}
		rs := get(rec, "rssi")
		rssiF, err := parseNumber(rs)
		if err != nil && rs != "" && !strings.EqualFold(rs, "nan") {
			return nil, nil, 0, fmt.Errorf("%s:%d: rssi %q: %v", base, line, rs, err)
		}
		// A gateway reports whole dBm; a recording may carry averages
		// (halves to even: the mean of two whole readings is not biased).
		rssi := int(math.RoundToEven(rssiF))
		switch {
		case err != nil || rssi == 0 || rssi == -127:
			ds.Markers++
			continue
		case rssi < -127 || rssi > 0:
			ds.Skipped++
			continue
		}
		row := Row{T: 0, Gateway: in(get(rec, "gateway")), Beacon: in(get(rec, "beacon")), RSSI: rssi, Zone: in(get(rec, "zone")),
			Pos: in(get(rec, "x") + "," + get(rec, "y"))}
		if row.Gateway == "" || row.Beacon == "" {
			return nil, nil, 0, fmt.Errorf("%s:%d: no gateway or beacon", base, line)
		}
		if row.Zone == "" {
			ds.Unlabelled++
		} else if _, ok := ds.ZoneID[row.Zone]; !ok {
			return nil, nil, 0, fmt.Errorf("%s:%d: unknown zone %q (not in site.json)", base, line, row.Zone)
		}
		if _, ok := ds.Gateway[row.Gateway]; !ok {
			ds.addGateway(row.Gateway)
		}
		if _, ok := ds.Beacons[row.Beacon]; !ok {
			n := len(ds.Beacons)
			ds.Beacons[row.Beacon] = [6]byte{0xC3, 0, 0, byte(n >> 16), byte(n >> 8), byte(n)}
		}
		rows = append(rows, row)
		ts = append(ts, t)
	}
	return rows, ts, dotted, nil
}

// parseNumber reads an integer or decimal number (a recording may write
// 1591471461645.0 or -67.5).
func parseNumber(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
		err = errors.New("not a finite number")
	}
	return v, err
}

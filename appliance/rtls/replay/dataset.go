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
	"cmp"
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
	"unicode/utf8"

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
	// Unlabelled counts test rows with an empty zone: replayed (the
	// engine hears them), not scored. UnlabelledTrain counts train rows
	// with an empty zone: dropped (a survey sample needs its zone).
	Unlabelled, UnlabelledTrain int
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
		Name name `json:"name"`
		// Tagged so a type error names the file's key ("zones.x1"),
		// not the Go field (a review); matched case-insensitively.
		X1 float64 `json:"x1"`
		Y1 float64 `json:"y1"`
		X2 float64 `json:"x2"`
		Y2 float64 `json:"y2"`
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

// isUTF16 reports a UTF-16 byte-order mark (little or big endian) at
// the start of b.
func isUTF16(b []byte) bool {
	return bytes.HasPrefix(b, []byte{0xFF, 0xFE}) || bytes.HasPrefix(b, []byte{0xFE, 0xFF})
}

// mapID is the one map a replay site has.
const mapID = 1

// Load reads DIR/site.json, DIR/train.csv and DIR/test.csv.
func Load(dir string) (*Dataset, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "site.json"))
	if err != nil {
		return nil, err
	}
	// As the CSVs say it: encoding/json only saw an invalid character
	// 'ÿ' (a review).
	if isUTF16(raw) {
		return nil, errors.New("site.json: UTF-16 text; save it as UTF-8")
	}
	var sf siteFile
	if err := json.Unmarshal(bytes.TrimPrefix(raw, utf8BOM), &sf); err != nil {
		// encoding/json names the Go type it wanted, an anonymous
		// struct dump that tells a dataset's author nothing.
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("site.json: %s is a JSON %s, which does not fit there (docs/rtls.md, contracts/rssi-replay.md)", jsonPath(te.Field), te.Value)
		}
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
		// Named only (an "outside" or "unknown" zone, say): the engine
		// gives such a zone a point at its corner.
		ds.Notes = append(ds.Notes, fmt.Sprintf("%d of %d zones have no area (x1 = x2 or y1 = y2)", flat, len(sf.Zones)))
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
	if ds.Train, train, err = ds.readCSV(filepath.Join(dir, "train.csv")); err != nil {
		return nil, err
	}
	ds.UnlabelledTrain = unlabelled(ds.Train)
	if ds.Test, test, err = ds.readCSV(filepath.Join(dir, "test.csv")); err != nil {
		return nil, err
	}
	ds.Unlabelled = unlabelled(ds.Test)
	if n := len(ds.Gateway) - inSite; n > 0 {
		ds.Notes = append(ds.Notes, fmt.Sprintf("%d gateways heard but not in site.json: added unplaced", n))
	}
	// Each file's unit on its own witnesses (an export may have written
	// the two differently), the other's where a file has none.
	trGap, trShared := pairGap(ds.Train, train)
	teGap, teShared := pairGap(ds.Test, test)
	trUnit, trNote, trOK := timeUnit(train, trGap, trShared > 0.5)
	teUnit, teNote, teOK := timeUnit(test, teGap, teShared > 0.5)
	switch {
	case !trOK && teOK:
		trUnit, trNote = teUnit, teNote
	case trOK && !teOK:
		teUnit, teNote = trUnit, trNote
	}
	if trNote == teNote {
		if trNote != "" {
			ds.Notes = append(ds.Notes, trNote)
		}
	} else {
		for _, f := range []struct{ name, note string }{{"train.csv", trNote}, {"test.csv", teNote}} {
			if f.note == "" {
				f.note = "t_ms read as Unix ms"
			}
			ds.Notes = append(ds.Notes, f.name+": "+f.note)
		}
	}
	for _, f := range []struct {
		name  string
		rows  []Row
		t     []float64
		scale float64
	}{{"train.csv", ds.Train, train, trUnit}, {"test.csv", ds.Test, test, teUnit}} {
		for i, v := range f.t {
			ms := v * f.scale
			if math.Abs(ms) > 1<<53 {
				return nil, fmt.Errorf("%s: t_ms %v out of range", f.name, v)
			}
			f.rows[i].T = int64(math.Round(ms))
		}
		// The format says time order; a merge of several receivers' logs
		// may not quite keep it, and the replay cannot run time backwards.
		sort.SliceStable(f.rows, func(i, j int) bool { return f.rows[i].T < f.rows[j].T })
	}
	if distinct := distinctTimes(ds.Test); len(ds.Test) >= 1000 && distinct < len(ds.Test)/50 {
		ds.Notes = append(ds.Notes, fmt.Sprintf("test.csv has %d distinct times for %d sightings: scans sharing one are spread over the time to the next (docs/rtls.md, Virtual time)", distinct, len(ds.Test)))
	}
	// An unlabelled survey row says nothing about any zone.
	ds.Train = slices.DeleteFunc(ds.Train, func(r Row) bool { return r.Zone == "" })
	return ds, nil
}

// jsonPath names the field of a type error; the whole document when
// encoding/json gives none (the top level is not an object).
func jsonPath(field string) string {
	if field == "" {
		return "the document"
	}
	return "field " + strconv.Quote(field)
}

// unlabelled counts the rows without a zone.
func unlabelled(rows []Row) int {
	n := 0
	for _, r := range rows {
		if r.Zone == "" {
			n++
		}
	}
	return n
}

// distinctTimes counts the distinct times of rows sorted by time.
func distinctTimes(rows []Row) int {
	n := 0
	for i := range rows {
		if i == 0 || rows[i].T != rows[i-1].T {
			n++
		}
	}
	return n
}

// addGateway gives id a synthetic MAC and an unplaced gateway.
func (ds *Dataset) addGateway(id string) *rtls.Gateway {
	i := len(ds.Site.Gateways)
	mac := [6]byte{0xAC, 0x23, 0, byte(i >> 16), byte(i >> 8), byte(i)}
	ds.Gateway[id] = mac
	ds.Site.Gateways = append(ds.Site.Gateways, rtls.Gateway{MAC: mac, MapID: mapID})
	return &ds.Site.Gateways[i]
}

// timeUnit reads the unit of t_ms. The contract says Unix ms, but
// exports write Unix seconds (often with decimals), microseconds,
// nanoseconds, or time since the recorder started or the phone booted;
// taken as ms, a test file of whole Unix seconds fell inside the 5 s
// warm-up and scored nothing. Two witnesses:
//
//   - the magnitude, when it is a Unix time of this century in one unit
//     (1e9..4e9 s, 1e12..4e12 ms, 1e15..4e15 us, 1e18..4e18 ns);
//   - gap, the median time between two sightings of one beacon by one
//     gateway: an advertising and scanning period, which the unit that
//     makes it nearest to a second (on a log scale) reads right from 32
//     ms to 32 s.
//
// The magnitude wins unless it makes gap longer than maxPeriod: ms
// since a phone booted 20 days ago look like Unix seconds, but their
// period of 100 or 1,000 "seconds" is not one. Even then it wins when
// the period's unit would make the whole file shorter than minSpan: a
// gateway of a Unix-ms file that hears a beacon every 40 s has a gap of
// 40,000, a 40 ms period in microseconds, and its hour of recording
// read as microseconds lasted 3.6 s (sessions 22-23 left this open);
// no recording that short is a test of a tracker. A period that is too
// short under the magnitude's unit does not overrule it: a scanner that
// reports an advertisement on each of its three channels a millisecond
// apart has a 1 ms gap in Unix ms, and read as seconds scored 62%
// instead of 92%.
//
// When coarse, most sightings share their stamp with the pair's
// previous one: the stamps are coarser than the period, and gap is
// their resolution. The magnitude then speaks alone; without it, the
// unit that makes the resolution nearest a second (of those that make
// the file last minSpan, if any do: stamps rounded to a minute are not
// ones rounded to 60 ms) reads it, as exporters round to seconds. A file
// of relative whole seconds from a 10 Hz tag was read as ms, with no
// sighting "to judge by", and scored nothing (a review). With no
// witness, ms. It returns the factor to ms and a note ("" for Unix
// ms); ok is false when no witness spoke.
func timeUnit(ts []float64, gap float64, coarse bool) (toMS float64, note string, ok bool) {
	units := []struct {
		toMS     float64
		unix, is string
	}{{1000, "Unix seconds", "seconds"}, {1, "Unix ms", "ms"}, {1e-3, "Unix microseconds", "microseconds"}, {1e-6, "Unix nanoseconds", "nanoseconds"}}
	mag := -1
	span := 0.0
	if len(ts) > 0 {
		a := make([]float64, len(ts))
		for i, v := range ts {
			a[i] = math.Abs(v)
		}
		span = slices.Max(ts) - slices.Min(ts)
		sort.Float64s(a)
		med := a[len(a)/2]
		for i, lo := range []float64{1e9, 1e12, 1e15, 1e18} {
			if med >= lo && med < 4*lo {
				mag = i
			}
		}
	}
	// nearest is the unit that makes v nearest a second, of those
	// that keep the file minSpan long when long (-1 when none does).
	nearest := func(v float64, long bool) int {
		best, at := math.Inf(1), -1
		for i, u := range units {
			if d := math.Abs(math.Log10(v*u.toMS) - 3); d < best && (!long || span*u.toMS >= minSpan) {
				best, at = d, i
			}
		}
		return at
	}
	per := -1
	if gap > 0 && !coarse {
		per = nearest(gap, false)
	}
	switch {
	case mag >= 0 && (per < 0 || per == mag || gap*units[mag].toMS <= maxPeriod || span*units[per].toMS < minSpan):
		if mag == 1 {
			return 1, "", true
		}
		return units[mag].toMS, "t_ms read as " + units[mag].unix + " (its magnitude)", true
	case per >= 0:
		return units[per].toMS, fmt.Sprintf("t_ms read as %s (a gateway hears a beacon every %.3g of them)", units[per].is, gap), true
	case coarse && gap > 0:
		at := nearest(gap, true)
		if at < 0 { // no unit makes the file that long: the nearest of all
			at = nearest(gap, false)
		}
		u := units[at]
		return u.toMS, fmt.Sprintf("t_ms read as %s (stamps coarser than a gateway's sightings of a beacon, %.3g of them apart: read as their resolution)", u.is, gap), true
	case coarse:
		return 1, "t_ms read as ms (no Unix time, and a gateway's repeated sightings of a beacon share their stamp)", false
	}
	return 1, "t_ms read as ms (no Unix time, no repeated sighting to judge by)", false
}

// maxPeriod (ms) is the longest a gateway plausibly goes between two
// sightings of a beacon it keeps hearing: BLE's longest advertising
// interval is 10.24 s, and a gateway that misses one in two still hears
// it within about 20 s.
const maxPeriod = 20_000

// minSpan (ms) is the shortest a recording worth replaying lasts: a
// tracker is judged on zone changes, and UCI's tags change zone every
// 46 s.
const minSpan = 120_000

// pairGap is the median positive time between consecutive sightings of
// one beacon by one gateway in rows (at times t, in the file's own
// unit); 0 when there is none. shared is the share of such sightings
// that have the stamp of the one before (0 with none): over half, the
// stamps are coarser than the period, and the gap is their resolution,
// not a period (Unix ms rounded to 300 s, read by it as microseconds,
// scored nothing).
func pairGap(rows []Row, t []float64) (gap, shared float64) {
	type pair struct{ b, g string }
	type seen struct {
		t    float64
		rssi int
	}
	idx := make([]int, len(rows))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return t[idx[a]] < t[idx[b]] })
	var gaps []float64
	same := 0
	last := map[pair]seen{}
	for _, i := range idx {
		k := pair{rows[i].Beacon, rows[i].Gateway}
		if p, ok := last[k]; ok {
			switch {
			case t[i] > p.t:
				gaps = append(gaps, t[i]-p.t)
			case rows[i].RSSI == p.rssi:
				continue // the same row twice: an export's duplicate, not a sighting
			default:
				same++
			}
		}
		last[k] = seen{t[i], rows[i].RSSI}
	}
	if same > 0 {
		shared = float64(same) / float64(same+len(gaps))
	}
	if len(gaps) == 0 {
		return 0, shared
	}
	sort.Float64s(gaps)
	return gaps[len(gaps)/2], shared
}

// inferScale picks map units per metre for a site that does not give
// one. The engine's default is 10 (decimetres, as UCI's 10-unit cells),
// and a site drawn in metres with 4 m rooms then has 0.4 m rooms, under
// one of grid's 1 m cells: grid fell from 93% to 19% on the same walk
// drawn in smaller units. A zone is a room or an area of one: its
// shorter side is taken to be 1.5 to 60 m, most often a few metres. Of
// decimetres, metres, centimetres and millimetres that make the zones'
// median shorter side so, the one that makes it nearest 5 m on a log
// scale is used; with none, the one that makes it 5 m. The first of
// them in that order read a centimetre site's 4 m rooms (400 units) as
// 40 m ones in decimetres (a review: grid flipped 3.4 times a minute
// instead of never). Units ten times apart leave sides ambiguous: 20
// units are 2 m in decimetres or 20 m in metres, read as the former.
func inferScale(zones []rtls.Zone) (float64, string) {
	var sides []float64
	for _, z := range zones {
		if side := math.Min(math.Abs(z.X2-z.X1), math.Abs(z.Y2-z.Y1)); side > 0 {
			sides = append(sides, side)
		}
	}
	sort.Float64s(sides)
	s := sides[len(sides)/2]
	ppm, best := s/5, math.Inf(1)
	for _, u := range []float64{10, 1, 100, 1000} {
		m := s / u
		if d := math.Abs(math.Log(m / 5)); m >= 1.5 && m <= 60 && d < best {
			ppm, best = u, d
		}
	}
	return ppm, fmt.Sprintf("scale %.3g map units a metre, from the zones' median shorter side of %.3g units (set map.pixels_per_meter in site.json to give it)", ppm, s)
}

// readCSV reads one CSV file; each row's time is returned as read, in
// the file's own unit (Load converts both files alike).
func (ds *Dataset) readCSV(path string) (rows []Row, ts []float64, err error) {
	base := filepath.Base(path)
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	// A byte-order mark goes before the reader sees the header: left
	// in, it made a quoted first name a bare quote in an unquoted field.
	br := bufio.NewReaderSize(f, 64<<10)
	if head, err := br.Peek(len(utf8BOM)); err == nil && bytes.Equal(head, utf8BOM) {
		br.Discard(len(utf8BOM))
	}
	if head, err := br.Peek(2); err == nil && isUTF16(head) {
		return nil, nil, fmt.Errorf("%s: UTF-16 text; save it as UTF-8", base)
	}
	// Old Mac editors end lines with a lone CR, which encoding/csv does
	// not take for a line end: the whole file was one header, and the
	// load failed on a column "g1" named twice (a review). A first line
	// ending in a lone CR marks such a file.
	var src io.Reader = br
	if head, _ := br.Peek(br.Size()); crOnly(head) {
		src = crToLF{br}
	}
	r := csv.NewReader(src)
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	r.ReuseRecord = true
	head, err := r.Read()
	if err == io.EOF {
		return nil, nil, fmt.Errorf("%s: empty file (want the header t_ms,gateway,beacon,rssi,zone,x,y)", base)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", base, err)
	}
	// The header goes into error messages: a binary or UTF-16 file's
	// would fill the terminal.
	shown := strings.Join(head, ",")
	if len(shown) > 80 || !utf8.ValidString(shown) || strings.ContainsFunc(shown, func(r rune) bool { return r < ' ' }) {
		shown = strconv.QuoteToASCII(shown[:min(len(shown), 24)]) + "..."
	}
	// Spreadsheet exports start with a byte-order mark and may pad or
	// capitalise the header; the columns are still the contract's.
	col := map[string]int{}
	for i, h := range head {
		h = strings.ToLower(strings.TrimSpace(h))
		if _, dup := col[h]; dup && h != "" {
			return nil, nil, fmt.Errorf("%s: column %q twice", base, h)
		}
		col[h] = i
	}
	for _, need := range required {
		if _, ok := col[need]; !ok {
			return nil, nil, fmt.Errorf("%s: no %q column in the header %s (want comma-separated t_ms,gateway,beacon,rssi,zone,x,y)", base, need, shown)
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
	var rssis []float64 // as read, for dropDuplicates
	blank := 0
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			// A *csv.ParseError names its line; FieldPos may not be
			// asked about a record that failed to parse (it panics).
			return nil, nil, fmt.Errorf("%s: %w", base, err)
		}
		line, _ := r.FieldPos(0)
		// A spreadsheet's ",,,,,," rows after the data, or a line of
		// spaces, hold no sighting; they failed the load (a review).
		if !slices.ContainsFunc(rec, func(f string) bool { return strings.TrimSpace(f) != "" }) {
			blank++
			continue
		}
		if err := rowFits(rec, head, col); err != nil {
			return nil, nil, fmt.Errorf("%s:%d: %v", base, line, err)
		}
		tt := get(rec, "t_ms")
		t, err := parseNumber(tt)
		if err != nil {
			return nil, nil, fmt.Errorf("%s:%d: t_ms %q: %v", base, line, get(rec, "t_ms"), err)
		}
		rs := get(rec, "rssi")
		rssiF, err := parseNumber(rs)
		// An infinity, or a number too large to convert to an int, is
		// a value outside the contract's range: skipped and counted as
		// the docs say ("-inf" failed the load as not a finite number,
		// a review).
		huge := math.IsInf(rssiF, 0) || math.Abs(rssiF) >= 1e6
		if err != nil && !huge && rs != "" && !strings.EqualFold(rs, "nan") {
			return nil, nil, fmt.Errorf("%s:%d: rssi %q: %v", base, line, rs, err)
		}
		// A gateway reports whole dBm; a recording may carry averages
		// (halves to even: the mean of two whole readings is not biased).
		rssi := 0
		if !huge {
			rssi = int(math.RoundToEven(rssiF))
		}
		switch {
		case huge:
			ds.Skipped++
			continue
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
			return nil, nil, fmt.Errorf("%s:%d: no gateway or beacon", base, line)
		}
		if _, ok := ds.ZoneID[row.Zone]; !ok && row.Zone != "" {
			return nil, nil, fmt.Errorf("%s:%d: unknown zone %q (not in site.json)", base, line, row.Zone)
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
		rssis = append(rssis, rssiF)
	}
	if blank > 0 {
		ds.Notes = append(ds.Notes, fmt.Sprintf("%s: %d empty rows skipped", base, blank))
	}
	// An export's duplicate is not a second sighting: it was replayed,
	// trained on and scored twice, while pairGap already took it for a
	// duplicate (a review). Only where the stamps part a gateway's
	// sightings of a beacon: where they share stamps, two sightings
	// may well read alike (a 10 Hz tag stamped in whole seconds would
	// lose half its rows).
	if _, shared := pairGap(rows, ts); shared < maxSharedForDuplicates {
		var dups int
		if rows, ts, dups = dropDuplicates(rows, ts, rssis); dups > 0 {
			ds.Notes = append(ds.Notes, fmt.Sprintf("%s: %d rows that repeat an earlier row field for field dropped as an export's duplicates", base, dups))
		}
	}
	return rows, ts, nil
}

// maxSharedForDuplicates: in a file where fewer of a gateway's
// sightings of a beacon than this share the stamp of the one before,
// the stamps part sightings, and a row repeated field for field is a
// duplicate rather than a second sighting that read alike.
const maxSharedForDuplicates = 0.1

// dropDuplicates drops each row equal in every field (times and RSSI
// as numbers) to an earlier row of the file, and counts them. Sorted
// rather than hashed: a map of a million rows' keys cost more than the
// rows.
func dropDuplicates(rows []Row, ts, rssi []float64) ([]Row, []float64, int) {
	idx := make([]int, len(rows))
	for i := range idx {
		idx[i] = i
	}
	order := func(a, b int) int {
		ra, rb := &rows[a], &rows[b]
		if c := cmp.Compare(ts[a], ts[b]); c != 0 {
			return c
		}
		if c := cmp.Compare(rssi[a], rssi[b]); c != 0 {
			return c
		}
		if c := strings.Compare(ra.Beacon, rb.Beacon); c != 0 {
			return c
		}
		if c := strings.Compare(ra.Gateway, rb.Gateway); c != 0 {
			return c
		}
		if c := strings.Compare(ra.Zone, rb.Zone); c != 0 {
			return c
		}
		return strings.Compare(ra.Pos, rb.Pos)
	}
	// By file order among equals, so the first of them is kept.
	slices.SortFunc(idx, func(a, b int) int { return cmp.Or(order(a, b), cmp.Compare(a, b)) })
	drop := make([]bool, len(rows))
	n := 0
	for k := 1; k < len(idx); k++ {
		if order(idx[k-1], idx[k]) == 0 {
			drop[idx[k]] = true
			n++
		}
	}
	if n == 0 {
		return rows, ts, 0
	}
	j := 0
	for i := range rows {
		if !drop[i] {
			rows[j], ts[j] = rows[i], ts[i]
			j++
		}
	}
	return rows[:j], ts[:j], n
}

// crOnly reports whether the first line of head ends in a lone CR.
func crOnly(head []byte) bool {
	i := bytes.IndexAny(head, "\r\n")
	return i >= 0 && head[i] == '\r' && i+1 < len(head) && head[i+1] != '\n'
}

// crToLF reads a file of CR-ended lines as LF-ended ones.
type crToLF struct{ r io.Reader }

func (c crToLF) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	for i, b := range p[:n] {
		if b == '\r' {
			p[i] = '\n'
		}
	}
	return n, err
}

// required are the contract's columns every row must reach; x and y
// may be empty, and a row may leave them out.
var required = []string{"t_ms", "gateway", "beacon", "rssi", "zone"}

// rowFits refuses a row cut short before a required column, or one with
// fields past the header's that are not empty (an exporter's trailing
// commas are). Such a row read as unlabelled, or as a not-heard marker,
// and changed the scores without a word (a review).
func rowFits(rec, head []string, col map[string]int) error {
	for _, name := range required {
		if col[name] >= len(rec) {
			return fmt.Errorf("%d fields, the header has %d: no %s", len(rec), len(head), name)
		}
	}
	for _, f := range rec[min(len(head), len(rec)):] {
		if strings.TrimSpace(f) != "" {
			return fmt.Errorf("%d fields, the header has %d", len(rec), len(head))
		}
	}
	return nil
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

// WithoutGateways takes the gateways ids (site.json's or the files')
// out of ds: out of the site, and their rows out of both files, as if
// they had never been installed (a scan only they heard is gone too). It
// answers "how well would the site track with fewer gateways" on a
// recording made with more, and makes recordings where the baselines
// score lower from a real one (docs/performance.md). An id ds does not
// know, or taking out every gateway, is an error.
func (ds *Dataset) WithoutGateways(ids []string) error {
	drop := map[[6]byte]bool{}
	for _, id := range ids {
		mac, ok := ds.Gateway[id]
		if !ok {
			return fmt.Errorf("gateway %q is not in the recording", id)
		}
		drop[mac] = true
	}
	if len(drop) == 0 {
		return nil
	}
	if len(drop) == len(ds.Gateway) {
		return errors.New("every gateway taken out")
	}
	keep := func(rows []Row) ([]Row, int) {
		out := rows[:0]
		for _, r := range rows {
			if !drop[ds.Gateway[r.Gateway]] {
				out = append(out, r)
			}
		}
		return out, len(rows) - len(out)
	}
	var nTrain, nTest int
	ds.Train, nTrain = keep(ds.Train)
	ds.Test, nTest = keep(ds.Test)
	ds.Site.Gateways = slices.DeleteFunc(ds.Site.Gateways, func(g rtls.Gateway) bool { return drop[g.MAC] })
	for _, id := range ids {
		delete(ds.Gateway, id)
	}
	ds.Unlabelled = unlabelled(ds.Test)
	ds.Notes = append(ds.Notes, fmt.Sprintf("without gateways %s: %d train and %d test rows left out", strings.Join(ids, ", "), nTrain, nTest))
	return nil
}

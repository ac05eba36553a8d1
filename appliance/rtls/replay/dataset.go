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
	Zone    string
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
}

type siteFile struct {
	Map struct {
		Width  float64 `json:"width"`
		Height float64 `json:"height"`
	} `json:"map"`
	Zones []struct {
		Name           string `json:"name"`
		X1, Y1, X2, Y2 float64
	} `json:"zones"`
	Adjacency [][]string `json:"adjacency"`
	Gateways  []struct {
		ID string   `json:"id"`
		X  *float64 `json:"x"`
		Y  *float64 `json:"y"`
	} `json:"gateways"`
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
	for i, z := range sf.Zones {
		if z.Name == "" {
			return nil, fmt.Errorf("site.json: zone %d has no name", i)
		}
		if _, dup := ds.ZoneID[z.Name]; dup {
			return nil, fmt.Errorf("site.json: zone %q twice", z.Name)
		}
		id := uint64(i + 1)
		ds.ZoneID[z.Name], ds.ZoneName[id] = id, z.Name
		ds.Site.Zones = append(ds.Site.Zones, rtls.Zone{ID: id, MapID: mapID, Name: z.Name, X1: z.X1, Y1: z.Y1, X2: z.X2, Y2: z.Y2})
	}
	for _, pair := range sf.Adjacency {
		if len(pair) != 2 {
			return nil, errors.New("site.json: adjacency entries are pairs")
		}
		a, okA := ds.ZoneID[pair[0]]
		b, okB := ds.ZoneID[pair[1]]
		if !okA || !okB {
			return nil, fmt.Errorf("site.json: adjacency names an unknown zone in %v", pair)
		}
		ds.Site.Zones[a-1].Adjacent = append(ds.Site.Zones[a-1].Adjacent, b)
		ds.Site.Zones[b-1].Adjacent = append(ds.Site.Zones[b-1].Adjacent, a)
	}
	for i, g := range sf.Gateways {
		mac := [6]byte{0xAC, 0x23, 0, 0, byte(i >> 8), byte(i)}
		ds.Gateway[g.ID] = mac
		gw := rtls.Gateway{MAC: mac, MapID: mapID}
		if g.X != nil && g.Y != nil {
			gw.X, gw.Y, gw.Placed = *g.X, *g.Y, true
		}
		ds.Site.Gateways = append(ds.Site.Gateways, gw)
	}
	if ds.Train, err = ds.readCSV(filepath.Join(dir, "train.csv")); err != nil {
		return nil, err
	}
	if ds.Test, err = ds.readCSV(filepath.Join(dir, "test.csv")); err != nil {
		return nil, err
	}
	return ds, nil
}

func (ds *Dataset) readCSV(path string) ([]Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
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
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	// Spreadsheet exports start with a byte-order mark and may pad or
	// capitalise the header; the columns are still the contract's.
	col := map[string]int{}
	for i, h := range head {
		col[strings.ToLower(strings.TrimSpace(h))] = i
	}
	for _, need := range []string{"t_ms", "gateway", "beacon", "rssi", "zone"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("%s: no %q column", filepath.Base(path), need)
		}
	}
	get := func(rec []string, name string) string {
		if i, ok := col[name]; ok && i < len(rec) {
			return strings.TrimSpace(rec[i])
		}
		return ""
	}
	var rows []Row
	for line := 2; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
		}
		t, err := parseNumber(get(rec, "t_ms"))
		if err == nil && math.Abs(t) > 1<<53 {
			err = errors.New("out of range")
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: t_ms %q: %v", filepath.Base(path), line, get(rec, "t_ms"), err)
		}
		rssiF, err := parseNumber(get(rec, "rssi"))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: rssi %q: %v", filepath.Base(path), line, get(rec, "rssi"), err)
		}
		// A gateway reports whole dBm; a recording may carry averages
		// (halves to even: the mean of two whole readings is not biased).
		rssi := int(math.RoundToEven(rssiF))
		if rssi < -127 || rssi > 0 {
			ds.Skipped++
			continue
		}
		row := Row{T: int64(math.Round(t)), Gateway: get(rec, "gateway"), Beacon: get(rec, "beacon"), RSSI: rssi, Zone: get(rec, "zone"),
			Pos: get(rec, "x") + "," + get(rec, "y")}
		if _, ok := ds.ZoneID[row.Zone]; !ok {
			return nil, fmt.Errorf("%s:%d: unknown zone %q", filepath.Base(path), line, row.Zone)
		}
		if _, ok := ds.Gateway[row.Gateway]; !ok {
			return nil, fmt.Errorf("%s:%d: unknown gateway %q", filepath.Base(path), line, row.Gateway)
		}
		if _, ok := ds.Beacons[row.Beacon]; !ok {
			n := len(ds.Beacons)
			ds.Beacons[row.Beacon] = [6]byte{0xC3, 0, 0, 0, byte(n >> 8), byte(n)}
		}
		rows = append(rows, row)
	}
	// The format says time order; a merge of several receivers' logs
	// may not quite keep it, and the replay cannot run time backwards.
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].T < rows[j].T })
	return rows, nil
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

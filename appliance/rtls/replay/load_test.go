package replay

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// loadBody loads dir with test.csv replaced by body.
func loadBody(t *testing.T, dir, body string) *Dataset {
	t.Helper()
	writeFile(t, filepath.Join(dir, "test.csv"), body)
	ds, err := Load(dir)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return ds
}

// hasNote reports whether a note of ds contains s.
func hasNote(ds *Dataset, s string) bool {
	for _, n := range ds.Notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// TestLoadReadsCROnlyLines: a file of old Mac line ends (a lone CR)
// reads as the same file with LF (a review: read as one header line,
// it failed on a column "g1" named twice).
func TestLoadReadsCROnlyLines(t *testing.T) {
	dir := writeDataset(t, true)
	b, err := os.ReadFile(filepath.Join(dir, "test.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lf := loadBody(t, dir, string(b))
	cr := loadBody(t, dir, strings.ReplaceAll(string(b), "\n", "\r"))
	if len(lf.Test) != 180 || !reflect.DeepEqual(lf.Test, cr.Test) || !reflect.DeepEqual(lf.Notes, cr.Notes) {
		t.Fatalf("CR-only: %d rows, notes %q; LF: %d rows, notes %q", len(cr.Test), cr.Notes, len(lf.Test), lf.Notes)
	}
	// A lone CR inside a quoted field of an LF file stays as it is.
	ds := loadBody(t, dir, "t_ms,gateway,beacon,rssi,zone\n1000,G1,\"B\rC\",-60,Z1\n")
	if len(ds.Test) != 1 || ds.Test[0].Beacon != "B\rC" {
		t.Fatalf("CR in a field of an LF file: %+v", ds.Test)
	}
}

// TestLoadSkipsEmptyRows: a spreadsheet's ",,,,,," rows and a line of
// spaces hold no sighting; they are skipped with a note (a review: they
// failed the load as short rows).
func TestLoadSkipsEmptyRows(t *testing.T) {
	dir := writeDataset(t, true)
	ds := loadBody(t, dir, "t_ms,gateway,beacon,rssi,zone,x,y\n1000,G1,B,-60,Z1,5,5\n,,,,,,\n   \n , ,,\t,,,\n2000,G1,B,-61,Z1,5,5\n,,,,,,\n")
	if len(ds.Test) != 2 || !hasNote(ds, "test.csv: 4 empty rows skipped") {
		t.Fatalf("rows %+v, notes %q", ds.Test, ds.Notes)
	}
	// Without any, no note.
	ds = loadBody(t, dir, "t_ms,gateway,beacon,rssi,zone,x,y\n1000,G1,B,-60,Z1,5,5\n")
	if hasNote(ds, "empty rows") {
		t.Fatalf("notes %q", ds.Notes)
	}
}

// TestLoadDropsDuplicateRows: a row repeated field for field is an
// export's duplicate, not a second sighting: dropped and counted (a
// review: replayed, trained on and scored twice, while pairGap already
// skipped it). Where a gateway's sightings of a beacon share stamps,
// two real sightings may read alike, and rows are kept.
func TestLoadDropsDuplicateRows(t *testing.T) {
	dir := writeDataset(t, true)
	b, err := os.ReadFile(filepath.Join(dir, "test.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSpace(string(b)), "\n")
	plain := loadBody(t, dir, string(b))
	// Every row twice, the copies after the file (as two exports
	// appended), one written as a decimal.
	doubled := strings.Join(lines, "") + "\n" + strings.Replace(strings.Join(lines[1:], ""), ",G1,", ".0,G1,", 1)
	ds := loadBody(t, dir, doubled)
	if !reflect.DeepEqual(ds.Test, plain.Test) || !hasNote(ds, "test.csv: 180 rows that repeat an earlier row field for field dropped") {
		t.Fatalf("%d rows (want 180), notes %q", len(ds.Test), ds.Notes)
	}
	// A field apart is another row: the position, the zone, the RSSI.
	ds = loadBody(t, dir, "t_ms,gateway,beacon,rssi,zone,x,y\n1000,G1,B,-60,Z1,5,5\n1000,G1,B,-60,Z1,5,6\n1000,G1,B,-60,Z2,5,5\n1000,G1,B,-60.4,Z1,5,5\n2000,G1,B,-60,Z1,5,5\n1000,G1,B,-60,Z1,5,5\n")
	if len(ds.Test) != 5 || !hasNote(ds, "test.csv: 1 rows that repeat") {
		t.Fatalf("rows %+v, notes %q", ds.Test, ds.Notes)
	}
	// Five sightings a second by each gateway, stamped in whole
	// seconds: equal rows are expected, and kept.
	var c strings.Builder
	c.WriteString("t_ms,gateway,beacon,rssi,zone,x,y\n")
	for s := 0; s < 60; s++ {
		for k := 0; k < 5; k++ {
			for g := 1; g <= 3; g++ {
				fmt.Fprintf(&c, "%d,G%d,B,%d,Z1,50,50\n", s, g, -60-10*g-k%2)
			}
		}
	}
	ds = loadBody(t, dir, c.String())
	if len(ds.Test) != 900 || hasNote(ds, "repeat an earlier row") {
		t.Fatalf("coarse stamps: %d rows (want 900), notes %q", len(ds.Test), ds.Notes)
	}
}

// TestLoadReadsCoarseRelativeSeconds: relative whole seconds, a
// gateway hearing a beacon several times a second. Most of a pair's
// sightings share a stamp, so the gap is the stamps' resolution: read
// as a second, not as ms (a review: read as ms, "no repeated sighting
// to judge by", and nothing was scored).
func TestLoadReadsCoarseRelativeSeconds(t *testing.T) {
	dir := writeDataset(t, true)
	var c strings.Builder
	c.WriteString("t_ms,gateway,beacon,rssi,zone,x,y\n")
	for s := 0; s < 60; s++ {
		for k := 0; k < 10; k++ {
			for g := 1; g <= 3; g++ {
				rssi := -80 - k
				if g == 1+s/20 {
					rssi = -60 - k
				}
				fmt.Fprintf(&c, "%d,G%d,TAG,%d,Z%d,50,50\n", s, g, rssi, 1+s/20)
			}
		}
	}
	writeFile(t, filepath.Join(dir, "train.csv"), c.String())
	ds := loadBody(t, dir, c.String())
	if last := ds.Test[len(ds.Test)-1].T; last != 59_000 || !hasNote(ds, "t_ms read as seconds (stamps coarser") || hasNote(ds, "no repeated sighting") {
		t.Fatalf("last row at %d ms (want 59000), notes %q", last, ds.Notes)
	}
	rs, err := Run(ds, Options{Algorithms: []string{"strongest"}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r := rs[0]; r.Scored != 1650 || r.Corrected != 2 || r.Accuracy() < 0.8 {
		t.Fatalf("%+v", r)
	}
}

// TestUnsurveyedNote: zones scored in test.csv without a survey sample
// are named with their share of the scored sightings (a review: a
// survey that missed a zone went without a word).
func TestUnsurveyedNote(t *testing.T) {
	dir := writeDataset(t, true)
	ds, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := UnsurveyedNote(ds, DefaultWarmup, time.Minute); n != "" {
		t.Fatalf("every zone surveyed: %q", n)
	}
	// Z3's last 20 s out of the survey: 60 of the 165 scored sightings.
	var train []Row
	for _, r := range ds.Train {
		if r.Zone != "Z3" {
			train = append(train, r)
		}
	}
	ds.Train = train
	if n, want := UnsurveyedNote(ds, DefaultWarmup, time.Minute), "zones with no survey samples in train.csv: Z3 (36% of scored test sightings)"; n != want {
		t.Fatalf("note %q, want %q", n, want)
	}
	// Z1's rows in the warm-up are not scored: 45 of Z1's 60 are.
	ds.Train = nil
	if n, want := UnsurveyedNote(ds, DefaultWarmup, time.Minute), "zones with no survey samples in train.csv: Z1, Z2, Z3 (100% of scored test sightings)"; n != want {
		t.Fatalf("note %q, want %q", n, want)
	}
}

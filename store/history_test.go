package store

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// ---- helpers ----

// raceEnabled scales heavy tests down under the race detector (only the
// listed files may be added to this package, so no build-tagged file).
var raceEnabled = func() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}()

func openTestDB(t testing.TB) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "beaconhub.db"), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func reopen(t testing.TB, db *DB) *DB {
	t.Helper()
	path := db.Path()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2, err := Open(path, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db2.Close() })
	return db2
}

func mustPut(t testing.TB, db *DB, rs []Reading) int {
	t.Helper()
	var n int
	if err := db.Update(func(tx *bolt.Tx) error {
		var err error
		n, err = PutReadings(tx, rs)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

type tsv struct {
	ts int64
	v  float64
}

func queryAll(t testing.TB, db *DB, uid string, m uint8, from, to int64) []tsv {
	t.Helper()
	var out []tsv
	if err := db.QueryHistory(uid, m, from, to, func(ts int64, v float64) bool {
		out = append(out, tsv{ts, v})
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func queryRev(t testing.TB, db *DB, uid string, m uint8, from, to int64) []tsv {
	t.Helper()
	var out []tsv
	if err := db.QueryHistoryReverse(uid, m, from, to, func(ts int64, v float64) bool {
		out = append(out, tsv{ts, v})
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// model is the brute-force reference: series -> ts -> fixed-point value.
type model map[seriesID]map[int64]int64

// put mirrors putReadings: the first value stored for a timestamp wins.
func (m model) put(rs []Reading) {
	for _, r := range rs {
		id := seriesID{r.UID, r.Metric}
		if m[id] == nil {
			m[id] = map[int64]int64{}
		}
		if _, ok := m[id][r.TS]; !ok {
			m[id][r.TS] = toFixed(r.Value)
		}
	}
}

func (m model) rangeOf(id seriesID, from, to int64) []tsv {
	var out []tsv
	for ts, v := range m[id] {
		if ts >= from && ts < to {
			out = append(out, tsv{ts, fromFixed(v)})
		}
	}
	slices.SortFunc(out, func(a, b tsv) int { return cmpInt(a.ts, b.ts) })
	return out
}

func (m model) move(from, to string, after int64, keepDest bool) int {
	moved := 0
	for id, s := range m {
		if id.uid != from {
			continue
		}
		dst := seriesID{to, id.metric}
		for ts, v := range s {
			if ts <= after {
				continue
			}
			if m[dst] == nil {
				m[dst] = map[int64]int64{}
			}
			if _, ok := m[dst][ts]; !ok || !keepDest {
				m[dst][ts] = v
			}
			delete(s, ts)
			moved++
		}
	}
	m.prune()
	return moved
}

func (m model) prune() {
	maps.DeleteFunc(m, func(_ seriesID, s map[int64]int64) bool { return len(s) == 0 })
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func reverse(in []tsv) []tsv {
	out := slices.Clone(in)
	slices.Reverse(out)
	return out
}

func equalTSV(a, b []tsv) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func diffTSV(a, b []tsv) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("first difference at %d: got %v want %v (len %d vs %d)", i, a[i], b[i], len(a), len(b))
		}
	}
	return fmt.Sprintf("len %d vs %d", len(a), len(b))
}

// checkModel compares every series of the database with the model:
// full scans, HistorySeries and LatestReadings.
func checkModel(t *testing.T, db *DB, m model) {
	t.Helper()
	checkHistoryInvariants(t, db)
	series, err := db.HistorySeries()
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != len(m) {
		t.Fatalf("HistorySeries: %d series, model has %d", len(series), len(m))
	}
	latest, err := db.LatestReadings()
	if err != nil {
		t.Fatal(err)
	}
	if len(latest) != len(m) {
		t.Fatalf("LatestReadings: %d, model has %d series", len(latest), len(m))
	}
	for i, s := range series {
		id := seriesID{s.UID, s.Metric}
		want := m.rangeOf(id, 0, math.MaxInt64)
		if len(want) == 0 {
			t.Fatalf("HistorySeries lists %v, model has no readings", id)
		}
		if s.Count != len(want) || s.First != want[0].ts || s.Last != want[len(want)-1].ts {
			t.Fatalf("HistorySeries %+v, model count %d first %d last %d", s, len(want), want[0].ts, want[len(want)-1].ts)
		}
		got := queryAll(t, db, s.UID, s.Metric, 0, math.MaxInt64)
		if !equalTSV(got, want) {
			t.Fatalf("%v: %s", id, diffTSV(got, want))
		}
		l := latest[i]
		if l.UID != s.UID || l.Metric != s.Metric || l.TS != want[len(want)-1].ts || l.Value != want[len(want)-1].v {
			t.Fatalf("LatestReadings[%d] = %+v, want %v %v", i, l, id, want[len(want)-1])
		}
		if err := db.View(func(tx *bolt.Tx) error {
			one, ok, err := LatestReading(tx, s.UID, s.Metric)
			if err != nil || !ok || one != l {
				return fmt.Errorf("LatestReading(%v) = %+v %v %v, want %+v", id, one, ok, err, l)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	checkHistoryInvariants(t, db)
}

// checkHistoryInvariants verifies the layout rules documented in history.go.
func checkHistoryInvariants(t *testing.T, db *DB) {
	t.Helper()
	err := db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bHistory)
		heads := map[string]blockHdr{}
		closedLast := map[string]int64{}
		var prevPrefix []byte
		var prevLast int64
		return b.ForEach(func(k, v []byte) error {
			pts, h, err := decodeBlock(nil, v)
			if err != nil {
				return fmt.Errorf("%q: %w", k, err)
			}
			if len(pts) != h.count || pts[0].ts != h.first || pts[len(pts)-1].ts != h.last || pts[len(pts)-1].v != h.lastV {
				return fmt.Errorf("%q: header %+v does not match payload", k, h)
			}
			if h.count > 1 && h.lastDelta != pts[len(pts)-1].ts-pts[len(pts)-2].ts {
				return fmt.Errorf("%q: lastDelta %d wrong", k, h.lastDelta)
			}
			if k[0] == 0 {
				if _, _, ok := parseHeadKey(k); !ok {
					return fmt.Errorf("bad head key %q", k)
				}
				if h.count >= histHeadCap {
					return fmt.Errorf("head %q holds %d readings", k, h.count)
				}
				heads[string(k[1:])] = h
				return nil
			}
			um, ok := parseClosedKey(k)
			if !ok {
				return fmt.Errorf("bad closed key %q", k)
			}
			if keyStart(k) != h.first {
				return fmt.Errorf("%q: key start %d, first reading %d", k, keyStart(k), h.first)
			}
			if h.count > histBlockCap {
				return fmt.Errorf("%q: %d readings > cap", k, h.count)
			}
			if bytes.Equal(um, prevPrefix) && h.first <= prevLast {
				return fmt.Errorf("%q: overlaps previous block (first %d ≤ %d)", k, h.first, prevLast)
			}
			prevPrefix = append(prevPrefix[:0], um...)
			prevLast = h.last
			closedLast[string(um)] = h.last
			if hh, ok := heads[string(um)]; ok && hh.first <= h.last {
				return fmt.Errorf("%q: head starts at %d, not after closed block ending %d", k, hh.first, h.last)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// ---- tests ----

func TestHistoryRoundTrip(t *testing.T) {
	db := openTestDB(t)
	values := []float64{23.45, -12.34, -0.01, 0, 0.01, 99.99, 100, -40.5, 2987, 3012.5, 21.456, -21.455, 1e9, -1e9, 55.55, 12.345}
	var rs []Reading
	base := int64(1_700_000_000_000)
	for i, v := range values {
		rs = append(rs, Reading{UID: "SEN-B1F2-3", Metric: MetricTemperature, TS: base + int64(i)*60_000 + int64(i%3)*7, Value: v})
	}
	if n := mustPut(t, db, rs); n != len(rs) {
		t.Fatalf("stored %d, want %d", n, len(rs))
	}
	got := queryAll(t, db, "SEN-B1F2-3", MetricTemperature, 0, math.MaxInt64)
	if len(got) != len(rs) {
		t.Fatalf("got %d readings", len(got))
	}
	for i, r := range rs {
		want := math.Round(r.Value*100) / 100
		if got[i].ts != r.TS || got[i].v != want {
			t.Errorf("reading %d: got %v, want ts %d value %v", i, got[i], r.TS, want)
		}
		if math.Abs(got[i].v-r.Value) > 0.005+1e-9 {
			t.Errorf("reading %d: %v is not within 0.005 of %v", i, got[i].v, r.Value)
		}
	}
	// Other metrics and a uid that is a prefix of this one stay separate.
	if got := queryAll(t, db, "SEN-B1F2", MetricTemperature, 0, math.MaxInt64); len(got) != 0 {
		t.Fatalf("prefix uid sees %d readings", len(got))
	}
	if got := queryAll(t, db, "SEN-B1F2-3", MetricHumidity, 0, math.MaxInt64); len(got) != 0 {
		t.Fatalf("other metric sees %d readings", len(got))
	}
	checkHistoryInvariants(t, db)
}

func TestHistoryValidation(t *testing.T) {
	db := openTestDB(t)
	long := string(bytes.Repeat([]byte("x"), MaxUIDLen+1))
	bad := []Reading{
		{UID: "", Metric: 1, TS: 1},
		{UID: long, Metric: 1, TS: 1},
		{UID: "a\x00b", Metric: 1, TS: 1},
		{UID: "a", Metric: 0, TS: 1},
		{UID: "a", Metric: 1, TS: -1},
		{UID: "a", Metric: 1, TS: 1, Value: math.NaN()},
		{UID: "a", Metric: 1, TS: 1, Value: math.Inf(1)},
	}
	for _, r := range bad {
		err := db.Update(func(tx *bolt.Tx) error {
			_, err := PutReadings(tx, []Reading{{UID: "ok", Metric: 1, TS: 5}, r})
			return err
		})
		if !errors.Is(err, ErrInvalidReading) {
			t.Errorf("%+v: err = %v, want ErrInvalidReading", r, err)
		}
	}
	if got := queryAll(t, db, "ok", 1, 0, math.MaxInt64); len(got) != 0 {
		t.Fatalf("a rejected batch stored %d readings", len(got))
	}
	ok := string(bytes.Repeat([]byte("y"), MaxUIDLen))
	mustPut(t, db, []Reading{{UID: ok, Metric: 255, TS: 0, Value: -1e12}})
	if got := queryAll(t, db, ok, 255, 0, 1); len(got) != 1 || got[0].v != -1e12 {
		t.Fatalf("edge reading: %v", got)
	}
	if err := db.View(func(tx *bolt.Tx) error {
		if _, ok, err := LatestReading(tx, "nobody", 1); ok || err != nil {
			return fmt.Errorf("LatestReading of an unknown series: %v %v", ok, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryHistory("a\x00", 1, 0, 1, func(int64, float64) bool { return true }); !errors.Is(err, ErrInvalidReading) {
		t.Fatalf("query with bad uid: %v", err)
	}
}

func TestHistoryOutOfOrder(t *testing.T) {
	db := openTestDB(t)
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 3000
	base := int64(1_700_000_000_000)
	rs := make([]Reading, n)
	for i := range rs {
		rs[i] = Reading{UID: "SEN-1", Metric: MetricHumidity, TS: base + int64(i)*60_000 + rng.Int64N(2000), Value: 40 + float64(i%500)/100}
	}
	m := model{}
	// In order first for half, then the other half shuffled in small batches:
	// lands in heads, sealed blocks and the middle of full blocks.
	m.put(rs[:n/2])
	mustPut(t, db, rs[:n/2])
	rest := slices.Clone(rs[n/2:])
	rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	for len(rest) > 0 {
		k := min(len(rest), 1+rng.IntN(40))
		m.put(rest[:k])
		mustPut(t, db, rest[:k])
		rest = rest[k:]
	}
	// Late readings older than everything.
	early := []Reading{{UID: "SEN-1", Metric: MetricHumidity, TS: base - 5, Value: 1}, {UID: "SEN-1", Metric: MetricHumidity, TS: 0, Value: 2}}
	m.put(early)
	mustPut(t, db, early)
	checkModel(t, db, m)
}

func TestHistoryDuplicates(t *testing.T) {
	db := openTestDB(t)
	var rs []Reading
	for i := range 700 {
		rs = append(rs, Reading{UID: "SEN-D", Metric: MetricBattery, TS: int64(i) * 1000, Value: 2900 + float64(i%7)})
	}
	if n := mustPut(t, db, rs); n != len(rs) {
		t.Fatalf("first put stored %d", n)
	}
	if n := mustPut(t, db, rs); n != 0 {
		t.Fatalf("replaying the batch stored %d readings", n)
	}
	// Same timestamps with other values: the stored value wins.
	changed := slices.Clone(rs)
	for i := range changed {
		changed[i].Value = -1
	}
	if n := mustPut(t, db, changed[100:150]); n != 0 {
		t.Fatalf("conflicting duplicates stored %d", n)
	}
	// Duplicates inside one batch: the first wins.
	if n := mustPut(t, db, []Reading{
		{UID: "SEN-D", Metric: MetricBattery, TS: 1_000_000, Value: 1},
		{UID: "SEN-D", Metric: MetricBattery, TS: 1_000_000, Value: 2},
	}); n != 1 {
		t.Fatalf("in-batch duplicates stored %d", n)
	}
	m := model{}
	m.put(rs)
	m.put([]Reading{{UID: "SEN-D", Metric: MetricBattery, TS: 1_000_000, Value: 1}})
	checkModel(t, db, m)
}

// blockBounds returns every interesting timestamp of a series' layout: the
// first and last reading of each block, ±1.
func blockBounds(t *testing.T, db *DB, uid string, metric uint8) []int64 {
	t.Helper()
	var out []int64
	err := db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bHistory)
		s := seriesRef{b: b, head: headKey(uid, metric)}
		add := func(v []byte) error {
			h, err := parseHdr(v)
			if err != nil {
				return err
			}
			out = append(out, h.first-1, h.first, h.first+1, h.last-1, h.last, h.last+1)
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek(s.prefix()); s.owns(k); k, v = c.Next() {
			if err := add(v); err != nil {
				return err
			}
		}
		if hv := b.Get(s.head); hv != nil {
			return add(hv)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestHistoryBlockBoundaries(t *testing.T) {
	db := openTestDB(t)
	m := model{}
	const uid = "LEGACY-C30000000A01"
	base := int64(1_700_000_000_000)
	var batch []Reading
	for i := range 5000 {
		batch = append(batch, Reading{UID: uid, Metric: MetricTemperature, TS: base + int64(i)*60_000, Value: -10 + float64(i%300)/10})
		if len(batch) == 7 {
			m.put(batch)
			mustPut(t, db, batch)
			batch = batch[:0]
		}
	}
	m.put(batch)
	mustPut(t, db, batch)
	checkModel(t, db, m)

	bounds := blockBounds(t, db, uid, MetricTemperature)
	if len(bounds) < 6*(5000/histBlockCap) {
		t.Fatalf("only %d bounds: data did not span many blocks", len(bounds))
	}
	id := seriesID{uid, MetricTemperature}
	rng := rand.New(rand.NewPCG(3, 4))
	check := func(from, to int64) {
		want := m.rangeOf(id, from, to)
		if got := queryAll(t, db, uid, MetricTemperature, from, to); !equalTSV(got, want) {
			t.Fatalf("[%d,%d): %s", from, to, diffTSV(got, want))
		}
		if got := queryRev(t, db, uid, MetricTemperature, from, to); !equalTSV(got, reverse(want)) {
			t.Fatalf("reverse [%d,%d): %s", from, to, diffTSV(got, reverse(want)))
		}
		var n int
		if err := db.View(func(tx *bolt.Tx) error {
			var err error
			n, err = CountHistory(tx, uid, MetricTemperature, from, to)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if n != len(want) {
			t.Fatalf("CountHistory [%d,%d) = %d, want %d", from, to, n, len(want))
		}
	}
	for _, a := range bounds {
		check(a, a+1)
		check(a, a+24*3600_000)
		check(a-24*3600_000, a)
		check(0, a)
		check(a, math.MaxInt64)
		b := bounds[rng.IntN(len(bounds))]
		check(min(a, b), max(a, b))
	}
	check(5, 5)
	check(10, 5)
	check(math.MinInt64, 0)

	// Early stop, both directions.
	var seen int
	if err := db.QueryHistory(uid, MetricTemperature, 0, math.MaxInt64, func(int64, float64) bool { seen++; return seen < 300 }); err != nil || seen != 300 {
		t.Fatalf("forward early stop: seen %d, err %v", seen, err)
	}
	seen = 0
	if err := db.QueryHistoryReverse(uid, MetricTemperature, 0, math.MaxInt64, func(int64, float64) bool { seen++; return seen < 300 }); err != nil || seen != 300 {
		t.Fatalf("reverse early stop: seen %d, err %v", seen, err)
	}
}

func TestHistoryEditsProperty(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { runEditsProperty(t, seed) })
	}
}

// runEditsProperty applies random writes, renames, moves and deletes to the
// database and to the brute-force model, comparing them throughout.

func runEditsProperty(t *testing.T, seed uint64) {
	db := openTestDB(t)
	rng := rand.New(rand.NewPCG(seed, 99))
	uids := []string{"SEN-A", "SEN-AB", "SEN-B1F2-3", "LEGACY-C30000000A01", "X"}
	m := model{}
	base := int64(1_700_000_000_000)
	next := map[seriesID]int64{}
	randTS := func(id seriesID) int64 {
		// Mostly advancing per series, sometimes late or duplicated.
		switch r := rng.IntN(20); {
		case r == 0:
			return base + rng.Int64N(1000*60_000)
		case r < 3 && len(m[id]) > 0:
			for ts := range m[id] {
				return ts
			}
		case r < 5:
			return max(0, next[id]-rng.Int64N(5*60_000))
		}
		if next[id] == 0 {
			next[id] = base + rng.Int64N(100*60_000)
		}
		next[id] += 1 + rng.Int64N(90_000)
		return next[id]
	}
	randID := func() seriesID { return seriesID{uids[rng.IntN(len(uids))], uint8(1 + rng.IntN(3))} }
	count := func(uid string, metric uint8, from, to int64) int {
		var n int
		if err := db.View(func(tx *bolt.Tx) error {
			var err error
			n, err = CountHistory(tx, uid, metric, from, to)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	randCut := func(id seriesID) int64 {
		if len(m[id]) == 0 || rng.IntN(5) == 0 {
			return base + rng.Int64N(1000*60_000)
		}
		for ts := range m[id] {
			return ts + rng.Int64N(3) - 1
		}
		return 0
	}
	for step := range 250 {
		switch op := rng.IntN(10); {
		case op < 6:
			var rs []Reading
			for range 1 + rng.IntN(300) {
				id := randID()
				rs = append(rs, Reading{UID: id.uid, Metric: id.metric, TS: randTS(id), Value: float64(rng.IntN(20000)-10000) / 100})
			}
			want := 0
			probe := model{}
			for id, s := range m {
				probe[id] = maps.Clone(s)
			}
			for _, r := range rs {
				id := seriesID{r.UID, r.Metric}
				if _, ok := probe[id][r.TS]; !ok {
					want++
				}
				probe.put([]Reading{r})
			}
			if got := mustPut(t, db, rs); got != want {
				t.Fatalf("step %d: PutReadings added %d, want %d", step, got, want)
			}
			m.put(rs)
		case op == 6:
			from, to := uids[rng.IntN(len(uids))], uids[rng.IntN(len(uids))]
			var got int
			if err := db.Update(func(tx *bolt.Tx) error {
				var err error
				got, err = RenameHistoryUID(tx, from, to)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			want := 0
			if from != to {
				want = m.move(from, to, math.MinInt64, true)
			}
			if got != want {
				t.Fatalf("step %d: rename %s->%s moved %d, want %d", step, from, to, got, want)
			}
		case op == 7:
			from, to := uids[rng.IntN(len(uids))], uids[rng.IntN(len(uids))]
			after := randCut(seriesID{from, uint8(1 + rng.IntN(3))})
			var got int
			if err := db.Update(func(tx *bolt.Tx) error {
				var err error
				got, err = MoveHistoryAfter(tx, from, to, after)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			want := 0
			if from != to {
				want = m.move(from, to, after, true)
			}
			if got != want {
				t.Fatalf("step %d: move %s->%s after %d moved %d, want %d", step, from, to, after, got, want)
			}
		case op == 8:
			id := randID()
			before := randCut(id)
			wantN := len(m.rangeOf(id, 0, before))
			if n := count(id.uid, id.metric, 0, before); n != wantN {
				t.Fatalf("step %d: count before delete %d, want %d", step, n, wantN)
			}
			var got int
			if err := db.Update(func(tx *bolt.Tx) error {
				var err error
				got, err = DeleteHistoryBefore(tx, id.uid, id.metric, before)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			for ts := range m[id] {
				if ts < before {
					delete(m[id], ts)
				}
			}
			m.prune()
			if got != wantN {
				t.Fatalf("step %d: deleted %d, want %d", step, got, wantN)
			}
		default:
			id := randID()
			a, b := randCut(id), randCut(id)
			from, to := min(a, b), max(a, b)+1
			want := m.rangeOf(id, from, to)
			if got := queryAll(t, db, id.uid, id.metric, from, to); !equalTSV(got, want) {
				t.Fatalf("step %d: query %v [%d,%d): %s", step, id, from, to, diffTSV(got, want))
			}
			if got := queryRev(t, db, id.uid, id.metric, from, to); !equalTSV(got, reverse(want)) {
				t.Fatalf("step %d: reverse %v [%d,%d): %s", step, id, from, to, diffTSV(got, reverse(want)))
			}
			if n := count(id.uid, id.metric, from, to); n != len(want) {
				t.Fatalf("step %d: count %d, want %d", step, n, len(want))
			}
		}
		if step%25 == 0 {
			checkModel(t, db, m)
		}
	}
	checkModel(t, db, m)
	checkModel(t, reopen(t, db), m)
}

// TestHistoryAfterDeletesInSameTx covers bbolt's Cursor.Prev stopping on
// leaves emptied earlier in the same write transaction: a late reading for
// SEN-A must still find SEN-A's blocks although every key between SEN-A and
// SEN-C was deleted just before.
func TestHistoryAfterDeletesInSameTx(t *testing.T) {
	db := openTestDB(t)
	m := model{}
	var rs []Reading
	for _, uid := range []string{"SEN-A", "SEN-B", "SEN-C"} {
		n := 1000
		if uid == "SEN-B" {
			n = 30000
		}
		for i := range n {
			rs = append(rs, Reading{UID: uid, Metric: MetricHumidity, TS: int64(i) * 60_000, Value: float64(i % 1000)})
		}
	}
	mustPut(t, db, rs)
	m.put(rs)
	late := []Reading{
		{UID: "SEN-A", Metric: MetricHumidity, TS: 500*60_000 + 1, Value: 1},
		{UID: "SEN-A", Metric: MetricHumidity, TS: 999*60_000 - 1, Value: 2},
		{UID: "SEN-A", Metric: MetricHumidity, TS: 2000 * 60_000, Value: 3},
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		if n, err := DeleteHistoryBefore(tx, "SEN-B", MetricHumidity, math.MaxInt64); err != nil || n != 30000 {
			return fmt.Errorf("deleted %d: %v", n, err)
		}
		_, err := PutReadings(tx, late)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	delete(m, seriesID{"SEN-B", MetricHumidity})
	m.put(late)
	checkModel(t, db, m)
}

func TestHistoryMoveAndRenameMerge(t *testing.T) {
	db := openTestDB(t)
	var old, cur []Reading
	for i := range 600 {
		old = append(old, Reading{UID: "SEN-OLD", Metric: MetricHumidity, TS: int64(i) * 60_000, Value: 50})
		if i%2 == 0 {
			cur = append(cur, Reading{UID: "SEN-NEW", Metric: MetricHumidity, TS: int64(i) * 60_000, Value: 60})
		}
	}
	old = append(old, Reading{UID: "SEN-OLD", Metric: MetricBattery, TS: 5, Value: 3000})
	mustPut(t, db, old)
	mustPut(t, db, cur)
	m := model{}
	m.put(old)
	m.put(cur)

	var moved int
	cut := int64(400 * 60_000)
	if err := db.Update(func(tx *bolt.Tx) error {
		var err error
		moved, err = MoveHistoryAfter(tx, "SEN-OLD", "SEN-NEW", cut)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if want := m.move("SEN-OLD", "SEN-NEW", cut, true); moved != want || moved != 199 {
		t.Fatalf("moved %d, want %d (199)", moved, want)
	}
	checkModel(t, db, m)

	if err := db.Update(func(tx *bolt.Tx) error {
		var err error
		moved, err = RenameHistoryUID(tx, "SEN-OLD", "SEN-NEW")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if want := m.move("SEN-OLD", "SEN-NEW", math.MinInt64, true); moved != want || moved != 402 {
		t.Fatalf("renamed %d, want %d (402)", moved, want)
	}
	checkModel(t, db, m)
	// Duplicates kept the destination's value.
	got := queryAll(t, db, "SEN-NEW", MetricHumidity, 0, 60_000)
	if len(got) != 1 || got[0].v != 60 {
		t.Fatalf("merged duplicate = %v, want the destination's 60", got)
	}
	if got := queryAll(t, db, "SEN-OLD", MetricHumidity, 0, math.MaxInt64); len(got) != 0 {
		t.Fatalf("old uid still has %d readings", len(got))
	}
}

func TestLatestReadingsAfterReopen(t *testing.T) {
	db := openTestDB(t)
	m := model{}
	var rs []Reading
	// Series ending in a head, series ending exactly on a sealed block (no
	// head), a single-reading series.
	for i := range 1000 {
		rs = append(rs, Reading{UID: "SEN-HEAD", Metric: MetricTemperature, TS: int64(i) * 1000, Value: float64(i) / 10})
	}
	for i := range histBlockCap {
		rs = append(rs, Reading{UID: "SEN-SEALED", Metric: MetricHumidity, TS: int64(i) * 1000, Value: float64(i)})
	}
	rs = append(rs, Reading{UID: "SEN-ONE", Metric: MetricBattery, TS: 42, Value: 2999})
	for len(rs) > 0 {
		// Batches never mix series, so SEN-SEALED's seals land exactly on
		// histBlockCap.
		k := 1
		for k < min(len(rs), 16) && rs[k].UID == rs[0].UID {
			k++
		}
		mustPut(t, db, rs[:k])
		m.put(rs[:k])
		rs = rs[k:]
	}
	// A late reading in SEN-HEAD must not become "latest".
	mustPut(t, db, []Reading{{UID: "SEN-HEAD", Metric: MetricTemperature, TS: 500_500, Value: -3}})
	m.put([]Reading{{UID: "SEN-HEAD", Metric: MetricTemperature, TS: 500_500, Value: -3}})
	db = reopen(t, db)
	checkModel(t, db, m)
	var heads int
	if err := db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bHistory).ForEach(func(k, _ []byte) error {
			if k[0] == 0 {
				heads++
			}
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	if heads != 2 {
		t.Fatalf("want 2 heads (SEN-HEAD, SEN-ONE), got %d: the sealed series case is not covered", heads)
	}
}

// ---- realistic load ----

type simSensor struct {
	uid        string
	phase      int64
	hum, temp  float64
	batt, base float64
}

// siteSim produces one reading per minute per sensor and metric, values
// drifting like indoor/cold-room sensors, timestamps jittered as a
// gateway's receive time would be.
type siteSim struct {
	rng     *rand.Rand
	sensors []simSensor
	t0      int64
}

func newSiteSim(n int, seed uint64) *siteSim {
	s := &siteSim{rng: rand.New(rand.NewPCG(seed, 7)), t0: 1_767_225_600_000}
	for i := range n {
		uid := fmt.Sprintf("SEN-%04X-%d", 0xB000+i, i%10)
		if i%5 == 0 {
			uid = fmt.Sprintf("LEGACY-C3%010X", 0xA00+i)
		}
		temp := 18 + s.rng.Float64()*8
		if i%10 == 0 {
			temp = -22 + s.rng.Float64()*4 // freezers
		}
		base := 2900 + float64(s.rng.IntN(300))
		s.sensors = append(s.sensors, simSensor{uid: uid, phase: s.rng.Int64N(60_000), hum: 35 + s.rng.Float64()*30, temp: temp, batt: base, base: base})
	}
	return s
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// minute appends minute m's readings of every sensor (3 per sensor).
func (s *siteSim) minute(m int, dst []Reading) []Reading {
	for i := range s.sensors {
		se := &s.sensors[i]
		ts := s.t0 + int64(m)*60_000 + se.phase + s.rng.Int64N(3000) - 1500
		se.hum = min(95, max(10, se.hum+s.rng.NormFloat64()*0.08))
		se.temp += s.rng.NormFloat64() * 0.03
		if m%360 == 0 {
			se.base--
		}
		se.batt = se.base + float64(s.rng.IntN(7)-3)
		dst = append(dst,
			Reading{UID: se.uid, Metric: MetricHumidity, TS: ts, Value: round2(se.hum)},
			Reading{UID: se.uid, Metric: MetricTemperature, TS: ts, Value: round2(se.temp)},
			Reading{UID: se.uid, Metric: MetricBattery, TS: ts, Value: se.batt},
		)
	}
	return dst
}

// simLoad generates `minutes` of readings for `sensors` sensors and hands
// them to commit in windows of windowMS of receive time, the way the ingest
// pipeline sees them: sorted by timestamp, ~0.2% arriving up to 5 minutes
// late and ~0.1% delivered twice.
func simLoad(sensors, minutes int, windowMS int64, seed uint64, commit func([]Reading)) (total int) {
	sim := newSiteSim(sensors, seed)
	rng := rand.New(rand.NewPCG(seed, 8))
	type late struct {
		at int64
		r  Reading
	}
	var pending []Reading
	var delayed []late
	var minute []Reading
	var window []Reading
	wEnd := sim.t0 + windowMS
	flush := func(upto int64) {
		for wEnd <= upto {
			window = window[:0]
			k := 0
			for k < len(pending) && pending[k].TS < wEnd {
				k++
			}
			window = append(window, pending[:k]...)
			pending = pending[k:]
			delayed = slices.DeleteFunc(delayed, func(l late) bool {
				if l.at < wEnd {
					window = append(window, l.r)
					return true
				}
				return false
			})
			if len(window) > 0 {
				commit(window)
			}
			wEnd += windowMS
		}
	}
	for m := range minutes {
		minute = sim.minute(m, minute[:0])
		total += len(minute)
		for _, r := range minute {
			switch x := rng.IntN(1000); {
			case x < 2:
				delayed = append(delayed, late{r.TS + rng.Int64N(5*60_000), r})
				continue
			case x < 3:
				delayed = append(delayed, late{r.TS + rng.Int64N(30_000), r})
			}
			pending = append(pending, r)
		}
		sort.SliceStable(pending, func(i, j int) bool { return pending[i].TS < pending[j].TS })
		flush(sim.t0 + int64(m)*60_000 - 5_000) // readings can still arrive up to a few s late
	}
	for len(pending) > 0 || len(delayed) > 0 {
		flush(wEnd)
	}
	return total
}

// pagesInUse is the part of the file bbolt would need after compaction.
func pagesInUse(t testing.TB, db *DB) int64 {
	t.Helper()
	var n int64
	if err := db.View(func(tx *bolt.Tx) error {
		st := tx.DB().Stats()
		n = tx.Size() - int64(st.FreePageN+st.PendingPageN)*int64(tx.DB().Info().PageSize)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestHistorySizeBudget writes a scaled-down site (200 sensors × 3 metrics
// × 2 days, one reading per minute each) through the Writer in commits of
// 5 s of traffic and checks the ≤ 16 bytes/reading budget on the file.
func TestHistorySizeBudget(t *testing.T) {
	sensors, minutes := 200, 2*24*60
	if testing.Short() || raceEnabled {
		sensors, minutes = 100, 24*60
	}
	db := openTestDB(t)
	// The file layout does not depend on fsync; skipping it keeps the test
	// fast (~35k commits).
	db.Bolt().NoSync = true
	w := NewWriter(db, WriterOptions{})
	var calls []Reading
	total := simLoad(sensors, minutes, 5_000, 1, func(window []Reading) {
		for len(window) > 0 {
			k := min(len(window), 8)
			calls = append(calls[:0], window[:k]...)
			w.AppendReadings(calls, nil)
			window = window[k:]
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	})
	st := w.Stats()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	size, err := db.Size()
	if err != nil {
		t.Fatal(err)
	}
	series, err := db.HistorySeries()
	if err != nil {
		t.Fatal(err)
	}
	stored := 0
	for _, s := range series {
		stored += s.Count
	}
	if stored != total || len(series) != 3*sensors {
		t.Fatalf("stored %d readings in %d series, generated %d in %d", stored, len(series), total, 3*sensors)
	}
	perFile := float64(size) / float64(stored)
	perUsed := float64(pagesInUse(t, db)) / float64(stored)
	t.Logf("%d readings, %d commits (avg %.0f readings): file %d bytes = %.2f B/reading; pages in use %.2f B/reading",
		stored, st.Commits, st.AvgBatchReadings, size, perFile, perUsed)
	if perFile > 16 {
		t.Fatalf("%.2f bytes/reading on disk, budget is 16", perFile)
	}
	// The file is rounded up to a power of two below 16 MiB, so also hold
	// the real footprint to account.
	if perUsed > 8 {
		t.Fatalf("%.2f bytes/reading in use, expected ≤ 8", perUsed)
	}
	checkHistoryInvariants(t, db)
}

package store

// Sensor history layout
//
// A site with 1,000 sensors produces ~1.6 billion readings a year, so one
// bbolt key per reading (~85–120 bytes on disk each) is not an option. Readings
// are stored as compressed blocks, one block per (uid, metric, time span), in
// the "history" bucket. Two key shapes share the bucket:
//
//	closed block:  uid | 0x00 | metric | big-endian uint64 start ms
//	head block:    0x00 | uid | 0x00 | metric
//
// A uid is 1..64 bytes and never contains 0x00, so the shapes cannot collide,
// every head key sorts before every closed key, and the closed keys of one
// series are contiguous and ordered by time: a range scan is one Seek plus
// Next calls, never a scan of unrelated keys.
//
// The head block holds the newest readings of a series (at most histHeadCap
// before it is sealed). All heads live together at the start of the bucket,
// so a group commit that touches thousands of series dirties a few dozen
// densely packed head pages instead of one leaf page per series scattered over
// the whole history; the closed region is only written when a head is sealed
// (once per histHeadCap readings per series), or for late readings. Sealing
// appends the head's readings to the series' last closed block until it holds
// histBlockCap readings, then starts a new closed block keyed by its first
// timestamp.
//
// Invariants (checked by checkHistoryInvariants in the tests):
//   - every reading of the head is newer than every reading of the series'
//     closed blocks;
//   - closed blocks of a series do not overlap, each key's start equals the
//     block's first timestamp, and a block holds 1..histBlockCap readings;
//   - timestamps are unique within a series (exact duplicates are dropped,
//     the reading stored first wins, so re-running a batch is harmless).
//
// Block value (both shapes):
//
//	byte      format (histFormat)
//	uvarint   count
//	uvarint   first ts (ms)
//	uvarint   last ts - first ts
//	varint    last value            (fixed point, see below)
//	uvarint   last ts delta         (ts[n-1] - ts[n-2], 0 if count == 1)
//	varint    value[0]
//	then per further reading:
//	varint    delta-of-delta of ts  (zig-zag)
//	varint    value delta           (zig-zag)
//
// The header carries everything needed to append without decoding the
// payload, and LatestReadings reads only headers. Values are stored as
// int64 round(value×100): exact to 0.01 (battery mV×100 is exact too).
// Delta-of-delta makes a steady one-per-minute cadence with jitter under
// ±8 s cost 1–2 bytes; slowly drifting values cost 1 byte (battery mV
// noise 2). Measured on a simulated site (TestHistorySizeBudget): 3.4 bytes
// of block value per reading, ~5.6 bytes per reading of bbolt pages in use
// (leaves ~70% full), versus ~85–90 for one key per reading.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Metric identifiers stored in history keys. The store does not interpret
// them; any non-zero id is accepted.
const (
	MetricHumidity    uint8 = 1
	MetricTemperature uint8 = 2
	MetricBattery     uint8 = 3
)

// Reading is one sensor sample. TS is Unix milliseconds; Value is stored
// rounded to 0.01.
type Reading struct {
	UID    string
	Metric uint8
	TS     int64
	Value  float64
}

// Series summarises the stored history of one (uid, metric).
type Series struct {
	UID    string
	Metric uint8
	First  int64 // oldest timestamp, ms
	Last   int64 // newest timestamp, ms
	Count  int
}

// MaxUIDLen bounds history uids; keys stay small and fixed-shape.
const MaxUIDLen = 64

// ErrInvalidReading is returned for readings the history cannot store: empty
// or oversized uid, uid containing NUL, metric 0, negative timestamp,
// non-finite or out-of-range value.
var ErrInvalidReading = errors.New("invalid reading")

// ErrCorruptHistory is returned when a stored block cannot be decoded.
var ErrCorruptHistory = errors.New("corrupt history block")

// SeriesError is a failure confined to one series (a corrupt block), so
// that the writer can fail only the readings of that series.
type SeriesError struct {
	UID    string
	Metric uint8
	Err    error
}

func (e *SeriesError) Error() string {
	return fmt.Sprintf("history %s/%d: %v", e.UID, e.Metric, e.Err)
}

func (e *SeriesError) Unwrap() error { return e.Err }

const (
	histHeadCap = 32 // readings in a head before it is sealed
	// Readings per closed block (~450 bytes). bbolt splits a full leaf so
	// that the right half keeps at least two keys; with ~8 blocks per 4 KiB
	// page that leaves pages ~70–85% full, where 256-reading blocks (~4 per
	// page) measured 53%.
	histBlockCap = 128
	// Closed blocks are appended at the end of each series; splitting late
	// rather than at bbolt's default 50% keeps those pages full.
	histFillPercent = 0.9
	histFormat      = 1

	maxHistoryTS  = 1 << 52 // year ~142,000; keeps all deltas far from overflow
	maxValueAbs   = 1e13    // value×100 stays an exact integer in float64
	maxHeaderSize = 1 + 5*binary.MaxVarintLen64
	maxPointSize  = 2 * binary.MaxVarintLen64
)

type point struct{ ts, v int64 }

func toFixed(v float64) int64   { return int64(math.Round(v * 100)) }
func fromFixed(v int64) float64 { return float64(v) / 100 }

func checkUID(uid string) error {
	if uid == "" || len(uid) > MaxUIDLen || strings.IndexByte(uid, 0) >= 0 {
		return fmt.Errorf("%w: bad uid %q", ErrInvalidReading, uid)
	}
	return nil
}

func checkSeries(uid string, metric uint8) error {
	if err := checkUID(uid); err != nil {
		return err
	}
	if metric == 0 {
		return fmt.Errorf("%w: metric 0", ErrInvalidReading)
	}
	return nil
}

func (r *Reading) validate() error {
	if err := checkSeries(r.UID, r.Metric); err != nil {
		return err
	}
	if r.TS < 0 || r.TS >= maxHistoryTS {
		return fmt.Errorf("%w: %s/%d: timestamp %d out of range", ErrInvalidReading, r.UID, r.Metric, r.TS)
	}
	if math.IsNaN(r.Value) || math.Abs(r.Value) > maxValueAbs {
		return fmt.Errorf("%w: %s/%d: value %v out of range", ErrInvalidReading, r.UID, r.Metric, r.Value)
	}
	return nil
}

// ValidateReadings reports the first reading the history would reject.
func ValidateReadings(rs []Reading) error {
	for i := range rs {
		if err := rs[i].validate(); err != nil {
			return err
		}
	}
	return nil
}

// ---- block encoding ----

type blockHdr struct {
	count     int
	first     int64
	last      int64
	lastV     int64
	lastDelta int64
	size      int // encoded header length
}

func appendHdr(dst []byte, h *blockHdr) []byte {
	dst = append(dst, histFormat)
	dst = binary.AppendUvarint(dst, uint64(h.count))
	dst = binary.AppendUvarint(dst, uint64(h.first))
	dst = binary.AppendUvarint(dst, uint64(h.last-h.first))
	dst = binary.AppendVarint(dst, h.lastV)
	return binary.AppendUvarint(dst, uint64(h.lastDelta))
}

type vreader struct {
	b   []byte
	bad bool
}

func (r *vreader) uvarint() uint64 {
	if len(r.b) > 0 && r.b[0] < 0x80 {
		v := uint64(r.b[0])
		r.b = r.b[1:]
		return v
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *vreader) varint() int64 {
	if len(r.b) > 0 && r.b[0] < 0x80 { // one byte: most deltas
		u := uint64(r.b[0])
		r.b = r.b[1:]
		return int64(u>>1) ^ -int64(u&1)
	} else if len(r.b) > 1 && r.b[1] < 0x80 { // two bytes: timestamp jitter, battery mV
		u := uint64(r.b[0]&0x7f) | uint64(r.b[1])<<7
		r.b = r.b[2:]
		return int64(u>>1) ^ -int64(u&1)
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func parseHdr(b []byte) (blockHdr, error) {
	var h blockHdr
	if len(b) == 0 || b[0] != histFormat {
		return h, ErrCorruptHistory
	}
	r := vreader{b: b[1:]}
	count := r.uvarint()
	first := r.uvarint()
	span := r.uvarint()
	h.lastV = r.varint()
	delta := r.uvarint()
	if r.bad || count == 0 || count > 1<<30 || first >= maxHistoryTS || span >= maxHistoryTS || delta > span {
		return h, ErrCorruptHistory
	}
	h.count, h.first, h.last, h.lastDelta = int(count), int64(first), int64(first+span), int64(delta)
	h.size = len(b) - len(r.b)
	return h, nil
}

// appendPoints encodes pts as the continuation of a block whose state is h
// (h.count == 0 for a new block) and advances h. pts must be strictly
// increasing and newer than h.last.
func appendPoints(dst []byte, h *blockHdr, pts []point) []byte {
	for _, p := range pts {
		if h.count == 0 {
			dst = binary.AppendVarint(dst, p.v)
			h.first, h.last, h.lastDelta = p.ts, p.ts, 0
		} else {
			d := p.ts - h.last
			dst = binary.AppendVarint(dst, d-h.lastDelta)
			dst = binary.AppendVarint(dst, p.v-h.lastV)
			h.last, h.lastDelta = p.ts, d
		}
		h.lastV = p.v
		h.count++
	}
	return dst
}

// blockIter decodes a block front to back without allocating.
type blockIter struct {
	r       vreader
	left    int
	ts, v   int64
	delta   int64
	started bool
	last    int64
	err     error
}

func (it *blockIter) init(val []byte) (blockHdr, error) {
	h, err := parseHdr(val)
	if err != nil {
		it.left, it.err = 0, err
		return h, err
	}
	*it = blockIter{r: vreader{b: val[h.size:]}, left: h.count, ts: h.first, last: h.last}
	return h, nil
}

func (it *blockIter) next() bool {
	if it.left == 0 {
		return false
	}
	if !it.started {
		it.v = it.r.varint()
		it.started = true
	} else {
		it.delta += it.r.varint()
		it.ts += it.delta
		it.v += it.r.varint()
		if it.delta <= 0 {
			it.r.bad = true
		}
	}
	it.left--
	if it.r.bad || it.ts > it.last || (it.left == 0 && it.ts != it.last) {
		it.left, it.err = 0, ErrCorruptHistory
		return false
	}
	return true
}

func decodeBlock(dst []point, val []byte) ([]point, blockHdr, error) {
	var it blockIter
	h, err := it.init(val)
	if err != nil {
		return dst, h, err
	}
	for it.next() {
		dst = append(dst, point{it.ts, it.v})
	}
	return dst, h, it.err
}

// mergePoints merges two strictly increasing lists; on equal timestamps the
// stored one (a) wins so that replays never rewrite history.
func mergePoints(dst, a, b []point) []point {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i].ts < b[j].ts:
			dst = append(dst, a[i])
			i++
		case a[i].ts > b[j].ts:
			dst = append(dst, b[j])
			j++
		default:
			dst = append(dst, a[i])
			i++
			j++
		}
	}
	dst = append(dst, a[i:]...)
	return append(dst, b[j:]...)
}

// ---- per-transaction scratch ----

// arena hands out value buffers that stay untouched until the transaction
// ends: bbolt keeps references to Put values until commit.
type arena struct {
	chunks [][]byte
	cur    int
}

const arenaChunk = 256 << 10

func (a *arena) alloc(n int) []byte {
	if n > arenaChunk/4 {
		return make([]byte, 0, n)
	}
	for a.cur < len(a.chunks) {
		c := a.chunks[a.cur]
		if cap(c)-len(c) >= n {
			a.chunks[a.cur] = c[:len(c)+n]
			return c[len(c) : len(c) : len(c)+n]
		}
		a.cur++
	}
	c := make([]byte, n, arenaChunk)
	a.chunks = append(a.chunks, c)
	return c[:0:n]
}

// reset makes the buffers reusable; only after the transaction has ended.
func (a *arena) reset() {
	for i := range a.chunks {
		a.chunks[i] = a.chunks[i][:0]
	}
	a.cur = 0
}

type seriesID struct {
	uid    string
	metric uint8
}

// seriesBuf is the per-series state kept across commits by the writer: the
// head key (so keys are not rebuilt per commit) and a reusable buffer that
// collects the series' readings of the current batch. It deliberately does
// not cache where the series' blocks are: finding them is a single B+tree
// seek (the same cost as validating a cached key), and a cache could go stale
// when history is edited by RenameHistoryUID & co. or a rolled-back batch.
type seriesBuf struct {
	id   seriesID
	head []byte // 0x00 | uid | 0x00 | metric; the closed prefix is head[1:]
	pts  []point
}

// seriesIndex is the writer-owned scratch for putReadings. It is not safe for
// concurrent use; a nil *seriesIndex makes putReadings use a temporary one.
type seriesIndex struct {
	m       map[seriesID]*seriesBuf
	touched []*seriesBuf
	arena   arena
	enc     []byte
	pa, pb  []point
}

func newSeriesIndex() *seriesIndex {
	return &seriesIndex{m: make(map[seriesID]*seriesBuf)}
}

// release must be called once the transaction that used the index ended.
func (x *seriesIndex) release() {
	x.arena.reset()
	if len(x.m) > 1<<16 { // uids churn (renames, replaced devices): do not grow forever
		clear(x.m)
	}
}

func headKey(uid string, metric uint8) []byte {
	k := make([]byte, 0, len(uid)+3)
	k = append(k, 0)
	k = append(k, uid...)
	return append(k, 0, metric)
}

// ---- series operations ----

// seriesRef addresses one (uid, metric) inside the history bucket.
type seriesRef struct {
	b    *bolt.Bucket
	x    *seriesIndex
	head []byte
	kb   [MaxUIDLen + 10]byte
	cur  *bolt.Cursor
}

// cursor returns a cursor reused across lookups: bbolt's Get and each new
// Cursor allocate a fresh search stack, Seek on an old cursor does not.
// Every use starts with Seek, First or Last, which also makes reuse after a
// Put or Delete safe.
func (s *seriesRef) cursor() *bolt.Cursor {
	if s.cur == nil {
		s.cur = s.b.Cursor()
	}
	return s.cur
}

// getHead returns the head block's value, or nil.
func (s *seriesRef) getHead() []byte {
	k, v := s.cursor().Seek(s.head)
	if !bytes.Equal(k, s.head) {
		return nil
	}
	return v
}

func newSeriesRef(b *bolt.Bucket, x *seriesIndex, uid string, metric uint8) *seriesRef {
	return &seriesRef{b: b, x: x, head: headKey(uid, metric)}
}

func (s *seriesRef) prefix() []byte { return s.head[1:] }

// key returns the closed-block key for start in a buffer reused by the next
// call; bbolt copies keys on Put.
func (s *seriesRef) key(start int64) []byte {
	k := append(s.kb[:0], s.prefix()...)
	return binary.BigEndian.AppendUint64(k, uint64(start))
}

func (s *seriesRef) owns(k []byte) bool {
	return len(k) == len(s.head)+7 && bytes.HasPrefix(k, s.prefix())
}

func keyStart(k []byte) int64 { return int64(binary.BigEndian.Uint64(k[len(k)-8:])) }

// blockLE positions c on the closed block with the greatest start ≤ ts.
func (s *seriesRef) blockLE(c *bolt.Cursor, ts int64) ([]byte, []byte) {
	want := s.key(ts)
	k, v := c.Seek(want)
	if k != nil && bytes.Equal(k, want) {
		return k, v
	}
	if k == nil {
		k, v = c.Last()
	} else {
		k, v = cursorPrev(s.b, c, k)
	}
	if !s.owns(k) {
		return nil, nil
	}
	return k, v
}

// cursorPrev is c.Prev() for a cursor positioned on key cur. Within a write
// transaction, a leaf emptied by Delete stays in the tree until commit;
// bbolt's Next, First and Last skip such leaves but Prev stops on them and
// reports the start of the bucket. Keep stepping back while a smaller key
// provably exists.
func cursorPrev(b *bolt.Bucket, c *bolt.Cursor, cur []byte) ([]byte, []byte) {
	k, v := c.Prev()
	if k != nil {
		return k, v
	}
	if fk, _ := b.Cursor().First(); fk == nil || bytes.Compare(fk, cur) >= 0 {
		return nil, nil
	}
	for k == nil {
		k, v = c.Prev()
	}
	return k, v
}

func (s *seriesRef) corrupt(k []byte, err error) error {
	return fmt.Errorf("history %q: %w", k, err)
}

func (s *seriesRef) put(k, v []byte) error { return s.b.Put(k, v) }

// encode builds a block from pts in transaction-stable memory.
func (s *seriesRef) encode(pts []point) []byte {
	var h blockHdr
	s.x.enc = appendPoints(s.x.enc[:0], &h, pts)
	out := s.x.arena.alloc(maxHeaderSize + len(s.x.enc))
	out = appendHdr(out, &h)
	return append(out, s.x.enc...)
}

// extend appends pts (all newer than h.last) to the encoded block old.
func (s *seriesRef) extend(old []byte, h blockHdr, pts []point) ([]byte, blockHdr) {
	s.x.enc = appendPoints(s.x.enc[:0], &h, pts)
	payload := old[h.size:]
	out := s.x.arena.alloc(maxHeaderSize + len(payload) + len(s.x.enc))
	out = appendHdr(out, &h)
	out = append(out, payload...)
	return append(out, s.x.enc...), h
}

// merge stores pts (strictly increasing) and returns how many were new.
func (s *seriesRef) merge(pts []point) (int, error) {
	hv := s.getHead()
	var hh blockHdr
	if hv != nil {
		var err error
		if hh, err = parseHdr(hv); err != nil {
			return 0, s.corrupt(s.head, err)
		}
		if pts[0].ts > hh.last { // the hot path: in-order readings
			return len(pts), s.appendHead(hv, hh, pts)
		}
	}
	closedLast := int64(-1)
	if k, v := s.blockLE(s.cursor(), math.MaxInt64); k != nil {
		lh, err := parseHdr(v)
		if err != nil {
			return 0, s.corrupt(k, err)
		}
		closedLast = lh.last
	}
	i := sort.Search(len(pts), func(i int) bool { return pts[i].ts > closedLast })
	added := 0
	if i < len(pts) {
		n, err := s.mergeHead(hv, hh, pts[i:])
		if err != nil {
			return 0, err
		}
		added += n
	}
	if i > 0 {
		n, err := s.mergeClosed(pts[:i])
		if err != nil {
			return 0, err
		}
		added += n
	}
	return added, nil
}

func (s *seriesRef) appendHead(hv []byte, hh blockHdr, pts []point) error {
	nv, nh := s.extend(hv, hh, pts)
	if nh.count >= histHeadCap {
		var err error
		if s.x.pa, _, err = decodeBlock(s.x.pa[:0], nv); err != nil {
			return s.corrupt(s.head, err)
		}
		return s.seal(s.x.pa)
	}
	return s.put(s.head, nv)
}

// mergeHead stores pts, all newer than every closed block, in the head.
func (s *seriesRef) mergeHead(hv []byte, hh blockHdr, pts []point) (int, error) {
	if hv == nil {
		if len(pts) >= histHeadCap {
			return len(pts), s.seal(pts)
		}
		return len(pts), s.put(s.head, s.encode(pts))
	}
	if pts[0].ts > hh.last {
		return len(pts), s.appendHead(hv, hh, pts)
	}
	old, _, err := decodeBlock(s.x.pa[:0], hv)
	s.x.pa = old
	if err != nil {
		return 0, s.corrupt(s.head, err)
	}
	merged := mergePoints(s.x.pb[:0], old, pts)
	s.x.pb = merged
	added := len(merged) - len(old)
	if added == 0 {
		return 0, nil
	}
	if len(merged) >= histHeadCap {
		return added, s.seal(merged)
	}
	return added, s.put(s.head, s.encode(merged))
}

// seal moves the head's readings pts into the closed region: first filling
// the series' last closed block, then into new blocks of histBlockCap.
func (s *seriesRef) seal(pts []point) error {
	if k, v := s.blockLE(s.cursor(), math.MaxInt64); k != nil {
		lh, err := parseHdr(v)
		if err != nil {
			return s.corrupt(k, err)
		}
		if n := min(histBlockCap-lh.count, len(pts)); n > 0 {
			nv, _ := s.extend(v, lh, pts[:n])
			if err := s.put(k, nv); err != nil {
				return err
			}
			pts = pts[n:]
		}
	}
	for len(pts) > 0 {
		n := min(histBlockCap, len(pts))
		if err := s.put(s.key(pts[0].ts), s.encode(pts[:n])); err != nil {
			return err
		}
		pts = pts[n:]
	}
	return s.b.Delete(s.head)
}

// mergeClosed stores late readings (none newer than the last closed block)
// by rewriting the closed blocks they fall into.
func (s *seriesRef) mergeClosed(pts []point) (int, error) {
	added := 0
	for len(pts) > 0 {
		c := s.cursor()
		k, v := s.blockLE(c, pts[0].ts)
		if k == nil { // older than the series' first block: widen that one
			k, v = c.Seek(s.key(pts[0].ts))
			if !s.owns(k) {
				return added, fmt.Errorf("history %q: no closed block for late reading", s.head[1:])
			}
		}
		var key [MaxUIDLen + 10]byte
		bk := key[:copy(key[:], k)]
		next := int64(math.MaxInt64)
		if nk, _ := c.Next(); s.owns(nk) {
			next = keyStart(nk)
		}
		j := sort.Search(len(pts), func(i int) bool { return pts[i].ts >= next })
		n, err := s.rewriteBlock(bk, v, pts[:j])
		if err != nil {
			return added, err
		}
		added += n
		pts = pts[j:]
	}
	return added, nil
}

// rewriteBlock merges pts into the block (k, v) and splits it evenly if it
// outgrows histBlockCap.
func (s *seriesRef) rewriteBlock(k, v []byte, pts []point) (int, error) {
	old, _, err := decodeBlock(s.x.pa[:0], v)
	s.x.pa = old
	if err != nil {
		return 0, s.corrupt(k, err)
	}
	merged := mergePoints(s.x.pb[:0], old, pts)
	s.x.pb = merged
	added := len(merged) - len(old)
	if added == 0 {
		return 0, nil
	}
	if merged[0].ts != keyStart(k) {
		if err := s.b.Delete(k); err != nil {
			return 0, err
		}
	}
	return added, s.putChunks(merged)
}

// putChunks writes pts as ceil(n/histBlockCap) blocks of equal size.
func (s *seriesRef) putChunks(pts []point) error {
	chunks := (len(pts) + histBlockCap - 1) / histBlockCap
	for chunks > 0 {
		n := (len(pts) + chunks - 1) / chunks
		if err := s.put(s.key(pts[0].ts), s.encode(pts[:n])); err != nil {
			return err
		}
		pts = pts[n:]
		chunks--
	}
	return nil
}

// scan calls fn for readings with from ≤ ts < to in ascending order.
func (s *seriesRef) scan(from, to int64, fn func(ts, v int64) bool) error {
	from = max(from, 0)
	if from >= to {
		return nil
	}
	c := s.b.Cursor()
	k, v := s.blockLE(c, from)
	if k == nil {
		k, v = c.Seek(s.key(from))
	}
	var it blockIter
	for ; s.owns(k); k, v = c.Next() {
		if keyStart(k) >= to {
			return nil
		}
		h, err := it.init(v)
		if err != nil {
			return s.corrupt(k, err)
		}
		if h.last < from {
			continue
		}
		for it.next() {
			if it.ts < from {
				continue
			}
			if it.ts >= to || !fn(it.ts, it.v) {
				return nil
			}
		}
		if it.err != nil {
			return s.corrupt(k, it.err)
		}
	}
	hv := s.getHead()
	if hv == nil {
		return nil
	}
	if _, err := it.init(hv); err != nil {
		return s.corrupt(s.head, err)
	}
	for it.next() {
		if it.ts < from {
			continue
		}
		if it.ts >= to || !fn(it.ts, it.v) {
			return nil
		}
	}
	if it.err != nil {
		return s.corrupt(s.head, it.err)
	}
	return nil
}

// scanReverse calls fn for readings with from ≤ ts < to, newest first.
func (s *seriesRef) scanReverse(from, to int64, fn func(ts, v int64) bool) error {
	from = max(from, 0)
	if from >= to {
		return nil
	}
	// emit walks one decoded block backwards; it reports whether to go on.
	emit := func(pts []point) bool {
		for i := len(pts) - 1; i >= 0; i-- {
			p := pts[i]
			if p.ts >= to {
				continue
			}
			if p.ts < from || !fn(p.ts, p.v) {
				return false
			}
		}
		return true
	}
	if hv := s.getHead(); hv != nil {
		h, err := parseHdr(hv)
		if err != nil {
			return s.corrupt(s.head, err)
		}
		if h.first < to {
			if s.x.pa, _, err = decodeBlock(s.x.pa[:0], hv); err != nil {
				return s.corrupt(s.head, err)
			}
			if !emit(s.x.pa) || h.first <= from {
				return nil
			}
		}
	}
	c := s.b.Cursor()
	for k, v := s.blockLE(c, to-1); s.owns(k); k, v = cursorPrev(s.b, c, k) {
		var err error
		if s.x.pa, _, err = decodeBlock(s.x.pa[:0], v); err != nil {
			return s.corrupt(k, err)
		}
		if !emit(s.x.pa) || keyStart(k) <= from {
			return nil
		}
	}
	return nil
}

// count returns the number of readings with from ≤ ts < to, decoding only
// the blocks that straddle a bound.
func (s *seriesRef) count(from, to int64) (int, error) {
	from = max(from, 0)
	if from >= to {
		return 0, nil
	}
	n := 0
	var it blockIter
	countBlock := func(k, v []byte) error {
		h, err := parseHdr(v)
		if err != nil {
			return s.corrupt(k, err)
		}
		if h.first >= from && h.last < to {
			n += h.count
			return nil
		}
		if h.last < from || h.first >= to {
			return nil
		}
		it.init(v)
		for it.next() {
			if it.ts >= from && it.ts < to {
				n++
			}
		}
		if it.err != nil {
			return s.corrupt(k, it.err)
		}
		return nil
	}
	if err := s.eachBlock(from, to, countBlock); err != nil {
		return 0, err
	}
	return n, nil
}

// eachBlock calls fn, in key order, for every closed block that may hold
// readings with from ≤ ts < to, then for the head block. fn must not
// modify the bucket (the cursor is live).
func (s *seriesRef) eachBlock(from, to int64, fn func(k, v []byte) error) error {
	c := s.b.Cursor()
	k, v := s.blockLE(c, from)
	if k == nil {
		k, v = c.Seek(s.key(from))
	}
	for ; s.owns(k) && keyStart(k) < to; k, v = c.Next() {
		if err := fn(k, v); err != nil {
			return err
		}
	}
	if hv := s.getHead(); hv != nil {
		return fn(s.head, hv)
	}
	return nil
}

// load appends the readings with from ≤ ts < to to dst.
func (s *seriesRef) load(dst []point, from, to int64) ([]point, error) {
	err := s.scan(from, to, func(ts, v int64) bool {
		dst = append(dst, point{ts, v})
		return true
	})
	return dst, err
}

// deleteRange removes the readings with from ≤ ts < to.
func (s *seriesRef) deleteRange(from, to int64) (int, error) {
	from = max(from, 0)
	if from >= to {
		return 0, nil
	}
	type rewrite struct {
		key  []byte
		keep []point
	}
	var (
		drop     [][]byte
		rewrites []rewrite
		removed  int
	)
	// classify decides what to do with one block; it never mutates, so the
	// cursor stays valid while we walk.
	classify := func(k, v []byte) error {
		h, err := parseHdr(v)
		if err != nil {
			return s.corrupt(k, err)
		}
		if h.last < from || h.first >= to {
			return nil
		}
		if h.first >= from && h.last < to {
			removed += h.count
			drop = append(drop, clone(k))
			return nil
		}
		pts, _, err := decodeBlock(nil, v)
		if err != nil {
			return s.corrupt(k, err)
		}
		keep := slices.DeleteFunc(pts, func(p point) bool { return p.ts >= from && p.ts < to })
		removed += h.count - len(keep)
		rewrites = append(rewrites, rewrite{clone(k), keep})
		return nil
	}
	if err := s.eachBlock(from, to, classify); err != nil {
		return 0, err
	}
	for _, k := range drop {
		if err := s.b.Delete(k); err != nil {
			return 0, err
		}
	}
	for _, r := range rewrites {
		if err := s.b.Delete(r.key); err != nil {
			return 0, err
		}
		if len(r.keep) == 0 {
			continue
		}
		k := r.key
		if r.key[0] != 0 {
			k = s.key(r.keep[0].ts)
		}
		if err := s.put(k, s.encode(r.keep)); err != nil {
			return 0, err
		}
	}
	return removed, nil
}

// ---- transaction-level API ----

func historyBucket(tx *bolt.Tx) (*bolt.Bucket, error) {
	b := tx.Bucket(bHistory)
	if b == nil {
		return nil, errors.New("history bucket missing: database not migrated")
	}
	if tx.Writable() {
		b.FillPercent = histFillPercent
	}
	return b, nil
}

// putReadings stores rs (any order, duplicates allowed) and returns how many
// readings were new. It does not modify rs. idx carries scratch buffers
// across calls; pass nil outside the writer. The caller must call
// idx.release() after the transaction ends.
func putReadings(tx *bolt.Tx, rs []Reading, idx *seriesIndex) (int, error) {
	if len(rs) == 0 {
		return 0, nil
	}
	if err := ValidateReadings(rs); err != nil {
		return 0, err
	}
	b, err := historyBucket(tx)
	if err != nil {
		return 0, err
	}
	if idx == nil {
		idx = newSeriesIndex()
	}
	for i := range rs {
		r := &rs[i]
		id := seriesID{r.UID, r.Metric}
		sb := idx.m[id]
		if sb == nil {
			sb = &seriesBuf{id: id, head: headKey(r.UID, r.Metric)}
			idx.m[id] = sb
		}
		if len(sb.pts) == 0 {
			idx.touched = append(idx.touched, sb)
		}
		sb.pts = append(sb.pts, point{r.TS, toFixed(r.Value)})
	}
	defer func() {
		for _, sb := range idx.touched {
			sb.pts = sb.pts[:0]
		}
		idx.touched = idx.touched[:0]
	}()
	// Key order keeps consecutive puts on neighbouring pages.
	slices.SortFunc(idx.touched, func(a, b *seriesBuf) int { return bytes.Compare(a.head, b.head) })
	s := seriesRef{b: b, x: idx}
	added := 0
	for _, sb := range idx.touched {
		pts := sb.pts
		if !slices.IsSortedFunc(pts, cmpTS) {
			slices.SortStableFunc(pts, cmpTS) // stable: the first of equal timestamps wins
		}
		pts = slices.CompactFunc(pts, func(a, b point) bool { return a.ts == b.ts })
		s.head = sb.head
		n, err := s.merge(pts)
		if err != nil {
			if errors.Is(err, ErrCorruptHistory) {
				err = &SeriesError{UID: sb.id.uid, Metric: sb.id.metric, Err: err}
			}
			return added, err
		}
		added += n
	}
	return added, nil
}

func cmpTS(a, b point) int {
	switch {
	case a.ts < b.ts:
		return -1
	case a.ts > b.ts:
		return 1
	}
	return 0
}

// PutReadings stores readings in tx, outside the group-commit writer (bulk
// imports, tests). It returns how many were new.
func PutReadings(tx *bolt.Tx, rs []Reading) (int, error) { return putReadings(tx, rs, nil) }

// historyMetrics lists the metrics stored for uid.
func historyMetrics(b *bolt.Bucket, uid string) ([]uint8, error) {
	var seen [256]bool
	var out []uint8
	add := func(m uint8) {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	c := b.Cursor()
	hp := append(append([]byte{0}, uid...), 0)
	for k, _ := c.Seek(hp); k != nil && bytes.HasPrefix(k, hp); k, _ = c.Next() {
		if len(k) == len(hp)+1 {
			add(k[len(k)-1])
		}
	}
	cp := hp[1:]
	for k, _ := c.Seek(cp); k != nil && bytes.HasPrefix(k, cp); {
		if len(k) != len(cp)+9 {
			return nil, fmt.Errorf("history: unexpected key %q", k)
		}
		m := k[len(cp)]
		add(m)
		// Skip the rest of this series in one seek.
		next := append(append(slices.Clip(cp), m), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
		k, _ = c.Seek(next)
	}
	slices.Sort(out)
	return out, nil
}

// RenameHistoryUID moves every reading of oldUID to newUID, merging with
// readings newUID already has (on an exact (metric, ts) duplicate newUID's
// value is kept). It returns the number of readings taken from oldUID.
// Cost is proportional to oldUID's history, which is held in memory
// (16 bytes per reading) while it is moved.
func RenameHistoryUID(tx *bolt.Tx, oldUID, newUID string) (int, error) {
	return moveHistory(tx, oldUID, newUID, 0)
}

// MoveHistoryAfter moves the readings of fromUID with ts > after to toUID
// (all metrics), merging like RenameHistoryUID.
func MoveHistoryAfter(tx *bolt.Tx, fromUID, toUID string, after int64) (int, error) {
	if after >= math.MaxInt64-1 {
		return 0, nil
	}
	return moveHistory(tx, fromUID, toUID, max(after+1, 0))
}

func moveHistory(tx *bolt.Tx, fromUID, toUID string, from int64) (int, error) {
	if err := checkUID(fromUID); err != nil {
		return 0, err
	}
	if err := checkUID(toUID); err != nil {
		return 0, err
	}
	if fromUID == toUID {
		return 0, nil
	}
	b, err := historyBucket(tx)
	if err != nil {
		return 0, err
	}
	metrics, err := historyMetrics(b, fromUID)
	if err != nil {
		return 0, err
	}
	x := &seriesIndex{}
	moved := 0
	for _, m := range metrics {
		src := newSeriesRef(b, x, fromUID, m)
		pts, err := src.load(nil, from, math.MaxInt64)
		if err != nil {
			return 0, err
		}
		if len(pts) == 0 {
			continue
		}
		if _, err := src.deleteRange(from, math.MaxInt64); err != nil {
			return 0, err
		}
		dst := newSeriesRef(b, x, toUID, m)
		if _, err := dst.merge(pts); err != nil {
			return 0, err
		}
		moved += len(pts)
	}
	return moved, nil
}

// CountHistory returns the number of readings of (uid, metric) with
// from ≤ ts < to. Only blocks that straddle a bound are decoded.
func CountHistory(tx *bolt.Tx, uid string, metric uint8, from, to int64) (int, error) {
	if err := checkSeries(uid, metric); err != nil {
		return 0, err
	}
	b, err := historyBucket(tx)
	if err != nil {
		return 0, err
	}
	return newSeriesRef(b, &seriesIndex{}, uid, metric).count(from, to)
}

// DeleteHistoryBefore removes the readings of (uid, metric) with ts < before
// and returns how many were removed.
func DeleteHistoryBefore(tx *bolt.Tx, uid string, metric uint8, before int64) (int, error) {
	if err := checkSeries(uid, metric); err != nil {
		return 0, err
	}
	b, err := historyBucket(tx)
	if err != nil {
		return 0, err
	}
	return newSeriesRef(b, &seriesIndex{}, uid, metric).deleteRange(0, before)
}

// LatestReading returns the newest reading of (uid, metric) from one block
// header (the head, or the last closed block); ok is false if the series
// has no readings.
func LatestReading(tx *bolt.Tx, uid string, metric uint8) (r Reading, ok bool, err error) {
	if err := checkSeries(uid, metric); err != nil {
		return r, false, err
	}
	b, err := historyBucket(tx)
	if err != nil {
		return r, false, err
	}
	s := seriesRef{b: b, head: headKey(uid, metric)}
	k, v := s.head, s.getHead()
	if v == nil {
		if k, v = s.blockLE(s.cursor(), math.MaxInt64); k == nil {
			return r, false, nil
		}
	}
	h, err := parseHdr(v)
	if err != nil {
		return r, false, s.corrupt(k, err)
	}
	return Reading{UID: uid, Metric: metric, TS: h.last, Value: fromFixed(h.lastV)}, true, nil
}

// ---- DB-level read API ----

// QueryHistory calls fn for the readings of (uid, metric) with
// from ≤ ts < to in ascending time order until fn returns false. fn runs
// inside a read transaction: it must not write to the database.
func (db *DB) QueryHistory(uid string, metric uint8, from, to int64, fn func(ts int64, v float64) bool) error {
	if err := checkSeries(uid, metric); err != nil {
		return err
	}
	return db.bolt.View(func(tx *bolt.Tx) error {
		b, err := historyBucket(tx)
		if err != nil {
			return err
		}
		s := seriesRef{b: b, head: headKey(uid, metric)}
		return s.scan(from, to, func(ts, v int64) bool { return fn(ts, fromFixed(v)) })
	})
}

// QueryHistoryReverse is QueryHistory newest first.
func (db *DB) QueryHistoryReverse(uid string, metric uint8, from, to int64, fn func(ts int64, v float64) bool) error {
	if err := checkSeries(uid, metric); err != nil {
		return err
	}
	return db.bolt.View(func(tx *bolt.Tx) error {
		b, err := historyBucket(tx)
		if err != nil {
			return err
		}
		s := seriesRef{b: b, x: &seriesIndex{}, head: headKey(uid, metric)}
		return s.scanReverse(from, to, func(ts, v int64) bool { return fn(ts, fromFixed(v)) })
	})
}

func parseHeadKey(k []byte) (uid string, metric uint8, ok bool) {
	if len(k) < 4 || k[0] != 0 || k[len(k)-2] != 0 {
		return "", 0, false
	}
	return string(k[1 : len(k)-2]), k[len(k)-1], true
}

func parseClosedKey(k []byte) (uidMetric []byte, ok bool) {
	if len(k) < 11 || k[0] == 0 || k[len(k)-10] != 0 {
		return nil, false
	}
	return k[:len(k)-8], true
}

// HistorySeries lists every stored (uid, metric) with its time range and
// reading count, ordered by uid then metric. It reads every block header
// (not the payloads): O(blocks), meant for admin pages and planning.
func (db *DB) HistorySeries() ([]Series, error) {
	var out []Series
	err := db.bolt.View(func(tx *bolt.Tx) error {
		b, err := historyBucket(tx)
		if err != nil {
			return err
		}
		heads := map[string]blockHdr{}
		c := b.Cursor()
		k, v := c.First()
		for ; k != nil && k[0] == 0; k, v = c.Next() {
			h, err := parseHdr(v)
			if err != nil {
				return fmt.Errorf("history %q: %w", k, err)
			}
			heads[string(k[1:])] = h
		}
		var cur *Series
		var curKey []byte
		for ; k != nil; k, v = c.Next() {
			um, ok := parseClosedKey(k)
			if !ok {
				return fmt.Errorf("history: unexpected key %q", k)
			}
			h, err := parseHdr(v)
			if err != nil {
				return fmt.Errorf("history %q: %w", k, err)
			}
			if cur == nil || !bytes.Equal(um, curKey) {
				curKey = append(curKey[:0], um...)
				out = append(out, Series{UID: string(um[:len(um)-2]), Metric: um[len(um)-1], First: h.first})
				cur = &out[len(out)-1]
			}
			cur.Last = h.last
			cur.Count += h.count
		}
		for i := range out {
			s := &out[i]
			hk := append([]byte(s.UID), 0, s.Metric)
			if h, ok := heads[string(hk)]; ok {
				s.Last = h.last
				s.Count += h.count
				delete(heads, string(hk))
			}
		}
		for k, h := range heads {
			out = append(out, Series{UID: k[:len(k)-2], Metric: k[len(k)-1], First: h.first, Last: h.last, Count: h.count})
		}
		return nil
	})
	slices.SortFunc(out, func(a, b Series) int {
		if c := strings.Compare(a.UID, b.UID); c != 0 {
			return c
		}
		return int(a.Metric) - int(b.Metric)
	})
	return out, err
}

// LatestReadings returns the newest reading of every (uid, metric), ordered
// by uid then metric. It reads one block header per series (the head, or
// the last closed block of a series without a head), for warming caches at
// startup.
func (db *DB) LatestReadings() ([]Reading, error) {
	var out []Reading
	err := db.bolt.View(func(tx *bolt.Tx) error {
		b, err := historyBucket(tx)
		if err != nil {
			return err
		}
		hasHead := map[string]bool{}
		c := b.Cursor()
		k, v := c.First()
		for ; k != nil && k[0] == 0; k, v = c.Next() {
			uid, m, ok := parseHeadKey(k)
			if !ok {
				return fmt.Errorf("history: unexpected key %q", k)
			}
			h, err := parseHdr(v)
			if err != nil {
				return fmt.Errorf("history %q: %w", k, err)
			}
			out = append(out, Reading{UID: uid, Metric: m, TS: h.last, Value: fromFixed(h.lastV)})
			hasHead[string(k[1:])] = true
		}
		// Visit each closed series once: jump to its end, look one key back.
		var skip []byte
		for k != nil {
			um, ok := parseClosedKey(k)
			if !ok {
				return fmt.Errorf("history: unexpected key %q", k)
			}
			skip = append(append(skip[:0], um...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
			if !hasHead[string(um)] {
				lk, _ := c.Seek(skip)
				var lv []byte
				if lk == nil {
					lk, lv = c.Last()
				} else {
					lk, lv = cursorPrev(b, c, lk)
				}
				h, err := parseHdr(lv)
				if err != nil {
					return fmt.Errorf("history %q: %w", lk, err)
				}
				out = append(out, Reading{UID: string(um[:len(um)-2]), Metric: um[len(um)-1], TS: h.last, Value: fromFixed(h.lastV)})
			}
			k, _ = c.Seek(skip)
		}
		return nil
	})
	slices.SortFunc(out, func(a, b Reading) int {
		if c := strings.Compare(a.UID, b.UID); c != 0 {
			return c
		}
		return int(a.Metric) - int(b.Metric)
	})
	return out, err
}

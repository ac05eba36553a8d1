package rtls

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/ingest"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// recorder collects survey samples: while uid is being recorded in a
// zone, its sightings are averaged per gateway over SampleWindow and each
// window becomes one Sample. It works whether or not tracking runs and for
// any registered beacon (a survey tag need not be a trackable type).
type recorder struct {
	active atomic.Int32 // len(m), so Observe skips the lock when idle
	mu     sync.Mutex
	m      map[string]*recording
	limit  int // windows one recording keeps (Options.SurveyWindows)
	// moved maps the uid of a recording a remint or merge moved to the
	// uid it moved to, so a stop by the uid the survey was started with
	// finds it, and only it: a merged-away beacon that was not being
	// surveyed stops nothing of its survivor's (a review).
	moved map[string]string
	// save hands the writer an op that keeps recordings' windows across
	// a crash (nil without a writer); failed, if not nil, is set when
	// the op does not commit.
	save func(op func(*bolt.Tx) error, failed *atomic.Bool)
	// qmu orders what reaches the writer: held from taking a recording's
	// ops under mu until they are queued, so its saves, renames and its
	// stop are committed in that order. Writer.Do waits when the
	// writer's queue is full, and under mu it held up ingest's observe
	// of every survey (a review); observe takes mu only.
	qmu  sync.Mutex
	next uint64 // the last recording number handed out (recording.id)
}

// maxMoved bounds moved: renames are rare, and an entry is dropped when
// its recording stops.
const maxMoved = 1024

type recording struct {
	// id numbers the recording for the windows the sweep saves
	// (store.PutZoneSurveyWindows); saved is how many of samples are.
	id    uint64
	saved int
	// also are the ids of recordings merged into this one: their saved
	// windows are dropped by the merge, and again at the stop in case
	// that op did not commit.
	also []uint64
	// failed is set by a save that did not commit; the next sweep saves
	// every window again.
	failed atomic.Bool
	// device is the tag the recording hears: the first it heard under
	// its uid. A merge can hand the uid another tag (the merged one's)
	// while that tag stands elsewhere, and its readings went into this
	// zone's windows (a review: a zone-3 tag's -72 dBm labelled zone 1).
	// Readings of another device under the uid are counted in other.
	device  ingest.MAC
	devSet  bool
	other   int
	zone    uint64
	start   int64 // window start, Unix ms; 0 before the first sighting
	sum     map[[6]byte]float64
	sq      map[[6]byte]float64 // sum of squares, for Sample.SD
	n       map[[6]byte]int
	samples []Sample
	over    int   // windows past MaxSurveyWindows, not kept
	last    int64 // Unix ms of the last sighting recorded
	// prev is each gateway's last report recorded (its time and RSSI):
	// a QoS 1 publish the gateway sends again (no PUBACK reached it)
	// carries the same report, and counted twice it halved the spread
	// of its window's readings.
	prev map[[6]byte]heardAt
}

type heardAt struct {
	ts   int64
	rssi int8
}

// Record starts (or restarts in another zone) recording survey samples of
// uid standing in zone.
func (e *Engine) Record(uid string, zone uint64) {
	// qmu: a stop waiting for its store holds it, and may put its
	// recording back under uid.
	e.rec.qmu.Lock()
	defer e.rec.qmu.Unlock()
	e.rec.mu.Lock()
	r := e.rec.m[uid]
	fresh := r == nil
	if fresh {
		e.rec.next++
		r = &recording{id: e.rec.next, prev: map[[6]byte]heardAt{}}
		e.rec.m[uid] = r
		e.rec.active.Store(int32(len(e.rec.m)))
	}
	r.flush(e.rec.limit)
	r.zone, r.start = zone, 0
	e.rec.mu.Unlock()
	// Saved at once, with no window, so that a crash before the first
	// sweep is logged at the next start too (a review: it left no
	// trace). Outside mu, as every writer op: ingest takes mu.
	if fresh && e.rec.save != nil {
		e.rec.save(store.PutZoneSurveyWindows(r.id, uid, 0, nil, 0), &r.failed)
	}
}

// StopRecording ends uid's recording and returns its samples (the last,
// partial window included when it heard anything) without storing them
// (rtls-eval trains on them): empty, not nil, when it heard nothing;
// nil when uid was not recording. What the sweep saved of it is
// forgotten.
func (e *Engine) StopRecording(uid string) []Sample {
	rc := &e.rec
	rc.qmu.Lock()
	defer rc.qmu.Unlock()
	r, _, _ := rc.stop(uid)
	if r == nil {
		return nil
	}
	if rc.save != nil { // every recording saves its header at its start
		rc.save(store.DropZoneSurveyWindows(r.ids()...), nil)
	}
	if r.samples == nil {
		return []Sample{}
	}
	return r.samples
}

// ids are the recording numbers whose saved windows are this recording's.
func (r *recording) ids() []uint64 { return append(slices.Clone(r.also), r.id) }

// stop removes uid's recording, following a remint or merge that moved
// it, and returns it with the uid it was recording under and the moves
// it followed, which it forgets (takes mu; qmu held).
func (rc *recorder) stop(uid string) (*recording, string, map[string]string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var followed map[string]string
	for hops := 0; rc.m[uid] == nil && hops < 8; hops++ {
		to, ok := rc.moved[uid]
		if !ok {
			break
		}
		if followed == nil {
			followed = map[string]string{}
		}
		followed[uid] = to
		delete(rc.moved, uid)
		uid = to
	}
	r := rc.m[uid]
	if r == nil {
		return nil, "", nil
	}
	delete(rc.m, uid)
	rc.active.Store(int32(len(rc.m)))
	// Moves to it end with it: kept, a later survey of the merged-away
	// uid was stopped by the survivor's (a review).
	for from, to := range rc.moved {
		if to == uid {
			if followed == nil {
				followed = map[string]string{}
			}
			followed[from] = to
			delete(rc.moved, from)
		}
	}
	r.flush(rc.limit)
	return r, uid, followed
}

// ErrNotRecording: StopSurvey's uid was not recording a survey.
var ErrNotRecording = errors.New("not recording a survey")

// StopSurvey ends uid's recording and stores its samples under the uid it
// was recording under (a remint's or merge's survivor), returned in the
// answer. The samples and the forgetting of what the sweep saved of it
// are one writer transaction, queued behind those saves: a crash cannot
// store them twice or lose them. ErrNotRecording when uid records
// nothing; without a writer (a test of pure prediction) nothing can be
// stored, and the recording goes on. A store that fails puts the
// recording back as it was, moves included, so that a second stop by
// the same uid stores it: qmu is held until the store's outcome, so no
// rename, record, sweep or other stop runs in between (a review: one
// that did made the put-back lose the recording or its moves). Ingest
// does not wait: it takes mu only.
func (e *Engine) StopSurvey(uid string, now time.Time) (store.ZoneSurveyStored, error) {
	w := e.opts.Writer
	if w == nil {
		return store.ZoneSurveyStored{}, errors.New("rtls: no store to keep a survey in")
	}
	rc := &e.rec
	var st store.ZoneSurveyStored
	done := make(chan error, 1)
	rc.qmu.Lock()
	defer rc.qmu.Unlock()
	r, at, followed := rc.stop(uid)
	if r == nil {
		return st, ErrNotRecording
	}
	ss := make([]store.ZoneSample, 0, len(r.samples))
	for _, sm := range r.samples {
		ss = append(ss, SampleToStore(at, sm))
	}
	st.AssetUID, st.Over = at, r.over
	w.Do(store.StoreZoneSurvey(ss, now, r.ids(), &st), func(err error) { done <- err })
	if err := <-done; err != nil {
		rc.mu.Lock()
		rc.m[at] = r
		rc.active.Store(int32(len(rc.m)))
		for from, to := range followed {
			if rc.moved == nil {
				rc.moved = map[string]string{}
			}
			rc.moved[from] = to
		}
		rc.mu.Unlock()
		return store.ZoneSurveyStored{AssetUID: at}, err
	}
	return st, nil
}

// StopAllSurveys stops and stores every survey under way (a shutdown),
// as StopSurvey would; the answer holds those stored, by uid, and the
// first error.
func (e *Engine) StopAllSurveys(now time.Time) ([]store.ZoneSurveyStored, error) {
	e.rec.mu.Lock()
	uids := make([]string, 0, len(e.rec.m))
	for uid := range e.rec.m {
		uids = append(uids, uid)
	}
	e.rec.mu.Unlock()
	slices.Sort(uids)
	var out []store.ZoneSurveyStored
	var first error
	for _, uid := range uids {
		st, err := e.StopSurvey(uid, now)
		if errors.Is(err, ErrNotRecording) { // stopped meanwhile
			continue
		}
		if err != nil {
			first = cmp.Or(first, fmt.Errorf("%s: %w", uid, err))
			continue
		}
		out = append(out, st)
	}
	return out, first
}

// saveSurveys hands the writer the windows each recording finished since
// the last save (every sweep): a crash loses at most the last sweep's
// quarter of the timeout and the window in progress.
func (rc *recorder) saveSurveys() {
	if rc.save == nil || rc.active.Load() == 0 {
		return
	}
	type save struct {
		op     func(*bolt.Tx) error
		failed *atomic.Bool
	}
	var saves []save
	rc.qmu.Lock()
	defer rc.qmu.Unlock()
	rc.mu.Lock()
	for uid, r := range rc.m {
		if r.failed.Swap(false) {
			r.saved = 0
		}
		if len(r.samples) > r.saved {
			saves = append(saves, save{r.saveOp(uid), &r.failed})
		}
	}
	rc.mu.Unlock()
	for _, sv := range saves {
		rc.save(sv.op, sv.failed)
	}
}

// saveOp saves the windows of r not yet saved, under uid (mu held). From
// the first window (a first save, or again after one failed) it drops
// the windows of recordings merged into r first, which r's own saves
// now hold.
func (r *recording) saveOp(uid string) func(*bolt.Tx) error {
	ss := make([]store.ZoneSample, 0, len(r.samples)-r.saved)
	for _, sm := range r.samples[r.saved:] {
		ss = append(ss, SampleToStore(uid, sm))
	}
	put := store.PutZoneSurveyWindows(r.id, uid, r.saved, ss, r.over)
	op := put
	if r.saved == 0 && len(r.also) > 0 {
		drop := store.DropZoneSurveyWindows(r.also...)
		op = func(tx *bolt.Tx) error {
			if err := drop(tx); err != nil {
				return err
			}
			return put(tx)
		}
	}
	r.saved = len(r.samples)
	return op
}

// SampleToStore is sm, recorded of uid, as the store keeps it.
func SampleToStore(uid string, sm Sample) store.ZoneSample {
	return store.ZoneSample{Zone: sm.Zone, AssetUID: uid, RSSI: byFormattedMAC(sm.RSSI),
		Readings: byFormattedMAC(sm.N), RSSISD: byFormattedMAC(sm.SD), RecordedAt: sm.At}
}

// byFormattedMAC is m keyed by the store's MAC form (assets.FormatMAC);
// nil when m is empty, so a sample without readings or spread stores
// neither.
func byFormattedMAC[V any](m map[[6]byte]V) map[string]V {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]V, len(m))
	for mac, v := range m {
		out[assets.FormatMAC(mac)] = v
	}
	return out
}

// flush turns the current window into a sample (kept up to limit).
func (r *recording) flush(limit int) {
	if len(r.n) > 0 {
		s := Sample{Zone: r.zone, RSSI: make(map[[6]byte]float64, len(r.n)), N: make(map[[6]byte]int, len(r.n)), At: r.start}
		for g, n := range r.n {
			mean := r.sum[g] / float64(n)
			s.RSSI[g], s.N[g] = mean, n
			if n >= 2 {
				if s.SD == nil {
					s.SD = make(map[[6]byte]float64, len(r.n))
				}
				s.SD[g] = math.Sqrt(math.Max(r.sq[g]-r.sum[g]*mean, 0) / float64(n-1))
			}
		}
		r.keep(s, limit)
	}
	r.sum, r.sq, r.n = map[[6]byte]float64{}, map[[6]byte]float64{}, map[[6]byte]int{}
	r.start = 0
}

// windowSlack is how much shorter than SampleWindow a survey window may
// be to end where a scan begins: enough for a scan whose reports spread
// over some tens of milliseconds; 100 ms also cut windows of surveys
// whose reports come at random (walk B spread over the second: k-NN -5
// points).
const windowSlack = 30

func (rc *recorder) observe(p *Params, bt *ingest.Batch) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for i := range bt.Obs {
		o := &bt.Obs[i]
		if o.Asset == nil {
			continue
		}
		r := rc.m[o.Asset.UID]
		if r == nil {
			continue
		}
		if !r.devSet {
			r.device, r.devSet = o.MAC, true
		} else if o.MAC != r.device {
			r.other++
			continue
		}
		// The same report from the same gateway (its time, from the
		// gateway's clock, and its RSSI): delivered again, not heard
		// again. A gateway that sends no time gets its receive time,
		// and such a resend cannot be told from a new reading.
		h := heardAt{o.TS, o.RSSI}
		if r.prev[bt.Gateway] == h {
			continue
		}
		r.prev[bt.Gateway] = h
		now := bt.Received
		// A window ends after SampleWindow, or at the first report of a
		// scan (scanSettle after the last report) that comes less than
		// windowSlack before that: the window then holds whole scans.
		// Without it, a scan whose reports arrive a few milliseconds
		// apart (gateways publishing on their own) was cut in two
		// whenever its first report came earlier in its second than
		// the window's had, and every window began a little later than
		// the one before, until they cut every scan: the k-NN view of
		// such a survey lost a fifth of its hits, hmm 4 points on walk
		// C (TestSurveyWindowsHoldWholeScans).
		if age := now - r.start; r.start != 0 && (age >= p.SampleWindow.Milliseconds() ||
			age >= p.SampleWindow.Milliseconds()-windowSlack && now-r.last >= scanSettle) {
			r.flush(rc.limit)
		}
		r.last = now
		if r.start == 0 {
			r.start = now
		}
		x := float64(o.RSSI)
		r.sum[bt.Gateway] += x
		r.sq[bt.Gateway] += x * x
		r.n[bt.Gateway]++
	}
}

// rename follows a remint or merge. A merge of two beacons both being
// surveyed keeps the survivor's recording and adds the other's windows
// to it (each sample names its zone): the other's replaced it, and the
// survivor's windows were lost (a review).
func (rc *recorder) rename(oldUID, newUID string) {
	rc.qmu.Lock()
	defer rc.qmu.Unlock()
	op, failed := rc.renameLocked(oldUID, newUID)
	if op != nil {
		rc.save(op, failed)
	}
}

// renameLocked is rename under mu; it returns the op that follows the
// rename in the store, if any, and the flag its failure sets.
func (rc *recorder) renameLocked(oldUID, newUID string) (func(*bolt.Tx) error, *atomic.Bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	defer func() { rc.active.Store(int32(len(rc.m))) }()
	r, ok := rc.m[oldUID]
	if !ok {
		return nil, nil
	}
	delete(rc.m, oldUID)
	if rc.moved == nil || len(rc.moved) >= maxMoved {
		rc.moved = map[string]string{}
	}
	rc.moved[oldUID] = newUID
	if kept := rc.m[newUID]; kept != nil {
		r.flush(rc.limit)
		for _, s := range r.samples {
			kept.keep(s, rc.limit)
		}
		kept.over += r.over
		// r's windows are saved again as kept's, and what r saved is
		// forgotten, in one op: a crash finds each window once. If the
		// op fails, kept saves everything again and drops r's then,
		// and its stop drops them in any case.
		kept.also = append(kept.also, r.ids()...)
		if rc.save == nil {
			return nil, nil
		}
		drop := store.DropZoneSurveyWindows(r.ids()...)
		put := kept.saveOp(newUID)
		return func(tx *bolt.Tx) error {
			if err := drop(tx); err != nil {
				return err
			}
			return put(tx)
		}, &kept.failed
	}
	rc.m[newUID] = r
	if rc.save == nil {
		return nil, nil
	}
	// The uid a crash stores it under; a failure saves it all again.
	return store.PutZoneSurveyWindows(r.id, newUID, r.saved, nil, r.over), &r.failed
}

// MaxSurveyWindows bounds the samples one survey keeps: 5000 windows
// are 2.8 hours at the default 2 s. A survey left running kept every
// window in memory and stored them all, and each stored sample costs
// every model build (a review: 53,000 samples, 168 MB and 1.3 s per
// sample deleted). Windows past it are not kept.
const MaxSurveyWindows = 5000

// keep adds a finished window, up to limit.
func (r *recording) keep(s Sample, limit int) {
	if len(r.samples) < limit {
		r.samples = append(r.samples, s)
	} else {
		r.over++
	}
}

// SurveyStatus is one survey under way, for Status.
type SurveyStatus struct {
	AssetUID string `json:"asset_uid"`
	Zone     uint64 `json:"zone_id"`
	Windows  int    `json:"windows"`              // samples recorded so far
	Over     int    `json:"over_limit,omitempty"` // windows past MaxSurveyWindows, not kept
	// OtherDevice counts reports of another tag under the uid (a merge
	// gave it the merged beacon's), not recorded.
	OtherDevice int `json:"other_device,omitempty"`
}

// surveys lists the surveys under way, by uid.
func (rc *recorder) surveys() []SurveyStatus {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := make([]SurveyStatus, 0, len(rc.m))
	for uid, r := range rc.m {
		out = append(out, SurveyStatus{AssetUID: uid, Zone: r.zone, Windows: len(r.samples), Over: r.over, OtherDevice: r.other})
	}
	slices.SortFunc(out, func(a, b SurveyStatus) int { return strings.Compare(a.AssetUID, b.AssetUID) })
	return out
}

package rtls

import (
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
}

// maxMoved bounds moved: renames are rare, and an entry is dropped when
// its recording stops.
const maxMoved = 1024

type recording struct {
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
	e.rec.mu.Lock()
	defer e.rec.mu.Unlock()
	r := e.rec.m[uid]
	if r == nil {
		r = &recording{prev: map[[6]byte]heardAt{}}
		e.rec.m[uid] = r
		e.rec.active.Store(int32(len(e.rec.m)))
	}
	r.flush(e.rec.limit)
	r.zone, r.start = zone, 0
}

// StopRecording ends uid's recording and returns its samples (the last,
// partial window included when it heard anything): empty, not nil, when
// it heard nothing; nil when uid was not recording.
func (e *Engine) StopRecording(uid string) []Sample {
	e.rec.mu.Lock()
	defer e.rec.mu.Unlock()
	for hops := 0; e.rec.m[uid] == nil && hops < 8; hops++ {
		to, ok := e.rec.moved[uid]
		if !ok {
			break
		}
		delete(e.rec.moved, uid)
		uid = to
	}
	r := e.rec.m[uid]
	if r == nil {
		return nil
	}
	delete(e.rec.m, uid)
	e.rec.active.Store(int32(len(e.rec.m)))
	r.flush(e.rec.limit)
	if r.samples == nil {
		return []Sample{}
	}
	return r.samples
}

// StopAllRecordings ends every recording (a shutdown) and returns each
// one's samples by uid, as StopRecording would.
func (e *Engine) StopAllRecordings() map[string][]Sample {
	e.rec.mu.Lock()
	uids := make([]string, 0, len(e.rec.m))
	for uid := range e.rec.m {
		uids = append(uids, uid)
	}
	e.rec.mu.Unlock()
	out := make(map[string][]Sample, len(uids))
	for _, uid := range uids {
		if got := e.StopRecording(uid); got != nil {
			out[uid] = got
		}
	}
	return out
}

// SurveyStored is what storing a survey's samples did.
type SurveyStored struct {
	Samples []store.ZoneSample // stored, with their ids
	Dropped int                // of a zone deleted while the survey recorded
	Full    int                // past store.MaxZoneSamples
}

// StoreSurvey stores the samples recorded of uid, at a survey's stop or
// a shutdown's; both say what it did with Summary.
func StoreSurvey(db *store.DB, uid string, got []Sample, now time.Time) (SurveyStored, error) {
	ss := make([]store.ZoneSample, 0, len(got))
	for _, sm := range got {
		ss = append(ss, SampleToStore(uid, sm))
	}
	var st SurveyStored
	var err error
	st.Samples, st.Dropped, st.Full, err = db.AddZoneSamples(ss, now)
	return st, err
}

// Summary says what was stored, for the application log and the answer.
func (st SurveyStored) Summary() string {
	msg := fmt.Sprintf("%d samples stored", len(st.Samples))
	if st.Dropped > 0 {
		msg += fmt.Sprintf(", %d dropped: their zone was deleted while recording", st.Dropped)
	}
	if st.Full > 0 {
		msg += fmt.Sprintf(", %d not stored: the site holds at most %d samples; delete some first", st.Full, store.MaxZoneSamples)
	}
	return msg
}

// SampleToStore is sm, recorded of uid, as the store keeps it.
func SampleToStore(uid string, sm Sample) store.ZoneSample {
	return store.ZoneSample{Zone: sm.Zone, AssetUID: uid, RSSI: byFormattedMAC(sm.RSSI),
		Readings: byFormattedMAC(sm.N), RSSISD: byFormattedMAC(sm.SD)}
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
		s := Sample{Zone: r.zone, RSSI: make(map[[6]byte]float64, len(r.n)), N: make(map[[6]byte]int, len(r.n))}
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
	rc.mu.Lock()
	defer rc.mu.Unlock()
	r, ok := rc.m[oldUID]
	if !ok {
		return
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
	} else {
		rc.m[newUID] = r
	}
	rc.active.Store(int32(len(rc.m)))
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
}

// surveys lists the surveys under way, by uid.
func (rc *recorder) surveys() []SurveyStatus {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := make([]SurveyStatus, 0, len(rc.m))
	for uid, r := range rc.m {
		out = append(out, SurveyStatus{AssetUID: uid, Zone: r.zone, Windows: len(r.samples), Over: r.over})
	}
	slices.SortFunc(out, func(a, b SurveyStatus) int { return strings.Compare(a.AssetUID, b.AssetUID) })
	return out
}

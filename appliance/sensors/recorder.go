// Package sensors owns sensor readings: the latest value per asset and
// metric (in memory, restored from history at start), the history written
// through the group-commit writer, history queries with downsampling
// (history.go, chart.go), the device and range-alert lists (service.go),
// the sensor conditions — out of range, low battery, not seen, calibration
// expired — with their persisted active/resolved records (conditions.go,
// monitor.go, checkers.go), and history retention (retention.go).
package sensors

import (
	"bytes"
	"math"
	"strconv"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/ingest"
	"beaconhub/store"
)

// Metric ids of the history.
const (
	Humidity    = store.MetricHumidity
	Temperature = store.MetricTemperature
	Battery     = store.MetricBattery
)

// DedupWindowMS is the duplicate rule: the same advertisement is heard by
// several gateways, each of which reports it. A reading of the same asset
// and metric with the same value within 2 s of the last stored one is that
// same advertisement and is not stored again. (Sensors advertise new values
// far less often than every 2 s, and a genuinely new reading with an equal
// value 2 s later is stored.)
const DedupWindowMS = 2000

// Latest is the newest reading of one metric.
type Latest struct {
	TS    int64   `json:"ts"`
	Value float64 `json:"value"`
}

type series struct {
	latest [4]Latest // indexed by metric id
	// lastStored is what the dedup rule compares with.
	lastStored [4]Latest
}

// Recorder is the sensor-history subscriber of the ingest pipeline. Its
// state is sharded by uid: adv1 batches of different sensors arrive in
// different gateways' read loops at once.
type Recorder struct {
	shards assets.Shards[assets.UIDMap[series]]
}

// NewRecorder returns an empty recorder; Restore fills it from history.
func NewRecorder() *Recorder {
	return &Recorder{}
}

// Restore loads the latest reading per asset and metric.
func (r *Recorder) Restore(db *store.DB) error {
	rs, err := db.LatestReadings()
	if err != nil {
		return err
	}
	for _, x := range rs {
		if x.Metric < 1 || x.Metric > 3 {
			continue
		}
		sh := r.shards.OfUID(x.UID)
		sh.Lock()
		s := sh.V.Add(assets.UIDHash(x.UID), x.UID)
		l := Latest{TS: x.TS, Value: x.Value}
		s.latest[x.Metric], s.lastStored[x.Metric] = l, l
		sh.Unlock()
	}
	return nil
}

// round2 is the history's precision; the latest value shows what is
// stored. Half away from zero on the reading's own decimals, as the
// e-ink displays round (appendDecimal): 1.005 arrives as the float32
// 1.00499999523, which the binary product rounded down to 1.00 (a
// black-box check). Only a product within a hair of a half goes by the
// shortest decimal string; any other is where math.Round puts it. Exact
// below |f| = 2048, where float32's error stays inside the window; the
// decoder bounds temperature and humidity far below that.
func round2(f float32) float64 {
	x := float64(f) * 100
	if d := math.Abs(x - math.Trunc(x)); d < 0.49 || d > 0.51 {
		return math.Round(x) / 100
	}
	var buf [32]byte
	s := strconv.AppendFloat(buf[:0], math.Abs(float64(f)), 'f', -1, 32)
	r := math.Trunc(math.Abs(x))
	if i := bytes.IndexByte(s, '.'); i >= 0 && i+3 < len(s) && s[i+3] >= '5' {
		r++
	}
	return math.Copysign(r, x) / 100
}

// Observe implements ingest.Subscriber. Test sends (is_test) exercise the
// alert path only and never enter the history.
func (r *Recorder) Observe(b *ingest.Batch, w *ingest.Writes) {
	if b.IsTest {
		return
	}
	switch b.Kind {
	case ingest.KindAdv1, ingest.KindSData, ingest.KindAdv8:
	default:
		return
	}
	for i := range b.Obs {
		o := &b.Obs[i]
		if o.Has&(ingest.HasHumidity|ingest.HasTemperature|ingest.HasVBatt) == 0 {
			continue
		}
		sh := r.shards.Of(o.Asset)
		sh.Lock()
		s := sh.V.Of(o.Asset)
		if o.Has&ingest.HasHumidity != 0 {
			r.record(s, w, o, Humidity, round2(o.Humidity))
		}
		if o.Has&ingest.HasTemperature != 0 {
			r.record(s, w, o, Temperature, round2(o.Temperature))
		}
		if o.Has&ingest.HasVBatt != 0 {
			r.record(s, w, o, Battery, float64(o.VBatt))
		}
		// Under the lock: another gateway's copy of the same
		// advertisement, deduplicated against these readings, must find
		// them queued.
		w.Hand()
		sh.Unlock()
	}
}

func (r *Recorder) record(s *series, w *ingest.Writes, o *ingest.Observation, metric uint8, v float64) {
	last := s.lastStored[metric]
	if last.Value == v && abs(o.TS-last.TS) <= DedupWindowMS && last.TS != 0 {
		return
	}
	l := Latest{TS: o.TS, Value: v}
	s.lastStored[metric] = l
	if o.TS >= s.latest[metric].TS {
		s.latest[metric] = l
	}
	w.Readings = append(w.Readings, store.Reading{UID: o.Asset.UID, Metric: metric, TS: o.TS, Value: v})
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// Latest returns the newest reading of a metric for an asset.
func (r *Recorder) Latest(uid string, metric uint8) (Latest, bool) {
	if metric < 1 || metric > 3 {
		return Latest{}, false
	}
	sh := r.shards.OfUID(uid)
	sh.Lock()
	defer sh.Unlock()
	s := sh.V.Get(assets.UIDHash(uid), uid)
	if s == nil || s.latest[metric].TS == 0 {
		return Latest{}, false
	}
	return s.latest[metric], true
}

// all returns the newest reading of every asset and metric.
func (r *Recorder) all() map[Key]Latest {
	out := map[Key]Latest{}
	for i := range r.shards {
		sh := &r.shards[i]
		sh.Lock()
		sh.V.Range(func(uid string, sr *series) {
			for m := 1; m <= 3; m++ {
				if sr.latest[m].TS != 0 {
					out[Key{uid, uint8(m)}] = sr.latest[m]
				}
			}
		})
		sh.Unlock()
	}
	return out
}

// Rename moves the in-memory state of an asset to a new uid (remint).
func (r *Recorder) Rename(oldUID, newUID string) { r.MergeLatest(oldUID, newUID, math.MinInt64) }

// MergeLatest folds oldUID's state into newUID's (a merge's source into
// its survivor). The history kept only the source's readings newer than
// after; of those, each metric's newer reading becomes the latest, so a
// source's newer temperature does not take the survivor's battery with
// it, and a reading the merge deleted is never shown as the latest.
func (r *Recorder) MergeLatest(oldUID, newUID string, after int64) {
	from, to, unlock := r.shards.LockPair(oldUID, newUID)
	defer unlock()
	s, ok := from.V.Delete(assets.UIDHash(oldUID), oldUID)
	if !ok {
		return
	}
	d := to.V.Add(assets.UIDHash(newUID), newUID)
	for m := range d.latest {
		if l := s.latest[m]; l.TS > after && l.TS > d.latest[m].TS {
			d.latest[m] = l
		}
		if l := s.lastStored[m]; l.TS > after && l.TS > d.lastStored[m].TS {
			d.lastStored[m] = l
		}
	}
}

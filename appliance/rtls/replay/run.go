package replay

import (
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/ingest"
	"beaconhub/appliance/rtls"
	"beaconhub/store"
)

// DefaultWarmup is how long after its first sighting a beacon is not
// scored (the contract's 5 s).
const DefaultWarmup = 5 * time.Second

// Options configure a run.
type Options struct {
	Algorithms []string    // default: all the engine has
	Params     rtls.Params // zero: rtls.DefaultParams
	Timeout    time.Duration
	Warmup     time.Duration // not scored after a beacon's first sighting; default 5 s
	Logger     *slog.Logger
	// WorkDir holds the throw-away store; "" makes (and removes) a
	// temporary one. rtls-eval passes its own, to remove it when stopped
	// by a signal too.
	WorkDir string
	// Odds gives an algorithm its own SwitchOdds (SelectOdds); the
	// others run Params'. Each odds runs on an engine of its own, given
	// the samples the one survey recorded.
	Odds map[string]float64
}

// rig is the real appliance data path over a throw-away store.
type rig struct {
	db    *store.DB
	w     *store.Writer
	p     *ingest.Pipeline
	eng   *rtls.Engine
	clk   *clock.Fake
	base  time.Time
	topic map[string]string // gateway id -> topic
	gwID  map[string]string // gateway id -> client id
	mac   map[string]string // beacon id -> MAC text
	uid   map[string]string // beacon id -> asset uid
}

func newRig(ds *Dataset, dir string, opts Options) (*rig, error) {
	db, err := store.Open(filepath.Join(dir, "replay.db"), store.OpenOptions{})
	if err != nil {
		return nil, err
	}
	r := &rig{db: db, topic: map[string]string{}, gwID: map[string]string{}, mac: map[string]string{}, uid: map[string]string{}}
	for id, mac := range ds.Gateway {
		m := ingest.MAC(mac).String()
		// uids from the MAC, not the recording's id: the store bounds
		// a uid's length, a recording does not bound its ids.
		if err := db.CreateGateway(&store.Gateway{AssetUID: "GW-" + hexMAC(mac), MAC: m, Name: id}); err != nil {
			db.Close()
			return nil, err
		}
		r.topic[id], r.gwID[id] = "gw/"+m+"/adv4", m
	}
	for id, mac := range ds.Beacons {
		m := ingest.MAC(mac).String()
		uid := "WAT-" + hexMAC(mac)
		if err := db.CreateBeacon(&store.Beacon{AssetUID: uid, MAC: m, Name: id, Type: "watch", Active: true}); err != nil {
			db.Close()
			return nil, err
		}
		r.mac[id], r.uid[id] = m, uid
	}
	reg, err := assets.NewRegistry(db)
	if err != nil {
		db.Close()
		return nil, err
	}
	r.base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r.clk = clock.NewFake(r.base)
	r.w = store.NewWriter(db, store.WriterOptions{})
	// The whole training file is the survey: the appliance's bound on a
	// survey left running is not the recording's.
	r.eng = rtls.New(rtls.Options{Clock: r.clk, Logger: opts.Logger, Writer: r.w, Timeout: opts.Timeout, Params: opts.Params,
		SurveyWindows: math.MaxInt})
	r.eng.SetSite(ds.Site)
	r.p = ingest.New(ingest.Options{Registry: reg, Writer: r.w, Clock: r.clk, Logger: opts.Logger})
	r.p.AddSubscriber(r.eng)
	r.p.Start()
	return r, nil
}

func hexMAC(m [6]byte) string { return fmt.Sprintf("%X", m[:]) }

func (r *rig) close() {
	_ = r.p.Close()
	r.eng.Close()
	_ = r.w.Close()
	_ = r.db.Close()
}

// play publishes rows at their virtual times, starting at the current
// clock. before runs ahead of each publish, after once evs[i] has been
// processed (a QoS 0 publish is processed inside HandlePublish).
func (r *rig) play(evs []event, before func(ev event), after func(i int)) error {
	start := r.clk.Now()
	for i, ev := range evs {
		if d := start.Add(time.Duration(ev.v) * time.Millisecond).Sub(r.clk.Now()); d > 0 {
			r.clk.Advance(d)
		}
		if before != nil {
			before(ev)
		}
		row := ev.row
		payload := fmt.Appendf(nil, `{"reports":[{"mac":%q,"rssi":%d,"beacon_is_pushed":false}]}`, r.mac[row.Beacon], row.RSSI)
		if err := r.p.HandlePublish(r.gwID[row.Gateway], r.topic[row.Gateway], payload, 0); err != nil {
			return err
		}
		if after != nil {
			after(i)
		}
	}
	return nil
}

// survey replays train.csv while the engine records survey samples of
// each beacon in its true zone (a zone change starts a window in the new
// zone), and returns them beacon after beacon in the order of their ids,
// not the map's: the samples' order decides k-NN's ties
// and the order of the calibration's sums, and a random one made a
// recording of two beacons score differently from run to run (m3 of the
// outside generator: hmm 79.3% or 79.2%, one run in twelve;
// TestSurveyOrderIsTheBeacons).
func (r *rig) survey(ds *Dataset, timeout time.Duration) ([]rtls.Sample, error) {
	zone := map[string]string{}
	err := r.play(timeline(ds.Train, timeout), func(ev event) {
		if zone[ev.row.Beacon] != ev.row.Zone {
			zone[ev.row.Beacon] = ev.row.Zone
			r.eng.Record(r.uid[ev.row.Beacon], ds.ZoneID[ev.row.Zone])
		}
	}, nil)
	if err != nil {
		return nil, err
	}
	var samples []rtls.Sample
	for _, b := range slices.Sorted(maps.Keys(zone)) {
		samples = append(samples, r.eng.StopRecording(r.uid[b])...)
	}
	return samples, nil
}

// Run trains on ds.Train and scores each algorithm on ds.Test.
func Run(ds *Dataset, opts Options) ([]Result, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	if opts.Warmup <= 0 {
		opts.Warmup = DefaultWarmup
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := CheckAlgorithms(opts.Algorithms); err != nil {
		return nil, err
	}
	for name, odds := range opts.Odds {
		if !slices.Contains(oddsAlgorithms, name) {
			return nil, fmt.Errorf("odds for %q, which has none (only %s)", name, strings.Join(oddsAlgorithms, ", "))
		}
		// Params.Set's range, checked before the survey replay rather
		// than after it.
		if !(odds >= 1 && odds <= 1e6) {
			return nil, fmt.Errorf("%s: switch_odds %v: must be between 1 and 1e6", name, odds)
		}
	}
	dir := opts.WorkDir
	if dir == "" {
		d, err := os.MkdirTemp("", "rtls-eval-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	r, err := newRig(ds, dir, opts)
	if err != nil {
		return nil, err
	}
	defer r.close()
	samples, err := r.survey(ds, opts.Timeout)
	if err != nil {
		return nil, err
	}
	r.eng.SetSamples(samples)
	rigs := map[float64]*rig{r.eng.Params().SwitchOdds: r}
	rigFor := func(name string) (*rig, error) {
		odds, ok := opts.Odds[name]
		if !ok {
			return r, nil
		}
		if rr := rigs[odds]; rr != nil {
			return rr, nil
		}
		sub, err := os.MkdirTemp(dir, "odds-")
		if err != nil {
			return nil, err
		}
		o := opts
		o.Params = r.eng.Params()
		if err := o.Params.Set("switch_odds", fmt.Sprint(odds)); err != nil {
			return nil, err
		}
		rr, err := newRig(ds, sub, o)
		if err != nil {
			return nil, err
		}
		rr.eng.SetSamples(samples)
		rigs[odds] = rr
		return rr, nil
	}
	defer func() {
		for _, rr := range rigs {
			if rr != r {
				rr.close()
			}
		}
	}()
	names := opts.Algorithms
	infos := map[string]rtls.AlgorithmInfo{}
	for _, a := range r.eng.Algorithms() {
		infos[a.Name] = a
		if len(opts.Algorithms) == 0 {
			names = append(names, a.Name)
		}
	}
	test := timeline(ds.Test, opts.Timeout)
	var out []Result
	for _, name := range names {
		info := infos[name] // every name is the engine's (CheckAlgorithms)
		res := Result{Algorithm: name, Ready: info.Ready, Reason: info.Reason}
		if ds.NoGeometry && (name == rtls.AlgCentroid || name == rtls.AlgGrid) {
			// The engine would place every zone at the origin.
			res.Ready, res.Reason = false, "the zones in site.json have no area"
		}
		if res.Ready {
			r, err := rigFor(name)
			if err != nil {
				return nil, err
			}
			// A silence longer than the timeout between runs, so nothing
			// of the previous run leaks in.
			r.clk.Advance(2 * opts.Timeout)
			if err := r.eng.Start(name); err != nil {
				return nil, err
			}
			downs := r.eng.JudgedDown()
			sc := newScorer(ds, opts.Warmup, opts.Timeout)
			if err := r.play(test, nil, atInstantEnd(test, func(ev event) {
				loc, _ := r.eng.Location(r.uid[ev.row.Beacon])
				sc.add(ev, loc.Zone)
			})); err != nil {
				return nil, err
			}
			sc.fill(&res)
			res.Downs = r.eng.JudgedDown() - downs
			res.Offsets = map[string]float64{}
			for b := range ds.Beacons {
				if v, ok := r.eng.TagOffset(r.uid[b]); ok {
					res.Offsets[b] = v
				}
			}
			r.eng.Stop()
		}
		out = append(out, res)
	}
	return out, nil
}

// atInstantEnd returns play's after hook: it calls score for every event
// of a virtual instant once the instant's last event has been processed.
// A sighting is scored on the engine's answer at its time, and at that
// time every sighting stamped alike has arrived: a recording whose
// receiver stamps a whole scan with one millisecond (a phone hearing
// fixed beacons) would otherwise have most of its rows scored on a
// part of their scan, a state no reader of the API can catch, since
// the pipeline takes the rest of the scan within microseconds.
func atInstantEnd(evs []event, score func(ev event)) func(i int) {
	lo := 0 // evs[lo:i+1] share an instant not yet scored
	return func(i int) {
		if i+1 < len(evs) && evs[i+1].v == evs[i].v {
			return
		}
		for _, ev := range evs[lo : i+1] {
			score(ev)
		}
		lo = i + 1
	}
}

// CheckAlgorithms refuses a name the engine does not have
// (rtls.ErrUnknownAlgorithm, with the known ones) before any replay:
// Run's survey and SelectOdds' folds take seconds to minutes, and
// rtls-eval refuses it as a usage error before loading a recording.
func CheckAlgorithms(names []string) error {
	known := rtls.AlgorithmNames()
	for _, name := range names {
		if !slices.Contains(known, name) {
			return fmt.Errorf("%w: %q (known: %s)", rtls.ErrUnknownAlgorithm, name, strings.Join(known, ", "))
		}
	}
	return nil
}

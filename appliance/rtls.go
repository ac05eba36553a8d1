package appliance

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"beaconhub/appliance/applog"
	"beaconhub/appliance/assets"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/config"
	"beaconhub/appliance/ingest"
	"beaconhub/appliance/rtls"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// rtlsControl is the tracking engine as the HTTP layer uses it
// (handlers.Tracker): the engine, plus what only the composition root can
// do: persist the chosen algorithm, rebuild the site from the store, and
// read the persisted last sighting.
type rtlsControl struct {
	*rtls.Engine
	app *App
	mu  sync.Mutex // one Reload at a time, so the newest edit wins
	// runMu makes a start or stop and its record one step: a stop
	// between a start and its record left the engine stopped and the
	// start recorded, so the next restart resumed what the admin had
	// stopped.
	runMu sync.Mutex
	// gateways is the registry's gateways (id=MAC) the site was built
	// from; watchGateways reloads when it changes.
	gateways string
	// gatewaysChanged wakes followGateways (gatewayWatch, after a
	// registry write); one pending wake covers any number of writes.
	gatewaysChanged chan struct{}
	// closeFeeds close the WebSocket hubs (Handler adds one per call):
	// after the engine, whose close emits each beacon's zone 0 for them
	// to send.
	closeFeeds []func()
}

// gatewayRecheck is how often the registry's gateways are compared with
// the site's besides after every registry write (gatewayWatch): it
// catches a reload that failed there.
const gatewayRecheck = 15 * time.Second

// betweenRunAndRecord, nil outside tests, runs in Start and Stop between
// the engine's change and its record.
var betweenRunAndRecord func(*rtlsControl)

// Start starts the engine and records the choice, so a restart resumes it.
func (c *rtlsControl) Start(name string) error {
	c.runMu.Lock()
	defer c.runMu.Unlock()
	if err := c.Engine.Start(name); err != nil {
		return err
	}
	if betweenRunAndRecord != nil {
		betweenRunAndRecord(c)
	}
	return c.app.db.SetRTLSAlgorithm(name)
}

// Stop stops the engine and records that it is stopped.
func (c *rtlsControl) Stop() {
	c.runMu.Lock()
	defer c.runMu.Unlock()
	c.Engine.Stop()
	if betweenRunAndRecord != nil {
		betweenRunAndRecord(c)
	}
	if err := c.app.db.SetRTLSAlgorithm(""); err != nil {
		c.app.log.Error("rtls: recording the stop failed", "err", err)
	}
}

// LastSeen is the pipeline's last-seen time (restored from the store at
// start, so it is the persisted last radio sighting).
func (c *rtlsControl) LastSeen(uid string) int64 { return c.app.pipeline.LastSeen().Asset(uid) }

// Reload hands the engine the site and samples as the store has them.
func (c *rtlsControl) Reload() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	site, sig, err := buildSite(c.app.db, c.app.assets)
	if err != nil {
		return fmt.Errorf("rtls site: %w", err)
	}
	samples, err := c.engineSamples()
	if err != nil {
		return err
	}
	c.Engine.Configure(site, samples)
	c.gateways = sig
	return nil
}

// engineSamples reads the stored survey samples as the engine takes
// them, under the MACs of the gateways that heard them as they are now
// (heardBy).
func (c *rtlsControl) engineSamples() ([]rtls.Sample, error) {
	ss, err := c.app.db.ListZoneSamples(0)
	if err != nil {
		return nil, fmt.Errorf("rtls samples: %w", err)
	}
	gws, err := c.app.assets.Gateways()
	if err != nil {
		return nil, fmt.Errorf("rtls gateways: %w", err)
	}
	spells, err := c.app.assets.GatewaySpells()
	if err != nil {
		return nil, fmt.Errorf("rtls gateway devices: %w", err)
	}
	at := heardBy(gws, spells)
	samples := make([]rtls.Sample, 0, len(ss))
	for _, s := range ss {
		samples = append(samples, sampleFromStore(s, at))
	}
	return samples, nil
}

// reloadIfGatewaysChanged reloads the site when the registry's gateways
// (id and MAC) are no longer those it was built from.
func (c *rtlsControl) reloadIfGatewaysChanged() error {
	gws, err := c.app.assets.Gateways()
	if err != nil {
		return err
	}
	c.mu.Lock()
	stale := gatewaySignature(gws) != c.gateways
	c.mu.Unlock()
	if !stale {
		return nil
	}
	return c.Reload()
}

// watchGateways rechecks the registry's gateways every gatewayRecheck,
// then schedules itself again.
func (c *rtlsControl) watchGateways() {
	c.app.clock.AfterFunc(gatewayRecheck, func() {
		if c.app.stopping.Load() {
			return
		}
		if err := c.reloadIfGatewaysChanged(); err != nil {
			c.app.log.Error("rtls: gateway recheck failed", "err", err)
		}
		c.watchGateways()
	})
}

// gatewayWatch has the site reloaded after every registry write that
// changed the gateways (assets.ReloadFollower). A gateway created,
// deleted or given a new device changes the MACs the engine knows, and
// those edits go through the registry, not through the map endpoints
// that reload the site themselves: only the periodic recheck saw them,
// and for up to 15 s after a device replace the engine skipped the new
// MAC's reports and placed its beacons by the other gateways (a review:
// 12-13 s in the wrong zone).
type gatewayWatch struct{ c *rtlsControl }

// Rename (assets.Renamer): gateways' uids are not in the site.
func (gatewayWatch) Rename(string, string) {}

// RegistryReloaded wakes followGateways and returns: it runs under the
// registry's write lock, and a site build (with grid running, seconds on
// a large unplaced site) there held every other registry write (a
// review of the first version, which reloaded inline).
func (w gatewayWatch) RegistryReloaded() {
	select {
	case w.c.gatewaysChanged <- struct{}{}:
	default: // a wake is pending: it sees this write too
	}
}

// followGateways reloads the site when woken and the gateways changed,
// until stop is closed. A failure is logged; the periodic recheck
// retries it.
func (c *rtlsControl) followGateways(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case <-stop:
			return
		case <-c.gatewaysChanged:
			if err := c.reloadIfGatewaysChanged(); err != nil {
				c.app.log.Error("rtls: site reload after a gateway change failed", "err", err)
			}
		}
	}
}

func gatewaySignature(gws []assets.GatewayView) string {
	var b strings.Builder
	for _, g := range gws {
		fmt.Fprintf(&b, "%d=%s;", g.ID, g.MAC)
	}
	return b.String()
}

// buildSite reads maps, zones and every registered gateway (placed or
// not: the engine can learn an unplaced gateway's zone from samples).
func buildSite(db *store.DB, reg *assets.Service) (site rtls.Site, gatewaySig string, err error) {
	maps, err := db.ListMaps()
	if err != nil {
		return site, "", err
	}
	for _, m := range maps {
		site.Maps = append(site.Maps, rtls.Map{ID: m.ID, Name: m.Name, Width: m.Width, Height: m.Height, PixelsPerMeter: m.PixelsPerMeter})
	}
	zones, err := db.ListZones(0)
	if err != nil {
		return site, "", err
	}
	for _, z := range zones {
		site.Zones = append(site.Zones, rtls.Zone{ID: z.ID, MapID: z.MapID, Name: z.Name, X1: z.X1, Y1: z.Y1, X2: z.X2, Y2: z.Y2,
			Adjacent: append([]uint64(nil), z.Adjacent...)})
	}
	placed, err := db.GatewayPlacements(0)
	if err != nil {
		return site, "", err
	}
	at := make(map[uint64]store.GatewayPlacement, len(placed))
	for _, p := range placed {
		at[p.GatewayID] = p
	}
	gws, err := reg.Gateways()
	if err != nil {
		return site, "", err
	}
	for _, g := range gws {
		mac, ok := ingest.ParseMAC(g.MAC)
		if !ok {
			continue
		}
		sg := rtls.Gateway{MAC: mac}
		if p, ok := at[g.ID]; ok {
			sg.MapID, sg.X, sg.Y, sg.Placed = p.MapID, p.X, p.Y, true
		}
		site.Gateways = append(site.Gateways, sg)
	}
	return site, gatewaySignature(gws), nil
}

// buildRTLS closes the intervals a previous run left open (the engine
// starts with no live state) and, when feature rtls is on, starts the
// tracking engine: it loads the site and samples, subscribes the engine
// to ingest and resumes the algorithm the admin chose last.
func (a *App) buildRTLS() error {
	// One read of the live configuration: the feature and the parameters
	// come from the same version of it.
	cfg := a.live.Get()
	// Intervals a crash left open are closed whether or not tracking
	// runs now, before ingest moves the last sightings they are closed
	// at: left open while rtls was off, they were closed when it came
	// back, at a last sighting from the time tracking was off, and the
	// beacon was recorded in its zone for all that time (a review).
	// A stay without the engine's saved sighting (left by a release
	// before that save, or heard first less than a sweep before the
	// crash) closes at its last_seen, in the gateways' clock, but not
	// after the crashed process last wrote the database.
	now := a.clock.Now().UnixMilli()
	var lastWrite int64
	if lw := a.db.LastWrite(); !lw.IsZero() {
		lastWrite = lw.UnixMilli()
	}
	var raised map[string]int64
	if err := a.db.Update(func(tx *bolt.Tx) (err error) {
		raised, err = rtls.CloseOpenIntervals(tx, now, lastWrite)
		return err
	}); err != nil {
		return fmt.Errorf("close open zone intervals: %w", err)
	}
	if a.pipeline != nil { // restored before: the copy in memory follows
		a.pipeline.LastSeen().Restored(raised)
	}
	if err := a.recoverSurveys(); err != nil {
		return err
	}
	// Intervals recorded while tracking ran go on ageing when it is off.
	ret := clock.NewJob(a.clock, intervalRetentionBoot, intervalRetentionEvery, a.pruneZoneIntervals)
	ret.Start()
	a.onStop(func(context.Context) error { ret.Stop(); return nil })
	if a.pipeline == nil || !cfg.Has(config.FeatureRTLS) {
		return nil
	}
	// Entries the load warned about are ignored here (config's Degrade).
	params, kept, _ := rtls.ParamsKept(cfg.RTLSParams)
	if len(kept) > 0 {
		a.log.Info("rtls: parameters other than the defaults", "server_rtls_params", strings.Join(kept, " "))
	}
	eng := rtls.New(rtls.Options{Clock: a.clock, Logger: a.log, Writer: a.writer, Params: params, GatewaySeen: a.gatewaySeen,
		GatewayMessages: a.gatewayMessages, GatewayLink: a.gatewayLink, Beacon: a.registry.BeaconByUID, Heard: a.pipeline.LastSeen().RaiseAsset})
	c := &rtlsControl{Engine: eng, app: a, gatewaysChanged: make(chan struct{}, 1)}
	if err := c.Reload(); err != nil {
		return err
	}
	alg, err := a.db.RTLSAlgorithm()
	if err != nil {
		return fmt.Errorf("rtls algorithm: %w", err)
	}
	if alg != "" {
		if err := eng.Start(alg); err != nil {
			a.log.Warn("rtls: the recorded algorithm is unknown; tracking stays stopped", "algorithm", alg, "err", err)
		}
	}
	a.pipeline.AddSubscriber(eng)
	// Registered after the pipeline's stop, so it runs before it: the
	// engine's last interval closes reach the writer while it still runs.
	a.onStop(func(context.Context) error {
		c.keepSurveys()
		eng.Close()
		for _, f := range c.closeFeeds {
			f()
		}
		return nil
	})
	a.renameAlso(eng)
	a.renameAlso(gatewayWatch{c})
	stop, done := make(chan struct{}), make(chan struct{})
	go c.followGateways(stop, done)
	a.onStop(func(context.Context) error { close(stop); <-done; return nil })
	c.watchGateways()
	a.rtls = c
	return nil
}

// diagSection is the tracking section of a debug snapshot: the engine's
// status and the rate of reports it took since the previous snapshot.
func (c *rtlsControl) diagSection() func() any {
	var (
		mu     sync.Mutex
		lastN  uint64
		lastAt time.Time
	)
	type section struct {
		rtls.Status
		// ReportsPerS is absent on the first snapshot and after the
		// engine's count restarted (a tracking start).
		ReportsPerS *float64 `json:"reports_per_s,omitempty"`
	}
	return func() any {
		st := c.Status()
		now := c.app.clock.Now()
		mu.Lock()
		defer mu.Unlock()
		out := section{Status: st}
		if wall := now.Sub(lastAt); !lastAt.IsZero() && wall > 0 && st.Reports >= lastN {
			r := math.Round(1000*float64(st.Reports-lastN)/wall.Seconds()) / 1000
			out.ReportsPerS = &r
		}
		lastN, lastAt = st.Reports, now
		return out
	}
}

// Zone-interval retention: daily, and first 20 minutes after start (after
// the sensor and event jobs), so a box that was off catches up.
const (
	intervalRetentionBoot  = 20 * time.Minute
	intervalRetentionEvery = 24 * time.Hour
	// intervalRetentionBatch beacons are pruned per write transaction:
	// ingest's writer shares bbolt's one write lock.
	intervalRetentionBatch = 64
)

// pruneZoneIntervals deletes the zone intervals that ended more than
// server_rtls_intervals_retention_days ago. Nothing else deleted them,
// and a site of thousands of tags adds one per zone change per tag
// (a review).
func (a *App) pruneZoneIntervals() {
	days := a.live.Get().RTLSIntervalsRetentionDays
	if days <= 0 {
		return
	}
	before := a.clock.Now().UnixMilli() - int64(days)*86400e3
	n, err := a.db.PruneZoneIntervals(before, intervalRetentionBatch)
	if err != nil {
		a.log.Warn("rtls: zone interval retention", "err", err)
	} else if n > 0 {
		a.log.Info("rtls: zone interval retention", "deleted", n)
	}
}

// renameAlso makes remint and merge move the engine's live state along
// with the other followers of uid renames.
func (a *App) renameAlso(r assets.Renamer) {
	a.hooks.Followers = append(a.hooks.Followers, r)
	a.assets.Connect(a.hooks)
}

// RTLS returns the tracking engine (nil without feature rtls).
func (a *App) RTLS() *rtls.Engine {
	if a.rtls == nil {
		return nil
	}
	return a.rtls.Engine
}

// sampleFromStore is the engine's form of a stored survey sample, each
// entry under the MAC of the gateway that heard it as it is now (at,
// heardBy, at the sample's recording time, or for a sample stored before
// that was kept, its store time); an entry under a MAC that does not
// parse is dropped, and so is one of a gateway since deleted.
func sampleFromStore(s store.ZoneSample, at gatewayAt) rtls.Sample {
	t, exact := s.RecordedAt, s.RecordedAt > 0
	if !exact {
		t = s.CreatedAt
	}
	keys := readAs(s.RSSI, t, exact, at)
	return rtls.Sample{Zone: s.Zone, RSSI: byKeys(s.RSSI, keys), N: byKeys(s.Readings, keys), SD: byKeys(s.RSSISD, keys), At: s.RecordedAt}
}

// gatewayAt reads the MAC of a device that heard a survey window at t
// (exact: its recording time; else the time it was stored, later) as
// the MAC to model it under now; false drops it.
type gatewayAt func(mac [6]byte, t int64, exact bool) ([6]byte, bool)

// readAs maps the stored keys of a sample (m's) to the MACs they are read
// under now (at; nil: as they are), one key a MAC, without the keys that
// do not parse or that at drops. Where two keys come to one MAC, the key
// that is that MAC wins, else the smaller: once for the sample, so its
// mean, count and spread are one device's, the same at every reload (map
// order chose them apart: a review).
func readAs[V any](m map[string]V, t int64, exact bool, at gatewayAt) map[string][6]byte {
	won := make(map[[6]byte]string, len(m))
	for k := range m {
		p, ok := ingest.ParseMAC(k)
		if !ok {
			continue
		}
		q := p
		if at != nil {
			if q, ok = at(p, t, exact); !ok {
				continue
			}
		}
		if cur, taken := won[q]; taken {
			if cp, _ := ingest.ParseMAC(cur); cp == q || p != q && cur < k {
				continue
			}
		}
		won[q] = k
	}
	out := make(map[string][6]byte, len(won))
	for q, k := range won {
		out[k] = q
	}
	return out
}

// byKeys is m under the MACs keys gives its keys; nil when m is empty (a
// sample stored without readings or spread).
func byKeys[V any](m map[string]V, keys map[string][6]byte) map[[6]byte]V {
	if len(m) == 0 {
		return nil
	}
	out := make(map[[6]byte]V, len(keys))
	for k, q := range keys {
		if v, ok := m[k]; ok {
			out[q] = v
		}
	}
	return out
}

// heardBy reads a survey sample's gateway MACs as the site's gateways are
// now: a sample records the device that heard it, and the engine models
// the gateway, the place. The device on a gateway when the window was
// recorded stands for that gateway's device now, or for nothing once the
// gateway is deleted or left without one. Without it, a replaced
// gateway's samples stayed under its old MAC, whose silence for good then
// read as every tag being away from it, while the new MAC was unsurveyed
// (a review). Read at the store time instead (all a survey's windows are
// stored when it stops), a survey during which two gateways swapped
// devices had its first windows read as heard by the other gateway, and
// tags by them were placed next door (a second review); samples stored
// before the recording time was kept are read so still, and a device on
// no gateway then counts for the gateway it was last on. A device heard
// before it was first put on a gateway (surveyed, then added from the
// discovery list) counts for that gateway, if it had no device then:
// kept as it was, its survey stayed under the old MAC after a replace
// (the second review). One heard off the site (before it went on a
// gateway that had another device then, or between its spells) is
// dropped: a spare on a bench, a replaced one on a shelf, whose readings
// there say nothing of the gateway it goes on later (a third review).
// One never on a gateway is kept as it is (a gateway not registered).
func heardBy(gws []assets.GatewayView, spells []assets.GatewaySpell) gatewayAt {
	now := make(map[uint64][6]byte, len(gws))
	for _, g := range gws {
		if mac, ok := ingest.ParseMAC(g.MAC); ok {
			now[g.ID] = mac
		}
	}
	byMAC := map[[6]byte][]assets.GatewaySpell{}
	byGW := map[uint64][]assets.GatewaySpell{}
	for _, s := range spells {
		if !nonEmpty(s) {
			continue // never on that gateway: as if it had not been
		}
		byGW[s.GatewayID] = append(byGW[s.GatewayID], s)
		if mac, ok := ingest.ParseMAC(s.MAC); ok {
			byMAC[mac] = append(byMAC[mac], s)
		}
	}
	// occupiedBefore says whether first's gateway had another device at
	// any time from t until first began: a device heard then, before it
	// went on, was elsewhere (a spare on a bench, the gateway registered
	// with another device first: a review).
	occupiedBefore := func(first *assets.GatewaySpell, t int64) bool {
		for _, s := range byGW[first.GatewayID] {
			if s.ID != first.ID && s.From < first.From && (s.To == 0 || s.To > t) {
				return true
			}
		}
		return false
	}
	// In time order; of two spells begun in one millisecond (a device
	// put on one gateway and taken to another in one batch), the later
	// assignment last.
	for _, ss := range byMAC {
		slices.SortFunc(ss, func(a, b assets.GatewaySpell) int {
			return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.ID, b.ID))
		})
	}
	return func(mac [6]byte, t int64, exact bool) ([6]byte, bool) {
		ss := byMAC[mac]
		if len(ss) == 0 {
			return mac, true
		}
		var on, before *assets.GatewaySpell
		for i := range ss {
			if ss[i].From > t {
				break
			}
			before = &ss[i]
			if ss[i].To == 0 || t < ss[i].To {
				on = &ss[i]
			}
		}
		switch {
		case on != nil:
		case before == nil && !occupiedBefore(&ss[0], t):
			on = &ss[0] // not yet on a gateway: the first it went on, empty till then
		case before == nil || exact:
			// Heard off the site: before it went on a gateway that had
			// another device then (a spare powered on a bench), or
			// between its spells (a replaced one on a shelf). Read as
			// the gateway it went on later, such a reading placed tags
			// one or two rooms off (a review).
			return mac, false
		default: // stored after it left: the gateway it was last on
			on = before
		}
		cur, ok := now[on.GatewayID]
		return cur, ok
	}
}

// nonEmpty says whether s lasted at all: a device put on a gateway and
// taken to another in one millisecond was never on the first.
func nonEmpty(s assets.GatewaySpell) bool { return s.To == 0 || s.To > s.From }

// gatewaySeen is the Unix ms of the last message of any kind from the
// gateway mac (its status heartbeat included): the engine judges no
// gateway down while it still talks (docs/rtls.md, "Gateways that go
// down").
func (a *App) gatewaySeen(mac [6]byte) int64 { return a.pipeline.LastSeen().Gateway(ingest.MAC(mac)) }

// gatewayMessages is rtls.Options.GatewayMessages: the messages received
// from the gateway mac since the start that decoded.
func (a *App) gatewayMessages(mac [6]byte) int64 {
	return a.pipeline.LastSeen().GatewayMessages(ingest.MAC(mac))
}

// gatewayLink is rtls.Options.GatewayLink: a gateway's connection to the
// embedded broker (none is known with an external one).
func (a *App) gatewayLink(mac [6]byte) (ingest.GatewayLink, bool) {
	return a.pipeline.Stats.Link(ingest.MAC(mac))
}

// keepSurveys stores the samples of surveys still recording at a
// graceful stop, as a survey stop would: they lived only in memory, and
// a restart lost a survey under way without a word (a review). A crash
// leaves the windows the sweep saved, which the next start stores
// (recoverSurveys).
func (c *rtlsControl) keepSurveys() {
	a := c.app
	kept, err := c.StopAllSurveys(a.clock.Now())
	if err != nil {
		a.log.Error("rtls: survey samples not stored at shutdown", "err", err)
	}
	for _, st := range kept {
		a.logSurvey(st, "survey stopped by a shutdown, ")
	}
}

// recoverSurveys stores the windows of the surveys a crash ended, saved
// by the engine's sweep, before any survey can start again.
func (a *App) recoverSurveys() error {
	var got []store.ZoneSurveyStored
	if err := a.db.Update(func(tx *bolt.Tx) (err error) {
		got, err = store.RecoverZoneSurveys(tx, a.clock.Now())
		return err
	}); err != nil {
		return fmt.Errorf("store the surveys a crash ended: %w", err)
	}
	for _, st := range got {
		a.logSurvey(st, "survey ended by an unclean stop, its windows up to the last sweep kept: ")
	}
	return nil
}

// logSurvey records, in the application log and the process log, what
// stopping a survey without its admin stored.
func (a *App) logSurvey(st store.ZoneSurveyStored, why string) {
	msg := why + st.Summary()
	a.applog.Record(applog.Normal, "tracking.survey", "beacon "+st.AssetUID, "system", msg)
	a.log.Info("rtls: "+msg, "asset_uid", st.AssetUID)
}

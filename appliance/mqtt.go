package appliance

import (
	"context"
	"fmt"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/config"
	"beaconhub/appliance/ingest"
	"beaconhub/appliance/sensors"
	"beaconhub/broker"
	"beaconhub/store"
)

// mqttSource is what the embedded broker and the external client share.
type mqttSource interface {
	Start() error
	Close() error
	Stats() broker.Stats
}

// lazyCommit is how long QoS 0 readings, motion warnings and last-seen
// flushes may wait for a commit when nothing else needs one: at 10 gateways
// of QoS 0 it turned ~160 commits/s into ~11 and cut the appliance's CPU
// per report by 10-15%; on flash it is the difference between rewriting
// the touched pages 160 times a second or 5. QoS 0 promises no durability;
// a QoS 1 PUBACK, an alert, a sensor alarm or an API write still commits
// at once.
const lazyCommit = 200 * time.Millisecond

// needsIngest: the subsystems that consume radio reports.
func (a *App) needsIngest() bool {
	c := a.live.Get()
	return c.Has(config.FeatureSensors) || c.Has(config.FeatureRTLS) || c.Has(config.FeatureAlerting)
}

// buildIngest wires writer -> registry -> pipeline -> subscribers.
func (a *App) buildIngest() error {
	cfg := a.live.Get()
	a.writer = store.NewWriter(a.db, store.WriterOptions{Logger: a.log, LazyDelay: lazyCommit})
	// Stops run in reverse: push stops after the writer has closed, since
	// the presses committed while ingest drains reach push from the
	// writer's commits (see stopPush).
	a.onStop(func(context.Context) error { a.stopPush(); return nil })
	a.onStop(func(context.Context) error { return a.writer.Close() })
	a.pipeline = ingest.New(ingest.Options{Registry: a.registry, Writer: a.writer, Clock: a.clock, Logger: a.log})
	if err := a.pipeline.Restore(a.db); err != nil {
		return fmt.Errorf("restore ingest state: %w", err)
	}
	if cfg.Has(config.FeatureSensors) {
		a.recorder = sensors.NewRecorder()
		if err := a.recorder.Restore(a.db); err != nil {
			return fmt.Errorf("restore latest readings: %w", err)
		}
		a.pipeline.AddSubscriber(a.recorder)
		if err := a.startSensorMonitor(); err != nil {
			return err
		}
	}
	hooks := assets.IngestHooks{LastSeen: a.pipeline.LastSeen(), Discovery: a.pipeline.Discovery(), Writer: a.writer}
	if a.recorder != nil {
		hooks.Recorder = a.recorder // only when it exists: no typed nil in the interface
	}
	if err := a.buildAlerting(); err != nil {
		return err
	}
	// Built after alerting: the condition sets and push cadence it
	// creates must follow uid renames too. The push device list first:
	// followers are told in order, and told after the sensor monitor it
	// could name a new sensor's first alert from the list before the
	// write (a review).
	if a.push != nil {
		hooks.Followers = append(hooks.Followers, a.pushIDs)
	}
	if a.sensorMon != nil {
		hooks.Followers = append(hooks.Followers, a.sensorMon)
	}
	if a.events != nil {
		hooks.Followers = append(hooks.Followers, a.events)
	}
	if a.monitor != nil {
		hooks.Followers = append(hooks.Followers, a.monitor.Conditions())
	}
	if a.push != nil {
		hooks.Followers = append(hooks.Followers, a.push)
	}
	a.hooks = hooks
	a.assets.Connect(hooks)
	a.onStop(func(context.Context) error { return a.pipeline.Close() })

	creds := func() (string, string) {
		c := a.live.Get()
		return c.MQTTUser, c.MQTTPass
	}
	if cfg.MQTTBroker == "external" {
		// It reports no connections: the gateways whose connection
		// lasted under the embedded one would all read as never back.
		a.pipeline.Stats.RestoreLinks(nil, a.clock.Now())
		// A stable client id: the session is persistent, and a random id
		// would leave an orphaned session on the broker at every restart.
		x, err := broker.NewExternal(broker.ExternalOptions{URL: cfg.MQTTURL, Credentials: creds, Sink: a.pipeline,
			Logger: a.log, ClientID: "beaconhub-" + cfg.ServerID})
		if err != nil {
			return err
		}
		a.mqtt = x
	} else {
		listen := cfg.MQTTListen
		if a.opts.MQTTListen != "" {
			listen = a.opts.MQTTListen
		}
		e, err := broker.NewEmbedded(broker.EmbeddedOptions{Listen: listen, Credentials: creds, Sink: a.pipeline,
			Observer: a.pipeline.Stats, Logger: a.log})
		if err != nil {
			return err
		}
		a.mqtt = e
	}
	// Registered last so it stops first: no new publishes, then the
	// pipeline drains, then the writer commits, then the store closes.
	a.onStop(func(context.Context) error { return a.mqtt.Close() })
	return nil
}

func (a *App) startIngest() error {
	a.pipeline.Start()
	a.startAlerting()
	a.scheduleRates()
	if err := a.mqtt.Start(); err != nil {
		return fmt.Errorf("MQTT: %w", err)
	}
	return nil
}

func (a *App) scheduleRates() {
	a.clock.AfterFunc(ingest.RateStep, func() {
		if a.stopping.Load() {
			return
		}
		a.pipeline.Stats.Tick()
		a.scheduleRates()
	})
}

// MQTTAddr is the embedded broker's bound address ("" otherwise).
func (a *App) MQTTAddr() string {
	if e, ok := a.mqtt.(*broker.Embedded); ok {
		return e.Addr()
	}
	return ""
}

// Pipeline returns the ingest pipeline (nil when no subsystem consumes reports).
func (a *App) Pipeline() *ingest.Pipeline { return a.pipeline }

// Registry returns the MAC -> asset cache.
func (a *App) Registry() *assets.Registry { return a.registry }

// Assets returns the asset registry service (nil without a database).
func (a *App) Assets() *assets.Service { return a.assets }

// Recorder returns the sensor recorder (nil without the sensors feature).
func (a *App) Recorder() *sensors.Recorder { return a.recorder }

// Writer returns the group-commit writer.
func (a *App) Writer() *store.Writer { return a.writer }

// brokerJSON is the broker's counters as the API names things (snake
// case, Unix ms): the struct went out with its Go field names and a
// zero time as "0001-01-01T00:00:00Z" (a review).
func brokerJSON(s broker.Stats) map[string]any {
	out := map[string]any{
		"clients": s.Clients, "connects_total": s.ConnectsTotal, "auth_failures": s.AuthFailures,
		"acl_denials": s.ACLDenials, "messages_received": s.MessagesReceived, "sink_errors": s.SinkErrors,
		"last_error": nil, "last_error_at": nil,
	}
	if s.LastError != "" {
		out["last_error"] = s.LastError
	}
	if !s.LastErrorAt.IsZero() {
		out["last_error_at"] = s.LastErrorAt.UnixMilli()
	}
	if s.Mode == "embedded" {
		out["listen"] = s.Listen
	} else {
		out["url"] = s.URL
	}
	return out
}

// writerJSON is the group-commit writer's counters as the API names
// things (durations in ms).
func writerJSON(s store.WriterStats) map[string]any {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return map[string]any{
		"commits": s.Commits, "failed_commits": s.FailedCommits, "readings": s.Readings, "ops": s.Ops, "errors": s.Errors,
		"last_batch_readings": s.LastBatchReadings, "last_batch_ops": s.LastBatchOps, "avg_batch_readings": s.AvgBatchReadings,
		"last_commit_ms": ms(s.LastCommit), "max_commit_ms": ms(s.MaxCommit), "lazy_waits": s.LazyWaits,
		"last_commit_bytes": s.LastCommitBytes, "written_bytes": s.WrittenBytes, "pending_readings": s.PendingReadings,
	}
}

// MQTTStatus is the cached snapshot behind GET /api/v1/status/mqtt: no
// probe runs on request, it only copies counters.
func (a *App) MQTTStatus() any {
	bs := a.mqtt.Stats()
	p50, p99, n := a.pipeline.CommitLatency()
	out := map[string]any{
		"mode":       bs.Mode,
		"broker":     brokerJSON(bs),
		"pipeline":   a.pipeline.Stats.Snapshot(),
		"writer":     writerJSON(a.writer.Stats()),
		"commit_ms":  map[string]any{"p50": p50, "p99": p99, "samples": n},
		"discovered": len(a.pipeline.Discovery().List()),
	}
	if bs.Mode == "embedded" {
		out["listening"] = bs.Listening
	} else {
		out["connected"] = bs.Connected
	}
	return out
}

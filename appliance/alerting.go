package appliance

import (
	"context"
	"fmt"
	"time"

	"beaconhub/appliance/alerting"
	"beaconhub/appliance/config"
	"beaconhub/appliance/ingest"
	"beaconhub/appliance/status"
	"beaconhub/broker"
)

// buildAlerting wires feature alerting (events, button dedup, alertsys)
// onto the pipeline, and the status monitor (MQTT, alertsys, push, fleet,
// health conditions) for every configuration that ingests. Called from
// buildIngest before the pipeline's own stop is registered, so on shutdown
// the pipeline drains first and the alertsys worker stops after it.
func (a *App) buildAlerting() error {
	cfg := a.live.Get()
	conds, err := status.NewConditions(a.db, a.clock, a.log.With("component", "health"))
	if err != nil {
		return fmt.Errorf("load health conditions: %w", err)
	}
	var client *alerting.Client
	var queue func() alerting.WorkerStats
	if cfg.Has(config.FeatureAlerting) {
		client = alerting.NewClient(alerting.ClientOptions{Live: a.live, Clock: a.clock})
		a.alertsys = alerting.NewWorker(alerting.WorkerOptions{Client: client, Writer: a.writer, Clock: a.clock,
			Logger: a.log.With("component", "alertsys"), Pending: a.db.PendingAlertsysEvents, StopGrace: alerting.DefaultStopGrace})
		queue = a.alertsys.Stats
		a.events = alerting.New(alerting.Options{DB: a.db, Live: a.live, Clock: a.clock,
			Logger: a.log.With("component", "alerting"), Alertsys: a.alertsys})
		if err := a.events.Restore(); err != nil {
			return fmt.Errorf("restore events: %w", err)
		}
		a.pipeline.AddSubscriber(a.events)
	}
	push := status.NewPush(a.live, a.clock, status.NewTransport(status.Limits{}, false), conds)
	a.monitor = status.NewMonitor(status.Options{Live: a.live, Clock: a.clock, Logger: a.log.With("component", "status"),
		Conditions: conds, MQTT: func() broker.Stats { return a.mqtt.Stats() }, Alertsys: client, Queue: queue,
		Push: push, Fleet: a.fleet, Store: func() (time.Time, string) {
			s := a.writer.Stats()
			return s.FailingSince, s.LastError
		}})
	a.onStop(func(context.Context) error {
		a.monitor.Stop()
		if a.alertsys != nil {
			a.alertsys.Stop()
		}
		return nil
	})
	return a.buildPush()
}

// startAlerting starts the worker, re-queues presses a restart left
// undelivered, and schedules the probes.
func (a *App) startAlerting() {
	if a.alertsys != nil {
		a.alertsys.Start()
		if n := a.events.RecoverAlertsys(a.alertsys, a.writer); n > 0 {
			a.log.Warn("re-sending presses alertsys had not received before the restart", "events", n)
		}
	}
	if a.events != nil {
		ret := alerting.NewRetention(a.db, a.clock, a.log.With("component", "alerting"), func() (int, int) {
			c := a.live.Get()
			return c.EventsRetentionDays, c.EventsWarningRetentionDays
		})
		ret.Start()
		a.onStop(func(context.Context) error { ret.Stop(); return nil })
	}
	a.monitor.Start()
	a.startPush()
}

// fleet lists the monitored assets with their last sighting.
func (a *App) fleet() ([]status.FleetAsset, error) {
	bs, err := a.db.ListBeacons()
	if err != nil {
		return nil, err
	}
	gs, err := a.db.ListGateways()
	if err != nil {
		return nil, err
	}
	seen := a.pipeline.LastSeen()
	out := make([]status.FleetAsset, 0, len(bs)+len(gs))
	for _, b := range bs {
		if !b.Active {
			continue
		}
		out = append(out, status.FleetAsset{UID: b.AssetUID, Kind: "beacon", Type: b.Type, Name: b.Name,
			CreatedAt: b.CreatedAt.UnixMilli(), LastSeen: seen.Asset(b.AssetUID)})
	}
	for _, g := range gs {
		if g.Status != "" && g.Status != "active" {
			continue
		}
		var last int64
		if mac, ok := ingest.ParseMAC(g.MAC); ok {
			last = seen.Gateway(mac)
		}
		out = append(out, status.FleetAsset{UID: g.AssetUID, Kind: "gateway", Name: g.Name,
			CreatedAt: g.CreatedAt.UnixMilli(), LastSeen: last})
	}
	return out, nil
}

// Events returns the events service (nil without feature alerting).
func (a *App) Events() *alerting.Service { return a.events }

// Alertsys returns the alertsys worker (nil without feature alerting).
func (a *App) Alertsys() *alerting.Worker { return a.alertsys }

// Monitor returns the status monitor; its Conditions and Push are what the
// push subsystem publishes from and reports to.
func (a *App) Monitor() *status.Monitor { return a.monitor }

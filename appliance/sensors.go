package appliance

import (
	"context"
	"fmt"

	"beaconhub/appliance/config"
	"beaconhub/appliance/sensors"
)

// sensorsService builds the read side of feature sensors for the HTTP
// layer, or nil when the feature is off or no database is kept.
func (a *App) sensorsService() *sensors.Service {
	if a.db == nil || !a.live.Get().Has(config.FeatureSensors) {
		return nil
	}
	svc := &sensors.Service{DB: a.db, Recorder: a.recorder, Clock: a.clock, Conds: a.SensorConditions()}
	if a.pipeline != nil {
		svc.LastSeen = a.pipeline.LastSeen().Asset
	}
	return svc
}

// startSensorMonitor subscribes the sensor-condition monitor (range and
// battery on ingest, not-seen and calibration on timers) to the pipeline,
// and starts the history retention job.
func (a *App) startSensorMonitor() error {
	m, err := sensors.NewMonitor(a.db, a.clock, a.log)
	if err != nil {
		return fmt.Errorf("load sensor conditions: %w", err)
	}
	m.LastSeen = a.pipeline.LastSeen().Asset
	if a.writer != nil { // no typed nil in the interface
		m.Writer = a.writer
	}
	a.pipeline.AddSubscriber(m)
	m.Start()
	a.onStop(func(context.Context) error { m.Stop(); return nil })
	a.sensorMon = m
	ret := sensors.NewRetention(a.db, a.clock, a.log, func() int { return a.live.Get().SensorsHistoryRetentionDays })
	ret.Start()
	a.onStop(func(context.Context) error { ret.Stop(); return nil })
	return nil
}

// SensorConditions is the sensor-condition interface for the push layer
// (nil without feature sensors).
func (a *App) SensorConditions() *sensors.Conditions {
	if a.sensorMon == nil {
		return nil
	}
	return a.sensorMon.Conds
}

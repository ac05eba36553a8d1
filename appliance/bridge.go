package appliance

import (
	"context"
	"net"
	"strconv"
	"time"

	"beaconhub/appliance/bridge"
	"beaconhub/appliance/config"
)

// buildBridge builds the monitoring bridge when feature bridge is on. It
// talks to the main server over HTTP even when that is this process, so
// the full server and a bridge-only box behave the same; inside the full
// server its state also appears on the status dashboard.
func (a *App) buildBridge() error {
	cfg := a.live.Get()
	if !cfg.Has(config.FeatureBridge) {
		return nil
	}
	b, err := bridge.New(bridge.Options{
		ServerURL:       cfg.BridgeServerURL,
		BeaconEndpoint:  cfg.BridgeEndpointBeacon,
		GatewayEndpoint: cfg.BridgeEndpointGateway,
		MonitorAddr:     net.JoinHostPort(cfg.BridgeMonitorHost, strconv.Itoa(cfg.BridgeMonitorPort)),
		Host:            cfg.ServerID,
		BeaconEvery:     time.Duration(cfg.BridgeDelayBeacon) * time.Second,
		GatewayEvery:    time.Duration(cfg.BridgeDelayGateway) * time.Second,
		RefreshEvery:    time.Duration(cfg.BridgeCacheUpdateInterval) * time.Second,
		Clock:           a.clock,
		Logger:          a.log.With("component", "bridge"),
	})
	if err != nil {
		return err
	}
	a.bridge = b
	a.onStop(func(context.Context) error { b.Stop(); return nil })
	if a.monitor != nil {
		a.monitor.SetBridge(b.Status)
	}
	return nil
}

// Bridge returns the monitoring bridge (nil without feature bridge).
func (a *App) Bridge() *bridge.Bridge { return a.bridge }

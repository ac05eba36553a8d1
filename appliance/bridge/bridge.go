package bridge

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"beaconhub/appliance/clock"
)

// Options configure a Bridge. Durations come from the bridge keys of the
// configuration (seconds there).
type Options struct {
	ServerURL       string // main server base URL
	BeaconEndpoint  string // e.g. "lld/beacons"
	GatewayEndpoint string
	MonitorAddr     string // Zabbix trapper host:port
	Host            string // Zabbix host name the values belong to (server_id)
	BeaconEvery     time.Duration
	GatewayEvery    time.Duration
	RefreshEvery    time.Duration
	// Timeout bounds one fetch from the main server and one batch to
	// Zabbix (default 10 s).
	Timeout time.Duration
	// MinBackoff and MaxBackoff bound the retry delay after failures
	// (defaults 1 s and 5 min); the delay doubles per failure.
	MinBackoff, MaxBackoff time.Duration
	Clock                  clock.Clock
	Logger                 *slog.Logger
}

// Bridge runs the fetch, discovery and value rounds on one goroutine, so
// a slow peer delays the next round instead of piling up concurrent ones.
type Bridge struct {
	o   Options
	log *slog.Logger
	// src is swapped by UseServer while the status dashboard may read
	// it; the loop only reads it.
	src    atomic.Pointer[Source]
	sender *Sender
	tr     *http.Transport

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	wake   [3]chan struct{} // refresh, beacons, gateways

	mu      sync.Mutex
	timers  [3]clock.Timer
	stopped bool
	started bool // Start ran: Stop waits for run to end
	st      state
}

// Tasks of the loop, indexes into wake and timers.
const (
	taskRefresh = iota
	taskBeacons
	taskGateways
)

// New checks the options and builds a bridge; Start runs it.
func New(o Options) (*Bridge, error) {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 5 * time.Minute
	}
	if o.BeaconEvery <= 0 || o.GatewayEvery <= 0 || o.RefreshEvery <= 0 {
		return nil, errors.New("bridge: intervals must be positive")
	}
	if o.Host == "" {
		return nil, errors.New("bridge: Zabbix host name is empty")
	}
	if _, _, err := net.SplitHostPort(o.MonitorAddr); err != nil {
		return nil, errors.New("bridge: monitoring server address must be host:port")
	}
	// One small transport of our own: its idle connections are closed on
	// Stop, and a dead main server cannot hold more than one open.
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: o.Timeout}).DialContext,
		TLSHandshakeTimeout:   o.Timeout,
		ResponseHeaderTimeout: o.Timeout,
		MaxIdleConns:          2,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       90 * time.Second,
	}
	src, err := NewSource(o.ServerURL, &http.Client{Transport: tr, Timeout: o.Timeout})
	if err != nil {
		return nil, err
	}
	b := &Bridge{o: o, log: o.Logger, tr: tr,
		sender: &Sender{Addr: o.MonitorAddr, Timeout: o.Timeout, Now: o.Clock.Now},
		done:   make(chan struct{})}
	b.src.Store(src)
	for i := range b.wake {
		b.wake[i] = make(chan struct{}, 1)
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	return b, nil
}

// UseServer points the bridge at another main server URL; call it before
// Start.
func (b *Bridge) UseServer(base string) error {
	src, err := NewSource(base, b.src.Load().Client)
	if err != nil {
		return err
	}
	b.src.Store(src)
	return nil
}

// Start fetches at once and sends the first values one interval later,
// which leaves the monitoring server time to create the discovered items.
func (b *Bridge) Start() {
	b.log.Info("bridge started", "main_server", shownURL(b.src.Load().Base), "monitor", b.o.MonitorAddr,
		"host", b.o.Host, "beacon_every", b.o.BeaconEvery.String(), "gateway_every", b.o.GatewayEvery.String())
	b.mu.Lock()
	b.started = true
	b.mu.Unlock()
	go b.run()
	b.schedule(taskRefresh, 0)
	b.schedule(taskBeacons, b.o.BeaconEvery)
	b.schedule(taskGateways, b.o.GatewayEvery)
}

// Stop cancels any exchange in flight and waits for the loop to end. A
// bridge that was never started (the appliance failed, or was only built
// and shut down) has no loop to wait for.
func (b *Bridge) Stop() {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return
	}
	b.stopped = true
	for _, t := range b.timers {
		if t != nil {
			t.Stop()
		}
	}
	started := b.started
	b.mu.Unlock()
	b.cancel()
	if started {
		<-b.done
	}
	b.tr.CloseIdleConnections()
}

// schedule wakes task after d. The timer only signals (a buffered channel
// of one, never blocking), so timers that fire together cannot queue up
// goroutines or work.
func (b *Bridge) schedule(task int, d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return
	}
	if t := b.timers[task]; t != nil {
		t.Stop()
	}
	ch := b.wake[task]
	b.timers[task] = b.o.Clock.AfterFunc(d, func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	})
}

func (b *Bridge) run() {
	defer close(b.done)
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-b.wake[taskRefresh]:
			b.refresh()
		case <-b.wake[taskBeacons]:
			b.sendRound(taskBeacons)
		case <-b.wake[taskGateways]:
			b.sendRound(taskGateways)
		}
	}
}

// backoff is the retry delay after n consecutive failures, never longer
// than the task's regular interval.
func (b *Bridge) backoff(n int, every time.Duration) time.Duration {
	d := b.o.MinBackoff
	for i := 1; i < n && d < b.o.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, b.o.MaxBackoff, every)
}

// refresh fetches both lists; when both arrived, it replaces the cache and
// sends discovery. A failure keeps the previous cache and retries with
// backoff.
func (b *Bridge) refresh() {
	ctx := b.ctx
	beacons, skippedB, err := b.src.Load().Fetch(ctx, b.o.BeaconEndpoint)
	var gateways []Asset
	skippedG := 0
	if err == nil {
		gateways, skippedG, err = b.src.Load().Fetch(ctx, b.o.GatewayEndpoint)
	}
	if ctx.Err() != nil {
		return
	}
	now := b.o.Clock.Now()
	if err != nil {
		n := b.mainFailed(err, now)
		b.schedule(taskRefresh, b.backoff(n, b.o.RefreshEvery))
		return
	}
	if skipped := skippedB + skippedG; skipped > 0 {
		b.log.Warn("bridge skipped assets whose uid cannot be an item key parameter", "count", skipped)
	}
	b.mu.Lock()
	oldB, oldG := b.st.announcedB, b.st.announcedG
	b.mu.Unlock()
	b.mainOK(beacons, gateways, now)
	// Offline first, while discovery still holds their items.
	values := assetValues(nil, b.o.Host, KindBeacon, gone(oldB, beacons), now)
	values = assetValues(values, b.o.Host, KindGateway, gone(oldG, gateways), now)
	values = append(values,
		Value{Host: b.o.Host, Key: KeyBeaconDiscovery, Value: discoveryValue(beacons), Clock: now},
		Value{Host: b.o.Host, Key: KeyGatewayDiscovery, Value: discoveryValue(gateways), Clock: now})
	if !b.deliver("discovery", values) {
		// The lists are fine; Zabbix is not. Retry soon rather than wait a
		// whole cache interval with unknown items on the monitoring side.
		b.schedule(taskRefresh, b.backoff(b.monitorFailures(), b.o.RefreshEvery))
		return
	}
	b.mu.Lock()
	b.st.announcedB, b.st.announcedG = beacons, gateways
	b.mu.Unlock()
	b.schedule(taskRefresh, b.o.RefreshEvery)
}

// sendRound sends the values of one kind. The beacon round also carries
// the bridge's own items. Per-asset values go out only while the main
// server answers: a stale cache says nothing about whether an asset is
// still active.
func (b *Bridge) sendRound(task int) {
	now := b.o.Clock.Now()
	b.mu.Lock()
	mainUp, beacons, gateways, cacheAt := b.st.mainUp, b.st.beacons, b.st.gateways, b.st.cacheAt
	b.mu.Unlock()
	// Values are read fresh each round (the cache is only what discovery
	// announced). Whether the main server is up is the refresh's call
	// (both lists must answer); a failed fetch here takes it down too, and
	// then no per-asset value is sent.
	if mainUp {
		endpoint := b.o.BeaconEndpoint
		if task == taskGateways {
			endpoint = b.o.GatewayEndpoint
		}
		fresh, _, err := b.src.Load().Fetch(b.ctx, endpoint)
		if b.ctx.Err() != nil {
			return
		}
		switch {
		case err != nil:
			b.mainFailed(err, now)
			mainUp = false
			// The refresh retries with backoff and brings it back.
			b.schedule(taskRefresh, b.backoff(1, b.o.RefreshEvery))
		case task == taskBeacons:
			beacons = current(beacons, fresh)
		default:
			gateways = current(gateways, fresh)
		}
	}
	var values []Value
	every, round := b.o.BeaconEvery, "beacons"
	if task == taskBeacons {
		age := time.Duration(-1)
		if !cacheAt.IsZero() {
			age = now.Sub(cacheAt)
		}
		values = bridgeValues(values, b.o.Host, mainUp, len(beacons), len(gateways), age, now)
		if mainUp {
			values = assetValues(values, b.o.Host, KindBeacon, beacons, now)
		}
	} else {
		every, round = b.o.GatewayEvery, "gateways"
		if mainUp {
			values = assetValues(values, b.o.Host, KindGateway, gateways, now)
		}
	}
	if len(values) == 0 || b.deliver(round, values) {
		b.schedule(task, every)
		return
	}
	if b.ctx.Err() == nil {
		b.schedule(task, b.backoff(b.monitorFailures(), every))
	}
}

// deliver sends values to Zabbix and records the outcome; false when the
// exchange failed (not when Zabbix refused some values: those are logged).
func (b *Bridge) deliver(round string, values []Value) bool {
	res, err := b.sender.Send(b.ctx, values)
	if b.ctx.Err() != nil {
		return false
	}
	now := b.o.Clock.Now()
	if err != nil {
		// The first failure and every tenth: a long outage must not flood
		// the log.
		if n := b.monitorFailed(err, now); n == 1 || n%10 == 0 {
			b.log.Warn("bridge could not deliver to the monitoring server", "round", round,
				"monitor", b.o.MonitorAddr, "failures", n, "err", err)
		}
		return false
	}
	b.monitorOK(res, now)
	if res.Failed > 0 {
		// Zabbix does not say which values it refused; usually items the
		// host does not have (yet): discovery creates them after its next
		// configuration cache update.
		b.log.Warn("monitoring server refused values", "round", round, "processed", res.Processed,
			"failed", res.Failed, "total", res.Total, "keys", res.FailedKeys)
	} else {
		b.log.Debug("bridge delivered", "round", round, "processed", res.Processed)
	}
	return true
}

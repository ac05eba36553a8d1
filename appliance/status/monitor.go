package status

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"beaconhub/appliance/alerting"
	"beaconhub/appliance/bridge"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/config"
	"beaconhub/broker"
)

// Options configure a Monitor. Nil sources are reported as absent.
type Options struct {
	Live       *config.Live
	Clock      clock.Clock
	Logger     *slog.Logger
	Conditions *Conditions
	MQTT       func() broker.Stats // nil when nothing ingests
	Alertsys   *alerting.Client    // nil without feature alerting
	Queue      func() alerting.WorkerStats
	Push       *Push
	Fleet      func() ([]FleetAsset, error)
	// Store says since when the database's commits have been failing
	// (zero: they are not) and the latest error; nil without a writer.
	Store func() (since time.Time, lastErr string)
	// Interval of the network probes (alertsys login, push reachability,
	// MQTT listener dial) and the fleet evaluation; default 60 s. The cheap
	// MQTT flag check runs every MQTTInterval (default 10 s).
	Interval     time.Duration
	MQTTInterval time.Duration
	// FirstDelay is the wait before the first network probes (default
	// 30 s): a starting box (and a short test) makes no outbound call in
	// its first seconds. The MQTT flags are first read after one second.
	FirstDelay time.Duration
}

// Monitor runs the periodic probes and answers the status endpoints from
// cached results.
type Monitor struct {
	o       Options
	log     *slog.Logger
	started int64
	ctx     context.Context
	cancel  context.CancelFunc

	mu          sync.Mutex
	mqtt        MQTTSnapshot
	dialBad     bool   // the last dial of the embedded listener failed
	mqttOut     outage // mqtt_down's failed checks
	alertsysOut outage // alertsys_down's failed exchanges (unreachable or busy)
	fleet       FleetSnapshot
	timers      []clock.Timer
	stopped     bool

	probeMu map[string]*sync.Mutex // one probe per target at a time
	// rechecks are the alertsys probes a settings change started;
	// Stop waits for them, so none writes a condition after it.
	rechecks sync.WaitGroup

	bridge func() bridge.Status // set by SetBridge (bridge.go)
}

// NewMonitor builds a monitor and subscribes to alertsys outcomes.
func NewMonitor(o Options) *Monitor {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Interval <= 0 {
		o.Interval = 60 * time.Second
	}
	if o.MQTTInterval <= 0 {
		o.MQTTInterval = 10 * time.Second
	}
	if o.FirstDelay <= 0 {
		o.FirstDelay = 30 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Monitor{o: o, log: o.Logger, started: o.Clock.Now().UnixMilli(), ctx: ctx, cancel: cancel,
		mqtt:    MQTTSnapshot{Mode: "none", Message: "not checked yet"},
		probeMu: map[string]*sync.Mutex{TargetMQTT: {}, TargetAlertsys: {}, TargetPush: {}, "fleet": {}}}
	if o.Alertsys != nil {
		o.Alertsys.Observe(m.alertsysOutcome)
	}
	return m
}

// Conditions returns the health conditions (for the push subsystem).
func (m *Monitor) Conditions() *Conditions { return m.o.Conditions }

// Push returns the push prober (its RecordDelivery is for real publishes).
func (m *Monitor) Push() *Push { return m.o.Push }

// Start schedules the periodic probes on the injected clock.
func (m *Monitor) Start() {
	if m.o.Live != nil && m.o.Alertsys != nil {
		m.o.Live.Subscribe(m.alertsysSettings)
	}
	m.schedule(m.o.FirstDelay, m.o.Interval, m.networkTick)
	m.schedule(time.Second, m.o.MQTTInterval, func() { m.checkMQTT(false) })
}

func (m *Monitor) schedule(first, every time.Duration, fn func()) {
	var run func()
	run = func() {
		m.mu.Lock()
		stopped := m.stopped
		m.mu.Unlock()
		if stopped {
			return
		}
		fn()
		m.mu.Lock()
		if !m.stopped {
			m.timers = append(m.timers, m.o.Clock.AfterFunc(every, run))
		}
		m.mu.Unlock()
	}
	m.mu.Lock()
	m.timers = append(m.timers, m.o.Clock.AfterFunc(first, run))
	m.mu.Unlock()
}

// Stop cancels the timers and any probe in flight.
func (m *Monitor) Stop() {
	m.mu.Lock()
	m.stopped = true
	for _, t := range m.timers {
		t.Stop()
	}
	m.timers = nil
	m.mu.Unlock()
	m.cancel()
	m.rechecks.Wait()
}

// alertsysSettings probes alertsys at once when its address or
// credentials change: emptied, alertsys_down stayed active until the next
// periodic probe (up to a minute: a black-box check), and a corrected URL
// stayed "down" as long. Beside the settings write, not in it.
func (m *Monitor) alertsysSettings(old, cur *config.Config) {
	if old != nil && old.AlertsysURLBase == cur.AlertsysURLBase && old.AlertsysPathLogin == cur.AlertsysPathLogin &&
		old.AlertsysPathConvene == cur.AlertsysPathConvene && old.AlertsysUsername == cur.AlertsysUsername &&
		old.AlertsysPassword == cur.AlertsysPassword {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	m.rechecks.Add(1)
	go func() {
		defer m.rechecks.Done()
		m.checkAlertsys(m.ctx)
	}()
}

// networkTick updates MQTT (with a dial), alertsys, push reachability (not
// delivery: that costs a message) and the fleet.
func (m *Monitor) networkTick() {
	m.checkMQTT(true)
	if m.o.Alertsys != nil {
		m.checkAlertsys(m.ctx)
	}
	if m.o.Push != nil {
		m.locked(TargetPush, func() { m.o.Push.CheckReachability(m.ctx) })
	}
	m.checkFleet()
}

func (m *Monitor) locked(target string, fn func()) {
	mu := m.probeMu[target]
	mu.Lock()
	defer mu.Unlock()
	fn()
}

func (m *Monitor) checkAlertsys(ctx context.Context) {
	m.locked(TargetAlertsys, func() { _ = m.o.Alertsys.Check(ctx) })
}

// alertsysOutcome turns every alertsys exchange (probe or real) into the
// alertsys_down condition: raised on the first failure after success (or
// after start), resolved by the next success or when alertsys is no
// longer configured.
func (m *Monitor) alertsysOutcome(st alerting.Status) {
	switch st.State {
	case alerting.StateDown:
		// One condition (the spec's alertsys_down) either way, but the
		// message says which: a 4xx (credentials, a rule) is alertsys
		// answering and refusing, which waiting will not mend; 408 and
		// 429 are it being busy, which waiting will.
		what := "alertsys unreachable: "
		refused := st.HTTPStatus >= 400 && st.HTTPStatus < 500 && st.HTTPStatus != http.StatusRequestTimeout && st.HTTPStatus != http.StatusTooManyRequests
		if refused {
			what = "alertsys refuses the request: "
		}
		// Unreachable or busy is raised once failures have lasted a check
		// interval with no success between, as mqtt_down is: raised at
		// the first, a flaky alertsys (every other convene 429) flipped
		// it on every request, and since critical recoveries go at once
		// (spec) each flip was two messages to staff and the vendor (a
		// review). A refusal, which waiting will not mend, is raised at
		// once.
		m.mu.Lock()
		lasting := m.alertsysOut.fail(m.o.Clock.Now(), m.o.MQTTInterval) || refused
		m.mu.Unlock()
		if lasting {
			m.o.Conditions.Set(KeyAlertsysDown, true, what+st.Message)
		}
	case alerting.StateOK:
		m.resetAlertsysBad()
		m.o.Conditions.Set(KeyAlertsysDown, false, "alertsys reachable again")
	case alerting.StateDisabled:
		m.resetAlertsysBad()
		m.o.Conditions.Set(KeyAlertsysDown, false, "alertsys no longer configured")
	}
}

func (m *Monitor) resetAlertsysBad() {
	m.mu.Lock()
	m.alertsysOut = outage{}
	m.mu.Unlock()
}

// outage tells a lasting failure from a blip, for mqtt_down and
// alertsys_down alike: failures count once a second one comes at least
// a check interval after the first with no success between. Raised at
// the first, mqtt_down came 3 s into an outage (the minute's dial check
// runs a second from a 10 s one) and a flaky alertsys flipped its
// condition on every request (a black-box check, a review). Reset it
// (the zero value) on a success.
type outage struct {
	since time.Time // the first failure since the last success
	fails int
}

// fail records a failure at now and reports whether the outage is
// lasting: two failures or more, span apart at least.
func (o *outage) fail(now time.Time, span time.Duration) bool {
	if o.fails == 0 {
		o.since = now
	}
	o.fails++
	return o.fails >= 2 && now.Sub(o.since) >= span
}

// checkMQTT reads the broker's flags; with dial it also connects to the
// embedded listener, which proves it accepts connections.
func (m *Monitor) checkMQTT(dial bool) {
	if m.o.MQTT == nil {
		return
	}
	m.locked(TargetMQTT, func() {
		st := m.o.MQTT()
		now := m.o.Clock.Now().UnixMilli()
		s := MQTTSnapshot{Mode: st.Mode, Clients: st.Clients, CheckedAt: &now}
		if st.LastError != "" {
			e := st.LastError
			s.LastError = &e
		}
		if !st.LastErrorAt.IsZero() {
			at := st.LastErrorAt.UnixMilli()
			s.LastErrorAt = &at
		}
		if st.Mode == "external" {
			c := st.Connected
			s.Connected, s.Address, s.OK = &c, st.URL, c
			s.Message = "connected to the external broker"
			if !c {
				s.Message = "not connected to the external broker"
			}
		} else {
			l := st.Listening
			s.Listening, s.Address, s.OK = &l, st.Listen, l
			s.Message = "embedded broker listening"
			if !l {
				s.Message = "embedded broker is not listening"
			} else {
				// Between dials the flag alone must not clear what the last
				// dial found, or the condition would flap every 10 s.
				m.mu.Lock()
				bad := m.dialBad
				m.mu.Unlock()
				if dial {
					bad = dialListener(m.ctx, st.Listen) != nil
				}
				if bad {
					s.OK, s.Message = false, "embedded broker does not accept connections"
				}
				m.mu.Lock()
				m.dialBad = bad
				m.mu.Unlock()
			}
		}
		m.mu.Lock()
		m.mqtt = s
		lasting := false
		if s.OK {
			m.mqttOut = outage{}
		} else {
			lasting = m.mqttOut.fail(m.o.Clock.Now(), m.o.MQTTInterval)
		}
		m.mu.Unlock()
		// The snapshot tells the truth at once; the condition waits for a
		// second failed check, so an external client's quick reconnect (or
		// its first connect at start) does not page anyone.
		switch {
		case s.OK:
			m.o.Conditions.Set(KeyMQTTDown, false, "MQTT: "+s.Message)
		case lasting:
			m.o.Conditions.Set(KeyMQTTDown, true, "MQTT: "+s.Message)
		}
	})
}

func dialListener(ctx context.Context, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	d := net.Dialer{Timeout: 2 * time.Second}
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, port))
	if err != nil {
		return err
	}
	return c.Close()
}

// checkFleet recounts the fleet and moves the fleet conditions: new ones
// become active, and active ones no longer wanted (device heard again,
// asset removed or renamed) are resolved.
func (m *Monitor) checkFleet() {
	if m.o.Fleet == nil {
		return
	}
	m.locked("fleet", func() {
		assets, err := m.o.Fleet()
		now := m.o.Clock.Now().UnixMilli()
		if err != nil {
			m.log.Error("fleet status not evaluated", "err", err)
			m.mu.Lock()
			m.fleet.Error = "fleet could not be read"
			m.mu.Unlock()
			return
		}
		active := m.o.Conditions.activeWithPrefix(fleetPrefix)
		snap, want := evaluateFleet(now, m.started, assets, active)
		var changes []Change
		for key, msg := range want {
			changes = append(changes, Change{Key: key, Active: true, Message: msg})
		}
		for key := range active {
			if _, ok := want[key]; !ok {
				changes = append(changes, Change{Key: key, Active: false, Message: "seen again or no longer monitored"})
			}
		}
		sort.Slice(changes, func(i, j int) bool { return changes[i].Key < changes[j].Key })
		m.o.Conditions.Apply(changes)
		m.mu.Lock()
		m.fleet = snap
		m.mu.Unlock()
	})
}

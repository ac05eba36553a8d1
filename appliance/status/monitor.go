package status

import (
	"context"
	"log/slog"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	"beaconhub/appliance/alerting"
	"beaconhub/appliance/apperr"
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
	// Interval of the network probes (alertsys login, push reachability,
	// MQTT listener dial) and the fleet evaluation; default 60 s. The cheap
	// MQTT flag check runs every MQTTInterval (default 10 s).
	Interval     time.Duration
	MQTTInterval time.Duration
	FirstDelay   time.Duration // before the first probes (default 5 s)
}

// MQTTSnapshot is the dashboard's MQTT object.
type MQTTSnapshot struct {
	OK          bool   `json:"ok"`
	Mode        string `json:"mode"` // embedded, external or none
	Listening   *bool  `json:"listening,omitempty"`
	Connected   *bool  `json:"connected,omitempty"`
	Address     string `json:"address,omitempty"`
	Clients     int64  `json:"clients"`
	LastError   string `json:"last_error,omitempty"`
	LastErrorAt *int64 `json:"last_error_at,omitempty"`
	CheckedAt   *int64 `json:"checked_at"`
	Message     string `json:"message"`
}

// AlertsysSnapshot is the alertsys object: the client's cached outcome,
// whether the feature runs, and the delivery queue.
type AlertsysSnapshot struct {
	alerting.Status
	Enabled bool                  `json:"enabled"`
	Queue   *alerting.WorkerStats `json:"queue,omitempty"`
}

// Issue is one active condition on the dashboard.
type Issue struct {
	Key     string `json:"key"`
	Since   int64  `json:"since"`
	Message string `json:"message"`
}

// MaxIssues caps the dashboard's list; issues_total has the full count.
const MaxIssues = 100

// Dashboard is the GET /api/v1/status/dashboard payload.
type Dashboard struct {
	OK          bool             `json:"ok"` // no active condition
	GeneratedAt int64            `json:"generated_at"`
	MQTT        MQTTSnapshot     `json:"mqtt"`
	Alertsys    AlertsysSnapshot `json:"alertsys"`
	Push        PushStatus       `json:"push"`
	Fleet       FleetSnapshot    `json:"fleet"`
	Issues      []Issue          `json:"issues"`
	IssuesTotal int              `json:"issues_total"`
	Rechecked   string           `json:"rechecked,omitempty"`
}

// Recheck targets.
const (
	TargetMQTT     = "mqtt"
	TargetAlertsys = "alertsys"
	TargetPush     = "push"
)

// Monitor runs the periodic probes and answers the status endpoints from
// cached results.
type Monitor struct {
	o       Options
	log     *slog.Logger
	started int64
	ctx     context.Context
	cancel  context.CancelFunc

	mu      sync.Mutex
	mqtt    MQTTSnapshot
	dialBad bool // the last dial of the embedded listener failed
	fleet   FleetSnapshot
	timers  []clock.Timer
	stopped bool

	probeMu map[string]*sync.Mutex // one probe per target at a time
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
		o.FirstDelay = 5 * time.Second
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
	m.schedule(m.o.FirstDelay, m.o.Interval, m.networkTick)
	m.schedule(m.o.FirstDelay, m.o.MQTTInterval, func() { m.checkMQTT(false) })
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
		m.o.Conditions.Set(KeyAlertsysDown, true, "alertsys unreachable: "+st.Message)
	case alerting.StateOK:
		m.o.Conditions.Set(KeyAlertsysDown, false, "alertsys reachable again")
	case alerting.StateDisabled:
		m.o.Conditions.Set(KeyAlertsysDown, false, "alertsys no longer configured")
	}
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
		s := MQTTSnapshot{Mode: st.Mode, Clients: st.Clients, LastError: st.LastError, CheckedAt: &now}
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
		m.mu.Unlock()
		m.o.Conditions.Set(KeyMQTTDown, !s.OK, "MQTT: "+s.Message)
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
		snap, want := evaluateFleet(now, m.started, assets)
		var changes []Change
		for key, msg := range want {
			changes = append(changes, Change{Key: key, Active: true, Message: msg})
		}
		for _, key := range m.o.Conditions.activeWithPrefix(fleetPrefix) {
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

// AlertsysStatus is the cached GET /api/v1/status/alertsys payload.
func (m *Monitor) AlertsysStatus() AlertsysSnapshot {
	if m.o.Alertsys == nil {
		return AlertsysSnapshot{Status: alerting.Status{State: alerting.StateDisabled, ErrorCode: "feature_off",
			Message: "feature alerting is not enabled"}}
	}
	s := AlertsysSnapshot{Status: m.o.Alertsys.Status(), Enabled: true}
	if m.o.Queue != nil {
		q := m.o.Queue()
		s.Queue = &q
	}
	return s
}

// Dashboard assembles the cached snapshots; it never probes.
func (m *Monitor) Dashboard() Dashboard {
	m.mu.Lock()
	d := Dashboard{MQTT: m.mqtt, Fleet: m.fleet}
	m.mu.Unlock()
	d.GeneratedAt = m.o.Clock.Now().UnixMilli()
	d.Alertsys = m.AlertsysStatus()
	if m.o.Push != nil {
		d.Push = m.o.Push.Status()
	} else {
		d.Push = PushStatus{Message: "push not available"}
	}
	if d.Fleet.StaleAfterSeconds == nil {
		d.Fleet.StaleAfterSeconds = map[string]int{"beacon": int(BeaconStaleAfter / time.Second), "gateway": int(GatewayStaleAfter / time.Second)}
	}
	active := m.o.Conditions.Active()
	// Infrastructure first: a dead broker must not hide behind 100 stale tags.
	sort.SliceStable(active, func(i, j int) bool {
		return !strings.HasPrefix(active[i].Key, fleetPrefix) && strings.HasPrefix(active[j].Key, fleetPrefix)
	})
	d.IssuesTotal = len(active)
	d.Issues = make([]Issue, 0, min(len(active), MaxIssues))
	for _, c := range active[:min(len(active), MaxIssues)] {
		d.Issues = append(d.Issues, Issue{Key: c.Key, Since: c.Since, Message: c.Message})
	}
	d.OK = len(active) == 0
	return d
}

// Recheck forces one probe and returns the dashboard with its result. For
// push it runs both probes: reachability and a test publish to the test
// topic.
func (m *Monitor) Recheck(ctx context.Context, target string) (Dashboard, error) {
	switch target {
	case TargetMQTT:
		if m.o.MQTT == nil {
			return Dashboard{}, apperr.Unavailable("MQTT ingest is not running in this configuration")
		}
		m.checkMQTT(true)
	case TargetAlertsys:
		if m.o.Alertsys == nil {
			return Dashboard{}, apperr.Unavailable("feature alerting is not enabled")
		}
		m.checkAlertsys(ctx)
	case TargetPush:
		if m.o.Push == nil {
			return Dashboard{}, apperr.Unavailable("push is not available in this configuration")
		}
		m.locked(TargetPush, func() {
			m.o.Push.CheckReachability(ctx)
			m.o.Push.CheckDelivery(ctx)
		})
	default:
		return Dashboard{}, apperr.InvalidField("target", "target must be mqtt, alertsys or push")
	}
	d := m.Dashboard()
	d.Rechecked = target
	return d, nil
}

package status

import (
	"context"
	"sort"
	"strings"
	"time"

	"beaconhub/appliance/alerting"
	"beaconhub/appliance/apperr"
	"beaconhub/appliance/bridge"
)

// MQTTSnapshot is the dashboard's MQTT object.
type MQTTSnapshot struct {
	OK        bool   `json:"ok"`
	Mode      string `json:"mode"` // embedded, external or none
	Listening *bool  `json:"listening,omitempty"`
	Connected *bool  `json:"connected,omitempty"`
	Address   string `json:"address,omitempty"`
	Clients   int64  `json:"clients"`
	// LastError and LastErrorAt are null until an error, as in
	// /status/mqtt (left out, the dashboard's differed: a black-box check).
	LastError   *string `json:"last_error"`
	LastErrorAt *int64  `json:"last_error_at"`
	CheckedAt   *int64  `json:"checked_at"`
	Message     string  `json:"message"`
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
	// Bridge is present when feature bridge runs in this process.
	Bridge *bridge.Status `json:"bridge,omitempty"`
}

// Recheck targets.
const (
	TargetMQTT     = "mqtt"
	TargetAlertsys = "alertsys"
	TargetPush     = "push"
)

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
	m.addBridge(&d)
	m.addStore(&d)
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

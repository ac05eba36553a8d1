package status

import (
	"beaconhub/appliance/bridge"
)

// BridgeIssueKey is the dashboard issue of a running bridge that cannot
// reach the main server or the monitoring server.
const BridgeIssueKey = "bridge_down"

// SetBridge adds the monitoring bridge's snapshot to the dashboard; the
// appliance calls it when feature bridge runs inside the full server.
func (m *Monitor) SetBridge(status func() bridge.Status) {
	m.mu.Lock()
	m.bridge = status
	m.mu.Unlock()
}

// addBridge puts the bridge's snapshot on d and, while it is failing, an
// issue in front of the fleet's (it is infrastructure). The condition is
// not persisted nor pushed: the bridge reports its own outage to the
// monitoring server, which is where its users look.
func (m *Monitor) addBridge(d *Dashboard) {
	m.mu.Lock()
	f := m.bridge
	m.mu.Unlock()
	if f == nil {
		return
	}
	s := f()
	d.Bridge = &s
	if s.OK || s.State == "starting" {
		return
	}
	since := d.GeneratedAt
	for _, at := range []*int64{s.Main.LastErrorAt, s.Monitor.LastErrorAt} {
		if at != nil && *at < since {
			since = *at
		}
	}
	d.Issues = append([]Issue{{Key: BridgeIssueKey, Since: since, Message: "bridge: " + s.Message}}, d.Issues...)
	if len(d.Issues) > MaxIssues {
		d.Issues = d.Issues[:MaxIssues]
	}
	d.IssuesTotal++
	d.OK = false
}

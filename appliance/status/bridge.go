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

// StoreIssueKey is the dashboard issue of a database whose writes fail.
const StoreIssueKey = "store_failing"

// addStore puts, while the database's commits fail (a full disk, a file
// system gone read-only), an issue in front of every other: readings,
// events and conditions are not being stored, and alerts raised from
// them not sent. A full disk showed nowhere but the log (a black-box
// check). Like bridge_down it is not persisted (the store is what
// fails) nor pushed.
func (m *Monitor) addStore(d *Dashboard) {
	if m.o.Store == nil {
		return
	}
	since, msg := m.o.Store()
	if since.IsZero() {
		return
	}
	d.lead(Issue{Key: StoreIssueKey, Since: since.UnixMilli(),
		Message: "database writes are failing (disk full? file system read-only?): " + msg})
}

// lead puts an infrastructure issue that is no health condition in front
// of the others (at most MaxIssues are listed); the dashboard is not ok.
func (d *Dashboard) lead(is Issue) {
	d.Issues = append([]Issue{is}, d.Issues...)
	if len(d.Issues) > MaxIssues {
		d.Issues = d.Issues[:MaxIssues]
	}
	d.IssuesTotal++
	d.OK = false
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
	d.lead(Issue{Key: BridgeIssueKey, Since: since, Message: "bridge: " + s.Message})
}

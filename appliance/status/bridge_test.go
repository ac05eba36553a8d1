package status

import (
	"strconv"
	"testing"
	"time"

	"beaconhub/appliance/bridge"
)

// The bridge's outage is an infrastructure issue: first in the list, ahead
// of fleet conditions, counted in issues_total, within the cap. A bridge
// that has not run yet, or runs fine, raises nothing.
func TestDashboardBridgeIssue(t *testing.T) {
	f := newFixture(t)
	if d := f.mon.Dashboard(); d.Bridge != nil {
		t.Fatal("bridge object without a bridge")
	}
	for i := range MaxIssues {
		f.conds.Set(fleetPrefix+"stale:SEN-"+strconv.Itoa(i), true, "stale")
	}
	st := bridge.Status{State: "starting"}
	f.mon.SetBridge(func() bridge.Status { return st })
	d := f.mon.Dashboard()
	if d.Bridge == nil || d.Bridge.State != "starting" || d.IssuesTotal != MaxIssues {
		t.Fatalf("starting: bridge %+v, issues %d", d.Bridge, d.IssuesTotal)
	}
	at := t0.Add(-time.Minute).UnixMilli()
	st = bridge.Status{State: "monitor_down", Message: "monitoring server unreachable"}
	st.Monitor.LastErrorAt = &at
	d = f.mon.Dashboard()
	if d.OK || d.IssuesTotal != MaxIssues+1 || len(d.Issues) != MaxIssues {
		t.Fatalf("down: ok %v, total %d, len %d", d.OK, d.IssuesTotal, len(d.Issues))
	}
	if is := d.Issues[0]; is.Key != BridgeIssueKey || is.Since != at || is.Message != "bridge: monitoring server unreachable" {
		t.Fatalf("first issue %+v", is)
	}
	st = bridge.Status{OK: true, State: "ok"}
	if d := f.mon.Dashboard(); d.IssuesTotal != MaxIssues || d.Issues[0].Key == BridgeIssueKey {
		t.Fatalf("ok bridge still an issue: %+v", d.Issues[0])
	}
}

package status

import (
	"fmt"
	"time"
)

// Fleet thresholds. Gateways publish continuously, so ten silent minutes
// mean one is off or disconnected; beacons advertise less often and may
// sit out of range for a while, so they get an hour. Navigation beacons
// serve phones and are not necessarily in a gateway's range: they are not
// monitored.
const (
	GatewayStaleAfter = 10 * time.Minute
	BeaconStaleAfter  = time.Hour
)

// FleetAsset is one monitored beacon or gateway.
type FleetAsset struct {
	UID       string
	Kind      string // "beacon" or "gateway"
	Type      string // beacon type
	Name      string
	CreatedAt int64 // Unix ms
	LastSeen  int64 // Unix ms, 0 = never
}

// FleetCounts counts one kind of asset.
type FleetCounts struct {
	Total     int `json:"total"`
	Stale     int `json:"stale"`
	NeverSeen int `json:"never_seen"`
}

// FleetSnapshot is the dashboard's fleet object.
type FleetSnapshot struct {
	CheckedAt         *int64         `json:"checked_at"`
	Beacons           FleetCounts    `json:"beacons"`
	Gateways          FleetCounts    `json:"gateways"`
	StaleAfterSeconds map[string]int `json:"stale_after_seconds"`
	Error             string         `json:"error,omitempty"`
}

// evaluateFleet counts the fleet and returns the fleet conditions that
// should be active (key -> message). Ages are measured from the later of
// the last sighting (or creation) and the process start: last-seen times
// are only as fresh as the last flush before a restart, and every device
// being "stale" right after an upgrade would be noise, not news. That
// grace is for raising only: a condition already active (the keys in
// active, kept across restarts) stays while its device's own age is over
// the limit; measured from the start, every restart resolved them all,
// told staff and the vendor "Resolved", and raised them again ten minutes
// later (a black-box check).
func evaluateFleet(now, started int64, assets []FleetAsset, active map[string]bool) (FleetSnapshot, map[string]string) {
	snap := FleetSnapshot{CheckedAt: &now, StaleAfterSeconds: map[string]int{
		"beacon": int(BeaconStaleAfter / time.Second), "gateway": int(GatewayStaleAfter / time.Second)}}
	want := map[string]string{}
	for _, a := range assets {
		if a.Kind == "beacon" && a.Type == "navigation" {
			continue
		}
		limit, counts := BeaconStaleAfter, &snap.Beacons
		if a.Kind == "gateway" {
			limit, counts = GatewayStaleAfter, &snap.Gateways
		}
		counts.Total++
		name := a.Name
		if name == "" {
			name = a.UID
		}
		if a.LastSeen == 0 {
			if active[FleetKey("never_seen", a.UID)] || now-max(a.CreatedAt, started) > limit.Milliseconds() {
				counts.NeverSeen++
				want[FleetKey("never_seen", a.UID)] = fmt.Sprintf("%s %s has never been heard", a.Kind, name)
			}
			continue
		}
		// Active already: no grace from the start, the age alone (not
		// "heard after it began": a gateway's clock a few minutes slow
		// stamps a sighting before that, and the condition held: a
		// review).
		from := max(a.LastSeen, started)
		if active[FleetKey("stale", a.UID)] {
			from = a.LastSeen
		}
		if now-from > limit.Milliseconds() {
			counts.Stale++
			want[FleetKey("stale", a.UID)] = fmt.Sprintf("%s %s not heard for more than %d minutes", a.Kind, name, int(limit/time.Minute))
		}
	}
	return snap, want
}

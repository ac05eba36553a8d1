// Package uitemplates owns interface templates as a domain: the component
// catalogue (which components exist, which roles may place them, which GET
// endpoints each one reads), strict validation of a template definition
// against it, and the cross-role compatibility check used by clone.
//
// The endpoints a component reads are the live-preview allowlist: an admin
// previewing a user's interface may call exactly those, with that user's
// role and location scope, and nothing else.
package uitemplates

import "sort"

// Roles a template can be made for. Admins keep the fixed admin UI and api
// accounts have no web UI, so neither gets templates.
const (
	RoleUser        = "user"
	RoleMaintenance = "maintenance"
)

// ValidRole reports whether r is a template role.
func ValidRole(r string) bool { return r == RoleUser || r == RoleMaintenance }

// OptionKind is the type of one component option.
type OptionKind int

// Option kinds.
const (
	OptInt OptionKind = iota
	OptBool
	OptEnum
)

// Option describes one key a component accepts under `options`.
type Option struct {
	Kind     OptionKind
	Min, Max int      // OptInt bounds, inclusive
	Values   []string // OptEnum values
}

// Component is one entry of the catalogue.
type Component struct {
	Type  string
	Roles []string
	// Reads are the route-table patterns (method GET) the component calls;
	// together they form the live-preview allowlist.
	Reads   []string
	Options map[string]Option
}

// Allows reports whether role may place the component.
func (c Component) Allows(role string) bool {
	for _, r := range c.Roles {
		if r == role {
			return true
		}
	}
	return false
}

var both = []string{RoleUser, RoleMaintenance}

// catalogue is the fixed set of components. Maintenance-only components
// show infrastructure (gateways, probes, application log) that simple
// users have no business with; the person finder is for simple users only
// because maintenance staff locate hardware, not people.
var catalogue = []Component{
	{Type: "event_feed", Roles: both, Reads: []string{"/api/v1/events"},
		Options: map[string]Option{
			"limit":  {Kind: OptInt, Min: 1, Max: 100},
			"status": {Kind: OptEnum, Values: []string{"alert", "warning", "active"}},
		}},
	{Type: "beacon_list", Roles: both, Reads: []string{"/api/v1/beacons", "/api/v1/beacon/:id"},
		Options: map[string]Option{
			"type": {Kind: OptEnum, Values: []string{"watch", "panic", "navigation", "sos", "sensor", "unknown"}},
		}},
	{Type: "person_finder", Roles: []string{RoleUser},
		Reads: []string{"/api/v1/beacons", "/api/v1/beacon/:id", "/api/v1/beacon/:id/intervals",
			"/api/v1/user/rtls/trackable-beacons", "/api/v1/user/rtls/beacons/:mac/zone-intervals", "/api/v1/tracking/:id"}},
	{Type: "live_map", Roles: []string{RoleUser},
		Reads: []string{"/api/v1/maps", "/api/v1/map/:id", "/api/v1/maps/image", "/api/v1/maps/:id/zones",
			"/api/v1/user/rtls/trackable-beacons", "/api/v1/tracking/:id"}},
	{Type: "location_tree", Roles: both, Reads: []string{"/api/v1/locations"}},
	{Type: "floor_map", Roles: both,
		Reads: []string{"/api/v1/floors", "/api/v1/floor/:id", "/api/v1/floor/:id/graph"},
		Options: map[string]Option{
			"show_graph": {Kind: OptBool},
		}},
	{Type: "sensor_chart", Roles: both, Reads: []string{"/api/v1/sensors/devices", "/api/v1/sensors/history"},
		Options: map[string]Option{
			"hours":  {Kind: OptInt, Min: 1, Max: 168},
			"metric": {Kind: OptEnum, Values: []string{"humidity", "temperature", "battery"}},
		}},
	{Type: "gateway_health", Roles: []string{RoleMaintenance},
		Reads: []string{"/api/v1/gateways", "/api/v1/gateway/:id"}},
	{Type: "system_status", Roles: []string{RoleMaintenance},
		Reads: []string{"/api/v1/status/dashboard", "/api/v1/status/mqtt", "/api/v1/status/alertsys"}},
	{Type: "app_log", Roles: []string{RoleMaintenance}, Reads: []string{"/api/v1/logs"},
		Options: map[string]Option{
			"limit": {Kind: OptInt, Min: 1, Max: 200},
		}},
}

// shellReads are read by the user shell itself rather than a component,
// so a preview of the shell needs them too.
var shellReads = []string{"/api/v1/user/session", "/api/v1/features"}

var byType = func() map[string]Component {
	m := make(map[string]Component, len(catalogue))
	for _, c := range catalogue {
		m[c.Type] = c
	}
	return m
}()

// Lookup returns the component of type t.
func Lookup(t string) (Component, bool) {
	c, ok := byType[t]
	return c, ok
}

// Catalogue returns every component (a copy, in catalogue order).
func Catalogue() []Component { return append([]Component(nil), catalogue...) }

// PreviewAllowlist returns the GET route patterns the live-preview header
// is honoured on: every component's reads plus the shell's, sorted.
func PreviewAllowlist() []string {
	set := map[string]bool{}
	for _, c := range catalogue {
		for _, p := range c.Reads {
			set[p] = true
		}
	}
	for _, p := range shellReads {
		set[p] = true
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

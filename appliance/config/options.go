package config

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"beaconhub/appliance/rtls"
)

// Kind is the JSON type of an option's value.
type Kind int

// Option value kinds.
const (
	KindString Kind = iota
	KindInt
	KindBool
	KindStrings
)

// Option describes one configuration key. The table below is the single
// source for defaults, validation, masking and what the settings API may
// change.
type Option struct {
	Key     string
	Group   string
	Kind    Kind
	Default func(b Brand) any
	// UI marks keys an admin may change through PATCH /api/v1/settings;
	// they apply to the running process at once.
	UI bool
	// Secret values are masked wherever the configuration is shown.
	Secret bool
	// URL marks URL-valued keys: credentials in them (user:password@)
	// are masked wherever the configuration is shown (maskURL).
	URL bool
	// Restricted secrets never leave the process, not even masked as set.
	Restricted bool
	// Restart marks keys that take effect only after a restart.
	Restart  bool
	Validate func(v any) error
	// Generated keys get a random value on first start instead of a fixed
	// default, so no two installs share a secret.
	Generated bool
	// Degrade, if set, makes a loaded value (file or environment) that
	// fails Validate not fatal: the value is kept as written, so that a
	// write-back of the file keeps it, its user reads it leniently, and
	// Degrade says what that user ignores (LoadResult.Degraded). For
	// tuning knobs whose bounds a release may tighten: a value an older
	// release accepted stopped the whole appliance at the upgrade,
	// alerting with it (a review). An empty why keeps the failure fatal:
	// for the part of a check no older release lacked.
	Degrade func(v any) (why string)
}

func str(s string) func(Brand) any   { return func(Brand) any { return s } }
func num(n int) func(Brand) any      { return func(Brand) any { return n } }
func boolean(v bool) func(Brand) any { return func(Brand) any { return v } }
func oneOf(vals ...string) func(any) error {
	return func(v any) error {
		s := v.(string)
		for _, ok := range vals {
			if s == ok {
				return nil
			}
		}
		return fmt.Errorf("must be one of %s", strings.Join(vals, ", "))
	}
}
func intRange(lo, hi int) func(any) error {
	return func(v any) error {
		n := v.(int)
		if n < lo || n > hi {
			return fmt.Errorf("must be between %d and %d", lo, hi)
		}
		return nil
	}
}
func nonEmpty(v any) error {
	if strings.TrimSpace(v.(string)) == "" {
		return fmt.Errorf("must not be empty")
	}
	return nil
}

// hostOnly is a host name or IP address without a port (the port has
// its own key) or anything a dial would read as more: "127.0.0.1:20551"
// passed and failed at run time as "lookup 127.0.0.1:20551: no such
// host" (a black-box check). A bare IPv6 address is a host.
func hostOnly(v any) error {
	if err := nonEmpty(v); err != nil {
		return err
	}
	h := strings.TrimSpace(v.(string))
	if net.ParseIP(h) != nil {
		return nil
	}
	if strings.ContainsAny(h, ":/@?# []") {
		return fmt.Errorf("must be a host name or IP address alone (the port is server_bridge_monitor_port)")
	}
	return nil
}

// endpointPath is a path below the main server's URL: a query or
// fragment was escaped into the path and answered 404 (a black-box
// check).
func endpointPath(v any) error {
	if err := nonEmpty(v); err != nil {
		return err
	}
	p := v.(string)
	if strings.ContainsAny(p, "?# ") || strings.Contains(p, "://") {
		return fmt.Errorf("must be a path such as lld/beacons, without a query, fragment or scheme")
	}
	return nil
}

// bridgeKept degrades a bridge value that a release's tighter check
// refuses: kept as written (the bridge fails with it at run time, as it
// did under the release that accepted it) and warned about at start. A
// site whose older file held "zabbix.example.org:10051" could not start
// at all after the upgrade, alerting with it, even with the bridge off
// (a black-box check).
func bridgeKept(validate func(any) error) func(any) string {
	return func(v any) string {
		if nonEmpty(v) != nil {
			return "" // empty was always refused: no older file holds it (a review)
		}
		return fmt.Sprintf("%q %v; kept as written, so the bridge fails with it until it is corrected", v, validate(v))
	}
}

func maxLen(n int) func(any) error {
	return func(v any) error {
		if utf8.RuneCountInString(v.(string)) > n {
			return fmt.Errorf("must be at most %d characters", n)
		}
		return nil
	}
}
func duration(v any) error {
	d, err := time.ParseDuration(v.(string))
	if err != nil {
		return fmt.Errorf("must be a duration such as 8h or 15m")
	}
	if d < time.Minute || d > 30*24*time.Hour {
		return fmt.Errorf("must be between 1m and 720h")
	}
	return nil
}
func timezone(v any) error {
	if _, err := time.LoadLocation(v.(string)); err != nil || v.(string) == "" {
		return fmt.Errorf("must be an IANA time zone such as Europe/Prague")
	}
	return nil
}

var clockRe = regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5][0-9]$`)

func clock(v any) error {
	if !clockRe.MatchString(v.(string)) {
		return fmt.Errorf("must be a time of day HH:MM")
	}
	return nil
}
func httpURL(optional bool) func(any) error {
	return func(v any) error {
		s := v.(string)
		if s == "" && optional {
			return nil
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("must be an http(s) URL")
		}
		return nil
	}
}
func mqttURL(v any) error {
	u, err := url.Parse(v.(string))
	if err != nil || u.Host == "" || (u.Scheme != "mqtt" && u.Scheme != "tcp" && u.Scheme != "mqtts" && u.Scheme != "ssl" && u.Scheme != "tls") {
		return fmt.Errorf("must be an MQTT URL such as mqtt://host:1883")
	}
	return nil
}
func relPath(v any) error {
	s := v.(string)
	if s == "" || strings.Contains(s, "\x00") {
		return fmt.Errorf("must be a file path")
	}
	return nil
}

// insideHome is a directory below the home: the snapshot directory is
// set from the settings page, at run time, and the snapshotter prunes
// snapshot-*.json files in it, so it may not name a place outside the
// home (a black-box check wrote snapshots to /etc).
func insideHome(v any) error {
	if err := relPath(v); err != nil {
		return err
	}
	s := v.(string)
	if filepath.IsAbs(s) || !filepath.IsLocal(s) {
		return fmt.Errorf("must be a directory inside the home, given relative to it")
	}
	return nil
}

// outsideHomeKept: a directory outside the home written in the file (or
// the environment) by the operator is kept, so an upgrade does not stop
// a box that has one; only the settings page is held to the home.
func outsideHomeKept(v any) string {
	return fmt.Sprintf("%q is outside the home: kept as written; the settings page accepts only a directory inside the home", v)
}

func apiPrefix(v any) error {
	s := v.(string)
	if !strings.HasPrefix(s, "/") {
		return fmt.Errorf("must be a root-absolute path")
	}
	return nil
}
func listenAddr(v any) error {
	s := v.(string)
	i := strings.LastIndex(s, ":")
	if i < 0 {
		return fmt.Errorf("must be host:port or :port")
	}
	var p int
	if _, err := fmt.Sscanf(s[i+1:], "%d", &p); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("port must be between 0 and 65535")
	}
	return nil
}
func features(v any) error {
	fs := v.([]string)
	if len(fs) == 0 {
		return fmt.Errorf("must name at least one feature")
	}
	for _, f := range fs {
		switch f {
		case FeatureBridge, FeatureNavigation, FeatureAlerting, FeatureRTLS, FeatureSensors, FeatureService:
		default:
			return fmt.Errorf("unknown feature %q (known: bridge, navigation, alerting, rtls, sensors, service)", f)
		}
	}
	return nil
}

func rtlsParams(v any) error {
	_, err := rtls.ParamsFrom(v.([]string))
	return err
}

// rtlsParamsDegrade says what the tracking engine, which reads the
// entries with rtls.ParamsKept, ignores of them.
func rtlsParamsDegrade(v any) string {
	_, _, why := rtls.ParamsKept(v.([]string))
	return why
}
func cidr(v any) error {
	s := v.(string)
	if s == "" {
		return nil
	}
	if _, _, err := net.ParseCIDR(s); err != nil {
		return fmt.Errorf("must be a CIDR such as 192.0.2.0/24")
	}
	return nil
}

var (
	serverIDRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)
	topicRe    = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

func serverID(v any) error {
	s := v.(string)
	if !serverIDRe.MatchString(s) {
		return fmt.Errorf("must be 1-32 letters, digits, '-' or '_' (it is part of push topic names)")
	}
	return nil
}
func topicName(v any) error {
	s := v.(string)
	if s != "" && !topicRe.MatchString(s) {
		return fmt.Errorf("must be 1-64 letters, digits, '-' or '_', or empty")
	}
	return nil
}

var modes = oneOf("bulk", "individual")

// Options is the table of every configuration key.
var Options = []Option{
	{Key: "server_id", Group: "core", Default: str("TST000"), UI: true, Validate: serverID},
	{Key: "server_features", Group: "core", Kind: KindStrings, Default: func(b Brand) any { return append([]string(nil), b.Features...) }, Restart: true, Validate: features},
	{Key: "server_mode", Group: "core", Default: str("prod"), UI: true, Validate: oneOf("prod", "debug")},
	{Key: "server_http_port", Group: "core", Kind: KindInt, Default: num(8088), Restart: true, Validate: intRange(1, 65535)},
	{Key: "server_db_path", Group: "core", Default: str("db/service.db"), Restart: true, Validate: relPath},
	{Key: "server_url_prod", Group: "core", Default: str("/api/v1/"), Restart: true, Validate: apiPrefix},
	{Key: "server_url_ws", Group: "core", Default: str("/ws"), Restart: true, Validate: apiPrefix},

	{Key: "server_credentials_default_email", Group: "auth", Default: func(b Brand) any { return b.AdminEmail }, Restart: true, Validate: nonEmpty},
	{Key: "server_credentials_default_password", Group: "auth", Default: str(""), Secret: true, Generated: true, Restart: true},
	{Key: "server_auth_jwt_issuer", Group: "auth", Default: func(b Brand) any { return b.AuthIssuer }, Restart: true, Validate: nonEmpty},
	{Key: "server_auth_jwt_audience", Group: "auth", Default: func(b Brand) any { return b.AuthAudience }, Restart: true, Validate: nonEmpty},
	{Key: "server_auth_jwt_expiry", Group: "auth", Default: str("8h"), Restart: true, Validate: duration},
	{Key: "server_mobile_api_key", Group: "auth", Default: str(""), Secret: true, Generated: true, Restart: true},

	{Key: "server_mqtt_broker", Group: "mqtt", Default: str("embedded"), Restart: true, Validate: oneOf("embedded", "external")},
	{Key: "server_mqtt_listen", Group: "mqtt", Default: str(":1883"), Restart: true, Validate: listenAddr},
	{Key: "server_mqtt_url", Group: "mqtt", URL: true, Default: str("mqtt://localhost:1883"), Restart: true, Validate: mqttURL},
	{Key: "server_mqtt_user", Group: "mqtt", Default: str("service"), UI: true, Validate: nonEmpty},
	{Key: "server_mqtt_pass", Group: "mqtt", Default: str("service"), UI: true, Secret: true, Validate: nonEmpty},

	{Key: "server_bridge_server_url", Group: "bridge", URL: true, Default: str("http://localhost:8088/"), Restart: true, Validate: httpURL(false)},
	{Key: "server_bridge_monitor_host", Group: "bridge", Default: str("localhost"), Restart: true, Validate: hostOnly, Degrade: bridgeKept(hostOnly)},
	{Key: "server_bridge_monitor_port", Group: "bridge", Kind: KindInt, Default: num(10051), Restart: true, Validate: intRange(1, 65535)},
	{Key: "server_bridge_endpoint_beacon", Group: "bridge", Default: str("lld/beacons"), Restart: true, Validate: endpointPath, Degrade: bridgeKept(endpointPath)},
	{Key: "server_bridge_endpoint_gateway", Group: "bridge", Default: str("lld/gateways"), Restart: true, Validate: endpointPath, Degrade: bridgeKept(endpointPath)},
	{Key: "server_bridge_delay_beacon", Group: "bridge", Kind: KindInt, Default: num(300), Restart: true, Validate: intRange(1, 86400)},
	{Key: "server_bridge_delay_gateway", Group: "bridge", Kind: KindInt, Default: num(300), Restart: true, Validate: intRange(1, 86400)},
	{Key: "server_bridge_cache_update_interval", Group: "bridge", Kind: KindInt, Default: num(3600), Restart: true, Validate: intRange(10, 604800)},

	{Key: "server_alertsys_url_base", Group: "alertsys", URL: true, Default: str(""), UI: true, Validate: httpURL(true)},
	{Key: "server_alertsys_url_path_login", Group: "alertsys", Default: str("/api/Mobile/LoginUser"), Restart: true, Validate: apiPrefix},
	{Key: "server_alertsys_url_path_convene", Group: "alertsys", Default: str("/api/Mobile/ExecuteConveneByRule"), Restart: true, Validate: apiPrefix},
	{Key: "server_alertsys_credentials_username", Group: "alertsys", Default: str(""), UI: true},
	{Key: "server_alertsys_credentials_password", Group: "alertsys", Default: str(""), UI: true, Secret: true},

	{Key: "server_devices_cache_sync_interval", Group: "performance", Kind: KindInt, Default: num(300), UI: true, Validate: intRange(10, 86400)},
	{Key: "server_perf_memory_threshold", Group: "performance", Kind: KindInt, Default: num(512), UI: true, Validate: intRange(16, 1<<20)},
	// Raw sensor history older than this is deleted by the daily compaction
	// (appliance/sensors/retention.go); ~13 months keeps a year-on-year view.
	{Key: "server_sensors_history_retention_days", Group: "performance", Kind: KindInt, Default: num(400), UI: true, Validate: intRange(1, 36500)},
	// Beacon events: motion and presence warnings come every dedup window
	// from every moving beacon and are only useful for a few weeks; alerts
	// (presses) are kept like sensor history (appliance/alerting/retention.go).
	{Key: "server_events_retention_days", Group: "performance", Kind: KindInt, Default: num(400), UI: true, Validate: intRange(1, 36500)},
	{Key: "server_events_warning_retention_days", Group: "performance", Kind: KindInt, Default: num(30), UI: true, Validate: intRange(1, 36500)},
	// Zone intervals: one per zone change per beacon, millions a year on a
	// large site; kept like the events they explain (appliance/rtls.go).
	{Key: "server_rtls_intervals_retention_days", Group: "performance", Kind: KindInt, Default: num(400), UI: true, Validate: intRange(1, 36500)},

	// Tracking engine parameters other than the defaults, "name=value"
	// as rtls-eval's --set takes them (docs/rtls.md, Parameters): what a
	// labelled walk of the site measured, or a site's own trade-off
	// between flips and lag (switch_odds).
	{Key: "server_rtls_params", Group: "rtls", Kind: KindStrings, Default: func(Brand) any { return []string{} }, Restart: true, Validate: rtlsParams, Degrade: rtlsParamsDegrade},

	{Key: "server_debug_snapshot_interval", Group: "diagnostics", Kind: KindInt, Default: num(300), UI: true, Validate: intRange(10, 86400)},
	{Key: "server_debug_log_dir", Group: "diagnostics", Default: str("logs/diagnostics"), UI: true, Validate: insideHome, Degrade: outsideHomeKept},
	{Key: "server_debug_max_files", Group: "diagnostics", Kind: KindInt, Default: num(288), UI: true, Validate: intRange(1, 100000)},
	{Key: "server_log_verbosity", Group: "diagnostics", Default: str("normal"), UI: true, Validate: oneOf("none", "normal", "verbose")},

	{Key: "server_gateway_admin_username", Group: "gateway_admin", Default: str("admin"), Restart: true},
	{Key: "server_gateway_admin_password", Group: "gateway_admin", Default: str(""), Secret: true, Generated: true, Restart: true},
	{Key: "server_gateway_admin_http_transport", Group: "gateway_admin", Default: str("fetch"), Restart: true, Validate: oneOf("fetch", "curl")},
	{Key: "server_gateway_admin_timeout_sec", Group: "gateway_admin", Kind: KindInt, Default: num(30), Restart: true, Validate: intRange(1, 600)},
	{Key: "server_gateway_scan_default_subnet", Group: "gateway_admin", Default: str(""), Restart: true, Validate: cidr},

	{Key: "server_push_enabled", Group: "push", Kind: KindBool, Default: boolean(true), UI: true},
	{Key: "server_push_cooldown_seconds", Group: "push", Kind: KindInt, Default: num(600), Restart: true, Validate: intRange(0, 604800)},
	{Key: "server_push_sensors_cooldown_seconds", Group: "push", Kind: KindInt, Default: num(21600), UI: true, Validate: intRange(0, 604800)},
	{Key: "server_push_button_dedup_seconds", Group: "push", Kind: KindInt, Default: num(40), UI: true, Validate: intRange(1, 3600)},
	{Key: "server_push_critical_cooldown_seconds", Group: "push", Kind: KindInt, Default: num(21600), UI: true, Validate: intRange(0, 604800)},
	{Key: "server_push_digest_timezone", Group: "push", Default: str("Europe/Prague"), UI: true, Validate: timezone},
	{Key: "server_push_digest_time", Group: "push", Default: str("09:00"), UI: true, Validate: clock},
	{Key: "server_push_batteries_mode", Group: "push", Default: str("bulk"), UI: true, Validate: modes},
	{Key: "server_push_batteries_interval_seconds", Group: "push", Kind: KindInt, Default: num(86400), UI: true, Validate: intRange(60, 604800)},
	{Key: "server_push_sensor_notseen_mode", Group: "push", Default: str("bulk"), UI: true, Validate: modes},
	{Key: "server_push_sensor_notseen_interval_seconds", Group: "push", Kind: KindInt, Default: num(86400), UI: true, Validate: intRange(60, 604800)},
	{Key: "server_push_calibration_mode", Group: "push", Default: str("bulk"), UI: true, Validate: modes},
	{Key: "server_push_calibration_interval_seconds", Group: "push", Kind: KindInt, Default: num(86400), UI: true, Validate: intRange(60, 604800)},
	{Key: "server_push_fleet_health_mode", Group: "push", Default: str("bulk"), UI: true, Validate: modes},
	{Key: "server_push_fleet_health_interval_seconds", Group: "push", Kind: KindInt, Default: num(86400), UI: true, Validate: intRange(60, 604800)},
	{Key: "server_push_server_url", Group: "push", URL: true, Default: func(b Brand) any { return b.PushServerURL }, Restart: true, Validate: httpURL(true)},
	{Key: "server_push_ops_enabled", Group: "push", Kind: KindBool, Default: boolean(true), UI: true},
	{Key: "server_push_ops_server_url", Group: "push", URL: true, Default: func(b Brand) any { return b.PushServerURL }, Restart: true, Validate: httpURL(true)},
	{Key: "server_push_ops_topic", Group: "push", Default: func(b Brand) any { return b.BinaryName + "-ops" }, Restart: true, Validate: topicName},
	{Key: "server_push_publish_token", Group: "push", Default: str(""), Secret: true, Restricted: true, Restart: true},
	{Key: "server_push_token_manager_user", Group: "push", Default: str(""), Restart: true},
	{Key: "server_push_token_manager_password", Group: "push", Default: str(""), Secret: true, Restricted: true, Restart: true},

	{Key: "server_ui_nav_orientation", Group: "ui", Default: str("horizontal"), UI: true, Validate: oneOf("horizontal", "vertical")},
	{Key: "server_ui_show_brand", Group: "ui", Kind: KindBool, Default: boolean(true), UI: true},
	{Key: "server_ui_show_profile", Group: "ui", Kind: KindBool, Default: boolean(true), UI: true},
	{Key: "server_ui_show_account", Group: "ui", Kind: KindBool, Default: boolean(true), UI: true},
	{Key: "server_ui_show_logout", Group: "ui", Kind: KindBool, Default: boolean(true), UI: true},
	{Key: "server_ui_logout_style", Group: "ui", Default: str("menu"), UI: true, Validate: oneOf("menu", "button")},
	{Key: "server_ui_show_system_status", Group: "ui", Kind: KindBool, Default: boolean(false), UI: true},
	{Key: "server_ui_show_footer", Group: "ui", Kind: KindBool, Default: boolean(true), UI: true},
	{Key: "server_ui_footer_show_version", Group: "ui", Kind: KindBool, Default: boolean(true), UI: true},
	{Key: "server_ui_footer_text", Group: "ui", Default: str(""), UI: true, Validate: maxLen(240)},
	{Key: "server_bug_tracker_enabled", Group: "ui", Kind: KindBool, Default: boolean(false), UI: true},
}

// Lookup returns the option for key.
func Lookup(key string) (Option, bool) {
	for _, o := range Options {
		if o.Key == key {
			return o, true
		}
	}
	return Option{}, false
}

// Package config owns BeaconHub's configuration: the Config struct, the one
// options table (default, type, validator, UI-editable, secret,
// restart-needed), brand profiles, loading main.config.json (plain JSON,
// with BEACONHUB_* environment overrides layered through viper),
// writing defaults back atomically, and the live holder that settings
// changes go through.
package config

import "time"

// Config is the effective configuration. Field json names are the
// configuration keys; the options table in options.go describes each one.
type Config struct {
	ServerID       string   `json:"server_id"`
	ServerFeatures []string `json:"server_features"`
	ServerMode     string   `json:"server_mode"`
	HTTPPort       int      `json:"server_http_port"`
	DBPath         string   `json:"server_db_path"`
	URLProd        string   `json:"server_url_prod"`
	URLWS          string   `json:"server_url_ws"`

	DefaultEmail    string `json:"server_credentials_default_email"`
	DefaultPassword string `json:"server_credentials_default_password"`
	JWTIssuer       string `json:"server_auth_jwt_issuer"`
	JWTAudience     string `json:"server_auth_jwt_audience"`
	JWTExpiry       string `json:"server_auth_jwt_expiry"`
	MobileAPIKey    string `json:"server_mobile_api_key"`

	MQTTBroker string `json:"server_mqtt_broker"`
	MQTTListen string `json:"server_mqtt_listen"`
	MQTTURL    string `json:"server_mqtt_url"`
	MQTTUser   string `json:"server_mqtt_user"`
	MQTTPass   string `json:"server_mqtt_pass"`

	BridgeServerURL           string `json:"server_bridge_server_url"`
	BridgeMonitorHost         string `json:"server_bridge_monitor_host"`
	BridgeMonitorPort         int    `json:"server_bridge_monitor_port"`
	BridgeEndpointBeacon      string `json:"server_bridge_endpoint_beacon"`
	BridgeEndpointGateway     string `json:"server_bridge_endpoint_gateway"`
	BridgeDelayBeacon         int    `json:"server_bridge_delay_beacon"`
	BridgeDelayGateway        int    `json:"server_bridge_delay_gateway"`
	BridgeCacheUpdateInterval int    `json:"server_bridge_cache_update_interval"`

	AlertsysURLBase     string `json:"server_alertsys_url_base"`
	AlertsysPathLogin   string `json:"server_alertsys_url_path_login"`
	AlertsysPathConvene string `json:"server_alertsys_url_path_convene"`
	AlertsysUsername    string `json:"server_alertsys_credentials_username"`
	AlertsysPassword    string `json:"server_alertsys_credentials_password"`

	DevicesCacheSyncInterval int `json:"server_devices_cache_sync_interval"`
	PerfMemoryThreshold      int `json:"server_perf_memory_threshold"`
	// SensorsHistoryRetentionDays bounds raw sensor history (issue 6).
	SensorsHistoryRetentionDays int `json:"server_sensors_history_retention_days"`
	// EventsRetentionDays bounds every beacon event; warnings (motion,
	// presence) go after EventsWarningRetentionDays.
	EventsRetentionDays        int `json:"server_events_retention_days"`
	EventsWarningRetentionDays int `json:"server_events_warning_retention_days"`
	// RTLSIntervalsRetentionDays bounds zone intervals (closed ones).
	RTLSIntervalsRetentionDays int `json:"server_rtls_intervals_retention_days"`

	// RTLSParams are "name=value" entries over the tracking engine's
	// defaults (rtls.ParamsFrom).
	RTLSParams []string `json:"server_rtls_params"`

	DebugSnapshotInterval int    `json:"server_debug_snapshot_interval"`
	DebugLogDir           string `json:"server_debug_log_dir"`
	DebugMaxFiles         int    `json:"server_debug_max_files"`
	LogVerbosity          string `json:"server_log_verbosity"`

	GatewayAdminUsername      string `json:"server_gateway_admin_username"`
	GatewayAdminPassword      string `json:"server_gateway_admin_password"`
	GatewayAdminHTTPTransport string `json:"server_gateway_admin_http_transport"`
	GatewayAdminTimeoutSec    int    `json:"server_gateway_admin_timeout_sec"`
	GatewayScanDefaultSubnet  string `json:"server_gateway_scan_default_subnet"`

	PushEnabled                      bool   `json:"server_push_enabled"`
	PushCooldownSeconds              int    `json:"server_push_cooldown_seconds"`
	PushSensorsCooldownSeconds       int    `json:"server_push_sensors_cooldown_seconds"`
	PushButtonDedupSeconds           int    `json:"server_push_button_dedup_seconds"`
	PushCriticalCooldownSeconds      int    `json:"server_push_critical_cooldown_seconds"`
	PushDigestTimezone               string `json:"server_push_digest_timezone"`
	PushDigestTime                   string `json:"server_push_digest_time"`
	PushBatteriesMode                string `json:"server_push_batteries_mode"`
	PushBatteriesIntervalSeconds     int    `json:"server_push_batteries_interval_seconds"`
	PushSensorNotseenMode            string `json:"server_push_sensor_notseen_mode"`
	PushSensorNotseenIntervalSeconds int    `json:"server_push_sensor_notseen_interval_seconds"`
	PushCalibrationMode              string `json:"server_push_calibration_mode"`
	PushCalibrationIntervalSeconds   int    `json:"server_push_calibration_interval_seconds"`
	PushFleetHealthMode              string `json:"server_push_fleet_health_mode"`
	PushFleetHealthIntervalSeconds   int    `json:"server_push_fleet_health_interval_seconds"`
	PushServerURL                    string `json:"server_push_server_url"`
	PushOpsEnabled                   bool   `json:"server_push_ops_enabled"`
	PushOpsServerURL                 string `json:"server_push_ops_server_url"`
	PushOpsTopic                     string `json:"server_push_ops_topic"`
	PushPublishToken                 string `json:"server_push_publish_token"`
	PushTokenManagerUser             string `json:"server_push_token_manager_user"`
	PushTokenManagerPassword         string `json:"server_push_token_manager_password"`

	UINavOrientation    string `json:"server_ui_nav_orientation"`
	UIShowBrand         bool   `json:"server_ui_show_brand"`
	UIShowProfile       bool   `json:"server_ui_show_profile"`
	UIShowAccount       bool   `json:"server_ui_show_account"`
	UIShowLogout        bool   `json:"server_ui_show_logout"`
	UILogoutStyle       string `json:"server_ui_logout_style"`
	UIShowSystemStatus  bool   `json:"server_ui_show_system_status"`
	UIShowFooter        bool   `json:"server_ui_show_footer"`
	UIFooterShowVersion bool   `json:"server_ui_footer_show_version"`
	UIFooterText        string `json:"server_ui_footer_text"`
	BugTrackerEnabled   bool   `json:"server_bug_tracker_enabled"`
}

// JWTExpiryDuration returns the parsed token lifetime (validated on load).
func (c *Config) JWTExpiryDuration() time.Duration {
	d, err := time.ParseDuration(c.JWTExpiry)
	if err != nil || d <= 0 {
		return 8 * time.Hour
	}
	return d
}

// Feature names accepted in server_features.
const (
	FeatureBridge     = "bridge"
	FeatureNavigation = "navigation"
	FeatureAlerting   = "alerting"
	FeatureRTLS       = "rtls"
	FeatureSensors    = "sensors"
	FeatureService    = "service"
)

// serviceFeatures is what the legacy `service` value expands to.
var serviceFeatures = []string{FeatureNavigation, FeatureAlerting, FeatureRTLS, FeatureSensors}

// EnabledFeatures expands `service` and returns the set of subsystems to
// start, in a stable order.
func (c *Config) EnabledFeatures() []string {
	set := map[string]bool{}
	for _, f := range c.ServerFeatures {
		if f == FeatureService {
			for _, s := range serviceFeatures {
				set[s] = true
			}
			continue
		}
		set[f] = true
	}
	var out []string
	for _, f := range []string{FeatureBridge, FeatureNavigation, FeatureAlerting, FeatureRTLS, FeatureSensors} {
		if set[f] {
			out = append(out, f)
		}
	}
	return out
}

// Has reports whether a feature (after expansion) is enabled.
func (c *Config) Has(feature string) bool {
	for _, f := range c.EnabledFeatures() {
		if f == feature {
			return true
		}
	}
	return false
}

// Advice lists what in c is valid but likely a mistake on a real site,
// for config check and the start log. The spec calls server_id required:
// it has a default so a fresh box starts, but two sites left on it share
// every push topic ({server_id}-sos...) on a shared push server, and
// each would get the other's alerts.
func (c *Config) Advice(b Brand) []string {
	var out []string
	if c.ServerID == Defaults(b).ServerID {
		out = append(out, "server_id is the default "+c.ServerID+": set one unique to this site (push topics are named after it, and a shared push server would mix two sites' alerts)")
	}
	return out
}

// Clone returns a deep copy, so a live config can be edited without racing
// its readers.
func (c *Config) Clone() *Config {
	cp := *c
	cp.ServerFeatures = append([]string(nil), c.ServerFeatures...)
	return &cp
}

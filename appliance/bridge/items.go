package bridge

import (
	"encoding/json"
	"strconv"
	"time"
)

// Item keys the bridge sends; packaging/zabbix/beaconhub_template.yaml
// declares the same keys (trapper items, discovery rules and item
// prototypes), and docs/bridge.md explains them.
const (
	KeyBeaconDiscovery  = "beaconhub.beacons.discovery"
	KeyGatewayDiscovery = "beaconhub.gateways.discovery"

	KeyMainUp   = "beaconhub.bridge.main_up"   // 1 when the last fetch worked
	KeyBeacons  = "beaconhub.bridge.beacons"   // beacons in the cache
	KeyGateways = "beaconhub.bridge.gateways"  // gateways in the cache
	KeyCacheAge = "beaconhub.bridge.cache_age" // seconds since the last good fetch
)

// Kinds of assets, as they appear in item keys.
const (
	KindBeacon  = "beacon"
	KindGateway = "gateway"
)

// Per-asset item keys: beaconhub.<kind>.<metric>[<asset_uid>].
const (
	MetricOnline      = "online"        // 1 while the main server lists the asset as active
	MetricMAC         = "mac"           // current device MAC (changes on replace-device)
	MetricName        = "name"          //
	MetricLastSeenAge = "last_seen_age" // seconds since the last radio sighting (none before the first)
	MetricTemperature = "temperature"   // latest °C (sensors)
	MetricHumidity    = "humidity"      // latest %RH (sensors)
	MetricBattery     = "battery"       // latest mV (beacons that report vbatt)
)

// AssetKey is the key of one per-asset item.
func AssetKey(kind, metric, uid string) string {
	return "beaconhub." + kind + "." + metric + "[" + uid + "]"
}

// discoveryValue is the LLD JSON value of a discovery item: the main
// server's rows ({#ASSET_UID}, {#MAC}, {#NAME}) under "data".
func discoveryValue(assets []Asset) string {
	if assets == nil {
		assets = []Asset{}
	}
	type macros struct {
		UID  string `json:"{#ASSET_UID}"`
		MAC  string `json:"{#MAC}"`
		Name string `json:"{#NAME}"`
	}
	rows := make([]macros, len(assets))
	for i, a := range assets {
		rows[i] = macros{a.UID, a.MAC, a.Name}
	}
	b, _ := json.Marshal(struct {
		Data []macros `json:"data"`
	}{rows}) // cannot fail: strings only
	return string(b)
}

// assetValues appends the per-asset values of one kind.
func assetValues(dst []Value, host, kind string, assets []Asset, now time.Time) []Value {
	for _, a := range assets {
		if a.Gone {
			dst = append(dst, Value{Host: host, Key: AssetKey(kind, MetricOnline, a.UID), Value: "0", Clock: now})
			continue
		}
		dst = append(dst,
			Value{Host: host, Key: AssetKey(kind, MetricOnline, a.UID), Value: "1", Clock: now},
			Value{Host: host, Key: AssetKey(kind, MetricMAC, a.UID), Value: a.MAC, Clock: now},
			Value{Host: host, Key: AssetKey(kind, MetricName, a.UID), Value: a.Name, Clock: now},
		)
		if a.LastSeen > 0 {
			age := max(now.UnixMilli()-a.LastSeen, 0) / 1000
			dst = append(dst, Value{Host: host, Key: AssetKey(kind, MetricLastSeenAge, a.UID), Value: strconv.FormatInt(age, 10), Clock: now})
		}
		if a.Temperature != nil {
			dst = append(dst, Value{Host: host, Key: AssetKey(kind, MetricTemperature, a.UID), Value: strconv.FormatFloat(*a.Temperature, 'f', -1, 64), Clock: now})
		}
		if a.Humidity != nil {
			dst = append(dst, Value{Host: host, Key: AssetKey(kind, MetricHumidity, a.UID), Value: strconv.FormatFloat(*a.Humidity, 'f', -1, 64), Clock: now})
		}
		if a.BatteryMV != nil {
			dst = append(dst, Value{Host: host, Key: AssetKey(kind, MetricBattery, a.UID), Value: strconv.FormatInt(*a.BatteryMV, 10), Clock: now})
		}
	}
	return dst
}

// current keeps the discovered assets (the cache: the monitoring server
// has items for exactly these) with the rows of a fresh fetch: MAC and
// name too, which replace-device and renames change between discoveries
// (they went out as cached for up to an hour, and a deleted asset kept
// reading online: a black-box check). An asset the fresh list no longer
// has is Gone; one it newly has waits for the next discovery.
func current(discovered, fresh []Asset) []Asset {
	byUID := make(map[string]*Asset, len(fresh))
	for i := range fresh {
		byUID[fresh[i].UID] = &fresh[i]
	}
	out := make([]Asset, len(discovered))
	for i, a := range discovered {
		if f, ok := byUID[a.UID]; ok {
			out[i] = *f
		} else {
			out[i] = Asset{UID: a.UID, Gone: true}
		}
	}
	return out
}

// gone lists, as Gone, the assets of the old cache the new one lacks: a
// refresh tells the monitoring server they are offline before its
// discovery drops them, so their last value is 0, not the 1 of their
// last round.
func gone(old, cur []Asset) []Asset {
	keep := make(map[string]bool, len(cur))
	for _, a := range cur {
		keep[a.UID] = true
	}
	var out []Asset
	for _, a := range old {
		if !keep[a.UID] {
			out = append(out, Asset{UID: a.UID, Gone: true})
		}
	}
	return out
}

// bridgeValues are the host-level items about the bridge itself.
func bridgeValues(dst []Value, host string, mainUp bool, beacons, gateways int, cacheAge time.Duration, now time.Time) []Value {
	up := "0"
	if mainUp {
		up = "1"
	}
	dst = append(dst,
		Value{Host: host, Key: KeyMainUp, Value: up, Clock: now},
		Value{Host: host, Key: KeyBeacons, Value: strconv.Itoa(beacons), Clock: now},
		Value{Host: host, Key: KeyGateways, Value: strconv.Itoa(gateways), Clock: now},
	)
	if cacheAge >= 0 { // negative: nothing fetched yet, so there is no age
		dst = append(dst, Value{Host: host, Key: KeyCacheAge, Value: strconv.FormatInt(int64(cacheAge/time.Second), 10), Clock: now})
	}
	return dst
}

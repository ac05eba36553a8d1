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
	MetricOnline = "online" // 1 while the main server lists the asset as active
	MetricMAC    = "mac"    // current device MAC (changes on replace-device)
	MetricName   = "name"
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
	b, _ := json.Marshal(struct {
		Data []Asset `json:"data"`
	}{assets}) // cannot fail: strings only
	return string(b)
}

// assetValues appends the per-asset values of one kind.
func assetValues(dst []Value, host, kind string, assets []Asset, now time.Time) []Value {
	for _, a := range assets {
		dst = append(dst,
			Value{Host: host, Key: AssetKey(kind, MetricOnline, a.UID), Value: "1", Clock: now},
			Value{Host: host, Key: AssetKey(kind, MetricMAC, a.UID), Value: a.MAC, Clock: now},
			Value{Host: host, Key: AssetKey(kind, MetricName, a.UID), Value: a.Name, Clock: now},
		)
	}
	return dst
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

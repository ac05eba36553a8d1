package eink

import (
	"encoding/json"
	"errors"

	"beaconhub/appliance/apperr"
	"beaconhub/store"
)

// normalizeLayout validates designer JSON for saving: legacy sensor_mac
// references become sensor_uid (the asset_uid of the beacon the device is
// attached to now), former uids are followed to the current one, and every
// sensor must be a known beacon. It returns the JSON to store.
func normalizeLayout(t *store.AssetTx, raw json.RawMessage) (json.RawMessage, *Layout, error) {
	l, err := parseLayout(raw)
	if err != nil {
		return nil, nil, err
	}
	if err := l.plainText(); err != nil {
		return nil, nil, err
	}
	if err := l.complete(objectsWithT(raw)); err != nil {
		return nil, nil, err
	}
	for i := range l.Objects {
		o := &l.Objects[i]
		if o.T != sensorPrim {
			continue
		}
		if o.SensorMAC != "" {
			uid, err := uidOfSensorMAC(t, o.SensorMAC)
			if err != nil {
				return nil, nil, err
			}
			if o.SensorUID != "" && o.SensorUID != uid {
				return nil, nil, apperr.InvalidField("layout", "object %d: sensor_mac %s belongs to %s, not to sensor_uid %s", i, o.SensorMAC, uid, o.SensorUID)
			}
			o.SensorUID, o.SensorMAC = uid, ""
		}
		uid, err := currentSensorUID(t, o.SensorUID)
		if err != nil {
			return nil, nil, apperr.InvalidField("layout", "object %d: %s", i, err.Error())
		}
		o.SensorUID = uid
	}
	out, err := l.marshal()
	return out, l, err
}

func uidOfSensorMAC(t *store.AssetTx, raw string) (string, error) {
	mac, ok := store.NormalizeMAC(raw)
	if !ok {
		return "", apperr.InvalidField("layout", "sensor_mac %q is not a MAC address", raw)
	}
	ref, held, err := t.DeviceHolder(mac)
	if err != nil {
		return "", err
	}
	if !held || ref.Kind != store.KindBeacon {
		return "", apperr.InvalidField("layout", "sensor_mac %s is not attached to a beacon", mac)
	}
	return t.UIDOf(ref)
}

// currentSensorUID returns uid, or what a reminted uid became, when it
// names a sensor beacon (sensorSource): a watch was taken, and its display showed "--"
// for good, where applying a template refused it (a black-box check).
func currentSensorUID(t *store.AssetTx, uid string) (string, error) {
	ref, ok := t.UIDOwner(uid)
	if !ok {
		if a := t.Alias(uid); a != "" {
			uid = a
			ref, ok = t.UIDOwner(uid)
		}
	}
	if !ok {
		return "", errors.New("sensor_uid " + uid + " is not a known asset")
	}
	if ref.Kind != store.KindBeacon {
		return "", errors.New("sensor_uid " + uid + " is not a beacon")
	}
	b, err := t.Beacon(ref.ID)
	if err != nil {
		return "", err
	}
	if !sensorSource(b.Type) {
		return "", errors.New("sensor_uid " + uid + " is a " + b.Type + " beacon, not a sensor")
	}
	return uid, nil
}

// sensorSource reports whether a beacon of type typ may feed a sensor
// element: a sensor, or one not typed yet (an imported beacon is
// "unknown" until set, and its readings are recorded; a review), not a
// watch, panic button or other beacon whose readings are none.
func sensorSource(typ string) bool {
	return typ == "sensor" || typ == "unknown"
}

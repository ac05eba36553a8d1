package eink

import (
	"encoding/json"
	"errors"
	"strings"
	"unicode"

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
	for i := range l.Objects {
		// Only on saving: a stored layout with them still renders.
		o := &l.Objects[i]
		for _, txt := range []string{deref(o.S), o.Label, o.Unit} {
			if strings.IndexFunc(txt, unicode.IsControl) >= 0 {
				// The displays draw one line per text object and take no
				// \u escapes, which is how JSON sends a newline or a tab (a
				// review): as for names, refused.
				return nil, nil, apperr.InvalidField("layout", "object %d: text may not contain control characters (newlines, tabs, escapes): use one text object per line", i)
			}
		}
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
// names a beacon.
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
	return uid, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

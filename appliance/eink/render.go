package eink

import (
	"strconv"

	"beaconhub/appliance/sensors"
)

// Readings gives the latest sensor value by asset_uid
// (sensors.Recorder).
type Readings interface {
	Latest(uid string, metric uint8) (sensors.Latest, bool)
}

// screen is what one poll draws.
type screen struct {
	validity, rotation, width, height int
	layout                            *Layout
}

// render appends the device JSON without its version to dst and returns
// it with the change hash. The version goes last in the object so that
// the hashed part ({validity, rotation, objects}, the spec's change hash)
// is one contiguous run of bytes and needs no second buffer; the caller
// then appends `"version":N}`. Hashing the encoded bytes means anything
// the device would draw differently changes the hash, and nothing else.
func render(dst []byte, sc *screen, rd Readings) ([]byte, uint64) {
	dst = append(dst, '{')
	start := len(dst)
	dst = append(dst, `"validity":`...)
	dst = strconv.AppendInt(dst, int64(sc.validity), 10)
	dst = append(dst, `,"rotation":`...)
	dst = strconv.AppendInt(dst, int64(sc.rotation), 10)
	dst = append(dst, `,"objects":[`...)
	sep := byte('.')
	if sc.layout.DecimalSeparator == "," {
		sep = ','
	}
	for i := range sc.layout.Objects {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendObject(dst, &sc.layout.Objects[i], rd, sep)
	}
	dst = append(dst, ']')
	sum := fnv64a(dst[start:])
	dst = append(dst, `,"width":`...)
	dst = strconv.AppendInt(dst, int64(sc.width), 10)
	dst = append(dst, `,"height":`...)
	dst = strconv.AppendInt(dst, int64(sc.height), 10)
	return append(dst, ','), sum
}

// finish appends the version and closes the object.
func finish(dst []byte, version int) []byte {
	dst = append(dst, `"version":`...)
	dst = strconv.AppendInt(dst, int64(version), 10)
	return append(dst, '}')
}

func appendField(dst []byte, key string, p *int) []byte {
	if p == nil {
		return dst
	}
	dst = append(dst, ',', '"')
	dst = append(dst, key...)
	dst = append(dst, '"', ':')
	return strconv.AppendInt(dst, int64(*p), 10)
}

// appendObject writes one device object; a sensor element becomes a text
// object (t 0) reading "label value unit", with "--" for a missing value.
func appendObject(dst []byte, o *Object, rd Readings, sep byte) []byte {
	t := int64(o.T)
	if o.T == sensorPrim {
		t = 0
	}
	dst = append(dst, `{"t":`...)
	dst = strconv.AppendInt(dst, t, 10)
	dst = appendField(dst, "x", o.X)
	dst = appendField(dst, "y", o.Y)
	dst = appendField(dst, "x2", o.X2)
	dst = appendField(dst, "y2", o.Y2)
	dst = appendField(dst, "w", o.W)
	dst = appendField(dst, "h", o.H)
	dst = appendField(dst, "r", o.R)
	dst = appendField(dst, "f", o.F)
	dst = appendField(dst, "c", o.C)
	switch {
	case o.T == sensorPrim:
		dst = append(dst, `,"s":`...)
		dst = appendSensorText(dst, o, rd, sep)
	case o.S != nil:
		dst = append(dst, `,"s":`...)
		dst = appendString(dst, *o.S)
	}
	return append(dst, '}')
}

func appendSensorText(dst []byte, o *Object, rd Readings, sep byte) []byte {
	dst = append(dst, '"')
	if o.Label != "" {
		dst = append(appendEscaped(dst, o.Label), ' ')
	}
	ok := false
	if rd != nil {
		var l sensors.Latest
		if l, ok = rd.Latest(o.SensorUID, uint8(o.Metric)); ok {
			dst = appendDecimal(dst, l.Value, o.Decimals, sep)
		}
	}
	if !ok {
		dst = append(dst, '-', '-')
	}
	if o.Unit != "" {
		dst = appendEscaped(append(dst, ' '), o.Unit)
	}
	return append(dst, '"')
}

// fnv64a is FNV-1a, inlined so that hashing a poll allocates nothing.
func fnv64a(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

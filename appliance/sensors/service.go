package sensors

import (
	"sort"

	"beaconhub/appliance/clock"
	"beaconhub/store"
)

// Service answers the read side of the sensors feature: the device list,
// the range-alert list and history queries.
type Service struct {
	DB *store.DB
	// Recorder gives the latest values without touching the history; nil
	// falls back to the history's block headers.
	Recorder *Recorder
	// LastSeen returns when an asset was last heard (Unix ms, 0 unknown);
	// nil where no ingest pipeline runs.
	LastSeen func(uid string) int64
	// Clock is "now" for default query spans and the alert window.
	Clock clock.Clock
	// Conds, when set, narrows the alert list's history scan to the
	// out-of-range episodes it recorded (alerts.go).
	Conds *Conditions
}

// Now returns the service clock's time in Unix ms.
func (s *Service) Now() int64 {
	if s.Clock == nil {
		return clock.Real{}.Now().UnixMilli()
	}
	return s.Clock.Now().UnixMilli()
}

// TypeSensor is the beacon type of sensor assets.
const TypeSensor = "sensor"

// MetricNames are the display names of the metric ids.
var MetricNames = [4]string{"", "Humidity", "Temperature", "Battery"}

// Device is one sensor asset of the device list.
type Device struct {
	AssetUID         string       `json:"asset_uid"`
	Name             string       `json:"name"`
	MAC              string       `json:"mac"`
	Type             string       `json:"type"`
	Humidity         *Latest      `json:"humidity"`
	Temperature      *Latest      `json:"temperature"`
	Battery          *Latest      `json:"battery"`
	LastSeen         int64        `json:"last_seen"`
	HumidityRange    *store.Range `json:"humidity_range"`
	TemperatureRange *store.Range `json:"temperature_range"`
}

// Beacons returns every beacon by uid, retired and merged ones included:
// their history stays and is still labelled by name.
func (s *Service) Beacons() (map[string]store.Beacon, error) {
	out := map[string]store.Beacon{}
	err := s.DB.ViewAssets(func(t *store.AssetTx) error {
		return t.EachBeacon(func(b *store.Beacon) error {
			out[b.AssetUID] = *b
			return nil
		})
	})
	return out, err
}

func active(b *store.Beacon) bool { return b.Status == "" || b.Status == store.AssetActive }

func (s *Service) latest() (map[Key]Latest, error) {
	if s.Recorder != nil {
		return s.Recorder.all(), nil
	}
	out := map[Key]Latest{}
	rs, err := s.DB.LatestReadings()
	for _, r := range rs {
		out[Key{r.UID, r.Metric}] = Latest{TS: r.TS, Value: r.Value}
	}
	return out, err
}

// Devices lists sensor assets (type sensor, or any beacon with readings)
// with their latest reading per metric, last seen and ranges, by name.
func (s *Service) Devices() ([]Device, error) {
	bs, err := s.Beacons()
	if err != nil {
		return nil, err
	}
	lt, err := s.latest()
	if err != nil {
		return nil, err
	}
	out := []Device{}
	for uid, b := range bs {
		if !active(&b) {
			continue
		}
		d := Device{AssetUID: uid, Name: b.Name, MAC: b.MAC, Type: b.Type,
			HumidityRange: b.HumidityRange, TemperatureRange: b.TemperatureRange}
		for m, p := range []**Latest{&d.Humidity, &d.Temperature, &d.Battery} {
			if l, ok := lt[Key{uid, uint8(m + 1)}]; ok {
				*p = &l
				d.LastSeen = max(d.LastSeen, l.TS)
			}
		}
		if b.Type != TypeSensor && d.LastSeen == 0 {
			continue
		}
		if s.LastSeen != nil {
			d.LastSeen = max(d.LastSeen, s.LastSeen(uid))
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].AssetUID < out[j].AssetUID
	})
	return out, nil
}

package eink

import (
	"beaconhub/appliance/sensors"
	"beaconhub/store"
)

// SensorView is a sensor beacon as the layout designer offers it.
type SensorView struct {
	AssetUID     string          `json:"asset_uid"`
	Name         string          `json:"name"`
	MAC          string          `json:"mac,omitempty"`
	LocationID   uint64          `json:"location_id,omitempty"`
	LocationName string          `json:"location_name,omitempty"`
	Humidity     *sensors.Latest `json:"humidity,omitempty"`
	Temperature  *sensors.Latest `json:"temperature,omitempty"`
	Battery      *sensors.Latest `json:"battery,omitempty"`
}

// Sensors lists the active sensor beacons with their latest readings
// (none when the sensors feature is off).
func (s *Service) Sensors() ([]SensorView, error) {
	out := []SensorView{}
	err := s.db.ViewAssets(func(t *store.AssetTx) error {
		return t.EachBeacon(func(b *store.Beacon) error {
			if b.Type != "sensor" || (b.Status != "" && b.Status != store.AssetActive) {
				return nil
			}
			v := SensorView{AssetUID: b.AssetUID, Name: b.Name, MAC: b.MAC, LocationID: b.LocationID}
			if b.LocationID != 0 {
				if l, err := t.Location(b.LocationID); err == nil {
					v.LocationName = l.Name
				}
			}
			if s.rd != nil {
				for metric, dst := range map[uint8]**sensors.Latest{1: &v.Humidity, 2: &v.Temperature, 3: &v.Battery} {
					if l, ok := s.rd.Latest(b.AssetUID, metric); ok {
						*dst = &l
					}
				}
			}
			out = append(out, v)
			return nil
		})
	})
	return out, err
}

package assets

import (
	"encoding/json"
	"errors"
	"math"

	"beaconhub/appliance/apperr"
	"beaconhub/store"
)

// Opt is a JSON field that distinguishes absent (Set false: leave as is)
// from null (Null: clear) from a value.
type Opt[T any] struct {
	Set  bool
	Null bool
	V    T
}

// UnmarshalJSON implements json.Unmarshaler; it is called for null too.
func (o *Opt[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(b) == "null" {
		o.Null = true
		return nil
	}
	return json.Unmarshal(b, &o.V)
}

// BeaconInput is the body of POST /api/v1/beacons (create) and
// POST /api/v1/beacon/:id (update: absent fields are left as they are).
// mac and asset_uid are accepted on update only when unchanged, so a client
// may send back the object it read.
type BeaconInput struct {
	AssetUID                *string          `json:"asset_uid"`
	MAC                     *string          `json:"mac"`
	Name                    *string          `json:"name"`
	Type                    *string          `json:"type"`
	LocationID              *uint64          `json:"location_id"`
	FloorID                 *uint64          `json:"floor_id"`
	HumidityRange           Opt[store.Range] `json:"humidity_range"`
	TemperatureRange        Opt[store.Range] `json:"temperature_range"`
	CalibratedAt            *int64           `json:"calibrated_at"`
	CalibrationIntervalDays *int             `json:"calibration_interval_days"`
	POI                     *bool            `json:"poi"`
	Static                  *bool            `json:"static"`
}

// GatewayInput is the body of POST /api/v1/gateways and /gateway/:id.
type GatewayInput struct {
	AssetUID   *string `json:"asset_uid"`
	MAC        *string `json:"mac"`
	Name       *string `json:"name"`
	IP         *string `json:"ip"`
	LocationID *uint64 `json:"location_id"`
}

func cleanName(p *string) (string, error) {
	return apperr.CleanName("name", *p, maxNameLen)
}

// checkRange validates an alert range within physical bounds.
func checkRange(field string, o Opt[store.Range], lo, hi float64) (*store.Range, error) {
	if o.Null {
		return nil, nil
	}
	r := o.V
	for _, v := range []float64{r.Min, r.Max} {
		if math.IsNaN(v) || v < lo || v > hi {
			return nil, apperr.InvalidField(field, "%s must lie within %g..%g", field, lo, hi)
		}
	}
	if r.Min >= r.Max {
		return nil, apperr.InvalidField(field, "%s: min must be below max", field)
	}
	return &r, nil
}

// checkLocation returns a 400 naming field when id is not a location.
func checkLocation(t *store.AssetTx, field string, id uint64) error {
	if id == 0 {
		return nil
	}
	_, err := t.Location(id)
	if errors.Is(err, store.ErrNotFound) {
		return apperr.InvalidField(field, "location %d does not exist", id)
	}
	return err
}

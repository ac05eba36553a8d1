package assets

import (
	"errors"
	"sort"

	"beaconhub/appliance/apperr"
	"beaconhub/store"
)

// BeaconView is a beacon as the API shows it. The calibration fields are
// those of the device currently attached.
type BeaconView struct {
	ID                      uint64       `json:"id"`
	AssetUID                string       `json:"asset_uid"`
	MAC                     string       `json:"mac"`
	Name                    string       `json:"name"`
	Type                    string       `json:"type"`
	LocationID              uint64       `json:"location_id"`
	FloorID                 uint64       `json:"floor_id"`
	HumidityRange           *store.Range `json:"humidity_range"`
	TemperatureRange        *store.Range `json:"temperature_range"`
	CalibratedAt            int64        `json:"calibrated_at"`
	CalibrationIntervalDays int          `json:"calibration_interval_days"`
	Calibration             string       `json:"calibration"`
	POI                     bool         `json:"poi"`
	Static                  bool         `json:"static"`
	Status                  string       `json:"status"`
	Active                  bool         `json:"active"`
	MergedInto              uint64       `json:"merged_into,omitempty"`
	CreatedAt               int64        `json:"created_at"`
	UpdatedAt               int64        `json:"updated_at"`
}

func beaconStatus(b *store.Beacon) string {
	if b.Status == "" {
		if b.Active {
			return store.AssetActive
		}
		return store.AssetRetired
	}
	return b.Status
}

func beaconView(t *store.AssetTx, b *store.Beacon, now int64) BeaconView {
	v := BeaconView{ID: b.ID, AssetUID: b.AssetUID, MAC: b.MAC, Name: b.Name, Type: b.Type, LocationID: b.LocationID,
		FloorID: b.FloorID, HumidityRange: b.HumidityRange, TemperatureRange: b.TemperatureRange, POI: b.POI, Static: b.Static,
		Status: beaconStatus(b), Active: b.Active, MergedInto: b.MergedInto, Calibration: CalNone,
		CreatedAt: b.CreatedAt.UnixMilli(), UpdatedAt: b.UpdatedAt.UnixMilli()}
	if b.MAC != "" {
		if d, err := t.Device(b.MAC); err == nil {
			v.CalibratedAt, v.CalibrationIntervalDays = d.LastCalibratedAt, d.CalibrationIntervalDays
			v.Calibration = CalibrationStatus(d, now)
		}
	}
	return v
}

// beaconByUID resolves a beacon uid (404 otherwise).
func beaconByUID(t *store.AssetTx, uid string) (*store.Beacon, error) {
	ref, ok := resolve(t, uid)
	if !ok || ref.Kind != store.KindBeacon {
		return nil, apperr.NotFound("beacon %s not found", uid)
	}
	return t.Beacon(ref.ID)
}

// Beacons lists beacons by id; limit > 0 returns the newest limit, newest
// first, however many there are (sorted only when there were more, a
// limit at or above the count came oldest first: a review).
func (s *Service) Beacons(limit int) ([]BeaconView, error) {
	now := s.now()
	out := []BeaconView{}
	err := s.view(func(t *store.AssetTx) error {
		return t.EachBeacon(func(b *store.Beacon) error {
			out = append(out, beaconView(t, b, now))
			return nil
		})
	})
	if limit > 0 {
		sort.SliceStable(out, func(i, j int) bool { return out[i].ID > out[j].ID })
		out = out[:min(limit, len(out))]
	}
	return out, err
}

// Beacon returns one beacon by uid.
func (s *Service) Beacon(uid string) (BeaconView, error) {
	var v BeaconView
	err := s.view(func(t *store.AssetTx) error {
		b, err := beaconByUID(t, uid)
		if err == nil {
			v = beaconView(t, b, s.now())
		}
		return err
	})
	return v, err
}

// MergedSurvivor follows a beacon merged away to the beacon it was
// merged into, through later merges of that one too; a beacon not merged
// is returned as it is. A merged beacon keeps its record and its uid, so
// Beacon(uid) finds the source, not the survivor. A survivor since
// deleted, or a chain that does not end, is a NotFound (a review: the
// store's own not-found was taken for a failure).
func (s *Service) MergedSurvivor(b BeaconView) (BeaconView, error) {
	uid := b.AssetUID
	err := s.view(func(t *store.AssetTx) error {
		// Bounded: a merge into a beacon that merges on is a chain, and
		// no chain outlives a cycle in a damaged store.
		for hop := 0; b.MergedInto != 0 && hop < 64; hop++ {
			next, err := t.Beacon(b.MergedInto)
			if errors.Is(err, store.ErrNotFound) {
				return apperr.NotFound("beacon %s was merged into a beacon since deleted", uid)
			}
			if err != nil {
				return err
			}
			b = beaconView(t, next, s.now())
		}
		if b.MergedInto != 0 {
			return apperr.NotFound("beacon %s: its merges do not end", uid)
		}
		return nil
	})
	return b, err
}

// CreateBeacon registers a beacon and attaches its device. Its uid is
// minted when it has a type and a home location, LEGACY-<MAC> otherwise.
func (s *Service) CreateBeacon(in BeaconInput) (BeaconView, error) {
	if in.MAC == nil {
		return BeaconView{}, apperr.InvalidField("mac", "mac is required")
	}
	mac, err := parseMAC("mac", *in.MAC)
	if err != nil {
		return BeaconView{}, err
	}
	if in.Name == nil {
		return BeaconView{}, apperr.InvalidField("name", "name is required")
	}
	if in.AssetUID != nil {
		return BeaconView{}, apperr.InvalidField("asset_uid", "asset_uid is minted by the server, not chosen")
	}
	var v BeaconView
	err = s.write(func(t *store.AssetTx, fx *effects) error {
		b := &store.Beacon{MAC: mac, Type: TypeUnknown, Status: store.AssetActive, Active: true}
		if err := applyBeacon(t, b, &in); err != nil {
			return err
		}
		if err := t.PutBeacon(b); err != nil {
			return err
		}
		ref := store.AssetRef{Kind: store.KindBeacon, ID: b.ID}
		if b.Type != TypeUnknown && b.LocationID != 0 {
			uid, err := Mint(t, TypePrefix(b.Type), b.LocationID, ref)
			if err != nil {
				return err
			}
			b.AssetUID = uid
		} else {
			b.AssetUID = t.UniqueLegacyUID(mac)
			if err := t.ClaimUID(b.AssetUID, ref); err != nil {
				return err
			}
		}
		if err := attachNew(t, mac, store.KindBeacon, ref, in.CalibratedAt, in.CalibrationIntervalDays, "created"); err != nil {
			return err
		}
		if err := t.PutBeacon(b); err != nil {
			return err
		}
		fx.forget = append(fx.forget, store.DiscoveredDevice{MAC: mac})
		v = beaconView(t, b, t.Now)
		return nil
	})
	return v, err
}

// attachNew attaches a device to a new asset, recording calibration given
// with it (a new calibration date also brings a device back from
// calibration). A refused attachment fails the whole transaction.
func attachNew(t *store.AssetTx, mac, kind string, ref store.AssetRef, calAt *int64, days *int, reason string) error {
	d, err := t.Device(mac)
	switch {
	case errors.Is(err, store.ErrNotFound):
		d = &store.Device{MAC: mac, Kind: kind, Status: store.DeviceAvailable}
	case err != nil:
		return err
	}
	if err := applyCalibration(d, calAt, days, t.Now, "calibrated_at"); err != nil {
		return err
	}
	if calAt != nil && d.Status == store.DeviceInCalibration {
		d.Status = store.DeviceAvailable
	}
	if err := t.PutDevice(d); err != nil {
		return err
	}
	if _, err := t.Attach(mac, kind, ref, t.Now, reason); err != nil {
		return deviceErr(err, "mac", mac)
	}
	return nil
}

// applyBeacon validates and copies the editable fields of in onto b.
func applyBeacon(t *store.AssetTx, b *store.Beacon, in *BeaconInput) error {
	if in.Name != nil {
		n, err := cleanName(in.Name)
		if err != nil {
			return err
		}
		b.Name = n
	}
	if in.Type != nil {
		if !ValidType(*in.Type) {
			return apperr.InvalidField("type", "type must be watch, panic, navigation, sos, sensor or unknown, got %q", *in.Type)
		}
		b.Type = *in.Type
	}
	if in.LocationID != nil {
		if err := checkLocation(t, "location_id", *in.LocationID); err != nil {
			return err
		}
		b.LocationID = *in.LocationID
	}
	if in.FloorID != nil {
		// A beacon's floor is a navigation floor (0 clears it).
		if *in.FloorID != 0 && !t.FloorExists(*in.FloorID) {
			return apperr.InvalidField("floor_id", "floor %d does not exist", *in.FloorID)
		}
		b.FloorID = *in.FloorID
	}
	if in.HumidityRange.Set {
		r, err := checkRange("humidity_range", in.HumidityRange, 0, 100)
		if err != nil {
			return err
		}
		b.HumidityRange = r
	}
	if in.TemperatureRange.Set {
		r, err := checkRange("temperature_range", in.TemperatureRange, -100, 200)
		if err != nil {
			return err
		}
		b.TemperatureRange = r
	}
	if in.POI != nil {
		b.POI = *in.POI
	}
	if in.Static != nil {
		b.Static = *in.Static
	}
	return nil
}

// UpdateBeacon edits a beacon. A LEGACY- beacon that now has a type and a
// home location is reminted in the same transaction, with every uid-keyed
// record; its MAC is never edited here (replace-device does that).
func (s *Service) UpdateBeacon(uid string, in BeaconInput) (BeaconView, error) {
	var v BeaconView
	err := s.write(func(t *store.AssetTx, fx *effects) error {
		b, err := beaconByUID(t, uid)
		if err != nil {
			return err
		}
		if in.MAC != nil {
			if mac, ok := store.NormalizeMAC(*in.MAC); !ok || mac != b.MAC {
				return apperr.InvalidField("mac", "mac cannot be changed here; use replace-device")
			}
		}
		if in.AssetUID != nil && *in.AssetUID != b.AssetUID {
			return apperr.InvalidField("asset_uid", "asset_uid cannot be changed; it is reminted automatically")
		}
		if err := applyBeacon(t, b, &in); err != nil {
			return err
		}
		if in.CalibratedAt != nil || in.CalibrationIntervalDays != nil {
			if err := calibrateCurrent(t, b.MAC, in.CalibratedAt, in.CalibrationIntervalDays); err != nil {
				return err
			}
		}
		if b.Active && IsLegacy(b.AssetUID) && b.Type != TypeUnknown && b.LocationID != 0 {
			if err := remintBeacon(t, b, fx); err != nil {
				return err
			}
		}
		if err := t.PutBeacon(b); err != nil {
			return err
		}
		v = beaconView(t, b, t.Now)
		return nil
	})
	return v, err
}

func calibrateCurrent(t *store.AssetTx, mac string, at *int64, days *int) error {
	if mac == "" {
		return apperr.InvalidField("calibrated_at", "the asset has no device to record a calibration on")
	}
	d, err := t.Device(mac)
	if err != nil {
		return err
	}
	if err := applyCalibration(d, at, days, t.Now, "calibrated_at"); err != nil {
		return err
	}
	return t.PutDevice(d)
}

// DeleteBeacon removes a beacon: its device becomes available, its uid
// is released, its history stays (keyed by the uid, which a minted
// sequence never hands out again).
func (s *Service) DeleteBeacon(uid string) (BeaconView, error) {
	var v BeaconView
	err := s.write(func(t *store.AssetTx, _ *effects) error {
		b, err := beaconByUID(t, uid)
		if err != nil {
			return err
		}
		v = beaconView(t, b, t.Now)
		if b.MAC != "" {
			if err := t.Detach(b.MAC, t.Now, "deleted", store.DeviceAvailable); err != nil {
				return err
			}
		}
		if err := t.ReleaseUID(b.AssetUID); err != nil {
			return err
		}
		return t.DeleteBeacon(b.ID)
	})
	return v, err
}

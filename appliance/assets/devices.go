package assets

import (
	"errors"
	"strings"

	"beaconhub/appliance/apperr"
	"beaconhub/store"
)

// Calibration states of a device (the `calibration` filter of the device
// list). "none" is a device that was never calibrated.
const (
	CalOK      = "ok"
	CalDue     = "due"
	CalExpired = "expired"
	CalNone    = "none"
)

// DueWindowDays is how long before it lapses a calibration counts as due.
const DueWindowDays = 30

const dayMS = 24 * 60 * 60 * 1000

// CalibrationStatus classifies a device's calibration at now (Unix ms).
// Without an interval a calibration never lapses.
func CalibrationStatus(d *store.Device, now int64) string {
	if d == nil || d.LastCalibratedAt == 0 {
		return CalNone
	}
	if d.CalibrationIntervalDays <= 0 {
		return CalOK
	}
	until := d.LastCalibratedAt + int64(d.CalibrationIntervalDays)*dayMS
	switch {
	case now >= until:
		return CalExpired
	case now >= until-DueWindowDays*dayMS:
		return CalDue
	}
	return CalOK
}

// calibrated is what require_calibrated asks for: a calibration on record
// that has not lapsed.
func calibrated(d *store.Device, now int64) bool {
	c := CalibrationStatus(d, now)
	return c == CalOK || c == CalDue
}

// DeviceView is a device as GET /api/v1/devices shows it.
type DeviceView struct {
	MAC                     string `json:"mac"`
	Kind                    string `json:"kind"`
	Status                  string `json:"status"`
	LastCalibratedAt        int64  `json:"last_calibrated_at"`
	CalibrationIntervalDays int    `json:"calibration_interval_days"`
	Calibration             string `json:"calibration"`
	CalibrationDueAt        int64  `json:"calibration_due_at,omitempty"`
	AssetUID                string `json:"asset_uid,omitempty"`
	AssignmentID            uint64 `json:"assignment_id,omitempty"`
	LastSeen                int64  `json:"last_seen,omitempty"` // discovered devices only
}

func deviceView(t *store.AssetTx, d *store.Device, now int64) DeviceView {
	v := DeviceView{MAC: d.MAC, Kind: d.Kind, Status: d.Status, LastCalibratedAt: d.LastCalibratedAt,
		CalibrationIntervalDays: d.CalibrationIntervalDays, Calibration: CalibrationStatus(d, now), AssignmentID: d.AssignmentID}
	if d.LastCalibratedAt != 0 && d.CalibrationIntervalDays > 0 {
		v.CalibrationDueAt = d.LastCalibratedAt + int64(d.CalibrationIntervalDays)*dayMS
	}
	if ref, held, err := t.DeviceHolder(d.MAC); err == nil && held {
		v.AssetUID, _ = t.UIDOf(ref)
	}
	return v
}

// DeviceFilter selects devices; empty fields match everything.
type DeviceFilter struct {
	Status      string // assigned, available, in_calibration, retired, unknown
	Calibration string // ok, due, expired, none
	AssetKind   string // beacon, gateway, eink, all
}

var deviceStatuses = []string{store.DeviceAssigned, store.DeviceAvailable, store.DeviceInCalibration, store.DeviceRetired, store.DeviceUnknown}

func oneOf(v string, allowed ...string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}

// Validate returns a 400 naming the bad query parameter.
func (f DeviceFilter) Validate() error {
	if f.Status != "" && !oneOf(f.Status, deviceStatuses...) {
		return apperr.InvalidField("status", "status must be one of %s", strings.Join(deviceStatuses, ", "))
	}
	if f.Calibration != "" && !oneOf(f.Calibration, CalDue, CalExpired, CalOK, CalNone) {
		return apperr.InvalidField("calibration", "calibration must be due, expired, ok or none")
	}
	if f.AssetKind != "" && !oneOf(f.AssetKind, store.KindBeacon, store.KindGateway, store.KindEInk, "all") {
		return apperr.InvalidField("asset_kind", "asset_kind must be beacon, gateway, eink or all")
	}
	return nil
}

func (f DeviceFilter) match(v *DeviceView) bool {
	return (f.Status == "" || v.Status == f.Status) &&
		(f.Calibration == "" || v.Calibration == f.Calibration) &&
		(f.AssetKind == "" || f.AssetKind == "all" || v.Kind == f.AssetKind)
}

// Devices lists registered devices and, with status unknown, the MACs
// heard on air that nothing is registered for.
func (s *Service) Devices(f DeviceFilter) ([]DeviceView, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	now := s.now()
	out := []DeviceView{}
	known := map[string]bool{}
	err := s.view(func(t *store.AssetTx) error {
		return t.EachDevice(func(d *store.Device) error {
			known[d.MAC] = true
			if v := deviceView(t, d, now); f.match(&v) {
				out = append(out, v)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	disc, err := s.discovered()
	if err != nil {
		return nil, err
	}
	for _, d := range disc {
		if known[d.MAC] {
			continue
		}
		kind := store.KindBeacon
		if d.IsGateway {
			kind = store.KindGateway
		}
		v := DeviceView{MAC: d.MAC, Kind: kind, Status: store.DeviceUnknown, Calibration: CalNone, LastSeen: d.LastSeen}
		if f.match(&v) {
			out = append(out, v)
		}
	}
	return out, nil
}

// discovered is the live discovery list, or the last one persisted when
// no pipeline runs in this process.
func (s *Service) discovered() ([]store.DiscoveredDevice, error) {
	if d := s.hooks.Discovery; d != nil {
		return d.List(), nil
	}
	return s.db.LoadDiscovered()
}

// DeviceInput is the body of POST /api/v1/device/:mac.
type DeviceInput struct {
	Status                  *string `json:"status"`
	LastCalibratedAt        *int64  `json:"last_calibrated_at"`
	CalibrationIntervalDays *int    `json:"calibration_interval_days"`
}

// UpdateDevice changes a device's status or calibration. Only a device
// without an asset changes status (available, in_calibration, retired);
// retired is final.
func (s *Service) UpdateDevice(rawMAC string, in DeviceInput) (DeviceView, error) {
	mac, err := parseMAC("mac", rawMAC)
	if err != nil {
		return DeviceView{}, err
	}
	var v DeviceView
	err = s.write(func(t *store.AssetTx, _ *effects) error {
		d, err := t.Device(mac)
		if errors.Is(err, store.ErrNotFound) {
			return apperr.NotFound("device %s not found", mac)
		}
		if err != nil {
			return err
		}
		if in.Status != nil {
			st := *in.Status
			switch {
			case !oneOf(st, store.DeviceAvailable, store.DeviceInCalibration, store.DeviceRetired):
				return apperr.InvalidField("status", "status must be available, in_calibration or retired (assigned is set by attaching the device to an asset)")
			case d.AssignmentID != 0:
				return apperr.InvalidField("status", "device %s is attached to an asset: replace it first", mac)
			case d.Status == store.DeviceRetired && st != store.DeviceRetired:
				return apperr.InvalidField("status", "device %s is retired; retired is final", mac)
			}
			d.Status = st
		}
		if err := applyCalibration(d, in.LastCalibratedAt, in.CalibrationIntervalDays, t.Now, "last_calibrated_at"); err != nil {
			return err
		}
		if err := t.PutDevice(d); err != nil {
			return err
		}
		v = deviceView(t, d, t.Now)
		return nil
	})
	return v, err
}

const maxIntervalDays = 20 * 365

// applyCalibration validates and records a calibration; atField is what
// the request calls the date (calibrated_at on a beacon).
func applyCalibration(d *store.Device, at *int64, days *int, now int64, atField string) error {
	if at != nil {
		if *at <= 0 || *at > now {
			return apperr.InvalidField(atField, "%s must be a Unix ms time in the past", atField)
		}
		d.LastCalibratedAt = *at
	}
	if days != nil {
		if *days < 0 || *days > maxIntervalDays {
			return apperr.InvalidField("calibration_interval_days", "calibration_interval_days must be 0 to %d", maxIntervalDays)
		}
		d.CalibrationIntervalDays = *days
	}
	return nil
}

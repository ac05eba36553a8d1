package store

import "errors"

// Device statuses. A device is the physical radio (keyed by its MAC); the
// asset is the role it plays. Moves:
//
//	(new) -> assigned            attached on create, import or replace
//	assigned -> available        replaced away, asset deleted, merged away
//	assigned -> in_calibration   replaced away and sent for calibration
//	assigned -> retired          replaced away and scrapped
//	available <-> in_calibration set by an admin (POST /api/v1/device/:mac)
//	in_calibration -> assigned   only with a new last_calibrated_at
//	available/in_calibration -> retired; retired is final
//
// "unknown" is never stored: it is how the device list shows MACs heard on
// air that the registry has no record of (the discovery list).
const (
	DeviceAssigned      = "assigned"
	DeviceAvailable     = "available"
	DeviceInCalibration = "in_calibration"
	DeviceRetired       = "retired"
	DeviceUnknown       = "unknown"
)

// Device is one physical device. MAC is 12 upper-case hex digits.
type Device struct {
	MAC              string `json:"mac"`
	Kind             string `json:"kind"` // KindBeacon, KindGateway, KindEInk
	Status           string `json:"status"`
	LastCalibratedAt int64  `json:"last_calibrated_at,omitempty"` // Unix ms, 0 = never
	// CalibrationIntervalDays is how long a calibration stays valid; 0 means
	// it does not lapse.
	CalibrationIntervalDays int    `json:"calibration_interval_days,omitempty"`
	AssignmentID            uint64 `json:"assignment_id,omitempty"` // the open assignment, 0 = none
	// EInkVersion is the version an e-ink device was last served on the
	// row it left (deleted, replaced): a row it joins later starts past
	// it, so its first screen there is drawn. Starting at 1, a device
	// that had last drawn 1 kept its old screen (a review).
	EInkVersion int   `json:"eink_version,omitempty"`
	CreatedAt   int64 `json:"created_at"`
	UpdatedAt   int64 `json:"updated_at"`
}

// Errors of device attachment; the registry service turns them into
// client messages.
var (
	ErrDeviceBusy          = errors.New("device is attached to another asset")
	ErrDeviceKind          = errors.New("device is registered as another kind of asset")
	ErrDeviceRetired       = errors.New("device is retired")
	ErrDeviceInCalibration = errors.New("device is in calibration")
)

// Device returns the device with mac (ErrNotFound).
func (t *AssetTx) Device(mac string) (*Device, error) {
	var d Device
	if err := getJSON(t.tx.Bucket(bDevices), []byte(mac), &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// PutDevice stores d.
func (t *AssetTx) PutDevice(d *Device) error {
	if d.CreatedAt == 0 {
		d.CreatedAt = t.Now
	}
	d.UpdatedAt = t.Now
	return putJSON(t.tx.Bucket(bDevices), []byte(d.MAC), d)
}

// EachDevice calls fn for every device in MAC order.
func (t *AssetTx) EachDevice(fn func(d *Device) error) error {
	b := t.tx.Bucket(bDevices)
	return b.ForEach(func(k, _ []byte) error {
		var d Device
		if err := getJSON(b, k, &d); err != nil {
			return err
		}
		return fn(&d)
	})
}

// DeviceHolder returns the asset the device is attached to, if any.
func (t *AssetTx) DeviceHolder(mac string) (AssetRef, bool, error) {
	d, err := t.Device(mac)
	if errors.Is(err, ErrNotFound) {
		return AssetRef{}, false, nil
	}
	if err != nil || d.AssignmentID == 0 {
		return AssetRef{}, false, err
	}
	a, err := t.Assignment(d.AssignmentID)
	if err != nil {
		return AssetRef{}, false, err
	}
	return a.Holder(), true, nil
}

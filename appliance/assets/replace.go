package assets

import (
	"errors"
	"fmt"
	"math"

	"beaconhub/appliance/apperr"
	"beaconhub/store"
)

// ReplaceInput is the body of replace-device (and, per item, of the batch).
// old_device_status is an extension of the spec's body: what becomes of
// the device taken off the asset (available by default, in_calibration
// when it is sent for calibration, retired when scrapped).
type ReplaceInput struct {
	MAC               string `json:"mac"`
	LastCalibratedAt  *int64 `json:"last_calibrated_at"`
	ReplacedAt        *int64 `json:"replaced_at"`
	RetireDonor       bool   `json:"retire_donor"`
	RequireCalibrated *bool  `json:"require_calibrated"`
	OldDeviceStatus   string `json:"old_device_status"`
}

// DonorPlan is the other asset the new device is taken from.
type DonorPlan struct {
	Kind              string `json:"kind"`
	ID                uint64 `json:"id"`
	AssetUID          string `json:"asset_uid"`
	ReadingsKept      int    `json:"readings_kept"`
	ReadingsMoved     int    `json:"readings_moved"`
	LeftWithoutDevice bool   `json:"left_without_device"`
	Retired           bool   `json:"retired"`
}

// ReplacePlan is what a replace does; the plan endpoint returns it without
// doing it, apply returns it after doing exactly that.
type ReplacePlan struct {
	AssetUID               string     `json:"asset_uid"`
	Kind                   string     `json:"kind"`
	MAC                    string     `json:"mac"`
	OldMAC                 string     `json:"old_mac"`
	OldDeviceStatus        string     `json:"old_device_status,omitempty"`
	EffectiveAt            int64      `json:"effective_at"`
	RewritesHistory        bool       `json:"rewrites_history"`
	ReadingsKept           int        `json:"readings_kept"`
	ReadingsMoved          int        `json:"readings_moved"`
	DonorLeftWithoutDevice bool       `json:"donor_left_without_device"`
	Donor                  *DonorPlan `json:"donor"`
	RequireCalibrated      bool       `json:"require_calibrated"`
	Calibration            string     `json:"calibration"`
	AssignmentID           uint64     `json:"assignment_id,omitempty"`
}

// scope says where a replace comes from: rule 5 lets only a single
// beacon replace carry replaced_at.
type scope struct {
	nowOnly string // "" or what to name in the refusal ("gateway", "batch")
}

type replacePlan struct {
	ReplacePlan
	in     ReplaceInput
	tgt    *assetRec
	donor  *assetRec
	device *store.Device
}

func planReplace(t *store.AssetTx, ref store.AssetRef, in ReplaceInput, sc scope) (*replacePlan, error) {
	mac, err := parseMAC("mac", in.MAC)
	if err != nil {
		return nil, err
	}
	tgt, err := loadAsset(t, ref)
	if err != nil {
		return nil, err
	}
	p := &replacePlan{in: in, tgt: tgt}
	p.AssetUID, p.Kind, p.MAC, p.OldMAC, p.EffectiveAt = tgt.uid(), ref.Kind, mac, tgt.mac(), t.Now
	switch {
	case tgt.status() != store.AssetActive:
		return nil, apperr.Invalid("%s is %s: a device cannot be attached to it", tgt.uid(), tgt.status())
	case mac == tgt.mac():
		return nil, apperr.InvalidField("mac", "device %s is already attached to %s", mac, tgt.uid())
	case in.OldDeviceStatus != "" && !oneOf(in.OldDeviceStatus, store.DeviceAvailable, store.DeviceInCalibration, store.DeviceRetired):
		return nil, apperr.InvalidField("old_device_status", "old_device_status must be available, in_calibration or retired")
	}
	if in.ReplacedAt != nil {
		if sc.nowOnly != "" {
			return nil, apperr.InvalidField("replaced_at", "%s replaces take effect now only: replaced_at is not accepted", sc.nowOnly)
		}
		if *in.ReplacedAt <= 0 || *in.ReplacedAt > t.Now {
			return nil, apperr.InvalidField("replaced_at", "replaced_at must be a Unix ms time in the past")
		}
		p.EffectiveAt, p.RewritesHistory = *in.ReplacedAt, true
	}
	if p.OldMAC != "" {
		p.OldDeviceStatus = store.DeviceAvailable
		if in.OldDeviceStatus != "" {
			p.OldDeviceStatus = in.OldDeviceStatus
		}
		if p.RewritesHistory {
			if err := checkCutAfterCurrent(t, p.OldMAC, p.EffectiveAt); err != nil {
				return nil, err
			}
		}
	}
	if p.device, err = prepareDevice(t, mac, ref.Kind, p.OldMAC, in.LastCalibratedAt); err != nil {
		return nil, err
	}
	p.Calibration = CalibrationStatus(p.device, t.Now)
	p.RequireCalibrated = tgt.sensor()
	if in.RequireCalibrated != nil {
		p.RequireCalibrated = *in.RequireCalibrated
	}
	if p.RequireCalibrated && !calibrated(p.device, t.Now) {
		return nil, apperr.InvalidField("mac", "device %s is not calibrated (calibration: %s); pass last_calibrated_at, or require_calibrated: false to override", mac, p.Calibration)
	}
	return p, planDonor(t, p)
}

// checkCutAfterCurrent refuses a replaced_at before the asset's current
// device was attached: the two assignments would overlap.
func checkCutAfterCurrent(t *store.AssetTx, oldMAC string, cut int64) error {
	d, err := t.Device(oldMAC)
	if err != nil || d.AssignmentID == 0 {
		return err
	}
	a, err := t.Assignment(d.AssignmentID)
	if err != nil {
		return err
	}
	if cut < a.From {
		return apperr.InvalidField("replaced_at", "replaced_at is before the current device %s was attached (%d)", oldMAC, a.From)
	}
	return nil
}

// prepareDevice returns the device record as it will be once attached:
// new calibration applied, a returning device out of calibration, and the
// outgoing device's interval inherited when it has none (the interval is
// the asset's need).
func prepareDevice(t *store.AssetTx, mac, kind, oldMAC string, calAt *int64) (*store.Device, error) {
	d, err := t.Device(mac)
	switch {
	case errors.Is(err, store.ErrNotFound):
		d = &store.Device{MAC: mac, Kind: kind, Status: store.DeviceAvailable}
	case err != nil:
		return nil, err
	}
	switch {
	case d.Kind != kind:
		return nil, apperr.InvalidField("mac", "device %s is registered as a %s device", mac, d.Kind)
	case d.Status == store.DeviceRetired:
		return nil, apperr.InvalidField("mac", "device %s is retired", mac)
	case d.Status == store.DeviceInCalibration && calAt == nil:
		return nil, apperr.InvalidField("mac", "device %s is in calibration; pass last_calibrated_at when it comes back", mac)
	}
	if err := applyCalibration(d, calAt, nil, t.Now, "last_calibrated_at"); err != nil {
		return nil, err
	}
	if d.Status == store.DeviceInCalibration {
		d.Status = store.DeviceAvailable
	}
	if d.CalibrationIntervalDays == 0 && oldMAC != "" {
		if old, err := t.Device(oldMAC); err == nil {
			d.CalibrationIntervalDays = old.CalibrationIntervalDays
		}
	}
	return d, nil
}

func planDonor(t *store.AssetTx, p *replacePlan) error {
	holder, held, err := t.DeviceHolder(p.MAC)
	if err != nil || !held {
		return err
	}
	if p.donor, err = loadAsset(t, holder); err != nil {
		return err
	}
	uid := p.donor.uid()
	d := &DonorPlan{Kind: holder.Kind, ID: holder.ID, AssetUID: uid, LeftWithoutDevice: true, Retired: p.in.RetireDonor}
	if p.in.RetireDonor && !IsLegacy(uid) {
		return apperr.InvalidField("retire_donor", "retire_donor is only for leftover rows named after a MAC; %s has a real asset_uid", uid)
	}
	cut := int64(math.MaxInt64 - 1)
	if p.RewritesHistory {
		cut = p.EffectiveAt
	}
	if d.ReadingsKept, err = t.HistoryCount(uid, 0, cut+1); err != nil {
		return err
	}
	if d.ReadingsMoved, err = t.HistoryCount(uid, cut+1, math.MaxInt64); err != nil {
		return err
	}
	p.Donor, p.ReadingsKept, p.ReadingsMoved, p.DonorLeftWithoutDevice = d, d.ReadingsKept, d.ReadingsMoved, true
	return nil
}

// apply does what the plan says, in its transaction (rule 3's order: the
// device leaves the donor, the recipient's old device leaves, then the new
// one is attached).
func (p *replacePlan) apply(t *store.AssetTx) error {
	at := p.EffectiveAt
	if p.donor != nil {
		if err := t.Detach(p.MAC, at, "taken by "+p.AssetUID, store.DeviceAvailable); err != nil {
			return err
		}
		p.donor.setMAC("")
		if p.in.RetireDonor {
			p.donor.retire()
		}
		if err := p.donor.put(t); err != nil {
			return err
		}
		if p.RewritesHistory {
			moved, err := t.MoveHistoryAfter(p.donor.uid(), p.AssetUID, at)
			if err != nil {
				return err
			}
			if moved != p.ReadingsMoved {
				return fmt.Errorf("replace %s: planned to move %d readings, moved %d", p.AssetUID, p.ReadingsMoved, moved)
			}
		}
	}
	if p.OldMAC != "" {
		if err := t.Detach(p.OldMAC, at, "replaced by "+p.MAC, p.OldDeviceStatus); err != nil {
			return err
		}
	}
	// Re-read: the detach above changed the stored record of the device.
	d, err := t.Device(p.MAC)
	if errors.Is(err, store.ErrNotFound) {
		d = &store.Device{MAC: p.MAC, Kind: p.Kind}
	} else if err != nil {
		return err
	}
	d.Status, d.LastCalibratedAt, d.CalibrationIntervalDays = store.DeviceAvailable, p.device.LastCalibratedAt, p.device.CalibrationIntervalDays
	if err := t.PutDevice(d); err != nil {
		return err
	}
	a, err := t.Attach(p.MAC, p.Kind, p.tgt.ref(), at, "replaced")
	if err != nil {
		return deviceErr(err, "mac", p.MAC)
	}
	p.AssignmentID = a.ID
	p.tgt.setMAC(p.MAC)
	return p.tgt.put(t)
}

// PlanReplace previews a replace of the device of the asset uid (a beacon
// or, with kind gateway, a gateway). It writes nothing.
func (s *Service) PlanReplace(kind, uid string, in ReplaceInput) (ReplacePlan, error) {
	var out ReplacePlan
	err := s.view(func(t *store.AssetTx) error {
		t.Now = s.now()
		ref, err := refOfKind(t, kind, uid)
		if err != nil {
			return err
		}
		p, err := planReplace(t, ref, in, scopeOf(kind))
		if err == nil {
			out = p.ReplacePlan
		}
		return err
	})
	return out, err
}

// Replace attaches a new device to the asset uid under the spec's rules.
func (s *Service) Replace(kind, uid string, in ReplaceInput) (ReplacePlan, error) {
	var out ReplacePlan
	err := s.write(func(t *store.AssetTx, fx *effects) error {
		ref, err := refOfKind(t, kind, uid)
		if err != nil {
			return err
		}
		p, err := planReplace(t, ref, in, scopeOf(kind))
		if err != nil {
			return err
		}
		if err := p.apply(t); err != nil {
			return err
		}
		out = p.ReplacePlan
		fx.forget = append(fx.forget, store.DiscoveredDevice{MAC: p.MAC, IsGateway: ref.Kind == store.KindGateway})
		return nil
	})
	return out, err
}

func scopeOf(kind string) scope {
	if kind == store.KindGateway {
		return scope{nowOnly: "gateway"}
	}
	return scope{}
}

// refOfKind resolves uid and checks it is of kind ("" = any).
func refOfKind(t *store.AssetTx, kind, uid string) (store.AssetRef, error) {
	ref, ok := resolve(t, uid)
	if !ok || (kind != "" && ref.Kind != kind) {
		if kind == "" {
			kind = "asset"
		}
		return ref, apperr.NotFound("%s %s not found", kind, uid)
	}
	return ref, nil
}

package store

import (
	"errors"
	"sort"
)

// Assignment records that a device operated on an asset during [From, To).
// Exactly one of AssetID (a beacon: the spec's name), GatewayID, EInkID is
// set. An open assignment has To == 0; a device has at most one open
// assignment (Device.AssignmentID) and an asset at most one.
type Assignment struct {
	ID        uint64 `json:"id"`
	MAC       string `json:"mac"`
	AssetID   uint64 `json:"asset_id,omitempty"`
	GatewayID uint64 `json:"gateway_id,omitempty"`
	EInkID    uint64 `json:"eink_id,omitempty"`
	From      int64  `json:"from"`
	To        int64  `json:"to,omitempty"`
	Reason    string `json:"reason"`
	EndReason string `json:"end_reason,omitempty"`
}

// Open reports whether the device still operates on the asset.
func (a *Assignment) Open() bool { return a.To == 0 }

// Holder returns the asset of the assignment.
func (a *Assignment) Holder() AssetRef {
	switch {
	case a.GatewayID != 0:
		return AssetRef{KindGateway, a.GatewayID}
	case a.EInkID != 0:
		return AssetRef{KindEInk, a.EInkID}
	}
	return AssetRef{KindBeacon, a.AssetID}
}

// SetHolder points the assignment at ref (clearing the other two ids).
func (a *Assignment) SetHolder(ref AssetRef) {
	a.AssetID, a.GatewayID, a.EInkID = 0, 0, 0
	switch ref.Kind {
	case KindGateway:
		a.GatewayID = ref.ID
	case KindEInk:
		a.EInkID = ref.ID
	default:
		a.AssetID = ref.ID
	}
}

// Assignment returns the assignment with id (ErrNotFound).
func (t *AssetTx) Assignment(id uint64) (*Assignment, error) {
	var a Assignment
	if err := getJSON(t.tx.Bucket(bAssignments), itob(id), &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// PutAssignment stores a, assigning an id when it has none.
func (t *AssetTx) PutAssignment(a *Assignment) error {
	b := t.tx.Bucket(bAssignments)
	if a.ID == 0 {
		id, err := b.NextSequence()
		if err != nil {
			return err
		}
		a.ID = id
	}
	return putJSON(b, itob(a.ID), a)
}

// EachAssignment calls fn for every assignment in id order.
func (t *AssetTx) EachAssignment(fn func(a *Assignment) error) error {
	b := t.tx.Bucket(bAssignments)
	return b.ForEach(func(k, _ []byte) error {
		var a Assignment
		if err := getJSON(b, k, &a); err != nil {
			return err
		}
		return fn(&a)
	})
}

// AssignmentsOf returns the device history of an asset, oldest first.
func (t *AssetTx) AssignmentsOf(ref AssetRef) ([]Assignment, error) {
	var out []Assignment
	err := t.EachAssignment(func(a *Assignment) error {
		if a.Holder() == ref {
			out = append(out, *a)
		}
		return nil
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].From < out[j].From })
	return out, err
}

// OpenAssignmentOf returns the open assignment of an asset (nil if none).
func (t *AssetTx) OpenAssignmentOf(ref AssetRef) (*Assignment, error) {
	var found *Assignment
	err := t.EachAssignment(func(a *Assignment) error {
		if a.Open() && a.Holder() == ref {
			c := *a
			found = &c
		}
		return nil
	})
	return found, err
}

// Attach opens an assignment of the device mac to holder from the given
// time, creating the device record (of kind) if it is new. It refuses a
// device that is attached elsewhere, of another kind, retired or in
// calibration: callers that accept a returning device set its status first.
func (t *AssetTx) Attach(mac, kind string, holder AssetRef, from int64, reason string) (*Assignment, error) {
	d, err := t.Device(mac)
	switch {
	case errors.Is(err, ErrNotFound):
		d = &Device{MAC: mac, Kind: kind, Status: DeviceAvailable}
	case err != nil:
		return nil, err
	}
	switch {
	case d.Kind != kind:
		return nil, ErrDeviceKind
	case d.AssignmentID != 0:
		return nil, ErrDeviceBusy
	case d.Status == DeviceRetired:
		return nil, ErrDeviceRetired
	case d.Status == DeviceInCalibration:
		return nil, ErrDeviceInCalibration
	}
	a := &Assignment{MAC: mac, From: from, Reason: reason}
	a.SetHolder(holder)
	if err := t.PutAssignment(a); err != nil {
		return nil, err
	}
	d.AssignmentID, d.Status = a.ID, DeviceAssigned
	return a, t.PutDevice(d)
}

// Detach closes the open assignment of mac at the given time and leaves
// the device in status (available, in_calibration or retired). A device
// without an open assignment only gets the status.
func (t *AssetTx) Detach(mac string, to int64, endReason, status string) error {
	d, err := t.Device(mac)
	if err != nil {
		return err
	}
	if d.AssignmentID != 0 {
		a, err := t.Assignment(d.AssignmentID)
		if err != nil {
			return err
		}
		a.To, a.EndReason = max(to, a.From), endReason
		if err := t.PutAssignment(a); err != nil {
			return err
		}
	}
	d.AssignmentID, d.Status = 0, status
	return t.PutDevice(d)
}

// MoveAssignments re-points every assignment of from to to (merge).
func (t *AssetTx) MoveAssignments(from, to AssetRef) (int, error) {
	var moved []Assignment
	err := t.EachAssignment(func(a *Assignment) error {
		if a.Holder() == from {
			moved = append(moved, *a)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for i := range moved {
		moved[i].SetHolder(to)
		if err := t.PutAssignment(&moved[i]); err != nil {
			return 0, err
		}
	}
	return len(moved), nil
}

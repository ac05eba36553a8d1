package store

import (
	"bytes"
	"errors"
	"sort"

	bolt "go.etcd.io/bbolt"
)

// bAssignmentsByHolder indexes assignments by the asset that holds them:
// kind \x00 holder id | assignment id -> nil. An asset's device history
// used to be read by decoding every assignment of the site (20 ms at
// 10,000 beacons, on every site reload and asset info page).
var bAssignmentsByHolder = []byte("assignments_by_holder")

func kindPrefix(kind string) []byte {
	k := make([]byte, 0, len(kind)+1+16)
	return append(append(k, kind...), 0)
}

func holderPrefix(ref AssetRef) []byte { return append(kindPrefix(ref.Kind), itob(ref.ID)...) }

func holderKey(ref AssetRef, id uint64) []byte {
	return append(holderPrefix(ref), itob(id)...)
}

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

// PutAssignment stores a, assigning an id when it has none, and keeps
// the holder index in step (a merge re-points an assignment).
func (t *AssetTx) PutAssignment(a *Assignment) error {
	b := t.tx.Bucket(bAssignments)
	// Created here too: the asset identity upgrade writes assignments
	// before the migration step that builds the index has run.
	idx, err := t.tx.CreateBucketIfNotExists(bAssignmentsByHolder)
	if err != nil {
		return err
	}
	if a.ID == 0 {
		id, err := b.NextSequence()
		if err != nil {
			return err
		}
		a.ID = id
	} else {
		var old Assignment
		switch err := getJSON(b, itob(a.ID), &old); {
		case err == nil:
			if old.Holder() != a.Holder() {
				if err := idx.Delete(holderKey(old.Holder(), a.ID)); err != nil {
					return err
				}
			}
		case !errors.Is(err, ErrNotFound):
			return err
		}
	}
	if err := idx.Put(holderKey(a.Holder(), a.ID), nil); err != nil {
		return err
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

// EachAssignmentOf calls fn for every assignment held by ref, in id
// order. fn must not write assignments (it runs under the index's
// cursor): collect, then write, as MoveAssignments does.
func (t *AssetTx) EachAssignmentOf(ref AssetRef, fn func(a *Assignment) error) error {
	return t.eachIndexed(holderPrefix(ref), fn)
}

// EachAssignmentOfKind calls fn for every assignment held by an asset of
// kind (KindGateway, ...), by asset id, then assignment id.
func (t *AssetTx) EachAssignmentOfKind(kind string, fn func(a *Assignment) error) error {
	return t.eachIndexed(kindPrefix(kind), fn)
}

func (t *AssetTx) eachIndexed(prefix []byte, fn func(a *Assignment) error) error {
	idx := t.tx.Bucket(bAssignmentsByHolder)
	if idx == nil { // nothing was ever assigned
		return nil
	}
	b := t.tx.Bucket(bAssignments)
	c := idx.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		var a Assignment
		if err := getJSON(b, k[len(k)-8:], &a); err != nil {
			return err
		}
		if err := fn(&a); err != nil {
			return err
		}
	}
	return nil
}

// AssignmentsOf returns the device history of an asset, oldest first.
func (t *AssetTx) AssignmentsOf(ref AssetRef) ([]Assignment, error) {
	var out []Assignment
	err := t.EachAssignmentOf(ref, func(a *Assignment) error {
		out = append(out, *a)
		return nil
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].From < out[j].From })
	return out, err
}

// OpenAssignmentOf returns the open assignment of an asset (nil if none).
func (t *AssetTx) OpenAssignmentOf(ref AssetRef) (*Assignment, error) {
	var found *Assignment
	err := t.EachAssignmentOf(ref, func(a *Assignment) error {
		if a.Open() {
			c := *a
			found = &c
		}
		return nil
	})
	return found, err
}

// indexAssignments builds the holder index from the assignments (a
// migration step; PutAssignment keeps it after).
func indexAssignments(tx *bolt.Tx) error {
	if tx.Bucket(bAssignmentsByHolder) != nil {
		if err := tx.DeleteBucket(bAssignmentsByHolder); err != nil {
			return err
		}
	}
	idx, err := tx.CreateBucket(bAssignmentsByHolder)
	if err != nil {
		return err
	}
	b := tx.Bucket(bAssignments)
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, _ []byte) error {
		var a Assignment
		if err := getJSON(b, k, &a); err != nil {
			return err
		}
		return idx.Put(holderKey(a.Holder(), a.ID), nil)
	})
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
	err := t.EachAssignmentOf(from, func(a *Assignment) error {
		moved = append(moved, *a)
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

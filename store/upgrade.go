package store

import (
	"errors"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The 8.0 upgrade gives every asset a stable asset_uid and rewrites every
// uid-keyed record that is still keyed by a device MAC. It runs once as a
// schema migration; AdoptMACKeys also runs on every remint apply, so data
// written under a MAC later (a bulk import of old history) is adopted too.

func upgradeAssetIdentity(tx *bolt.Tx) error {
	for _, b := range [][]byte{bLocations, bDevices, bAssignments, bAssetUIDs, bUIDSeq, bUIDAliases} {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return err
		}
	}
	// Frozen to the uid-keyed buckets that existed when this step shipped.
	t := &AssetTx{tx: tx, Now: time.Now().UnixMilli(), only: []string{RewriterHistory, RewriterLastSeen}}
	if err := t.indexBeacons(); err != nil {
		return err
	}
	if err := t.indexGateways(); err != nil {
		return err
	}
	_, err := t.AdoptMACKeys()
	return err
}

// indexBeacons gives pre-8.0 beacon rows a uid (LEGACY-<MAC> when they had
// none or were keyed by their MAC), a uid index entry and, for active rows,
// an open device assignment.
func (t *AssetTx) indexBeacons() error {
	var list []Beacon
	if err := t.EachBeacon(func(b *Beacon) error { list = append(list, *b); return nil }); err != nil {
		return err
	}
	for i := range list {
		b := &list[i]
		oldUID := b.AssetUID
		if mac, ok := NormalizeMAC(b.MAC); ok {
			b.MAC = mac
		} else {
			b.MAC = ""
		}
		if _, isMAC := NormalizeMAC(oldUID); oldUID == "" || isMAC {
			b.AssetUID = t.UniqueLegacyUID(b.MAC)
		} else if _, taken := t.UIDOwner(oldUID); taken {
			b.AssetUID = t.UniqueLegacyUID(b.MAC)
		}
		if err := t.ClaimUID(b.AssetUID, AssetRef{KindBeacon, b.ID}); err != nil {
			return err
		}
		if oldUID != "" && oldUID != b.AssetUID {
			if _, err := t.RenameUID(oldUID, b.AssetUID); err != nil {
				return err
			}
		}
		if b.MAC != "" && b.Active {
			_, err := t.Attach(b.MAC, KindBeacon, AssetRef{KindBeacon, b.ID}, b.CreatedAt.UnixMilli(), "upgrade")
			if errors.Is(err, ErrDeviceBusy) || errors.Is(err, ErrDeviceKind) {
				b.MAC = "" // a second row claimed the same radio: it keeps its history, not the device
			} else if err != nil {
				return err
			}
		} else {
			b.MAC = ""
		}
		if err := putJSON(t.tx.Bucket(bBeacons), itob(b.ID), b); err != nil {
			return err
		}
	}
	return nil
}

func (t *AssetTx) indexGateways() error {
	var list []Gateway
	if err := t.EachGateway(func(g *Gateway) error { list = append(list, *g); return nil }); err != nil {
		return err
	}
	for i := range list {
		g := &list[i]
		if mac, ok := NormalizeMAC(g.MAC); ok {
			g.MAC = mac
		} else {
			g.MAC = ""
		}
		if _, isMAC := NormalizeMAC(g.AssetUID); g.AssetUID == "" || isMAC {
			g.AssetUID = t.UniqueLegacyUID(g.MAC)
		} else if _, taken := t.UIDOwner(g.AssetUID); taken {
			g.AssetUID = t.UniqueLegacyUID(g.MAC)
		}
		if err := t.ClaimUID(g.AssetUID, AssetRef{KindGateway, g.ID}); err != nil {
			return err
		}
		if g.MAC != "" {
			_, err := t.Attach(g.MAC, KindGateway, AssetRef{KindGateway, g.ID}, g.CreatedAt.UnixMilli(), "upgrade")
			if errors.Is(err, ErrDeviceBusy) || errors.Is(err, ErrDeviceKind) {
				g.MAC = ""
			} else if err != nil {
				return err
			}
		}
		if err := putJSON(t.tx.Bucket(bGateways), itob(g.ID), g); err != nil {
			return err
		}
	}
	return nil
}

// AdoptResult says what AdoptMACKeys did.
type AdoptResult struct {
	// Renamed counts records moved from MAC keys, per bucket.
	Renamed map[string]int `json:"renamed"`
	// Created lists the LEGACY- beacons created for MACs no asset held.
	Created []string `json:"created"`
}

// AdoptMACKeys moves every uid-keyed record still keyed by a MAC to the
// asset that holds that device, creating a LEGACY-<MAC> beacon (type
// unknown, device attached when it is free) when none does.
func (t *AssetTx) AdoptMACKeys() (AdoptResult, error) {
	res := AdoptResult{Renamed: map[string]int{}}
	type macKey struct{ key, mac string }
	var keys []macKey
	seen := map[string]bool{}
	err := t.EachKeyedUID(func(_, uid string) error {
		if mac, ok := NormalizeMAC(uid); ok && !seen[uid] {
			seen[uid] = true
			keys = append(keys, macKey{uid, mac})
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	for _, k := range keys {
		uid, created, err := t.uidForMAC(k.mac)
		if err != nil {
			return res, err
		}
		if created {
			res.Created = append(res.Created, uid)
		}
		moved, err := t.RenameUID(k.key, uid)
		if err != nil {
			return res, err
		}
		for b, n := range moved {
			res.Renamed[b] += n
		}
	}
	return res, nil
}

// uidForMAC finds the asset holding the device, or the legacy beacon named
// after it, or creates that beacon.
func (t *AssetTx) uidForMAC(mac string) (string, bool, error) {
	ref, held, err := t.DeviceHolder(mac)
	if err != nil {
		return "", false, err
	}
	if held {
		uid, err := t.UIDOf(ref)
		return uid, false, err
	}
	if ref, ok := t.UIDOwner(LegacyPrefix + mac); ok && ref.Kind == KindBeacon {
		return LegacyPrefix + mac, false, nil
	}
	// The device is attached only when it is free to be: a retired or
	// in-calibration radio still gets its history adopted.
	b := &Beacon{AssetUID: t.UniqueLegacyUID(mac), Name: mac, Type: "unknown", Status: AssetActive, Active: true}
	if d, err := t.Device(mac); errors.Is(err, ErrNotFound) || (err == nil && d.Status == DeviceAvailable && d.Kind == KindBeacon) {
		b.MAC = mac
	}
	if err := t.insertBeacon(b, "upgrade"); err != nil {
		return "", false, err
	}
	return b.AssetUID, true, nil
}

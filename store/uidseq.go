package store

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// The uid index makes asset_uid unique across every kind of asset, the
// sequence bucket guarantees a minted number is never handed out twice
// (even after the asset holding it is deleted), and the alias bucket
// remembers what every reminted uid became, so late writes under an old
// uid can be swept up and old links still resolve.

// AssetRef names one asset: its kind and its id within that kind.
type AssetRef struct {
	Kind string `json:"kind"`
	ID   uint64 `json:"id"`
}

// LegacyPrefix starts the uid of an asset without a coded home location or
// a known type.
const LegacyPrefix = "LEGACY-"

// UIDOwner returns the asset that holds uid.
func (t *AssetTx) UIDOwner(uid string) (AssetRef, bool) {
	var ref AssetRef
	raw := t.tx.Bucket(bAssetUIDs).Get([]byte(uid))
	if raw == nil || json.Unmarshal(raw, &ref) != nil {
		return AssetRef{}, false
	}
	return ref, true
}

// UIDTaken reports whether uid is held by an asset or was one that got
// renamed: a former uid is never handed out again, or sweeping late writes
// under it would move the new holder's records.
func (t *AssetTx) UIDTaken(uid string) bool {
	if _, ok := t.UIDOwner(uid); ok {
		return true
	}
	return t.tx.Bucket(bUIDAliases).Get([]byte(uid)) != nil
}

// ClaimUID records that ref holds uid; ErrDuplicate when another asset
// holds it or it is a former uid.
func (t *AssetTx) ClaimUID(uid string, ref AssetRef) error {
	if uid == "" || len(uid) > MaxUIDLen || strings.IndexByte(uid, 0) >= 0 {
		return fmt.Errorf("asset_uid %q: bad length or NUL", uid)
	}
	if cur, ok := t.UIDOwner(uid); ok && cur != ref {
		return ErrDuplicate
	}
	if t.tx.Bucket(bUIDAliases).Get([]byte(uid)) != nil {
		return ErrDuplicate
	}
	return putJSON(t.tx.Bucket(bAssetUIDs), []byte(uid), ref)
}

// ReleaseUID forgets uid (the asset was deleted or renamed).
func (t *AssetTx) ReleaseUID(uid string) error { return t.tx.Bucket(bAssetUIDs).Delete([]byte(uid)) }

// UniqueLegacyUID returns LEGACY-<mac>, or LEGACY-<mac>-N when a retired
// or merged row already holds that name or it was reminted away.
func (t *AssetTx) UniqueLegacyUID(mac string) string {
	base := LegacyPrefix + mac
	if !t.UIDTaken(base) {
		return base
	}
	for n := 2; ; n++ {
		uid := base + "-" + strconv.Itoa(n)
		if !t.UIDTaken(uid) {
			return uid
		}
	}
}

// NextUIDSeq increments and returns the counter of key (TYPE|PATH).
func (t *AssetTx) NextUIDSeq(key string) (uint64, error) {
	b := t.tx.Bucket(bUIDSeq)
	n := btoi(b.Get([]byte(key))) + 1
	return n, b.Put([]byte(key), itob(n))
}

// PeekUIDSeq returns the last number handed out for key (0 = none).
func (t *AssetTx) PeekUIDSeq(key string) uint64 { return btoi(t.tx.Bucket(bUIDSeq).Get([]byte(key))) }

// SetAlias records that oldUID was renamed to newUID.
func (t *AssetTx) SetAlias(oldUID, newUID string) error {
	return t.tx.Bucket(bUIDAliases).Put([]byte(oldUID), []byte(newUID))
}

// Alias follows renames from uid to the uid it became ("" when none). A
// chain is followed a few hops; loops cannot form because minted uids are
// never reused, but the bound makes that irrelevant.
func (t *AssetTx) Alias(uid string) string { return aliasOf(t.tx, uid) }

// aliasOf is Alias in a bare transaction (the writer's ops).
func aliasOf(tx *bolt.Tx, uid string) string {
	b := tx.Bucket(bUIDAliases)
	if b == nil {
		return ""
	}
	out := ""
	for i := 0; i < 8; i++ {
		v := b.Get([]byte(uid))
		if v == nil {
			break
		}
		uid = string(v)
		out = uid
	}
	return out
}

// EachAlias calls fn for every recorded rename.
func (t *AssetTx) EachAlias(fn func(oldUID, newUID string) error) error {
	return t.tx.Bucket(bUIDAliases).ForEach(func(k, v []byte) error { return fn(string(k), string(v)) })
}

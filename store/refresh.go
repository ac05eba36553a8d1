package store

import (
	"errors"
	"time"

	bolt "go.etcd.io/bbolt"
)

// RefreshToken is stored under the SHA-256 of the token; the token itself
// is never stored. Rotated tokens stay (marked Used) until they expire so
// that a replay of one can be detected and the whole family revoked.
type RefreshToken struct {
	UserID    uint64    `json:"user_id"`
	Family    string    `json:"family"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	Used      bool      `json:"used"`
}

// bRefreshRevoked holds the families a refresh token's reuse revoked,
// family -> Unix ms until which the record is kept: the access tokens
// issued from the family carry it (auth's "fam" claim) and are refused
// while it is here. Made at the first revocation, so it needs no
// migration.
var bRefreshRevoked = []byte("refresh_revoked_families")

// ErrTokenReused is returned when a rotated refresh token is presented
// again; the family has been revoked by then.
var ErrTokenReused = errors.New("refresh token reused")

// PutRefreshToken stores a new token under its hash, purging expired ones.
func (db *DB) PutRefreshToken(hash []byte, t RefreshToken, now time.Time) error {
	return db.bolt.Update(func(tx *bolt.Tx) error {
		if err := deleteRefreshWhere(tx, func(x *RefreshToken) bool { return now.After(x.ExpiresAt) }); err != nil {
			return err
		}
		if err := pruneRevokedFamilies(tx, now); err != nil {
			return err
		}
		return putJSON(tx.Bucket(bRefresh), hash, &t)
	})
}

// RefreshFamilyRevoked reports whether a refresh token's reuse revoked
// family.
func (db *DB) RefreshFamilyRevoked(family string) (bool, error) {
	revoked := false
	err := db.bolt.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bRefreshRevoked); b != nil {
			revoked = b.Get([]byte(family)) != nil
		}
		return nil
	})
	return revoked, err
}

// pruneRevokedFamilies forgets revocations kept long enough.
func pruneRevokedFamilies(tx *bolt.Tx, now time.Time) error {
	b := tx.Bucket(bRefreshRevoked)
	if b == nil {
		return nil
	}
	var dead [][]byte
	if err := b.ForEach(func(k, v []byte) error {
		if int64(btoi(v)) < now.UnixMilli() {
			dead = append(dead, clone(k))
		}
		return nil
	}); err != nil {
		return err
	}
	for _, k := range dead {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// RotateRefreshToken marks the token with oldHash used and stores next in
// the same family, atomically. A token already used revokes its family and
// returns ErrTokenReused; an unknown or expired one returns ErrNotFound.
func (db *DB) RotateRefreshToken(oldHash, newHash []byte, ttl time.Duration, now time.Time) (*RefreshToken, error) {
	var out RefreshToken
	reused := false
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bRefresh)
		var t RefreshToken
		if err := getJSON(b, oldHash, &t); err != nil {
			return err
		}
		if now.After(t.ExpiresAt) {
			return ErrNotFound
		}
		if t.Used {
			// The revocation must commit, so the transaction returns nil
			// and the reuse is reported after it (an error here would
			// roll the deletion back and leave the family alive).
			fam := t.Family
			reused = true
			// Kept for ttl, a refresh token's life, which outlives the
			// family's access tokens at any sane token lifetime.
			rb, err := tx.CreateBucketIfNotExists(bRefreshRevoked)
			if err != nil {
				return err
			}
			if err := rb.Put([]byte(fam), itob(uint64(now.Add(ttl).UnixMilli()))); err != nil {
				return err
			}
			return deleteRefreshWhere(tx, func(x *RefreshToken) bool { return x.Family == fam })
		}
		t.Used = true
		if err := putJSON(b, oldHash, &t); err != nil {
			return err
		}
		out = RefreshToken{UserID: t.UserID, Family: t.Family, CreatedAt: now, ExpiresAt: now.Add(ttl)}
		return putJSON(b, newHash, &out)
	})
	if err != nil {
		return nil, err
	}
	if reused {
		return nil, ErrTokenReused
	}
	return &out, nil
}

func deleteRefreshWhere(tx *bolt.Tx, match func(*RefreshToken) bool) error {
	b := tx.Bucket(bRefresh)
	var dead [][]byte
	err := b.ForEach(func(k, v []byte) error {
		var t RefreshToken
		if getJSON(b, k, &t) == nil && match(&t) {
			dead = append(dead, clone(k))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range dead {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

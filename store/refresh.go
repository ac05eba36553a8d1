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

// ErrTokenReused is returned when a rotated refresh token is presented
// again; the family has been revoked by then.
var ErrTokenReused = errors.New("refresh token reused")

// PutRefreshToken stores a new token under its hash, purging expired ones.
func (db *DB) PutRefreshToken(hash []byte, t RefreshToken, now time.Time) error {
	return db.bolt.Update(func(tx *bolt.Tx) error {
		if err := deleteRefreshWhere(tx, func(x *RefreshToken) bool { return now.After(x.ExpiresAt) }); err != nil {
			return err
		}
		return putJSON(tx.Bucket(bRefresh), hash, &t)
	})
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

// RevokeUserRefreshTokens deletes every refresh token of a user.
func (db *DB) RevokeUserRefreshTokens(userID uint64) error {
	return db.bolt.Update(func(tx *bolt.Tx) error {
		return deleteRefreshWhere(tx, func(t *RefreshToken) bool { return t.UserID == userID })
	})
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

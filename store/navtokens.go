package store

import (
	"time"

	bolt "go.etcd.io/bbolt"
)

// Navigation tokens are kept as the SHA-256 of the secret only; the hash
// index answers a request's token in one lookup, so a deleted token stops
// working on the very next request.
var (
	bNavTokens    = []byte("nav_tokens")     // id -> NavToken
	bNavTokenHash = []byte("nav_token_hash") // hex sha256 -> id
)

// NavToken is a read-only navigation token (secret not stored).
type NavToken struct {
	ID        uint64    `json:"id"`
	Name      string    `json:"name"`
	Hash      string    `json:"-"`
	Prefix    string    `json:"prefix"`
	CreatedBy string    `json:"created_by,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// storedToken carries the hash, which NavToken hides from JSON answers.
type storedToken struct {
	NavToken
	Hash string `json:"hash"`
}

// CreateNavToken stores t and returns it with its id.
func (db *DB) CreateNavToken(t NavToken) (NavToken, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bNavTokens)
		if err != nil {
			return err
		}
		hb, err := tx.CreateBucketIfNotExists(bNavTokenHash)
		if err != nil {
			return err
		}
		if t.ID, err = b.NextSequence(); err != nil {
			return err
		}
		if err := putJSON(b, itob(t.ID), storedToken{NavToken: t, Hash: t.Hash}); err != nil {
			return err
		}
		return hb.Put([]byte(t.Hash), itob(t.ID))
	})
	return t, err
}

// ListNavTokens returns every token in id order.
func (db *DB) ListNavTokens() ([]NavToken, error) {
	out := []NavToken{}
	err := db.View(func(tx *bolt.Tx) error {
		st, err := navList[storedToken](tx, bNavTokens, nil)
		for _, s := range st {
			out = append(out, s.NavToken)
		}
		return err
	})
	return out, err
}

// DeleteNavToken removes a token and its hash index entry.
func (db *DB) DeleteNavToken(id uint64) error {
	return db.Update(func(tx *bolt.Tx) error {
		b, hb := tx.Bucket(bNavTokens), tx.Bucket(bNavTokenHash)
		if b == nil || hb == nil {
			return ErrNotFound
		}
		var st storedToken
		if err := getJSON(b, itob(id), &st); err != nil {
			return err
		}
		if err := hb.Delete([]byte(st.Hash)); err != nil {
			return err
		}
		return b.Delete(itob(id))
	})
}

// NavTokenExists reports whether a token with this hash is stored.
func (db *DB) NavTokenExists(hash string) (bool, error) {
	found := false
	err := db.View(func(tx *bolt.Tx) error {
		if hb := tx.Bucket(bNavTokenHash); hb != nil {
			found = hb.Get([]byte(hash)) != nil
		}
		return nil
	})
	return found, err
}

package store

import bolt "go.etcd.io/bbolt"

// Well-known keys of the kv bucket.
const (
	KeyJWTSigningKey = "auth/jwt_signing_key"
)

// GetKV returns a copy of the value under key, or ErrNotFound.
func (db *DB) GetKV(key string) ([]byte, error) {
	var out []byte
	err := db.bolt.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bKV).Get([]byte(key))
		if v == nil {
			return ErrNotFound
		}
		out = clone(v)
		return nil
	})
	return out, err
}

// PutKV stores value under key.
func (db *DB) PutKV(key string, value []byte) error {
	return db.bolt.Update(func(tx *bolt.Tx) error { return tx.Bucket(bKV).Put([]byte(key), value) })
}

// PutKVIfAbsent stores value unless key exists, and returns what is stored
// afterwards, so two racing first starts agree on one value.
func (db *DB) PutKVIfAbsent(key string, value []byte) ([]byte, error) {
	var out []byte
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bKV)
		if v := b.Get([]byte(key)); v != nil {
			out = clone(v)
			return nil
		}
		out = value
		return b.Put([]byte(key), value)
	})
	return out, err
}

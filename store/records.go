package store

import (
	"encoding/binary"
	"encoding/json"

	bolt "go.etcd.io/bbolt"
)

// Records other than sensor history are stored as JSON under big-endian
// uint64 ids, so ids sort numerically and new fields need no migration.

func itob(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

// hasID reports whether bucket (which may not exist yet: buckets made on
// first write read as empty) holds record id.
func hasID(tx *bolt.Tx, bucket []byte, id uint64) bool {
	b := tx.Bucket(bucket)
	return b != nil && b.Get(itob(id)) != nil
}

func btoi(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

func putJSON(b *bolt.Bucket, key []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(key, data)
}

func getJSON(b *bolt.Bucket, key []byte, v any) error {
	raw := b.Get(key)
	if raw == nil {
		return ErrNotFound
	}
	// json.Unmarshal copies, so nothing escapes the transaction.
	return json.Unmarshal(raw, v)
}

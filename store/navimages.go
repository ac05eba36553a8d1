package store

import (
	bolt "go.etcd.io/bbolt"
)

// bNavFloorImages holds one image per floor: floor id -> content type,
// a zero byte, then the image bytes.
var bNavFloorImages = []byte("nav_floor_images")

// PutFloorImage stores (replacing) a floor's image.
func (db *DB) PutFloorImage(floor uint64, contentType string, data []byte) error {
	return db.Update(func(tx *bolt.Tx) error {
		fb := tx.Bucket(bNavFloors)
		if fb == nil || fb.Get(itob(floor)) == nil {
			return ErrNotFound
		}
		b, err := tx.CreateBucketIfNotExists(bNavFloorImages)
		if err != nil {
			return err
		}
		v := make([]byte, 0, len(contentType)+1+len(data))
		v = append(append(append(v, contentType...), 0), data...)
		return b.Put(itob(floor), v)
	})
}

// FloorImage returns a floor's image or ErrNotFound.
func (db *DB) FloorImage(floor uint64) (contentType string, data []byte, err error) {
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bNavFloorImages)
		if b == nil {
			return ErrNotFound
		}
		v := b.Get(itob(floor))
		for i, c := range v {
			if c == 0 {
				contentType = string(v[:i])
				data = append([]byte(nil), v[i+1:]...)
				return nil
			}
		}
		return ErrNotFound
	})
	return contentType, data, err
}

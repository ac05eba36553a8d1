package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Fingerprint survey samples (issue 10). Keys are floor id then sample id,
// both big-endian, so one floor's samples are a contiguous prefix range in
// upload order and deleting a floor's survey never scans other floors.
var (
	bNavSurvey    = []byte("nav_survey")     // floor|id -> SurveySample
	bNavSurveyRev = []byte("nav_survey_rev") // floor -> Unix ms of the last change
	bNavSurveyIdx = []byte("nav_survey_idx") // id -> floor, for single deletes
)

// SurveyObs is one radio observation of a survey scan. MAC is normalised
// (12 upper-case hex digits); T is optional Unix ms.
type SurveyObs struct {
	MAC  string `json:"mac"`
	RSSI int    `json:"rssi"`
	T    int64  `json:"t,omitempty"`
}

// SurveyDevice describes the phone that took a sample; it explains
// systematic RSSI offsets between devices.
type SurveyDevice struct {
	Model    string `json:"model,omitempty"`
	OS       string `json:"os,omitempty"`
	App      string `json:"app,omitempty"`
	DeviceID string `json:"device_id,omitempty"`
}

// SurveySample is one scan at a known map pixel: every wifi access point
// and every (unfiltered) BLE advertisement heard while standing there.
type SurveySample struct {
	ID      uint64       `json:"id"`
	FloorID uint64       `json:"floor_id"`
	X       float64      `json:"x"`
	Y       float64      `json:"y"`
	T       int64        `json:"t,omitempty"`
	Device  SurveyDevice `json:"device"`
	WiFi    []SurveyObs  `json:"wifi"`
	BLE     []SurveyObs  `json:"ble"`
}

// ErrLimit is returned when a write would exceed a stored-size limit.
var ErrLimit = errors.New("limit exceeded")

func surveyKey(floor, id uint64) []byte {
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k, floor)
	binary.BigEndian.PutUint64(k[8:], id)
	return k
}

// touchSurvey records when a floor's survey last changed; the model's
// generated_at is this time, so the model (and the project hash) only
// change when the survey does.
func touchSurvey(tx *bolt.Tx, floor uint64, at time.Time) error {
	b, err := tx.CreateBucketIfNotExists(bNavSurveyRev)
	if err != nil {
		return err
	}
	return b.Put(itob(floor), itob(uint64(at.UnixMilli())))
}

// AddSurveySamples appends samples to a floor's survey unless that would
// take the floor over maxPerFloor samples (ErrLimit). Samples get ids.
func (db *DB) AddSurveySamples(floor uint64, samples []SurveySample, maxPerFloor int, at time.Time) (total int, err error) {
	err = db.Update(func(tx *bolt.Tx) error {
		fb := tx.Bucket(bNavFloors)
		if fb == nil || fb.Get(itob(floor)) == nil {
			return ErrNotFound
		}
		b, err := tx.CreateBucketIfNotExists(bNavSurvey)
		if err != nil {
			return err
		}
		ib, err := tx.CreateBucketIfNotExists(bNavSurveyIdx)
		if err != nil {
			return err
		}
		total = countPrefix(b, itob(floor))
		if total+len(samples) > maxPerFloor {
			return ErrLimit
		}
		for i := range samples {
			s := &samples[i]
			if s.ID, err = b.NextSequence(); err != nil {
				return err
			}
			s.FloorID = floor
			if err := putJSON(b, surveyKey(floor, s.ID), s); err != nil {
				return err
			}
			if err := ib.Put(itob(s.ID), itob(floor)); err != nil {
				return err
			}
		}
		total += len(samples)
		return touchSurvey(tx, floor, at)
	})
	return total, err
}

// SurveySamples returns a floor's samples in upload order and the time of
// the last survey change (zero when the floor was never surveyed).
func (db *DB) SurveySamples(floor uint64) ([]SurveySample, time.Time, error) {
	out := []SurveySample{}
	var rev time.Time
	err := db.View(func(tx *bolt.Tx) error {
		if rb := tx.Bucket(bNavSurveyRev); rb != nil {
			if v := rb.Get(itob(floor)); v != nil {
				rev = time.UnixMilli(int64(btoi(v))).UTC()
			}
		}
		b := tx.Bucket(bNavSurvey)
		if b == nil {
			return nil
		}
		prefix := itob(floor)
		c := b.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			var s SurveySample
			if err := getJSON(b, k, &s); err != nil {
				return err
			}
			out = append(out, s)
		}
		return nil
	})
	return out, rev, err
}

// DeleteSurvey removes every sample of a floor and returns how many.
func (db *DB) DeleteSurvey(floor uint64, at time.Time) (int, error) {
	n := 0
	err := db.Update(func(tx *bolt.Tx) error {
		fb := tx.Bucket(bNavFloors)
		if fb == nil || fb.Get(itob(floor)) == nil {
			return ErrNotFound
		}
		var err error
		if n, err = deleteSurveyOf(tx, floor); err != nil {
			return err
		}
		return touchSurvey(tx, floor, at)
	})
	return n, err
}

func deleteSurveyOf(tx *bolt.Tx, floor uint64) (int, error) {
	b := tx.Bucket(bNavSurvey)
	if b == nil {
		return 0, nil
	}
	ib := tx.Bucket(bNavSurveyIdx)
	prefix := itob(floor)
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, append([]byte(nil), k...))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
		if ib != nil {
			if err := ib.Delete(k[8:]); err != nil {
				return 0, err
			}
		}
	}
	return len(keys), nil
}

// DeleteSurveySample removes one sample and returns its floor.
func (db *DB) DeleteSurveySample(id uint64, at time.Time) (floor uint64, err error) {
	err = db.Update(func(tx *bolt.Tx) error {
		ib := tx.Bucket(bNavSurveyIdx)
		if ib == nil || ib.Get(itob(id)) == nil {
			return ErrNotFound
		}
		floor = btoi(ib.Get(itob(id)))
		if err := tx.Bucket(bNavSurvey).Delete(surveyKey(floor, id)); err != nil {
			return err
		}
		if err := ib.Delete(itob(id)); err != nil {
			return err
		}
		return touchSurvey(tx, floor, at)
	})
	return floor, err
}

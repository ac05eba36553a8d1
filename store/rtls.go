package store

import (
	"encoding/json"
	"errors"
	"math"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Tracking state that survives a restart (issue 5): the survey samples
// that train the k-NN fingerprint and the algorithm the admin chose.
var bRTLSSamples = []byte("rtls_samples") // id -> ZoneSample

// keyRTLSAlgorithm holds the chosen algorithm; "" or absent means stopped.
const keyRTLSAlgorithm = "rtls/algorithm"

// ZoneSample is one labelled RTLS training sample: mean RSSI per gateway (12
// upper-case hex digits) while AssetUID stood in Zone.
type ZoneSample struct {
	ID       uint64             `json:"id"`
	Zone     uint64             `json:"zone_id"`
	AssetUID string             `json:"asset_uid"`
	RSSI     map[string]float64 `json:"rssi"`
	// Readings and RSSISD are per gateway how many readings its mean
	// averages and their standard deviation about it (dB, where two or
	// more); absent on samples stored before they were recorded.
	Readings  map[string]int     `json:"readings,omitempty"`
	RSSISD    map[string]float64 `json:"rssi_sd,omitempty"`
	CreatedAt int64              `json:"created_at"` // Unix ms, when stored
	// RecordedAt is when the sample's window began (Unix ms); absent on
	// samples stored before it was recorded. A survey stores its
	// windows when it stops: the gateways' devices may have changed
	// since they heard them.
	RecordedAt int64 `json:"recorded_at,omitempty"`
}

// MaxZoneSamples bounds the survey samples a site keeps: every model
// build (each zone, gateway or sample edit) reads them all, and a review
// timed 1.3 s a build at 53,000. 20,000 is over 11 hours of survey at
// the default 2 s window.
const MaxZoneSamples = 20000

// AddZoneSamples stores the samples whose zone exists, assigning their
// ids, and counts the others: dropped, whose zone is gone (a survey that
// went on in a zone deleted while it recorded loses that zone's samples,
// not every zone's), and full, past MaxZoneSamples.
func (db *DB) AddZoneSamples(ss []ZoneSample, now time.Time) (stored []ZoneSample, dropped, full int, err error) {
	err = db.Update(func(tx *bolt.Tx) (err error) {
		stored, dropped, full, err = addZoneSamples(tx, ss, now)
		return err
	})
	if err != nil {
		return nil, 0, 0, err
	}
	return stored, dropped, full, nil
}

func addZoneSamples(tx *bolt.Tx, ss []ZoneSample, now time.Time) (stored []ZoneSample, dropped, full int, err error) {
	// Not nil: the API answers an empty list, not null.
	stored = make([]ZoneSample, 0, len(ss))
	b, err := tx.CreateBucketIfNotExists(bRTLSSamples)
	if err != nil {
		return nil, 0, 0, err
	}
	// Counted, not b.Stats().KeyN: Stats reads committed pages only, and
	// a recovery or a writer batch stores several surveys in one
	// transaction (a review: 20,060 samples kept).
	n := 0
	c := b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		n++
	}
	room := MaxZoneSamples - n
	for _, s := range ss {
		if !hasID(tx, bZones, s.Zone) {
			dropped++
			continue
		}
		if len(stored) >= room {
			full++
			continue
		}
		if s.ID, err = b.NextSequence(); err != nil {
			return nil, 0, 0, err
		}
		s.CreatedAt = now.UnixMilli()
		if err := putJSON(b, itob(s.ID), s); err != nil {
			return nil, 0, 0, err
		}
		stored = append(stored, s)
	}
	return stored, dropped, full, nil
}

// ZoneSamplesPage returns up to limit samples (of every zone, zone 0, or
// of one) with ids above after, in id order, and the id to continue
// after, 0 when there are no more. Ids only grow, so a sample stored
// between pages comes on a later page and none is shown twice.
func (db *DB) ZoneSamplesPage(zone, after uint64, limit int) ([]ZoneSample, uint64, error) {
	out := []ZoneSample{}
	var next uint64
	err := db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bRTLSSamples)
		if b == nil || after == math.MaxUint64 {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek(itob(after + 1)); k != nil; k, v = c.Next() {
			var s ZoneSample
			if err := json.Unmarshal(v, &s); err != nil {
				return err
			}
			if zone != 0 && s.Zone != zone {
				continue
			}
			if len(out) == limit {
				next = out[len(out)-1].ID
				return nil
			}
			out = append(out, s)
		}
		return nil
	})
	return out, next, err
}

// ListZoneSamples returns every sample (zone 0) or those of one zone.
func (db *DB) ListZoneSamples(zone uint64) ([]ZoneSample, error) {
	var out []ZoneSample
	err := db.View(func(tx *bolt.Tx) (err error) {
		out, err = navList(tx, bRTLSSamples, func(s *ZoneSample) bool { return zone == 0 || s.Zone == zone })
		return err
	})
	return out, err
}

// ZoneSampleCount is how many survey samples the site keeps.
func (db *DB) ZoneSampleCount() (int, error) {
	n := 0
	err := db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bRTLSSamples); b != nil {
			n = b.Stats().KeyN
		}
		return nil
	})
	return n, err
}

// DeleteZoneSamples removes the samples of zone (0: any) recorded of
// uid ("": any), all of them when both are unset, in one transaction;
// it returns how many it removed. One sample at a time, each delete
// rebuilt the model (a review: making room at the cap took thousands).
func (db *DB) DeleteZoneSamples(zone uint64, uid string) (int, error) {
	n := 0
	err := db.Update(func(tx *bolt.Tx) (err error) {
		n, err = deleteSamples(tx, zone, uid)
		return err
	})
	return n, err
}

// DeleteSample removes one sample (ErrNotFound when absent).
func (db *DB) DeleteSample(id uint64) error {
	return db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bRTLSSamples)
		if b == nil || b.Get(itob(id)) == nil {
			return ErrNotFound
		}
		return b.Delete(itob(id))
	})
}

// deleteSamples removes the samples of zone (0: any) recorded of uid
// ("": any) and returns how many.
func deleteSamples(tx *bolt.Tx, zone uint64, uid string) (int, error) {
	b := tx.Bucket(bRTLSSamples)
	if b == nil {
		return 0, nil
	}
	ss, err := navList(tx, bRTLSSamples, func(s *ZoneSample) bool {
		return (zone == 0 || s.Zone == zone) && (uid == "" || s.AssetUID == uid)
	})
	if err != nil {
		return 0, err
	}
	for _, s := range ss {
		if err := b.Delete(itob(s.ID)); err != nil {
			return 0, err
		}
	}
	return len(ss), nil
}

// SetRTLSAlgorithm records the running algorithm ("" when stopped), so a
// restart resumes what the admin chose.
func (db *DB) SetRTLSAlgorithm(name string) error { return db.PutKV(keyRTLSAlgorithm, []byte(name)) }

// RTLSAlgorithm returns the recorded algorithm ("" when none or stopped).
func (db *DB) RTLSAlgorithm() (string, error) {
	v, err := db.GetKV(keyRTLSAlgorithm)
	if errors.Is(err, ErrNotFound) {
		return "", nil
	}
	return string(v), err
}

package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bZoneSurveyWindows keeps the windows of surveys still recording, saved by
// the tracking engine's sweep, so that a crash does not lose a survey
// under way: a survey lives in memory until it stops, and a graceful
// stop stores it, but a crash lost every window (a review). Keys:
//
//	rec (8 bytes)              -> ZoneSurveyHeader: whose recording it is
//	rec (8 bytes) | seq (4)    -> ZoneSample, the recording's seq-th window
//
// rec numbers a recording within one run of the engine; the next start
// stores what is here (RecoverZoneSurveys) before any recording
// begins, so numbers need not be unique across runs.
var bZoneSurveyWindows = []byte("zone_survey_windows")

// ZoneSurveyHeader names the beacon a saved recording belongs to: the uid it
// is stored under if a crash ends it.
type ZoneSurveyHeader struct {
	AssetUID string `json:"asset_uid"`
	Over     int    `json:"over_limit,omitempty"` // windows past the survey's bound, as of the save
}

func windowKey(rec uint64, seq int) []byte {
	k := binary.BigEndian.AppendUint64(make([]byte, 0, 12), rec)
	return binary.BigEndian.AppendUint32(k, uint32(seq))
}

// PutZoneSurveyWindows is a writer op: it saves ss as windows from, from+1,
// ... of recording rec, and names uid its beacon and over the windows it
// did not keep (with ss empty: a survey's start, or a remint renaming
// it). Windows are saved again under the same keys if the sweep runs
// twice over them, so it is idempotent.
func PutZoneSurveyWindows(rec uint64, uid string, from int, ss []ZoneSample, over int) func(tx *bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bZoneSurveyWindows)
		if err != nil {
			return err
		}
		if err := putJSON(b, itob(rec), ZoneSurveyHeader{AssetUID: uid, Over: over}); err != nil {
			return err
		}
		for i, s := range ss {
			if err := putJSON(b, windowKey(rec, from+i), s); err != nil {
				return err
			}
		}
		return nil
	}
}

// DropZoneSurveyWindows is a writer op: it forgets what recordings recs
// saved (a recording stopped, or merged into another that saves its
// windows again).
func DropZoneSurveyWindows(recs ...uint64) func(tx *bolt.Tx) error {
	return func(tx *bolt.Tx) error { return dropZoneSurveyWindows(tx, recs) }
}

func dropZoneSurveyWindows(tx *bolt.Tx, recs []uint64) error {
	b := tx.Bucket(bZoneSurveyWindows)
	if b == nil {
		return nil
	}
	for _, rec := range recs {
		prefix := itob(rec)
		c := b.Cursor()
		// Delete moves the cursor to the next key, so Seek is not
		// followed by Next.
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
			if err := c.Delete(); err != nil {
				return err
			}
		}
	}
	return nil
}

// ZoneSurveyStored is what storing a survey's windows as samples did.
type ZoneSurveyStored struct {
	AssetUID string
	Samples  []ZoneSample // stored, with their ids
	Dropped  int          // of a zone deleted while the survey recorded
	Full     int          // past MaxZoneSamples
	Over     int          // windows past the survey's own bound, never kept
}

// Summary says what was stored, for the application log and the answer.
func (st ZoneSurveyStored) Summary() string {
	msg := fmt.Sprintf("%d samples stored", len(st.Samples))
	if st.Dropped > 0 {
		msg += fmt.Sprintf(", %d dropped: their zone was deleted while recording", st.Dropped)
	}
	if st.Full > 0 {
		msg += fmt.Sprintf(", %d not stored: the site holds at most %d samples; delete some first", st.Full, MaxZoneSamples)
	}
	if st.Over > 0 {
		msg += fmt.Sprintf(", %d windows past the survey's bound not kept", st.Over)
	}
	return msg
}

// StoreZoneSurvey is a writer op: it stores a stopped survey's samples as
// AddZoneSamples does and forgets the windows its recordings saved, in
// one transaction, so a crash can neither store them twice nor lose
// them. Queued behind the sweep's saves, it sees them all. out is set
// by each run of the op (the writer may run it again).
func StoreZoneSurvey(ss []ZoneSample, now time.Time, recs []uint64, out *ZoneSurveyStored) func(tx *bolt.Tx) error {
	return func(tx *bolt.Tx) (err error) {
		out.Samples, out.Dropped, out.Full, err = addZoneSamples(tx, ss, now)
		if err != nil {
			return err
		}
		return dropZoneSurveyWindows(tx, recs)
	}
}

// RecoverZoneSurveys stores, as samples, the windows of every survey a
// crash ended while it recorded, and empties the bucket: run once at
// start, before any survey begins. A recording whose header is missing
// (it cannot be, short of a damaged file) is stored under the uid its
// windows carry.
func RecoverZoneSurveys(tx *bolt.Tx, now time.Time) ([]ZoneSurveyStored, error) {
	b := tx.Bucket(bZoneSurveyWindows)
	if b == nil {
		return nil, nil
	}
	type saved struct {
		uid  string
		over int
		ss   []ZoneSample
	}
	var recs []*saved
	var cur *saved
	var rec []byte
	err := b.ForEach(func(k, v []byte) error {
		if len(k) < 8 {
			return nil // not written by this version
		}
		if cur == nil || !bytes.Equal(k[:8], rec) {
			cur, rec = &saved{}, append(rec[:0], k[:8]...)
			recs = append(recs, cur)
		}
		if len(k) == 8 {
			var h ZoneSurveyHeader
			if json.Unmarshal(v, &h) == nil {
				cur.uid, cur.over = h.AssetUID, h.Over
			}
			return nil
		}
		var s ZoneSample
		if err := json.Unmarshal(v, &s); err != nil {
			return nil // one unreadable window, not the survey
		}
		cur.ss = append(cur.ss, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []ZoneSurveyStored
	for _, r := range recs {
		// A survey that finished no window before the crash is still
		// reported (0 samples stored).
		if len(r.ss) == 0 && r.uid == "" {
			continue
		}
		for i := range r.ss {
			if r.uid != "" {
				r.ss[i].AssetUID = r.uid
			}
		}
		st := ZoneSurveyStored{AssetUID: r.uid, Over: r.over}
		if st.AssetUID == "" {
			st.AssetUID = r.ss[0].AssetUID
		}
		if st.Samples, st.Dropped, st.Full, err = addZoneSamples(tx, r.ss, now); err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, tx.DeleteBucket(bZoneSurveyWindows)
}

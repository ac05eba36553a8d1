package store

import (
	bolt "go.etcd.io/bbolt"
)

// Bug reports filed from the in-app tracker. Screenshots sit in their own
// bucket so listing reports never reads image bytes.
var (
	bBugReports     = []byte("bug_reports")     // id -> BugReport
	bBugScreenshots = []byte("bug_screenshots") // id -> image bytes
)

// Bug report statuses.
const (
	BugOpen   = "open"
	BugClosed = "closed"
)

// BugReport is one report. Times are Unix ms.
type BugReport struct {
	ID             uint64 `json:"id"`
	Text           string `json:"text"`
	Page           string `json:"page"`
	Status         string `json:"status"`
	UserID         uint64 `json:"user_id"`
	UserEmail      string `json:"user_email"`
	CreatedAt      int64  `json:"created_at"`
	ClosedAt       int64  `json:"closed_at,omitempty"`
	ClosedBy       string `json:"closed_by,omitempty"`
	ScreenshotType string `json:"screenshot_type,omitempty"` // image/png or image/jpeg
	ScreenshotSize int    `json:"screenshot_size,omitempty"`
}

// CreateBugReport stores r (and its screenshot, if any) with a new id.
func (db *DB) CreateBugReport(r BugReport, screenshot []byte) (BugReport, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bBugReports)
		if err != nil {
			return err
		}
		s, err := tx.CreateBucketIfNotExists(bBugScreenshots)
		if err != nil {
			return err
		}
		if r.ID, err = b.NextSequence(); err != nil {
			return err
		}
		if len(screenshot) > 0 {
			r.ScreenshotSize = len(screenshot)
			if err := s.Put(itob(r.ID), screenshot); err != nil {
				return err
			}
		}
		return putJSON(b, itob(r.ID), &r)
	})
	return r, err
}

// ListBugReports returns reports newest first; status "" means all.
func (db *DB) ListBugReports(status string) ([]BugReport, error) {
	out := []BugReport{}
	err := db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bBugReports)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, _ := c.Last(); k != nil; k, _ = c.Prev() {
			var r BugReport
			if err := getJSON(b, k, &r); err != nil {
				return err
			}
			if status == "" || r.Status == status {
				out = append(out, r)
			}
		}
		return nil
	})
	return out, err
}

// CountBugReports returns how many reports have status ("" for all).
func (db *DB) CountBugReports(status string) (int, error) {
	rs, err := db.ListBugReports(status)
	return len(rs), err
}

// GetBugReport returns report id, or ErrNotFound.
func (db *DB) GetBugReport(id uint64) (*BugReport, error) {
	var r BugReport
	err := db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bBugReports)
		if b == nil {
			return ErrNotFound
		}
		return getJSON(b, itob(id), &r)
	})
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// BugScreenshot returns a copy of the screenshot of report id, or
// ErrNotFound when it has none.
func (db *DB) BugScreenshot(id uint64) ([]byte, error) {
	var out []byte
	err := db.View(func(tx *bolt.Tx) error {
		s := tx.Bucket(bBugScreenshots)
		if s == nil {
			return ErrNotFound
		}
		v := s.Get(itob(id))
		if v == nil {
			return ErrNotFound
		}
		out = clone(v)
		return nil
	})
	return out, err
}

// CloseBugReport marks report id closed (idempotent: closing a closed
// report keeps its first closing time and admin).
func (db *DB) CloseBugReport(id uint64, by string, at int64) (*BugReport, error) {
	var r BugReport
	err := db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bBugReports)
		if b == nil {
			return ErrNotFound
		}
		if err := getJSON(b, itob(id), &r); err != nil {
			return err
		}
		if r.Status == BugClosed {
			return nil
		}
		r.Status, r.ClosedAt, r.ClosedBy = BugClosed, at, by
		return putJSON(b, itob(id), &r)
	})
	if err != nil {
		return nil, err
	}
	return &r, nil
}

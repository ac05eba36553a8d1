package store

import (
	"bytes"

	bolt "go.etcd.io/bbolt"
)

// A button-press audit record lists every gateway report that was merged
// into one press event, so "why one alert and not five" can be answered
// afterwards. Records are keyed by asset_uid then event id
// ("uid\x00" + big-endian id), so an asset's presses are one prefix scan
// and a uid rename moves one prefix.

// PressReport is one gateway's report of a press.
type PressReport struct {
	Gateway    string `json:"gateway"`
	GatewayUID string `json:"gateway_uid,omitempty"`
	RSSI       int    `json:"rssi"`
	Press      string `json:"press"`
	ReportedAt int64  `json:"reported_at"` // gateway time after the skew rule
	ReceivedAt int64  `json:"received_at"` // server receive time
}

// ButtonAudit is the audit record of one press event.
type ButtonAudit struct {
	AssetUID  string        `json:"asset_uid"`
	EventID   uint64        `json:"event_id"`
	Status    string        `json:"status"`
	Type      string        `json:"type"`
	Test      bool          `json:"test"`
	Anchor    int64         `json:"anchor"` // receive time of the first report: the window starts here
	Reports   []PressReport `json:"reports"`
	Omitted   int           `json:"omitted,omitempty"` // reports beyond MaxAuditReports, counted only
	UpdatedAt int64         `json:"updated_at"`
}

// MaxAuditReports caps one record; a stuck button re-advertising for the
// whole window must not grow a record without bound.
const MaxAuditReports = 500

func auditKey(uid string, eventID uint64) []byte { return append(uidPrefix(uid), itob(eventID)...) }

// appendAudit adds r to e's audit record, creating it with the first
// report.
func appendAudit(tx *bolt.Tx, e *Event, r PressReport) error {
	b := tx.Bucket(bButtonAudit)
	key := auditKey(e.AssetUID, e.ID)
	var a ButtonAudit
	if err := getJSON(b, key, &a); err != nil {
		if err != ErrNotFound {
			return err
		}
		a = ButtonAudit{AssetUID: e.AssetUID, EventID: e.ID, Status: e.Status, Type: e.Type, Test: e.Test, Anchor: e.CreatedAt}
	}
	if len(a.Reports) < MaxAuditReports {
		a.Reports = append(a.Reports, r)
	} else {
		a.Omitted++
	}
	a.UpdatedAt = max(a.UpdatedAt, r.ReceivedAt)
	return putJSON(b, key, &a)
}

// GetButtonAudit returns the audit record of a press event (ErrNotFound).
func (db *DB) GetButtonAudit(uid string, eventID uint64) (*ButtonAudit, error) {
	var a ButtonAudit
	err := db.bolt.View(func(tx *bolt.Tx) error { return getJSON(tx.Bucket(bButtonAudit), auditKey(uid, eventID), &a) })
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// ListButtonAudits returns uid's audit records, newest first, at most limit.
func (db *DB) ListButtonAudits(uid string, limit int) ([]ButtonAudit, error) {
	var out []ButtonAudit
	err := db.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bButtonAudit)
		prefix := uidPrefix(uid)
		c := b.Cursor()
		k, _ := c.Seek(append(append([]byte(nil), prefix...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff))
		if k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix) && len(out) < limit; k, _ = c.Prev() {
			var a ButtonAudit
			if err := getJSON(b, k, &a); err != nil {
				return err
			}
			out = append(out, a)
		}
		return nil
	})
	return out, err
}

// ---- uid rewriter ----

func renameAuditUID(tx *bolt.Tx, oldUID, newUID string) (int, error) {
	b := tx.Bucket(bButtonAudit)
	if b == nil {
		return 0, nil
	}
	old := uidPrefix(oldUID)
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(old); k != nil && bytes.HasPrefix(k, old); k, _ = c.Next() {
		keys = append(keys, clone(k))
	}
	for _, k := range keys {
		var a ButtonAudit
		if err := getJSON(b, k, &a); err != nil {
			return 0, err
		}
		a.AssetUID = newUID
		if err := b.Delete(k); err != nil {
			return 0, err
		}
		if err := putJSON(b, auditKey(newUID, a.EventID), &a); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}

func countAuditUID(tx *bolt.Tx, uid string) (int, error) {
	return countPrefix(tx.Bucket(bButtonAudit), uidPrefix(uid)), nil
}

func eachAuditUID(tx *bolt.Tx, fn func(uid string) error) error {
	return eachUIDPrefix(tx.Bucket(bButtonAudit), fn)
}

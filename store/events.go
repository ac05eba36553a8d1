package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Beacon events (button presses, motion) are stored under their id with two
// key-only indexes: by time (list and export pages, since/until are seeks)
// and by asset_uid then time (per-asset queries, uid renames).
//
// Ids are handed out by the alerting subsystem, which queues each insert on
// the FIFO group-commit writer under the same lock it took the id under, so
// a reader always sees a prefix of the id sequence: a client that pages with
// after_id can never skip an id that commits later. The bucket sequence is
// raised to every id stored, so ids never repeat even if events are deleted.

// Event statuses (spec "Event records and alert statuses").
const (
	EventAlert   = "alert"   // press on a panic or watch beacon
	EventWarning = "warning" // presence/motion (not pushed, motion)
	EventActive  = "active"  // anything else, e.g. a press on another type
)

// Alertsys delivery states of an event.
const (
	AlertsysPending  = "pending"  // queued for the alertsys worker
	AlertsysSent     = "sent"     // convene accepted
	AlertsysFailed   = "failed"   // retries exhausted or refused
	AlertsysDropped  = "dropped"  // pushed out of the full queue
	AlertsysDisabled = "disabled" // no base URL configured at the time
)

// Event is one beacon event. Several gateway reports of the same press (or
// motion) within the dedup window are merged into one event.
// Event fields an API client reads are always present ("" or 0 when
// unknown: a beacon with no home, an unregistered gateway), as api.md
// lists them; they were left out (a black-box check).
type Event struct {
	ID              uint64   `json:"id"`
	Status          string   `json:"status"`
	Type            string   `json:"type"` // press kind (single, double, triple, long) or motion
	Test            bool     `json:"test"` // from an is_test send: never forwarded to alertsys
	AssetUID        string   `json:"asset_uid"`
	AssetID         uint64   `json:"asset_id,omitempty"`
	MAC             string   `json:"mac"`
	BeaconName      string   `json:"beacon_name"`
	BeaconType      string   `json:"beacon_type"`
	LocationID      uint64   `json:"location_id"`
	Location        string   `json:"location"` // home location path, "Site / Ward / Room"; "" with none
	Gateway         string   `json:"gateway"`  // MAC of the gateway that reported first
	GatewayUID      string   `json:"gateway_uid"`
	GatewayName     string   `json:"gateway_name"`
	GatewayLocation string   `json:"gateway_location"`
	Gateways        []string `json:"gateways"` // every gateway merged, first first
	Reports         int      `json:"reports"`  // gateway reports merged
	RSSI            int      `json:"rssi"`     // strongest RSSI among them
	ReportedAt      int64    `json:"reported_at"`
	CreatedAt       int64    `json:"created_at"` // server receive time of the first report: the dedup anchor
	UpdatedAt       int64    `json:"updated_at"`
	Alertsys        string   `json:"alertsys,omitempty"`
	AlertsysMessage string   `json:"alertsys_message"`
	AlertsysAt      int64    `json:"alertsys_at,omitempty"`
}

// MaxEventGateways caps Event.Gateways; a site has far fewer gateways in
// radio range of one beacon.
const MaxEventGateways = 64

func timeKey(prefix []byte, at int64, id uint64) []byte {
	if at < 0 {
		at = 0
	}
	k := make([]byte, 0, len(prefix)+16)
	k = append(k, prefix...)
	k = binary.BigEndian.AppendUint64(k, uint64(at))
	return binary.BigEndian.AppendUint64(k, id)
}

func uidPrefix(uid string) []byte { return append([]byte(uid), 0) }

func putEventIndexes(tx *bolt.Tx, e *Event) error {
	// The value marks warnings so retention can skip kept alerts without
	// decoding them (entries written before it have no value).
	var mark []byte
	if e.Status == EventWarning {
		mark = markWarning
	}
	if err := tx.Bucket(bEventsByTime).Put(timeKey(nil, e.CreatedAt, e.ID), mark); err != nil {
		return err
	}
	if e.AssetUID == "" || strings.IndexByte(e.AssetUID, 0) >= 0 {
		return nil
	}
	return tx.Bucket(bEventsByUID).Put(timeKey(uidPrefix(e.AssetUID), e.CreatedAt, e.ID), nil)
}

// fillEventPlaces resolves the beacon's home location and the first
// gateway's location inside the writer transaction, so the pipeline never
// reads the registry from disk.
func fillEventPlaces(tx *bolt.Tx, e *Event, gatewayID uint64) {
	t := &AssetTx{tx: tx}
	if e.AssetID != 0 {
		if b, err := t.Beacon(e.AssetID); err == nil && b.LocationID != 0 {
			e.LocationID = b.LocationID
			e.Location = locationPathName(t, b.LocationID)
		}
	}
	if gatewayID != 0 {
		if g, err := t.Gateway(gatewayID); err == nil && g.LocationID != 0 {
			e.GatewayLocation = locationPathName(t, g.LocationID)
		}
	}
}

func locationPathName(t *AssetTx, id uint64) string {
	if t.tx.Bucket(bLocations) == nil {
		return ""
	}
	path, err := t.LocationPath(id)
	if err != nil {
		return ""
	}
	names := make([]string, 0, len(path))
	for _, l := range path {
		names = append(names, l.Name)
	}
	return strings.Join(names, " / ")
}

// InsertEvent returns a writer op storing e, whose ID the caller assigned,
// with its indexes and, for a press, the first report of its button-press
// audit. onCommit (may be nil) receives the stored event once the
// transaction has committed; it runs on the writer goroutine, so it must
// only hand off. gatewayID is the registry id of the first gateway (0 when
// unregistered).
func InsertEvent(e Event, gatewayID uint64, press *PressReport, onCommit func(Event)) func(tx *bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		ev := e // a re-run starts again from the caller's copy
		ev.Gateways = append([]string(nil), e.Gateways...)
		fillEventPlaces(tx, &ev, gatewayID)
		b := tx.Bucket(bEvents)
		if err := putJSON(b, itob(ev.ID), &ev); err != nil {
			return err
		}
		if b.Sequence() < ev.ID {
			if err := b.SetSequence(ev.ID); err != nil {
				return err
			}
		}
		if err := putEventIndexes(tx, &ev); err != nil {
			return err
		}
		if err := notePending(tx, ev.ID, ev.Alertsys == AlertsysPending); err != nil {
			return err
		}
		if press != nil {
			if err := appendAudit(tx, &ev, *press); err != nil {
				return err
			}
		}
		if onCommit != nil {
			tx.OnCommit(func() { onCommit(ev) })
		}
		return nil
	}
}

// ErrEventNotStored is the error of a merge into an event whose insert
// did not commit.
var ErrEventNotStored = errors.New("event not stored")

// EventMerge is one more gateway report folded into an open event.
type EventMerge struct {
	Gateway string
	RSSI    int
	At      int64 // server receive time
	Reports int   // reports merged so far, as counted by the caller
	Press   *PressReport
}

// MergeEvent returns a writer op folding m into event id. A missing event
// (its insert failed) is skipped: the merge has nothing to attach to.
func MergeEvent(id uint64, m EventMerge) func(tx *bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		b := tx.Bucket(bEvents)
		var e Event
		if err := getJSON(b, itob(id), &e); err != nil {
			if err == ErrNotFound {
				// Its insert failed: the report must not count as stored
				// (a QoS 1 publish is then not acknowledged, and its
				// resend opens an event of its own).
				return fmt.Errorf("merge into event %d: %w", id, ErrEventNotStored)
			}
			return err
		}
		if m.Gateway != "" && len(e.Gateways) < MaxEventGateways && !containsStr(e.Gateways, m.Gateway) {
			e.Gateways = append(e.Gateways, m.Gateway)
		}
		e.Reports = max(e.Reports, m.Reports)
		e.RSSI = max(e.RSSI, m.RSSI)
		e.UpdatedAt = max(e.UpdatedAt, m.At)
		if err := putJSON(b, itob(id), &e); err != nil {
			return err
		}
		if m.Press != nil {
			return appendAudit(tx, &e, *m.Press)
		}
		return nil
	}
}

// SetEventAlertsys returns a writer op recording the alertsys outcome.
func SetEventAlertsys(id uint64, state, message string, at int64) func(tx *bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		b := tx.Bucket(bEvents)
		var e Event
		if err := getJSON(b, itob(id), &e); err != nil {
			if err == ErrNotFound {
				return nil
			}
			return err
		}
		e.Alertsys, e.AlertsysMessage, e.AlertsysAt = state, message, at
		e.UpdatedAt = max(e.UpdatedAt, at)
		if err := notePending(tx, id, state == AlertsysPending); err != nil {
			return err
		}
		return putJSON(b, itob(id), &e)
	}
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// GetEvent returns the event with id (ErrNotFound).
func (db *DB) GetEvent(id uint64) (*Event, error) {
	var e Event
	err := db.bolt.View(func(tx *bolt.Tx) error { return getJSON(tx.Bucket(bEvents), itob(id), &e) })
	if err != nil {
		return nil, err
	}
	return &e, nil
}

// EventSequence returns the highest event id ever stored (0 for none); the
// next id handed out must be above it.
func (db *DB) EventSequence() (uint64, error) {
	var n uint64
	err := db.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bEvents)
		n = b.Sequence()
		if k, _ := b.Cursor().Last(); k != nil && btoi(k) > n {
			n = btoi(k)
		}
		return nil
	})
	return n, err
}

// notePending keeps the index of events pending for alertsys: the
// restart recovery must find a press left pending however old it is (a
// long outage), and without the index it would read every event.
func notePending(tx *bolt.Tx, id uint64, pending bool) error {
	b := tx.Bucket(bEventsPending)
	if pending {
		return b.Put(itob(id), nil)
	}
	return b.Delete(itob(id))
}

// indexPendingEvents is the migration filling the index from the events
// an older version stored.
func indexPendingEvents(tx *bolt.Tx) error {
	idx, err := tx.CreateBucketIfNotExists(bEventsPending)
	if err != nil {
		return err
	}
	evs := tx.Bucket(bEvents)
	if evs == nil {
		return nil
	}
	return evs.ForEach(func(k, v []byte) error {
		var e struct {
			Alertsys string `json:"alertsys"`
		}
		if json.Unmarshal(v, &e) == nil && e.Alertsys == AlertsysPending {
			return idx.Put(clone(k), nil)
		}
		return nil
	})
}

// PendingAlertsysEvents returns every event whose alertsys state is still
// pending, oldest id first.
func (db *DB) PendingAlertsysEvents() ([]Event, error) {
	var out []Event
	err := db.bolt.View(func(tx *bolt.Tx) error {
		evs := tx.Bucket(bEvents)
		return tx.Bucket(bEventsPending).ForEach(func(k, _ []byte) error {
			var e Event
			if err := getJSON(evs, k, &e); err == nil && e.Alertsys == AlertsysPending {
				out = append(out, e)
			}
			return nil
		})
	})
	return out, err
}

// ---- uid rewriter (remint, merge, the 8.0 upgrade) ----

func renameEventsUID(tx *bolt.Tx, oldUID, newUID string) (int, error) {
	idx, evs := tx.Bucket(bEventsByUID), tx.Bucket(bEvents)
	if idx == nil || evs == nil {
		return 0, nil
	}
	old, neu := uidPrefix(oldUID), uidPrefix(newUID)
	var keys [][]byte
	c := idx.Cursor()
	for k, _ := c.Seek(old); k != nil && bytes.HasPrefix(k, old); k, _ = c.Next() {
		keys = append(keys, clone(k))
	}
	for _, k := range keys {
		suffix := k[len(old):]
		id := binary.BigEndian.Uint64(suffix[8:])
		var e Event
		if err := getJSON(evs, itob(id), &e); err == nil {
			e.AssetUID = newUID
			if err := putJSON(evs, itob(id), &e); err != nil {
				return 0, err
			}
		}
		if err := idx.Delete(k); err != nil {
			return 0, err
		}
		if err := idx.Put(append(append([]byte(nil), neu...), suffix...), nil); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}

func countEventsUID(tx *bolt.Tx, uid string) (int, error) {
	return countPrefix(tx.Bucket(bEventsByUID), uidPrefix(uid)), nil
}

func eachEventsUID(tx *bolt.Tx, fn func(uid string) error) error {
	return eachUIDPrefix(tx.Bucket(bEventsByUID), fn)
}

func countPrefix(b *bolt.Bucket, prefix []byte) int {
	if b == nil {
		return 0
	}
	n := 0
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		n++
	}
	return n
}

// eachUIDPrefix calls fn once per distinct "uid\x00" key prefix of b,
// seeking past each uid's keys instead of walking them.
func eachUIDPrefix(b *bolt.Bucket, fn func(uid string) error) error {
	if b == nil {
		return nil
	}
	c := b.Cursor()
	for k, _ := c.First(); k != nil; {
		i := bytes.IndexByte(k, 0)
		if i < 0 {
			k, _ = c.Next()
			continue
		}
		uid := string(k[:i])
		if err := fn(uid); err != nil {
			return err
		}
		k, _ = c.Seek(append([]byte(uid), 1))
	}
	return nil
}

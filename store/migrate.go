package store

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Bucket names of the first releases. Buckets added since sit beside the
// code that owns them (maps.go, zones.go, zoneintervals.go, rtls.go,
// zonesurvey.go, push.go, ...: `grep -n '= \[\]byte("' store/*.go` lists
// them all).
var (
	bMeta         = []byte("meta")
	bUsers        = []byte("users")
	bUsersByEmail = []byte("users_by_email")
	bRefresh      = []byte("refresh_tokens")
	bAppLog       = []byte("applog")
	bKV           = []byte("kv")
	bHistory      = []byte("history")
	bBeacons      = []byte("beacons")
	bGateways     = []byte("gateways")
	bLastSeen     = []byte("last_seen")
	bDiscovery    = []byte("discovery")

	// Asset identity (8.0): see assets.go, locations.go, devices.go,
	// assignments.go, uidseq.go.
	bLocations   = []byte("locations")
	bDevices     = []byte("devices")     // MAC -> Device
	bAssignments = []byte("assignments") // id -> Assignment
	bAssetUIDs   = []byte("asset_uids")  // asset_uid -> owner (kind, id)
	bUIDSeq      = []byte("uid_seq")     // "TYPE|PATH" -> last sequence number used
	bUIDAliases  = []byte("uid_aliases") // former asset_uid -> the uid it became

	// Alerting (events.go, eventquery.go, buttonaudit.go, health.go).
	bEvents        = []byte("events")                  // id -> Event
	bEventsByTime  = []byte("events_by_time")          // created_at|id -> nil
	bEventsByUID   = []byte("events_by_uid")           // asset_uid\x00created_at|id -> nil
	bButtonAudit   = []byte("button_audit")            // asset_uid\x00event id -> ButtonAudit
	bHealthState   = []byte("health_state")            // condition key -> HealthCondition (active only)
	bHealthRecords = []byte("health_records")          // id -> HealthRecord (transitions)
	bEventsPending = []byte("events_alertsys_pending") // id -> nil while the event's alertsys state is pending

	// E-ink displays (eink.go).
	bEInk          = []byte("eink_displays")  // id -> EInkDisplay (admin-edited)
	bEInkByMAC     = []byte("eink_by_mac")    // MAC -> id
	bEInkPending   = []byte("eink_pending")   // id -> nil, pending displays only
	bEInkPoll      = []byte("eink_poll")      // id -> EInkPoll (version, tracking)
	bEInkTemplates = []byte("eink_templates") // id -> EInkTemplate
)

var keySchemaVersion = []byte("schema_version")

// migration is one ordered step of the schema. Steps must be idempotent
// enough to be re-run if a crash interrupted the transaction (bbolt makes
// each step atomic, so in practice a step either happened or did not).
type migration struct {
	name string
	up   func(tx *bolt.Tx) error
}

// migrations is append-only: never reorder or edit a released step.
var migrations = []migration{
	{"initial buckets", func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bUsers, bUsersByEmail, bRefresh, bAppLog, bKV} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	}},
	{"sensor history", func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bHistory)
		return err
	}},
	{"assets, last seen, discovery", func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bBeacons, bGateways, bLastSeen, bDiscovery} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	}},
	{"asset identity (8.0): locations, devices, assignments, uid index; MAC keys rewritten to asset_uid", upgradeAssetIdentity},
	{"alerting: events and their indexes, button-press audit, health conditions", func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bEvents, bEventsByTime, bEventsByUID, bButtonAudit, bHealthState, bHealthRecords} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	}},
	{"e-ink displays: displays, MAC and pending indexes, poll state, layout templates", func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bEInk, bEInkByMAC, bEInkPending, bEInkPoll, bEInkTemplates} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	}},
	{"zone intervals and their per-beacon sequence", func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bZoneIntervals, bZoneIntervalSeq} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	}},
	// These buckets are also created on first write, so a database that
	// ran a build before this step is already fine; listing them here
	// keeps the schema readable in one place.
	{"sensor conditions, sensor update intervals, push outbox and state", func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bSensorCondState, bSensorCondRecords, bSensorIntervals, bPushOutbox, bPushState} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	}},
	{"events still pending for alertsys, indexed so a restart finds them at any age", indexPendingEvents},
	{"floors naming a deleted map unlinked, placements of deleted gateways removed", repairMapLinks},
	{"zone intervals: where each beacon's numbering starts after a merge", func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bZoneIntervalBase)
		return err
	}},
	{"zone intervals: an identity per beacon's list, carried in its cursors", func(tx *bolt.Tx) error {
		lists, err := tx.CreateBucketIfNotExists(bZoneIntervalList)
		if err != nil {
			return err
		}
		seq := tx.Bucket(bZoneIntervalSeq)
		if seq == nil {
			return nil
		}
		return seq.ForEach(func(uid, _ []byte) error {
			if lists.Get(uid) != nil {
				return nil
			}
			_, err := newZoneListID(lists, string(uid))
			return err
		})
	}},
	{"assignments indexed by the asset that holds them", indexAssignments},
}

// SchemaVersion is the version a fully migrated database has.
func SchemaVersion() int { return len(migrations) }

func (db *DB) migrate() error {
	first := true
	for {
		done := false
		err := db.bolt.Update(func(tx *bolt.Tx) error {
			meta, err := tx.CreateBucketIfNotExists(bMeta)
			if err != nil {
				return err
			}
			v := 0
			if raw := meta.Get(keySchemaVersion); len(raw) == 8 {
				v = int(binary.BigEndian.Uint64(raw))
			}
			if first {
				db.schemaFrom, first = v, false
			}
			db.schemaTo = v
			if v > len(migrations) {
				return fmt.Errorf("database schema version %d is newer than this binary supports (%d); upgrade beaconhub", v, len(migrations))
			}
			if v == len(migrations) {
				done = true
				return nil
			}
			m := migrations[v]
			if err := m.up(tx); err != nil {
				return fmt.Errorf("migration %d (%s): %w", v+1, m.name, err)
			}
			var buf [8]byte
			binary.BigEndian.PutUint64(buf[:], uint64(v+1))
			return meta.Put(keySchemaVersion, buf[:])
		})
		if err != nil {
			return err
		}
		if done {
			return nil
		}
	}
}

// ReadSchemaVersion returns the stored schema version.
func (db *DB) ReadSchemaVersion() (int, error) {
	v := 0
	err := db.bolt.View(func(tx *bolt.Tx) error {
		if meta := tx.Bucket(bMeta); meta != nil {
			if raw := meta.Get(keySchemaVersion); len(raw) == 8 {
				v = int(binary.BigEndian.Uint64(raw))
			}
		}
		return nil
	})
	return v, err
}

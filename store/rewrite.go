package store

import (
	"encoding/hex"
	"sort"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// uidRewriter knows one bucket whose records are keyed by asset_uid. A
// remint, a merge or the 8.0 upgrade renames a uid through every entry, in
// the transaction that changes the asset record, so an asset is never half
// renamed.
type uidRewriter struct {
	name string
	// rename moves every record of oldUID to newUID, merging with what
	// newUID has; it returns how many records moved.
	rename func(tx *bolt.Tx, oldUID, newUID string) (int, error)
	// count returns how many records uid has.
	count func(tx *bolt.Tx, uid string) (int, error)
	// each calls fn once per uid key present (for the audit and upgrade).
	each func(tx *bolt.Tx, fn func(uid string) error) error
	// renameT and countT, when set, replace rename and count: for a
	// store that is not keyed by uid and keeps a per-transaction index
	// in the AssetTx instead (nav nodes).
	renameT func(t *AssetTx, oldUID, newUID string) (int, error)
	countT  func(t *AssetTx, uid string) (int, error)
}

// uidRewriters is the list of uid-keyed buckets. A subsystem that adds one
// (events, button-press audit, tracking logs, zone intervals) appends its
// entry here; remint, merge, the upgrade and `beaconhub audit` then cover
// it with no other change.
var uidRewriters = []uidRewriter{
	{name: RewriterHistory, rename: RenameHistoryUID, count: countHistoryUID, each: eachHistoryUID},
	{name: RewriterLastSeen, rename: renameLastSeen, count: countLastSeen, each: eachLastSeenUID},
	{name: RewriterEvents, rename: renameEventsUID, count: countEventsUID, each: eachEventsUID},
	{name: RewriterButtonAudit, rename: renameAuditUID, count: countAuditUID, each: eachAuditUID},
	{name: RewriterZoneIntervals, rename: renameZoneIntervals, count: countZoneIntervals, each: eachZoneIntervalUID},
	{name: RewriterSensorConditions, rename: renameSensorConds, count: countSensorConds, each: eachSensorCondUID},
	{name: RewriterSensorIntervals, rename: renameSensorIntervals, count: countSensorIntervals, each: eachSensorIntervalUID},
	{name: RewriterHealthConditions, rename: renameHealthConds, count: countHealthConds, each: eachHealthCondUID},
	{name: RewriterZoneHeard, rename: renameZoneHeard, count: countZoneHeard, each: eachZoneHeardUID},
	{name: RewriterNavNodes, each: noKeyedUIDs, renameT: renameNavNodeBeacon, countT: countNavNodeBeacon},
}

// Rewriter names, as they appear in counts and audit findings.
const (
	RewriterHistory  = "history"
	RewriterLastSeen = "last_seen"
	// Events and button-press audit records (alerting); their rewriters
	// tolerate a database whose alerting buckets do not exist yet, because
	// the 8.0 upgrade step runs before the step that creates them.
	RewriterEvents      = "events"
	RewriterButtonAudit = "button_audit"
	// Zone intervals (tracking); tolerant of a missing bucket likewise.
	RewriterZoneIntervals = "zone_intervals"
)

// RenameUID moves every uid-keyed record of oldUID to newUID, in every
// bucket except those named in skip. It returns the records moved per bucket.
func (t *AssetTx) RenameUID(oldUID, newUID string, skip ...string) (map[string]int, error) {
	out := map[string]int{}
	if oldUID == newUID {
		return out, nil
	}
	for _, r := range t.rewriters() {
		if contains(skip, r.name) {
			continue
		}
		var n int
		var err error
		if r.renameT != nil {
			n, err = r.renameT(t, oldUID, newUID)
		} else {
			n, err = r.rename(t.tx, oldUID, newUID)
		}
		if err != nil {
			return nil, err
		}
		if n > 0 {
			out[r.name] = n
		}
	}
	return out, nil
}

// CountUID returns how many records uid has per bucket (zeros omitted).
func (t *AssetTx) CountUID(uid string) (map[string]int, error) {
	out := map[string]int{}
	for _, r := range t.rewriters() {
		count := func() (int, error) { return r.count(t.tx, uid) }
		if r.countT != nil {
			count = func() (int, error) { return r.countT(t, uid) }
		}
		n, err := count()
		if err != nil {
			return nil, err
		}
		if n > 0 {
			out[r.name] = n
		}
	}
	return out, nil
}

// EachKeyedUID calls fn for every uid key of every uid-keyed bucket.
func (t *AssetTx) EachKeyedUID(fn func(bucket, uid string) error) error {
	for _, r := range t.rewriters() {
		if err := r.each(t.tx, func(uid string) error { return fn(r.name, uid) }); err != nil {
			return err
		}
	}
	return nil
}

// rewriters is the list a transaction works with: all of them, except in
// a migration step, which must keep doing what it did when it was released
// (later buckets may not exist yet when it runs).
func (t *AssetTx) rewriters() []uidRewriter {
	if t.only == nil {
		return uidRewriters
	}
	var out []uidRewriter
	for _, r := range uidRewriters {
		if contains(t.only, r.name) {
			out = append(out, r)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// NormalizeMAC accepts 12 hex digits, optionally in six pairs separated by
// ':' or '-', and returns the 12 upper-case digits.
func NormalizeMAC(s string) (string, bool) {
	switch len(s) {
	case 12:
	case 17:
		sep := s[2]
		if sep != ':' && sep != '-' {
			return "", false
		}
		for i := 2; i < 17; i += 3 {
			if s[i] != sep {
				return "", false
			}
		}
		s = strings.ReplaceAll(s, string(sep), "")
	default:
		return "", false
	}
	if _, err := hex.DecodeString(s); err != nil {
		return "", false
	}
	return strings.ToUpper(s), true
}

// AuditFinding is one record still keyed by a MAC instead of an asset_uid.
type AuditFinding struct {
	Bucket string `json:"bucket"`
	Key    string `json:"key"`
	Count  int    `json:"count"`
}

// AuditMACKeys lists every uid-keyed record whose key is a MAC: after the
// 8.0 upgrade and a remint there must be none. Gateway last-seen entries
// ("gw:<MAC>") are keyed by device on purpose and are not uid keys.
func (db *DB) AuditMACKeys() ([]AuditFinding, error) {
	var out []AuditFinding
	err := db.bolt.View(func(tx *bolt.Tx) error {
		for _, r := range uidRewriters {
			err := r.each(tx, func(uid string) error {
				if _, ok := NormalizeMAC(uid); !ok {
					return nil
				}
				n, err := r.count(tx, uid)
				out = append(out, AuditFinding{Bucket: r.name, Key: uid, Count: n})
				return err
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].Bucket != out[j].Bucket {
			return out[i].Bucket < out[j].Bucket
		}
		return out[i].Key < out[j].Key
	})
	return out, err
}

// ---- last_seen ----

const gatewaySeenPrefix = "gw:"

func renameLastSeen(tx *bolt.Tx, oldUID, newUID string) (int, error) {
	b := tx.Bucket(bLastSeen)
	raw := b.Get([]byte(oldUID))
	if raw == nil {
		return 0, nil
	}
	ts := btoi(raw)
	if err := b.Delete([]byte(oldUID)); err != nil {
		return 0, err
	}
	if cur := btoi(b.Get([]byte(newUID))); cur > ts {
		ts = cur
	}
	return 1, b.Put([]byte(newUID), itob(ts))
}

func countLastSeen(tx *bolt.Tx, uid string) (int, error) {
	if tx.Bucket(bLastSeen).Get([]byte(uid)) != nil {
		return 1, nil
	}
	return 0, nil
}

func eachLastSeenUID(tx *bolt.Tx, fn func(uid string) error) error {
	return tx.Bucket(bLastSeen).ForEach(func(k, _ []byte) error {
		if strings.HasPrefix(string(k), gatewaySeenPrefix) {
			return nil
		}
		return fn(string(k))
	})
}

// LastSeenAt returns the stored last-seen time of a last_seen key (an
// asset_uid, or "gw:<MAC>" for a gateway); 0 when never seen.
func (t *AssetTx) LastSeenAt(key string) int64 {
	return int64(btoi(t.tx.Bucket(bLastSeen).Get([]byte(key))))
}

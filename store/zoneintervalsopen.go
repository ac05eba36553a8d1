package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// findZoneInterval finds uid's open (or closed) interval entered at
// enter, newest first
// (the engine names intervals by entry time: it never learns the
// ordinal AppendZoneInterval assigns, and a merge renumbers them); the
// usual case reads one record. Holes (a dropped tentative stay) and the
// part retention deleted are passed over. A from other than "" takes
// only a stay moved there from that uid, in one move or more
// (ZoneInterval.From).
func findZoneInterval(b *bolt.Bucket, uid string, enter int64, open bool, from string) ([]byte, *ZoneInterval, error) {
	c := b.Cursor()
	for k, v := seekZoneInterval(c, uid, ^uint64(0)); ; k, v = c.Prev() {
		if _, ok := zoneOrdinal(k, uid); !ok {
			return nil, nil, nil
		}
		var iv ZoneInterval
		if err := json.Unmarshal(v, &iv); err != nil {
			return nil, nil, err
		}
		if iv.Enter < enter {
			return nil, nil, nil // older than the one sought: it is not there
		}
		// Two stays may share an entry time (a merge of two beacons'
		// lists): the one sought is the newest that is open, or closed,
		// as asked.
		if iv.Enter == enter && (iv.Leave == 0) == open && (from == "" || slices.Contains(iv.From, from)) {
			return clone(k), &iv, nil
		}
	}
}

// findZoneIntervalOf is findZoneInterval for an edit the engine queued
// under uid: when uid has no such interval because a remint or a merge
// moved its stays to the uid it became (the engine's edit landed after
// that transaction, before the engine learnt of it), the stay is found
// there by From, which names uid. Without it a close queued in that
// instant found nothing and the moved stay stayed open in the survivor's
// history until the next start's repair. Following the alias to any
// stay of that entry time took the survivor's own when both tags
// entered in the same millisecond and the merge had dropped the
// source's (a review).
func findZoneIntervalOf(tx *bolt.Tx, b *bolt.Bucket, uid string, enter int64, open bool) ([]byte, *ZoneInterval, error) {
	k, iv, err := findZoneInterval(b, uid, enter, open, "")
	if k != nil || err != nil {
		return k, iv, err
	}
	if to := aliasOf(tx, uid); to != "" {
		return findZoneInterval(b, to, enter, open, uid)
	}
	return nil, nil, nil
}

// CloseZoneIntervalEntered closes uid's open interval that began at enter
// (a writer op; idempotent).
func CloseZoneIntervalEntered(tx *bolt.Tx, uid string, enter, leave int64) error {
	return editZoneInterval(tx, uid, enter, true, func(iv *ZoneInterval) { iv.Leave = max(leave, iv.Enter) })
}

// ReviseZoneInterval names another zone for uid's open interval that
// began at enter (a writer op; idempotent): the decision that opened it
// was refined by the rest of its scan.
func ReviseZoneInterval(tx *bolt.Tx, uid string, enter int64, zoneID uint64, zone string, mapID uint64) error {
	return editZoneInterval(tx, uid, enter, true, func(iv *ZoneInterval) { iv.ZoneID, iv.Zone, iv.MapID = zoneID, zone, mapID })
}

// editZoneInterval applies edit to uid's open (or closed) interval that
// began at enter, if there is one.
func editZoneInterval(tx *bolt.Tx, uid string, enter int64, open bool, edit func(*ZoneInterval)) error {
	b := tx.Bucket(bZoneIntervals)
	k, iv, err := findZoneIntervalOf(tx, b, uid, enter, open)
	if err != nil || k == nil {
		return err
	}
	edit(iv)
	return putJSON(b, k, iv)
}

// DropZoneInterval deletes uid's open interval that began at enter, and
// ReopenZoneInterval clears the leave of the one before it (writer ops;
// idempotent): the decision that ended that stay and opened this one
// was refined back by the rest of its scan, so the beacon never left.
// The ordinal stays unused (pages pass over it), so no cursor handed out
// meanwhile points elsewhere.
func DropZoneInterval(tx *bolt.Tx, uid string, enter int64) error {
	b := tx.Bucket(bZoneIntervals)
	k, _, err := findZoneIntervalOf(tx, b, uid, enter, true)
	if err != nil || k == nil {
		return err
	}
	return b.Delete(k)
}

// ReopenZoneInterval: see DropZoneInterval.
func ReopenZoneInterval(tx *bolt.Tx, uid string, enter int64) error {
	return editZoneInterval(tx, uid, enter, false, func(iv *ZoneInterval) { iv.Leave = 0 })
}

// bZoneHeard is the tracking engine's last sighting, in the server's
// clock, of each beacon it had in a zone, saved every sweep
// (PutZoneHeard): uid -> pairs of BE64(a stay's enter) BE64(the
// sighting), Unix ms: one pair, or after a merge each list's. The
// stored last_seen is in the gateways' clocks (the contract lets a
// report's ts be 5 minutes off), and closing a crash's open stays at it
// recorded a stay 4 minutes long for a gateway running ahead, or none
// for one running behind (a review). A sighting closes only the
// stay it was saved for: after a merge the list holds both beacons'
// stays, and one sighting for both stretched the other (a second
// review). Keys are never deleted.
var bZoneHeard = []byte("zone_heard")

// ZoneHeard is the engine's last sighting of a beacon (Heard) in the
// stay entered at Enter, both Unix ms.
type ZoneHeard struct{ Enter, Heard int64 }

func appendZoneHeard(v []byte, h ZoneHeard) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(v, uint64(h.Enter)), uint64(h.Heard))
}

// zoneHeardFor is the sighting saved in v for the stay entered at enter.
func zoneHeardFor(v []byte, enter int64) (int64, bool) {
	for ; len(v) >= 16; v = v[16:] {
		if int64(binary.BigEndian.Uint64(v)) == enter {
			return int64(binary.BigEndian.Uint64(v[8:])), true
		}
	}
	return 0, false
}

// maxZoneHeard bounds the pairs one key keeps through merges (each
// list has at most one open stay; older pairs go first).
const maxZoneHeard = 8

// RewriterZoneHeard names zone_heard among the uid-keyed buckets: a
// remint or merge moves a beacon's saved sighting with its open stay.
const RewriterZoneHeard = "zone_heard"

func renameZoneHeard(tx *bolt.Tx, oldUID, newUID string) (int, error) {
	b := tx.Bucket(bZoneHeard)
	if b == nil {
		return 0, nil
	}
	raw := b.Get([]byte(oldUID))
	if raw == nil {
		return 0, nil
	}
	// A merge keeps both lists' pairs: each closes its own stay.
	v := append(append([]byte(nil), b.Get([]byte(newUID))...), raw...)
	if n := len(v) / 16; n > maxZoneHeard {
		v = v[16*(n-maxZoneHeard):]
	}
	if err := b.Delete([]byte(oldUID)); err != nil {
		return 0, err
	}
	return 1, b.Put([]byte(newUID), v)
}

func countZoneHeard(tx *bolt.Tx, uid string) (int, error) {
	if b := tx.Bucket(bZoneHeard); b != nil && b.Get([]byte(uid)) != nil {
		return 1, nil
	}
	return 0, nil
}

func eachZoneHeardUID(tx *bolt.Tx, fn func(uid string) error) error {
	b := tx.Bucket(bZoneHeard)
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, _ []byte) error { return fn(string(k)) })
}

// PutZoneHeard returns a writer op storing the engine's last sightings.
func PutZoneHeard(heard map[string]ZoneHeard) func(tx *bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bZoneHeard)
		if err != nil {
			return err
		}
		for uid, h := range heard {
			if err := b.Put([]byte(uid), appendZoneHeard(nil, h)); err != nil {
				return err
			}
		}
		return nil
	}
}

// CloseOpenZoneIntervals closes every interval left open: run once at
// start, when the engine has no live state and nothing would close them
// otherwise. Only a crash leaves one (a stop closes them). Each closes
// at the engine's last sighting of its beacon in that stay as saved
// (zone_heard, every sweep: at most a quarter of the timeout early), or,
// without one, at the stored last_seen (flushed every 30 s, in the
// gateways' clock), clamped to [enter, now]; a beacon with neither was
// first heard just before the crash and closes at its enter time.
// Closing at now, as before, recorded the beacon in its zone for the
// whole downtime. A stored last_seen earlier than the close is raised to
// it, and one a beacon first heard less than a flush before the crash
// lacks is made: the beacon was heard then, and last_seen went back
// behind the stays the crash kept, or was missing beside them (a
// review). lastWrite (Unix ms, 0 when unknown) is when the crashed
// process last wrote the database, in the server's clock: a close taken
// from last_seen is not after it, so a gateway clock running ahead does
// not put the downtime in the stay (a review of an upgrade: 32 s). It
// bounds that fallback only, and never below the newest sighting the
// engine saved: a file's modification time may lag its last commit
// after a power cut (fdatasync need not write it). It returns how many
// it closed and the last_seen times it raised or made, for the copy in
// memory.
func CloseOpenZoneIntervals(tx *bolt.Tx, now, lastWrite int64) (int, map[string]int64, error) {
	b := tx.Bucket(bZoneIntervals)
	seen := tx.Bucket(bLastSeen)
	heard := tx.Bucket(bZoneHeard)
	fallback := now
	if lastWrite > 0 {
		newest := lastWrite
		if heard != nil {
			_ = heard.ForEach(func(_, v []byte) error {
				for ; len(v) >= 16; v = v[16:] {
					newest = max(newest, int64(binary.BigEndian.Uint64(v[8:])))
				}
				return nil
			})
		}
		fallback = min(now, newest)
	}
	type fix struct {
		k  []byte
		iv ZoneInterval
	}
	var fixes []fix
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		// A closed interval carries the key "leave" (omitempty); the
		// colon keeps a zone named "leave" from passing for one.
		if !bytes.Contains(v, []byte(`"leave":`)) {
			var iv ZoneInterval
			if err := json.Unmarshal(v, &iv); err != nil {
				return 0, nil, err
			}
			if iv.Leave == 0 {
				fixes = append(fixes, fix{clone(k), iv})
			}
		}
	}
	raised := map[string]int64{}
	for _, f := range fixes {
		leave := f.iv.Enter
		i := bytes.IndexByte(f.k, 0)
		uid := f.k[:max(i, 0)]
		var stored int64
		if seen != nil && i > 0 {
			if v := seen.Get(uid); v != nil {
				stored = int64(btoi(v))
			}
		}
		var h int64
		if heard != nil && i > 0 {
			h, _ = zoneHeardFor(heard.Get(uid), f.iv.Enter)
		}
		switch {
		case h > 0:
			leave = h
		case stored > 0:
			leave = min(stored, fallback)
		}
		f.iv.Leave = max(min(leave, now), f.iv.Enter)
		if err := putJSON(b, f.k, &f.iv); err != nil {
			return 0, nil, err
		}
		if stored = max(stored, raised[string(uid)]); seen != nil && i > 0 && stored < f.iv.Leave {
			if err := seen.Put(uid, itob(uint64(f.iv.Leave))); err != nil {
				return 0, nil, err
			}
			raised[string(uid)] = f.iv.Leave
		}
	}
	return len(fixes), raised, nil
}

// Package assets owns asset identity: locations, beacons, gateways and
// e-ink displays with their stable asset_uid (minting, remint), the devices
// attached to them (assignments, replace, merge), and the in-memory MAC ->
// asset cache that the ingest hot path resolves every report through. The
// cache is an immutable snapshot swapped atomically, so lookups never lock;
// the Service reloads it after every registry write, before answering, so
// every change is visible to ingest at once.
package assets

import (
	"encoding/hex"
	"strings"
	"sync"
	"sync/atomic"

	"beaconhub/store"
)

// Asset is what ingest needs to know about the owner of a MAC.
//
// The fields every report reads (Seen for last-seen, hash and UID for the
// subscribers' shards and maps) come first, within one cache line: an
// asset is a cache miss on 10,000 beacons, and one line is one miss.
type Asset struct {
	// Seen is a beacon's last-heard cell, shared across reloads (nil for
	// gateways: their last-seen is kept by MAC in ingest).
	Seen *Seen
	hash uint32 // UIDHash(UID), set by the registry
	UID  string
	Type string // beacon type (watch, panic, sensor, ...) or "gateway"
	ID   uint64
	Kind string // beacon, gateway, eink
	Name string
}

// Hash is UIDHash(a.UID), computed once when the registry built the asset
// (subscribers pick their shard with it on every report).
func (a *Asset) Hash() uint32 {
	if a.hash != 0 {
		return a.hash
	}
	return UIDHash(a.UID)
}

// UIDHash is FNV-1a of a uid. The subsystems that shard per-asset state
// by uid (the tracking engine's beacons, alerting's dedup windows) spread
// it with this one function, and a rename finds both shards from the two
// uids.
func UIDHash(uid string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(uid); i++ {
		h ^= uint32(uid[i])
		h *= 16777619
	}
	return h
}

// snapshot maps MACs packed into uint64 (macKey): every report looks one
// up, and Go's maps take a uint64 key on their fast path, while a [6]byte
// key is hashed as memory (measured: 5% of the CPU at QoS 0 went to the
// beacon lookup, most of it hashing).
type snapshot struct {
	beacons  map[uint64]*Asset
	gateways map[uint64]*Asset
	byUID    map[string]*Asset // the active beacons by uid
}

func macKey(m [6]byte) uint64 {
	return uint64(m[0])<<40 | uint64(m[1])<<32 | uint64(m[2])<<24 | uint64(m[3])<<16 | uint64(m[4])<<8 | uint64(m[5])
}

// Registry is the MAC -> asset cache over the store.
type Registry struct {
	db   *store.DB
	mu   sync.Mutex // serialises reloads
	snap atomic.Pointer[snapshot]
	seen seenCells
}

// NewRegistry loads the cache from the store.
func NewRegistry(db *store.DB) (*Registry, error) {
	r := &Registry{db: db}
	if err := r.Reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// macSeparators is built once: a Replacer builds its tables on first use,
// and a reload of 10,000 assets spent most of its allocations rebuilding one
// per MAC.
var macSeparators = strings.NewReplacer(":", "", "-", "")

// ParseMAC parses 12 hex digits with optional ':' or '-' separators.
func ParseMAC(s string) ([6]byte, bool) {
	var out [6]byte
	s = macSeparators.Replace(s)
	if len(s) != 12 {
		return out, false
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return out, false
	}
	copy(out[:], b)
	return out, true
}

// FormatMAC renders 12 upper-case hex digits.
func FormatMAC(m [6]byte) string { return strings.ToUpper(hex.EncodeToString(m[:])) }

// Reload rebuilds the cache from the store. Every registry write calls it
// (they are rare next to lookups), so ingest follows changes at once.
func (r *Registry) Reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	bs, err := r.db.ListBeacons()
	if err != nil {
		return err
	}
	gs, err := r.db.ListGateways()
	if err != nil {
		return err
	}
	prev := r.snap.Load()
	s := &snapshot{beacons: make(map[uint64]*Asset, len(bs)), gateways: make(map[uint64]*Asset, len(gs)), byUID: make(map[string]*Asset, len(bs))}
	for _, b := range bs {
		if !b.Active {
			continue
		}
		if m, ok := ParseMAC(b.MAC); ok {
			k := macKey(m)
			var old *Asset
			if prev != nil {
				old = prev.beacons[k]
			}
			a := r.seen.beacon(old, b)
			s.beacons[k], s.byUID[a.UID] = a, a
		}
	}
	for _, g := range gs {
		if gatewayStatus(&g) != store.AssetActive {
			continue
		}
		if m, ok := ParseMAC(g.MAC); ok {
			s.gateways[macKey(m)] = &Asset{ID: g.ID, UID: g.AssetUID, Type: "gateway", Name: g.Name, Kind: "gateway", hash: UIDHash(g.AssetUID)}
		}
	}
	r.snap.Store(s)
	return nil
}

// Beacon resolves a beacon MAC; lock-free.
func (r *Registry) Beacon(mac [6]byte) (*Asset, bool) {
	a, ok := r.snap.Load().beacons[macKey(mac)]
	return a, ok
}

// BeaconByUID is the active beacon holding uid, with a MAC; lock-free.
func (r *Registry) BeaconByUID(uid string) (*Asset, bool) {
	a, ok := r.snap.Load().byUID[uid]
	return a, ok
}

// Gateway resolves a gateway MAC; lock-free.
func (r *Registry) Gateway(mac [6]byte) (*Asset, bool) {
	a, ok := r.snap.Load().gateways[macKey(mac)]
	return a, ok
}

// Counts returns how many beacons and gateways are cached.
func (r *Registry) Counts() (beacons, gateways int) {
	s := r.snap.Load()
	return len(s.beacons), len(s.gateways)
}

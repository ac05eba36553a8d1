package assets

import (
	"sync"
	"sync/atomic"

	"beaconhub/store"
)

// Seen is when an asset was last heard. Every report bumps it, from many
// read loops at once, so it hangs off the Asset that the MAC lookup already
// returned (no second map lookup per report) and is shared by every
// snapshot of the same asset_uid, so a registry reload keeps it.
type Seen struct {
	ts    atomic.Int64
	dirty atomic.Bool
}

// Resolution of last-seen times. One advertisement is heard by several
// gateways within milliseconds; skipping updates of less than this keeps
// the cell's cache line shared between cores instead of bouncing it on
// every report (measured: the CAS was most of last-seen's cost).
const Resolution = 1000 // ms

// Bump raises the time to ts; reports arrive out of order, so it never
// goes back. Advances smaller than Resolution are ignored.
func (s *Seen) Bump(ts int64) {
	for {
		cur := s.ts.Load()
		if ts-cur < Resolution && cur != 0 || ts <= cur {
			return
		}
		if s.ts.CompareAndSwap(cur, ts) {
			if !s.dirty.Load() { // a load keeps the cache line shared
				s.dirty.Store(true)
			}
			return
		}
	}
}

// Raise raises the time to ts however little it advances: for the rare
// caller that must not leave it behind an exact time it already reported
// (the tracking engine forgetting a beacon).
func (s *Seen) Raise(ts int64) {
	for {
		cur := s.ts.Load()
		if ts <= cur {
			return
		}
		if s.ts.CompareAndSwap(cur, ts) {
			s.dirty.Store(true)
			return
		}
	}
}

// Load returns the time (Unix ms; 0 = never).
func (s *Seen) Load() int64 { return s.ts.Load() }

// TakeDirty returns the time if it changed since the last call.
func (s *Seen) TakeDirty() (int64, bool) {
	if s.dirty.Swap(false) {
		return s.ts.Load(), true
	}
	return 0, false
}

// seenCells holds one Seen per asset_uid across reloads.
type seenCells struct {
	mu    sync.Mutex
	cells map[string]*Seen
}

func (c *seenCells) cell(uid string) *Seen {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cells == nil {
		c.cells = map[string]*Seen{}
	}
	s, ok := c.cells[uid]
	if !ok {
		s = &Seen{}
		c.cells[uid] = s
	}
	return s
}

// seenAsset is a beacon's Asset with its last-seen cell beside it: every
// report reads the asset and bumps the cell, and on 10,000 beacons each is
// a cache miss unless they share one.
type seenAsset struct {
	seen  Seen
	asset Asset
}

// beacon returns the Asset of b for a new snapshot: old (its Asset in the
// previous one) when nothing ingest reads has changed, so that a reload
// keeps each asset beside its cell; else a new one, allocated with its
// cell when uid has none yet. The lock is taken per beacon, not around a
// whole reload: the not-seen checker reads cells under its shard locks.
func (c *seenCells) beacon(old *Asset, b store.Beacon) *Asset {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cells == nil {
		c.cells = map[string]*Seen{}
	}
	cell := c.cells[b.AssetUID]
	if old != nil && cell != nil && old.Seen == cell && old.ID == b.ID && old.UID == b.AssetUID &&
		old.Type == b.Type && old.Name == b.Name {
		return old
	}
	a := Asset{ID: b.ID, UID: b.AssetUID, Type: b.Type, Name: b.Name, Kind: "beacon", Seen: cell, hash: UIDHash(b.AssetUID)}
	if cell != nil {
		return &a
	}
	sa := &seenAsset{asset: a}
	sa.asset.Seen = &sa.seen
	c.cells[b.AssetUID] = &sa.seen
	return &sa.asset
}

// SeenCell returns the cell of uid, creating it.
func (r *Registry) SeenCell(uid string) *Seen { return r.seen.cell(uid) }

// SeenIfAny returns the cell of uid without creating one.
func (r *Registry) SeenIfAny(uid string) (*Seen, bool) {
	r.seen.mu.Lock()
	defer r.seen.mu.Unlock()
	s, ok := r.seen.cells[uid]
	return s, ok
}

// RangeSeen calls fn for every cell.
func (r *Registry) RangeSeen(fn func(uid string, s *Seen)) {
	r.seen.mu.Lock()
	cp := make(map[string]*Seen, len(r.seen.cells))
	for k, v := range r.seen.cells {
		cp[k] = v
	}
	r.seen.mu.Unlock()
	for k, v := range cp {
		fn(k, v)
	}
}

// RenameSeen moves an asset's time to its new uid (remint, merge) and
// marks it for the next flush.
func (r *Registry) RenameSeen(oldUID, newUID string) {
	r.seen.mu.Lock()
	old, ok := r.seen.cells[oldUID]
	delete(r.seen.cells, oldUID)
	r.seen.mu.Unlock()
	if !ok {
		return
	}
	n := r.seen.cell(newUID)
	n.Bump(old.Load())
	n.dirty.Store(true)
}

package assets

import "sync"

// NShards is how many locks per-asset state is spread over.
const NShards = 64

// Shards spreads per-asset state over NShards locks by UIDHash. Gateways'
// read loops observe different beacons at the same time; with one lock per
// subscriber they queued on it (docs/performance.md), with shards they
// rarely meet.
type Shards[T any] [NShards]Shard[T]

// Shard is one lock and the state it guards. The padding keeps each
// shard's lock on a cache line of its own: a read loop taking one shard
// must not take the line of its neighbours from the other core.
type Shard[T any] struct {
	sync.Mutex
	V T
	_ [64]byte
}

// Of is the shard of a registered asset (its hash is precomputed).
func (s *Shards[T]) Of(a *Asset) *Shard[T] { return &s[a.Hash()%NShards] }

// OfUID is the shard of a uid.
func (s *Shards[T]) OfUID(uid string) *Shard[T] { return &s[UIDHash(uid)%NShards] }

// LockPair locks the shards of two uids (once when they share one), in
// index order so that two callers never wait for each other crosswise, as
// a rename that moves state between shards needs. It returns the shards of
// a and b and the function that unlocks them.
func (s *Shards[T]) LockPair(a, b string) (*Shard[T], *Shard[T], func()) {
	i, j := UIDHash(a)%NShards, UIDHash(b)%NShards
	lo, hi := &s[min(i, j)], &s[max(i, j)]
	lo.Lock()
	if hi != lo {
		hi.Lock()
	}
	return &s[i], &s[j], func() {
		if hi != lo {
			hi.Unlock()
		}
		lo.Unlock()
	}
}

package assets

// UIDMap holds one V per asset_uid, keyed by the uid's UIDHash. A
// subscriber looking up the Asset a report resolved to passes Asset.Hash(),
// computed once by the registry, so the lookup touches none of the uid's
// bytes: keyed by the uid string, every lookup hashed them, and on 10,000
// beacons that was a cache miss per report (docs/performance.md). Uids of
// one hash are chained and compared; Go compares a string's data pointer
// first, and an entry added through Of holds the asset's own string.
//
// The values live in the entries, not behind another pointer, and a
// pointer returned by Get or Add stays valid until the uid is deleted.
// Writes need the caller's lock (a Shard's); a map that is built, then
// published and never written again may be read by many goroutines at
// once (Get, Range, Len).
type UIDMap[V any] struct {
	m map[uint32]*uidEntry[V]
}

type uidEntry[V any] struct {
	uid  string
	next *uidEntry[V] // another uid of the same hash
	v    V
}

// Get returns uid's value (h = UIDHash(uid)), or nil.
func (u *UIDMap[V]) Get(h uint32, uid string) *V {
	for e := u.m[h]; e != nil; e = e.next {
		if e.uid == uid {
			return &e.v
		}
	}
	return nil
}

// Add returns uid's value, adding a zero one if it has none.
func (u *UIDMap[V]) Add(h uint32, uid string) *V {
	if v := u.Get(h, uid); v != nil {
		return v
	}
	if u.m == nil {
		u.m = map[uint32]*uidEntry[V]{}
	}
	e := &uidEntry[V]{uid: uid, next: u.m[h]}
	u.m[h] = e
	return &e.v
}

// Of is Add for a registered asset.
func (u *UIDMap[V]) Of(a *Asset) *V { return u.Add(a.Hash(), a.UID) }

// Delete removes uid and returns its value.
func (u *UIDMap[V]) Delete(h uint32, uid string) (V, bool) {
	var prev *uidEntry[V]
	for e := u.m[h]; e != nil; prev, e = e, e.next {
		if e.uid != uid {
			continue
		}
		switch {
		case prev != nil:
			prev.next = e.next
		case e.next != nil:
			u.m[h] = e.next
		default:
			delete(u.m, h)
		}
		return e.v, true
	}
	var zero V
	return zero, false
}

// DeleteFunc calls keep for every uid, in no particular order, and
// removes those for which it returns false.
func (u *UIDMap[V]) DeleteFunc(keep func(uid string, v *V) bool) {
	for h, head := range u.m {
		var kept *uidEntry[V]
		for e := head; e != nil; {
			next := e.next
			if keep(e.uid, &e.v) {
				e.next, kept = kept, e
			}
			e = next
		}
		if kept == nil {
			delete(u.m, h)
		} else {
			u.m[h] = kept
		}
	}
}

// Range calls fn for every uid, in no particular order.
func (u *UIDMap[V]) Range(fn func(uid string, v *V)) {
	for _, head := range u.m {
		for e := head; e != nil; e = e.next {
			fn(e.uid, &e.v)
		}
	}
}

// Len is how many uids the map holds.
func (u *UIDMap[V]) Len() int {
	n := 0
	for _, head := range u.m {
		for e := head; e != nil; e = e.next {
			n++
		}
	}
	return n
}

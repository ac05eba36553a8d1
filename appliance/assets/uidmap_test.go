package assets

import (
	"slices"
	"testing"
)

// Two uids with one FNV-1a hash: the map must keep them apart.
const collideA, collideB = "U412789", "U649192"

func TestUIDMapKeepsCollidingUIDsApart(t *testing.T) {
	h := UIDHash(collideA)
	if UIDHash(collideB) != h {
		t.Fatal("the uids no longer collide: pick another pair")
	}
	var m UIDMap[int]
	if m.Get(h, collideA) != nil || m.Len() != 0 {
		t.Fatal("an empty map has a value")
	}
	*m.Add(h, collideA) = 1
	*m.Add(h, collideB) = 2
	*m.Of(&Asset{UID: "OTHER"}) = 3
	if *m.Get(h, collideA) != 1 || *m.Get(h, collideB) != 2 || *m.Add(h, collideA) != 1 || m.Len() != 3 {
		t.Fatalf("values %d %d, len %d", *m.Get(h, collideA), *m.Get(h, collideB), m.Len())
	}
	var uids []string
	m.Range(func(uid string, v *int) { uids = append(uids, uid) })
	slices.Sort(uids)
	if !slices.Equal(uids, []string{"OTHER", collideA, collideB}) {
		t.Fatalf("range saw %v", uids)
	}

	// Either of a chain can go, and the other stays.
	for _, first := range []string{collideA, collideB} {
		other := map[string]string{collideA: collideB, collideB: collideA}[first]
		*m.Add(h, collideA), *m.Add(h, collideB) = 1, 2
		want := *m.Get(h, first)
		if v, ok := m.Delete(h, first); !ok || v != want {
			t.Fatalf("delete %s: %d %v", first, v, ok)
		}
		if m.Get(h, first) != nil || m.Get(h, other) == nil {
			t.Fatalf("after deleting %s", first)
		}
		if _, ok := m.Delete(h, first); ok {
			t.Fatal("deleted twice")
		}
		m.Delete(h, other)
	}

	*m.Add(h, collideA), *m.Add(h, collideB) = 1, 2
	m.DeleteFunc(func(uid string, v *int) bool { return *v != 1 })
	if m.Get(h, collideA) != nil || m.Get(h, collideB) == nil || m.Len() != 2 {
		t.Fatalf("DeleteFunc kept the wrong ones: len %d", m.Len())
	}
	m.DeleteFunc(func(string, *int) bool { return false })
	if m.Len() != 0 || len(m.m) != 0 {
		t.Fatal("DeleteFunc of everything left keys behind")
	}
}

package store

import (
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// historyIDs lists the assignment ids of an asset's history as the index reads it.
func historyIDs(t *testing.T, x *AssetTx, ref AssetRef) []uint64 {
	t.Helper()
	as, err := x.AssignmentsOf(ref)
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	for _, a := range as {
		out = append(out, a.ID)
	}
	return out
}

// TestAssignmentIndexFollowsEveryWrite: an asset's history, its open
// assignment and a kind's assignments are read through the holder index;
// a merge re-points assignments, so the index must move them too, and a
// beacon's history must not pick up a gateway's or an e-ink display's
// with the same id.
func TestAssignmentIndexFollowsEveryWrite(t *testing.T) {
	db, _ := regOpen(t)
	b1, b2 := AssetRef{KindBeacon, 1}, AssetRef{KindBeacon, 2}
	g1 := AssetRef{KindGateway, 1}
	regUpdate(t, db, func(x *AssetTx) error {
		for _, step := range []struct {
			mac    string
			holder AssetRef
		}{{"C30000000001", b1}, {"C30000000002", b2}, {"AC0000000001", g1}, {"E10000000001", AssetRef{KindEInk, 1}}} {
			if _, err := x.Attach(step.mac, step.holder.Kind, step.holder, x.Now, "created"); err != nil {
				return err
			}
		}
		// b1's device replaced: two spells, the second open.
		if err := x.Detach("C30000000001", x.Now+5, "replaced", DeviceAvailable); err != nil {
			return err
		}
		if _, err := x.Attach("C30000000003", KindBeacon, b1, x.Now+5, "replaced"); err != nil {
			return err
		}
		return nil
	})
	regUpdate(t, db, func(x *AssetTx) error {
		if got := historyIDs(t, x, b1); !slices.Equal(got, []uint64{1, 5}) {
			t.Errorf("b1's history = %v, want [1 5]", got)
		}
		if got := historyIDs(t, x, b2); !slices.Equal(got, []uint64{2}) {
			t.Errorf("b2's history = %v, want [2]", got)
		}
		if a, err := x.OpenAssignmentOf(b1); err != nil || a == nil || a.ID != 5 {
			t.Errorf("b1's open assignment = %+v, %v", a, err)
		}
		var gws []string
		if err := x.EachAssignmentOfKind(KindGateway, func(a *Assignment) error { gws = append(gws, a.MAC); return nil }); err != nil {
			return err
		}
		if !slices.Equal(gws, []string{"AC0000000001"}) {
			t.Errorf("gateway assignments = %v", gws)
		}
		// Merge b1 into b2.
		if n, err := x.MoveAssignments(b1, b2); err != nil || n != 2 {
			t.Errorf("moved %d, %v", n, err)
		}
		return nil
	})
	regUpdate(t, db, func(x *AssetTx) error {
		if got := historyIDs(t, x, b1); len(got) != 0 {
			t.Errorf("b1's history after the merge = %v, want none", got)
		}
		if got := historyIDs(t, x, b2); !slices.Equal(got, []uint64{1, 2, 5}) {
			t.Errorf("b2's history after the merge = %v, want [1 2 5]", got)
		}
		if a, err := x.OpenAssignmentOf(b1); err != nil || a != nil {
			t.Errorf("b1's open assignment after the merge = %+v, %v", a, err)
		}
		return nil
	})
}

// TestAssignmentIndexMigration: a database from before the index (its
// assignments written without it) gets every assignment indexed by the
// migration step, and a re-run of the step leaves it as it was.
func TestAssignmentIndexMigration(t *testing.T) {
	db, path := regOpen(t)
	regUpdate(t, db, func(x *AssetTx) error {
		if _, err := x.Attach("C30000000001", KindBeacon, AssetRef{KindBeacon, 1}, x.Now, "created"); err != nil {
			return err
		}
		if _, err := x.Attach("C30000000002", KindBeacon, AssetRef{KindBeacon, 2}, x.Now, "created"); err != nil {
			return err
		}
		if err := x.Detach("C30000000001", x.Now+5, "replaced", DeviceAvailable); err != nil {
			return err
		}
		_, err := x.Attach("C30000000003", KindBeacon, AssetRef{KindBeacon, 1}, x.Now+5, "replaced")
		return err
	})
	want := map[uint64][]uint64{}
	regUpdate(t, db, func(x *AssetTx) error {
		return x.EachAssignment(func(a *Assignment) error {
			want[a.AssetID] = append(want[a.AssetID], a.ID)
			return nil
		})
	})
	if len(want[1]) != 2 || len(want[2]) != 1 {
		t.Fatalf("histories written: %v", want)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bAssignmentsByHolder) }); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	for run := 0; run < 2; run++ {
		writeSchemaVersion(t, path, stepBefore(t, "assignments indexed"))
		var err error
		if db, err = Open(path, OpenOptions{}); err != nil {
			t.Fatal(err)
		}
		regUpdate(t, db, func(x *AssetTx) error {
			for id, ids := range want {
				if got := historyIDs(t, x, AssetRef{KindBeacon, id}); !slices.Equal(got, ids) {
					t.Errorf("run %d: beacon %d's history = %v, want %v", run, id, got, ids)
				}
			}
			return nil
		})
		_ = db.Close()
	}
}

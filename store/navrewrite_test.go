package store

import (
	"strconv"
	"testing"
	"time"
)

func navNodes(t *testing.T, db *DB, nodes ...NavNode) {
	t.Helper()
	f, err := db.PutFloor(Floor{Name: "G"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range nodes {
		nodes[i].FloorID = f.ID
	}
	if _, err := db.UpdateNavGraph(func(cur NavGraph) (NavGraph, error) {
		cur.Nodes = append(cur.Nodes, nodes...)
		return cur, nil
	}, func(NavGraph, GraphTx) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

func linkOf(t *testing.T, db *DB, name string) string {
	t.Helper()
	g, err := db.AllNavGraph()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range g.Nodes {
		if n.Name == name {
			return n.BeaconUID
		}
	}
	t.Fatalf("no node %s", name)
	return ""
}

// TestNavLinksFollowRenamesOnce: renames in one transaction follow each
// other through the nodes (A -> B -> C), and a rename onto a uid already
// linked (a merge whose survivor has its own node) unlinks the source's
// node rather than link the survivor twice: it was then placed at the
// lowest node id, the source's (a review).
func TestNavLinksFollowRenamesOnce(t *testing.T) {
	db := openTestDB(t)
	navNodes(t, db, NavNode{X: 1, Name: "ward B", BeaconUID: "SEN-X-1"}, NavNode{X: 2, Name: "ward A", BeaconUID: "SEN-S-1"},
		NavNode{X: 3, Name: "desk", BeaconUID: "LEGACY-C30000000A01"})
	err := db.UpdateAssets(time.Now(), func(tx *AssetTx) error {
		for _, r := range [][2]string{{"LEGACY-C30000000A01", "SEN-H1-1"}, {"SEN-H1-1", "SEN-W1-1"}, {"SEN-X-1", "SEN-S-1"}} {
			if _, err := tx.RenameUID(r[0], r[1]); err != nil {
				return err
			}
		}
		if n, err := tx.CountUID("SEN-W1-1"); err != nil || n[RewriterNavNodes] != 1 {
			t.Errorf("count in the transaction: %v %v", n, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := linkOf(t, db, "desk"); got != "SEN-W1-1" {
		t.Errorf("desk links %q after two remints", got)
	}
	if a, b := linkOf(t, db, "ward A"), linkOf(t, db, "ward B"); a != "SEN-S-1" || b != "" {
		t.Errorf("after the merge: ward A %q, ward B %q", a, b)
	}
}

// TestANavNodeNamingAMACIsNoMACKeyedRecord: beacon_uid was free text
// before links were checked, so a node may hold a MAC; the audit listed it
// (exit 1) and remint apply minted a beacon for it (a review).
func TestANavNodeNamingAMACIsNoMACKeyedRecord(t *testing.T) {
	db := openTestDB(t)
	navNodes(t, db, NavNode{X: 1, Name: "old", BeaconUID: "C30000000A99"})
	if f, err := db.AuditMACKeys(); err != nil || len(f) != 0 {
		t.Fatalf("audit: %+v %v", f, err)
	}
	var res AdoptResult
	if err := db.UpdateAssets(time.Now(), func(tx *AssetTx) (err error) { res, err = tx.AdoptMACKeys(); return err }); err != nil {
		t.Fatal(err)
	}
	if bs, _ := db.ListBeacons(); len(res.Created) > 0 || len(bs) > 0 {
		t.Fatalf("a node's text made beacons: %+v %+v", res, bs)
	}
}

// BenchmarkRemintSweepWithNodes is a remint apply's uid sweep (one write
// transaction renaming every former uid) on a site with nav nodes: each
// rename scanned every node, 5.1 s for 20,000 uids and nodes (a review);
// the per-transaction index reads them once. Compare -bench with nodes=0.
func BenchmarkRemintSweepWithNodes(b *testing.B) {
	for _, nodes := range []int{0, 5000} {
		b.Run("nodes="+itoa(nodes), func(b *testing.B) {
			db := openTestDB(b)
			f, err := db.PutFloor(Floor{Name: "G"})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := db.UpdateNavGraph(func(cur NavGraph) (NavGraph, error) {
				for i := range nodes {
					cur.Nodes = append(cur.Nodes, NavNode{FloorID: f.ID, X: float64(i), BeaconUID: "SEN-H1-" + itoa(i)})
				}
				return cur, nil
			}, func(NavGraph, GraphTx) error { return nil }); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if err := db.UpdateAssets(time.Now(), func(tx *AssetTx) error {
					for i := range 5000 {
						if _, err := tx.RenameUID("LEGACY-OLD-"+itoa(i), "SEN-NEW-"+itoa(i)); err != nil {
							return err
						}
					}
					return nil
				}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

package store

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// benchRegistry opens a database holding the device history of a large
// site: beacons beacons, each with one assignment (half closed by a
// device replace and a second one open), and gateways gateways.
func benchRegistry(b *testing.B, beacons, gateways int) *DB {
	b.Helper()
	db, err := Open(filepath.Join(b.TempDir(), "service.db"), OpenOptions{LockTimeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	err = db.UpdateAssets(regNow, func(x *AssetTx) error {
		for i := 1; i <= beacons; i++ {
			mac := fmt.Sprintf("C3%010X", i)
			if _, err := x.Attach(mac, KindBeacon, AssetRef{KindBeacon, uint64(i)}, x.Now, "created"); err != nil {
				return err
			}
			if i%2 == 0 {
				if err := x.Detach(mac, x.Now+1, "replaced", DeviceAvailable); err != nil {
					return err
				}
				if _, err := x.Attach(fmt.Sprintf("C4%010X", i), KindBeacon, AssetRef{KindBeacon, uint64(i)}, x.Now+1, "replaced"); err != nil {
					return err
				}
			}
		}
		for i := 1; i <= gateways; i++ {
			if _, err := x.Attach(fmt.Sprintf("AC%010X", i), KindGateway, AssetRef{KindGateway, uint64(i)}, x.Now, "created"); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return db
}

// BenchmarkAssignments reads one asset's device history on a site of
// 10,000 beacons (15,000 assignments) and 20 gateways. The baseline is
// reading one assignment by id: the history of an asset with one or two
// devices should cost a few of those, whatever the site's size. Every
// gateway's history (what a tracking site reload reads) is read through
// the index and, as a second baseline, by the scan it replaced.
func BenchmarkAssignments(b *testing.B) {
	db := benchRegistry(b, 10000, 20)
	// each runs read in one view transaction per iteration.
	each := func(read func(x *AssetTx, i int) error) func(b *testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := db.ViewAssets(func(x *AssetTx) error { return read(x, i) }); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("baseline-one-by-id", each(func(x *AssetTx, i int) error {
		_, err := x.Assignment(uint64(i%10000) + 1)
		return err
	}))
	b.Run("history-of-a-beacon", each(func(x *AssetTx, i int) error {
		as, err := x.AssignmentsOf(AssetRef{KindBeacon, uint64(i%10000) + 1})
		if err == nil && len(as) == 0 {
			err = fmt.Errorf("no history")
		}
		return err
	}))
	b.Run("open-of-a-gateway", each(func(x *AssetTx, i int) error {
		a, err := x.OpenAssignmentOf(AssetRef{KindGateway, uint64(i%20) + 1})
		if err == nil && a == nil {
			err = fmt.Errorf("no open assignment")
		}
		return err
	}))
	gatewaySpells := func(b *testing.B, each func(x *AssetTx, fn func(a *Assignment) error) error) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			n := 0
			err := db.ViewAssets(func(x *AssetTx) error {
				return each(x, func(a *Assignment) error {
					if a.GatewayID != 0 {
						n++
					}
					return nil
				})
			})
			if err != nil {
				b.Fatal(err)
			}
			if n != 20 {
				b.Fatalf("%d gateway assignments, want 20", n)
			}
		}
	}
	b.Run("every-gateway-by-scan", func(b *testing.B) {
		gatewaySpells(b, func(x *AssetTx, fn func(a *Assignment) error) error { return x.EachAssignment(fn) })
	})
	b.Run("every-gateway", func(b *testing.B) {
		gatewaySpells(b, func(x *AssetTx, fn func(a *Assignment) error) error {
			return x.EachAssignmentOfKind(KindGateway, fn)
		})
	})
}

package replay

import (
	"os"
	"testing"
)

// TestWalkTable prints every algorithm's score on the three synthetic
// walks of docs/performance.md (A, B, C). It only runs with
// RTLS_WALKS=1: it asserts nothing, it reproduces the documented figures
// (go test -run WalkTable -v ./appliance/rtls/replay/ with RTLS_WALKS=1).
func TestWalkTable(t *testing.T) {
	if os.Getenv("RTLS_WALKS") == "" {
		t.Skip("set RTLS_WALKS=1 to print the synthetic walk table")
	}
	for _, c := range []struct {
		name string
		w    walk
	}{
		{"A", walk{seed: 11, grid: 4, gateways: 12, pathLoss: 2.5, noise: 6, miss: 0.3, legs: 40, stayMin: 20}},
		{"B", walk{seed: 5, grid: 5, gateways: 8, pathLoss: 3, noise: 8, miss: 0.5, legs: 40, stayMin: 10}},
		{"C", walk{seed: 7, grid: 3, gateways: 15, pathLoss: 2, noise: 4, miss: 0.2, legs: 40, stayMin: 30}},
	} {
		evalWalk(t, c.w, c.name)
	}
}

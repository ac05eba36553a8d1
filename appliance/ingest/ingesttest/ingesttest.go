// Package ingesttest holds in-memory stand-ins for what an ingest.Pipeline
// is built on, for benchmarks that measure the ingest path's CPU without
// a database: a registry held in maps and a writer that completes at once.
package ingesttest

import (
	"beaconhub/appliance/assets"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// Registry resolves MACs from two maps; last-seen cells are not kept
// (each asset carries its own, or a fresh one is handed out).
type Registry struct {
	Beacons, Gateways map[[6]byte]*assets.Asset
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry {
	return &Registry{Beacons: map[[6]byte]*assets.Asset{}, Gateways: map[[6]byte]*assets.Asset{}}
}

// Beacon implements ingest.Registry.
func (r *Registry) Beacon(m [6]byte) (*assets.Asset, bool) {
	a, ok := r.Beacons[m]
	return a, ok
}

// Gateway implements ingest.Registry.
func (r *Registry) Gateway(m [6]byte) (*assets.Asset, bool) {
	a, ok := r.Gateways[m]
	return a, ok
}

// SeenCell implements ingest.SeenCells.
func (r *Registry) SeenCell(string) *assets.Seen { return &assets.Seen{} }

// SeenIfAny implements ingest.SeenCells.
func (r *Registry) SeenIfAny(string) (*assets.Seen, bool) { return nil, false }

// RangeSeen implements ingest.SeenCells.
func (r *Registry) RangeSeen(func(string, *assets.Seen)) {}

// RenameSeen implements ingest.SeenCells.
func (r *Registry) RenameSeen(string, string) {}

// Writer completes every write at once and stores nothing.
type Writer struct{}

// AppendReadings implements ingest.Writer.
func (Writer) AppendReadings(_ []store.Reading, done func(error)) { complete(done) }

// AppendReadingsLazily implements ingest.Writer.
func (Writer) AppendReadingsLazily(_ []store.Reading, done func(error)) { complete(done) }

// Do implements ingest.Writer.
func (Writer) Do(_ func(*bolt.Tx) error, done func(error)) { complete(done) }

// DoLazily implements ingest.Writer.
func (Writer) DoLazily(_ func(*bolt.Tx) error, done func(error)) { complete(done) }

func complete(done func(error)) {
	if done != nil {
		done(nil)
	}
}

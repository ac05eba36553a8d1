// Package store owns BeaconHub's single bbolt database: bucket names, key
// encoding, record types, schema migrations, one file per entity, and the
// group-commit writer that the ingest hot path uses. No other package touches
// *bbolt.DB directly.
package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// ErrLocked is returned by Open when another process holds the database.
var ErrLocked = errors.New("database is locked by another process")

// ErrNotFound is returned by getters when a record does not exist.
var ErrNotFound = errors.New("not found")

// DB is the application's database handle.
type DB struct {
	bolt *bolt.DB
	path string
	// lastWrite is the file's modification time when opened, before
	// anything wrote to it: the last commit of the process before, in
	// the server's clock.
	lastWrite time.Time
	// assetsFault, when set, fails UpdateAssets' transactions after their
	// function succeeded, as a full disk fails a commit (SetAssetsFault).
	assetsFault atomic.Pointer[func() error]
	// schemaFrom and schemaTo are the schema versions before and after
	// this open's migrations (Migrated).
	schemaFrom, schemaTo int
}

// Migrated reports the schema versions this open moved the file between,
// for the start's log and audit's report: an existing file moved to a
// newer schema is one an older binary no longer opens, which neither
// said (an upgrade check). ok is false for a new file or one already
// current.
func (db *DB) Migrated() (from, to int, ok bool) {
	return db.schemaFrom, db.schemaTo, db.schemaFrom > 0 && db.schemaTo > db.schemaFrom
}

// SetAssetsFault makes every UpdateAssets whose function succeeds ask
// fault and roll back when it returns an error, as a failed commit (a
// full disk) does; nil removes it. For tests of what the callers keep in
// memory when a commit fails, which a real disk cannot be made to do on
// cue.
func (db *DB) SetAssetsFault(fault func() error) {
	if fault == nil {
		db.assetsFault.Store(nil)
		return
	}
	db.assetsFault.Store(&fault)
}

// OpenOptions tune Open; the zero value is production-safe.
type OpenOptions struct {
	// LockTimeout bounds the wait for the file lock held by another process.
	LockTimeout time.Duration
}

// Open opens (creating if needed) the database at path, waits at most
// LockTimeout for the file lock, and runs pending migrations.
func Open(path string, opts OpenOptions) (*DB, error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = 2 * time.Second
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("create database directory: %w", err)
	}
	// Before bolt.Open, which may write (a new file; a freelist it did
	// not sync), and before the migrations: if another process holds the
	// file, the open below fails on its lock.
	var lastWrite time.Time
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		lastWrite = fi.ModTime()
	}
	b, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout:      opts.LockTimeout,
		FreelistType: bolt.FreelistMapType,
	})
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, fmt.Errorf("open %s: %w (is another beaconhub running with the same home?)", path, ErrLocked)
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db := &DB{bolt: b, path: path, lastWrite: lastWrite}
	if err := db.migrate(); err != nil {
		_ = b.Close()
		return nil, err
	}
	return db, nil
}

// LastWrite is when the process before last wrote the file (its
// modification time when opened; zero for a new file). After a crash it
// bounds what that process can have seen.
func (db *DB) LastWrite() time.Time { return db.lastWrite }

// Path returns the database file path.
func (db *DB) Path() string { return db.path }

// Close closes the database.
func (db *DB) Close() error { return db.bolt.Close() }

// Bolt exposes the raw handle to code inside this package's tests and to the
// group-commit writer; callers outside store must not use it.
func (db *DB) Bolt() *bolt.DB { return db.bolt }

// View runs fn in a read-only transaction.
func (db *DB) View(fn func(tx *bolt.Tx) error) error { return db.bolt.View(fn) }

// Update runs fn in a read-write transaction (one fsync). Hot paths use the
// Writer instead so that many small writes share one commit.
func (db *DB) Update(fn func(tx *bolt.Tx) error) error { return db.bolt.Update(fn) }

// Size returns the database file size in bytes.
func (db *DB) Size() (int64, error) {
	fi, err := os.Stat(db.path)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// clone copies a byte slice out of a bbolt transaction.
func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	out := make([]byte, len(b))
	copy(out, b)
	return out
}

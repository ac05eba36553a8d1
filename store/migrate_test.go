package store

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func TestMigrateFromNothing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(path string) error
	}{
		{"missing file", func(string) error { return nil }},
		{"zero-length file", func(p string) error { return os.WriteFile(p, nil, 0o600) }},
		{"bolt file without meta", func(p string) error {
			b, err := bolt.Open(p, 0o600, &bolt.Options{Timeout: time.Second})
			if err != nil {
				return err
			}
			return b.Close()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "service.db")
			if err := tc.prepare(path); err != nil {
				t.Fatal(err)
			}
			db, err := Open(path, OpenOptions{LockTimeout: 200 * time.Millisecond})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer db.Close()
			v, err := db.ReadSchemaVersion()
			if err != nil {
				t.Fatal(err)
			}
			if v != SchemaVersion() {
				t.Errorf("schema version = %d, want %d", v, SchemaVersion())
			}
			err = db.View(func(tx *bolt.Tx) error {
				for _, b := range [][]byte{bMeta, bUsers, bUsersByEmail, bRefresh, bAppLog, bKV, bHistory} {
					if tx.Bucket(b) == nil {
						t.Errorf("bucket %s missing after migration", b)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func writeSchemaVersion(t *testing.T, path string, v int) {
	t.Helper()
	b, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	err = b.Update(func(tx *bolt.Tx) error {
		m, err := tx.CreateBucketIfNotExists(bMeta)
		if err != nil {
			return err
		}
		var buf [8]byte
		binary.BigEndian.PutUint64(buf[:], uint64(v))
		return m.Put(keySchemaVersion, buf[:])
	})
	if err != nil {
		t.Fatal(err)
	}
}

// stepBefore is the schema version just before the step whose name
// starts with prefix, so a test can re-run that step and the ones after.
func stepBefore(t *testing.T, prefix string) int {
	t.Helper()
	for i, m := range migrations {
		if strings.HasPrefix(m.name, prefix) {
			return i
		}
	}
	t.Fatalf("no migration step named %q...", prefix)
	return 0
}

func TestMigrateResumesFromOlderVersion(t *testing.T) {
	if SchemaVersion() < 2 {
		t.Skip("needs at least two migrations")
	}
	path := filepath.Join(t.TempDir(), "service.db")
	// A file that ran only the first step.
	b, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Update(migrations[0].up); err != nil {
		t.Fatal(err)
	}
	b.Close()
	writeSchemaVersion(t, path, 1)

	db, err := Open(path, OpenOptions{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer db.Close()
	if v, _ := db.ReadSchemaVersion(); v != SchemaVersion() {
		t.Errorf("schema version = %d, want %d", v, SchemaVersion())
	}
	if from, to, ok := db.Migrated(); !ok || from != 1 || to != SchemaVersion() {
		t.Errorf("Migrated() = %d, %d, %v; want 1, %d, true", from, to, ok, SchemaVersion())
	}
	_ = db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bHistory) == nil {
			t.Error("later migration did not run")
		}
		return nil
	})
}

func TestNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "service.db")
	writeSchemaVersion(t, path, SchemaVersion()+1)
	db, err := Open(path, OpenOptions{LockTimeout: 200 * time.Millisecond})
	if err == nil {
		db.Close()
		t.Fatal("Open accepted a schema newer than the binary")
	}
	if !strings.Contains(err.Error(), "newer") {
		t.Errorf("error %q does not say the schema is newer", err)
	}
	// The refused Open must release the file.
	b, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("file still locked after a refused Open: %v", err)
	}
	b.Close()
}

func TestMigrateIsIdempotentAcrossOpens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "service.db")
	for i := 0; i < 3; i++ {
		db, err := Open(path, OpenOptions{LockTimeout: 200 * time.Millisecond})
		if err != nil {
			t.Fatalf("Open #%d: %v", i, err)
		}
		if v, _ := db.ReadSchemaVersion(); v != SchemaVersion() {
			t.Errorf("Open #%d: schema version %d", i, v)
		}
		// A new file and a current one are no migration to report.
		if _, _, ok := db.Migrated(); ok {
			t.Errorf("Open #%d: reported a migration", i)
		}
		db.Close()
	}
}

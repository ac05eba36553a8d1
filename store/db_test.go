package store

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// openTemp opens a fresh database in t.TempDir and closes it at cleanup.
func openTemp(t *testing.T) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "db", "service.db"), OpenOptions{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "dir", "service.db")
	db, err := Open(path, OpenOptions{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if db.Path() != path {
		t.Errorf("Path() = %q, want %q", db.Path(), path)
	}
	u := &User{Email: "Keep@Example.com", PasswordHash: "h", Role: "admin"}
	if err := db.CreateUser(u); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	if err := db.PutKV("k", []byte("v")); err != nil {
		t.Fatalf("PutKV: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	db, err = Open(path, OpenOptions{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	got, err := db.GetUserByEmail("keep@example.com")
	if err != nil {
		t.Fatalf("user lost after reopen: %v", err)
	}
	if got.ID != u.ID || got.Role != "admin" {
		t.Errorf("reopened user = %+v, want id %d role admin", got, u.ID)
	}
	if v, err := db.GetKV("k"); err != nil || string(v) != "v" {
		t.Errorf("GetKV after reopen = %q, %v", v, err)
	}
	if n, err := db.Size(); err != nil || n <= 0 {
		t.Errorf("Size = %d, %v", n, err)
	}
}

func TestSecondOpenFailsFastWithErrLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "service.db")
	const timeout = 200 * time.Millisecond
	db, err := Open(path, OpenOptions{LockTimeout: timeout})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer db.Close()

	start := time.Now()
	db2, err := Open(path, OpenOptions{LockTimeout: timeout})
	elapsed := time.Since(start)
	if err == nil {
		db2.Close()
		t.Fatal("second Open of a locked file succeeded")
	}
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open error = %v, want ErrLocked", err)
	}
	if elapsed > timeout+2*time.Second {
		t.Errorf("second Open took %v, want about %v", elapsed, timeout)
	}

	// Once the holder closes, the file opens again.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db3, err := Open(path, OpenOptions{LockTimeout: timeout})
	if err != nil {
		t.Fatalf("Open after the holder closed: %v", err)
	}
	db3.Close()
}

func TestOpenUnusablePath(t *testing.T) {
	dir := t.TempDir()
	// A directory where the file should be: a plain error, not ErrLocked.
	_, err := Open(dir, OpenOptions{LockTimeout: 100 * time.Millisecond})
	if err == nil {
		t.Fatal("Open of a directory succeeded")
	}
	if errors.Is(err, ErrLocked) {
		t.Errorf("Open of a directory reported ErrLocked: %v", err)
	}
}

package main

import (
	"bytes"
	encbin "encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// TestAuditFindsMACKeyedHistoryUntilRemint runs `beaconhub audit` against a
// home whose history is partly keyed by a MAC, then remints and audits again.
func TestAuditFindsMACKeyedHistoryUntilRemint(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "config"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config", "main.config.json"), []byte(`{"server_id":"audit","server_features":["sensors"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	// Not looked (3) is not findings (1): an upgrade script told them
	// apart by nothing.
	if code := run([]string{"audit", "--home", home}, &out, &errb); code != 3 || !strings.Contains(errb.String(), "no database") {
		t.Fatalf("audit without a database: %d %s", code, errb.String())
	}

	dbFile := filepath.Join(home, "db", "service.db")
	db, err := store.Open(dbFile, store.OpenOptions{LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := store.PutReadings(tx, []store.Reading{
			{UID: "C3:00:00:00:0A:01", Metric: store.MetricTemperature, TS: 1, Value: 4},
			{UID: "SEN-A1-1", Metric: store.MetricTemperature, TS: 1, Value: 4},
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	if code := run([]string{"audit", "--home", home}, &out, &errb); code != 3 || out.Len() != 0 || errb.Len() == 0 {
		t.Fatalf("audit while the database is held: %d\n%s%s", code, out.String(), errb.String())
	}
	_ = db.Close()

	out.Reset()
	if code := run([]string{"audit", "--home", home}, &out, &errb); code != 1 || !strings.Contains(out.String(), "history\tC3:00:00:00:0A:01\t1 records") {
		t.Fatalf("audit with a MAC key: %d\n%s%s", code, out.String(), errb.String())
	}

	db, err = store.Open(dbFile, store.OpenOptions{LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := assets.NewService(assets.Options{DB: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RemintApply(); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()

	out.Reset()
	if code := run([]string{"audit", "--home", home}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "ok:") {
		t.Fatalf("audit after remint: %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := run([]string{"audit", "--help"}, &out, &errb); code != 0 {
		t.Fatalf("audit --help: %d", code)
	}
}

// Audit opens the database as serve does, migrating it; on a file of an
// older schema it says so, since an older binary no longer opens it (an
// upgrade check ran audit as a read-only look before upgrading).
func TestAuditSaysItMigrated(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "config"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config", "main.config.json"), []byte(`{"server_id":"audit","server_features":["sensors"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	dbFile := filepath.Join(home, "db", "service.db")
	db, err := store.Open(dbFile, store.OpenOptions{LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	var out, errb bytes.Buffer
	if code := run([]string{"audit", "--home", home}, &out, &errb); code != 0 || strings.Contains(out.String(), "migrated") {
		t.Fatalf("audit of a current file: %d\n%s%s", code, out.String(), errb.String())
	}
	// One step back: every step is idempotent, so the last runs again.
	b, err := bolt.Open(dbFile, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	older := uint64(store.SchemaVersion() - 1)
	err = b.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("schema_version"), encbin.BigEndian.AppendUint64(nil, older))
	})
	_ = b.Close()
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	want := fmt.Sprintf("migrated from schema %d to %d", older, store.SchemaVersion())
	if code := run([]string{"audit", "--home", home}, &out, &errb); code != 0 || !strings.Contains(out.String(), want) {
		t.Fatalf("audit of an older file: %d\n%s%s", code, out.String(), errb.String())
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadOnlyCommandsCreateNothing: audit (which says it could not look,
// exit 3) made the home, wrote a configuration file full of defaults and
// fresh secrets over a short hand-written one; config check of a home
// with no file said "valid" as if one had been checked (a black-box
// check).
func TestReadOnlyCommandsCreateNothing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "mistyped")
	var out, errb bytes.Buffer
	if code := run([]string{"audit", "--home", missing}, &out, &errb); code != 3 {
		t.Fatalf("audit of a missing home: %d %s", code, errb.String())
	}
	if code := run([]string{"config", "check", "--home", missing}, &out, &errb); code != 0 || !strings.Contains(out.String(), "no such file") {
		t.Fatalf("config check of a missing home: %d %s", code, out.String())
	}
	// mobile-key regenerate writes, but only into an install's file: with
	// a mistyped home it made a new install there and exited 0.
	if code := run([]string{"mobile-key", "regenerate", "--home", missing}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "no configuration") {
		t.Fatalf("mobile-key regenerate of a missing home: %d %s", code, errb.String())
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("a command created %s: %v", missing, err)
	}
	// A stray word is a usage error, not a run on the current directory.
	for _, args := range [][]string{{"mobile-key", "regenerate", "extra"}, {"audit", "--home", missing, "extra"}, {"config", "check", "extra"}} {
		errb.Reset()
		if code := run(args, &out, &errb); code != 2 || !strings.Contains(errb.String(), `"extra"`) {
			t.Fatalf("%v: %d %s", args, code, errb.String())
		}
	}

	home := t.TempDir()
	file := filepath.Join(home, "config", "main.config.json")
	if err := os.MkdirAll(filepath.Dir(file), 0o750); err != nil {
		t.Fatal(err)
	}
	short := `{"server_id":"AU0001","server_features":["sensors"]}`
	if err := os.WriteFile(file, []byte(short), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"audit", "--home", home}, &out, &errb); code != 3 {
		t.Fatalf("audit without a database: %d", code)
	}
	if got, _ := os.ReadFile(file); string(got) != short {
		t.Fatalf("audit rewrote the configuration: %s", got)
	}
}

package store

import (
	"path/filepath"
	"testing"
)

func TestPushOutboxAndStateSurviveReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	db, err := Open(path, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rows, err := db.PushOutboxPending(10); err != nil || len(rows) != 0 {
		t.Fatalf("empty outbox: %v %v", rows, err)
	}
	rows, err := db.EnqueuePush([]PushOutbox{{Topic: "a"}, {Topic: "b"}, {Topic: "c"}}, "cadence", map[string]int{"x": 1})
	if err != nil || rows[0].ID == 0 || rows[2].ID <= rows[1].ID {
		t.Fatalf("%+v %v", rows, err)
	}
	if err := db.AckPush(rows[0].ID); err != nil {
		t.Fatal(err)
	}
	_ = db.AckPush(rows[0].ID) // twice is harmless
	_ = db.Close()
	if db, err = Open(path, OpenOptions{}); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	left, _ := db.PushOutboxPending(10)
	if len(left) != 2 || left[0].Topic != "b" || left[1].Topic != "c" {
		t.Fatalf("after reopen: %+v", left)
	}
	var st map[string]int
	if ok, err := db.PushState("cadence", &st); !ok || err != nil || st["x"] != 1 {
		t.Fatalf("state %v %v %v", st, ok, err)
	}
	if ok, _ := db.PushState("missing", &st); ok {
		t.Fatal("missing state reported present")
	}
}
